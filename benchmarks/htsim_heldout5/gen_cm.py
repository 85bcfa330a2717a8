"""Write the fifth held-out set's connection matrices (.cm) for htsim, with fixed seeds.

    python benchmarks/htsim_heldout5/gen_cm.py [OUT_DIR]     (default: this folder)

Rerunning it rewrites the same files byte for byte (Python's `random`, seeds 18701-18711, none
of the calibration or earlier held-out sets'). Format and rules as
`benchmarks/htsim_heldout/gen_cm.py` (whose writer and helpers this uses): whole-microsecond
starts, decimal sizes, every (src, dst) pair unique within a file. Fabrics (htsim's
FatTreeTopologyCfg sizes them from `-nodes`: a 2-tier tree of K-port switches holds K^2/2
hosts, a 3-tier one K^3/4; hosts numbered ToR by ToR):
- 2-tier, 72 hosts (K = 12): 12 ToRs of 6 hosts, 6 spines, 100 Gb/s; host h on ToR h//6;
- 2-tier, 648 hosts (K = 36): 36 ToRs of 18 hosts, 18 spines, 200 Gb/s; ToR h//18;
- 2-tier, 392 hosts (K = 28): 28 ToRs of 14 hosts, 14 spines, 200 Gb/s; ToR h//14;
- 2-tier, 162 hosts (K = 18): 18 ToRs of 9 hosts, 9 spines, 400 Gb/s; ToR h//9;
- 3-tier, 128 hosts (K = 8): 8 pods of 4 ToRs x 4 hosts, 4 aggs a pod, 16 cores, 200 Gb/s;
  ToR h//4, pod h//16;
- the shared 3-tier 1024 (100 Gb/s, ToR h//8, pod h//64).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run by hand as a script
    sys.path.insert(0, str(REPO))

from benchmarks.htsim_heldout.gen_cm import (  # noqa: E402
    KB,
    MB,
    Flow,
    all_to_all,
    derangement,
    incast_senders,
    permutation,
    poisson,
    run,
    write_cm,
)


def generate(out: Path) -> None:
    """Every .cm of the fifth held-out set into `out`."""
    # 2-tier 72 hosts at 100G: a permutation of 4 MB (run healthy and with -failed 3: half of
    # the 6 spines at 25%)
    p = derangement(72, random.Random(18701))
    write_cm(out / "perm72_4MB.cm", 72, permutation(72, 4 * MB, 0, p))

    # 2-tier 648 hosts at 200G: a permutation of 1 MB (run with -failed 4: spines 0-3 of 18)
    p = derangement(648, random.Random(18702))
    write_cm(out / "perm648_1MB.cm", 648, permutation(648, 1 * MB, 0, p))

    # all-to-all among 32 random hosts of the 3-tier 128 at 200G, 64 KB a pair, all at 0
    members = sorted(random.Random(18703).sample(range(128), 32))
    write_cm(out / "a2a32_64KB_3tier128.cm", 128, all_to_all(members, 64 * KB))

    # a hot spot on the 2-tier 392 at 200G: every host of one ToR sends 256 KB to every host of
    # another ToR (14 x 14 flows), all at 0
    rng = random.Random(18704)
    a, b = rng.sample(range(28), 2)
    write_cm(out / "hotspot_tor14x14_256KB_2tier392.cm", 392,
             [(14 * a + i, 14 * b + j, 0, 256 * KB) for i in range(14) for j in range(14)])

    # a 64-to-1 incast of 64 KB on the 3-tier 1024 (senders from anywhere but the receiver)
    recv, senders = incast_senders(1024, 64, random.Random(18705))
    write_cm(out / "incast64_64KB.cm", 1024, [(s, recv, 0, 64 * KB) for s in senders])

    # an 8-to-1 incast of 16 MB on the 2-tier 72 at 100G, senders on other ToRs (ideal for
    # the receiver's link: 10.24 ms)
    recv, senders = incast_senders(72, 8, random.Random(18706), per_tor=6)
    write_cm(out / "incast8_16MB_2tier72.cm", 72, [(s, recv, 0, 16 * MB) for s in senders])

    # the reduce phase of a tree all-reduce inside pod 5 of the 3-tier 1024: its 64 hosts in
    # random order as a binary tree (member i's parent is member (i-1)//2), every child sends
    # 1 MB to its parent at 0 (inner members receive two and send one at once)
    rng = random.Random(18707)
    members = list(range(5 * 64, 6 * 64))
    rng.shuffle(members)
    write_cm(out / "tree64_1MB_pod.cm", 1024,
             [(members[i], members[(i - 1) // 2], 0, 1 * MB) for i in range(1, 64)])

    # a permutation under one elephant per ToR on the 2-tier 162 at 400G: one random host of
    # each of the 18 ToRs sends 16 MB at 0 to another ToR's elephant host (a derangement of the
    # ToRs), the other 144 hosts a 256 KB permutation among themselves at 20 us
    rng = random.Random(18708)
    eleph = [9 * t + rng.randrange(9) for t in range(18)]
    q = derangement(18, rng)
    rest = [h for h in range(162) if h not in eleph]
    r = derangement(len(rest), rng)
    write_cm(out / "perm144_256KB_under18x16MB_2tier162.cm", 162,
             [(eleph[k], eleph[q[k]], 0, 16 * MB) for k in range(18)]
             + [(rest[i], rest[r[i]], 20, 256 * KB) for i in range(len(rest))])

    # Poisson arrivals of 256 KB flows on the 2-tier 72 at 100G over 300 us at 75% of the host
    # links (random pairs: a host may send or receive several at once)
    write_cm(out / "poisson72_256KB_300us_load75.cm", 72,
             poisson(72, 256 * KB, 300, 0.75, random.Random(18709)))

    # a permutation of mixed sizes on the 3-tier 128 at 200G: each flow 64 KB, 256 KB, 1 MB or
    # 4 MB with equal chance, all at 0
    rng = random.Random(18710)
    p = derangement(128, rng)
    sizes = (64 * KB, 256 * KB, 1 * MB, 4 * MB)
    write_cm(out / "perm128_mix4sizes_3tier128.cm", 128,
             [(i, d, 0, rng.choice(sizes)) for i, d in enumerate(p)])

    # a jittered permutation on the 2-tier 392 at 200G: 512 KB each (21 us at 200G), every host
    # starting at a uniform random whole us in [0, 100)
    rng = random.Random(18711)
    p = derangement(392, rng)
    flows: list[Flow] = [(i, d, rng.randrange(100), 512 * KB) for i, d in enumerate(p)]
    write_cm(out / "perm392_512KB_ramp100us_2tier392.cm", 392, flows)


def main(argv: list[str] | None = None) -> int:
    return run(generate, __file__, argv)


if __name__ == "__main__":
    sys.exit(main())

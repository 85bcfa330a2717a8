"""Write the third held-out set's connection matrices (.cm) for htsim, with fixed seeds.

    python benchmarks/htsim_heldout3/gen_cm.py [OUT_DIR]     (default: this folder)

Rerunning it rewrites the same files byte for byte (Python's `random`, seeds 18501-18510, none
of the calibration or held-out sets'). Format and rules as `benchmarks/htsim_heldout/gen_cm.py`
(whose writer and helpers this uses): whole-microsecond starts, decimal sizes, every (src, dst)
pair unique within a file. Fabrics (htsim's FatTreeTopologyCfg sizes them from `-nodes`: a 2-tier
tree of K-port switches holds K^2/2 hosts, a 3-tier one K^3/4; hosts numbered ToR by ToR):
- 2-tier, 288 hosts (K = 24): 24 ToRs of 12 hosts, 12 spines, 200 Gb/s; host h on ToR h//12;
- 3-tier, 432 hosts (K = 12): 12 pods of 6 ToRs x 6 hosts, 36 cores, 100 Gb/s; ToR h//6, pod h//36;
- 2-tier, 32 hosts (K = 8): 8 ToRs of 4 hosts, 4 spines, 400 Gb/s; ToR h//4;
- the shared 3-tier 1024 (100 Gb/s, ToR h//8, pod h//64) and 2-tier 128 (400 Gb/s, ToR h//8).
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
    derangement,
    incast_senders,
    permutation,
    random_pairs,
    run,
    write_cm,
)


def poisson_at(n: int, size: int, window_us: int, load: float, gbps: float,
               rng: random.Random) -> list[Flow]:
    """Random flows whose bytes over `window_us` are `load` of `n` host links of `gbps`: the
    count is fixed by the load, the starts sorted uniform draws floored to whole us."""
    count = round(load * n * gbps * 1e9 * window_us * 1e-6 / (8 * size))
    starts = sorted(int(rng.uniform(0, window_us)) for _ in range(count))
    return random_pairs(n, starts, [size] * count, rng)


def generate(out: Path) -> None:
    """Every .cm of the third held-out set into `out`."""
    # 2-tier 288 hosts at 200G: a permutation of 1 MB (run healthy and with -failed 3 of 12 spines)
    p = derangement(288, random.Random(18501))
    write_cm(out / "perm288_1MB.cm", 288, permutation(288, 1 * MB, 0, p))

    # 3-tier 432 hosts (K = 12) at 100G: a permutation of 768 KB
    p = derangement(432, random.Random(18502))
    write_cm(out / "perm432_768KB.cm", 432, permutation(432, 768 * KB, 0, p))

    # a 32-to-1 incast of 256 KB on the 3-tier 1024 (senders from anywhere but the receiver)
    recv, senders = incast_senders(1024, 32, random.Random(18503))
    write_cm(out / "incast32_256KB.cm", 1024, [(s, recv, 0, 256 * KB) for s in senders])

    # a 12-to-1 incast of 2 MB on the 2-tier 288, every sender on another ToR than the receiver
    recv, senders = incast_senders(288, 12, random.Random(18504), per_tor=12)
    write_cm(out / "incast12_2MB_2tier288.cm", 288, [(s, recv, 0, 2 * MB) for s in senders])

    # a staggered all-to-all on the 2-tier 128: one member per ToR (16), member k starts its 15
    # flows of 512 KB at 3k us (a collective whose ranks enter it one after another)
    rng = random.Random(18505)
    members = [8 * t + rng.randrange(8) for t in range(16)]
    flows = [(s, d, 3 * k, 512 * KB) for k, s in enumerate(members) for d in members if d != s]
    write_cm(out / "a2a16_stag3us_512KB_2tier.cm", 128, flows)

    # a shift by one pod on the 3-tier 1024: host i sends 512 KB to host i+64, every flow
    # crosses the core (the structured traffic of a pipeline stage; ECMP hashes decide)
    write_cm(out / "shift64_512KB.cm", 1024, [(i, (i + 64) % 1024, 0, 512 * KB) for i in range(1024)])

    # a 1-to-16 fan-out of 1 MB on the 3-tier 1024: one sender's NIC shared by 16 flows to
    # random hosts of other pods
    rng = random.Random(18507)
    src = rng.randrange(1024)
    dsts = rng.sample([h for h in range(1024) if h // 64 != src // 64], 16)
    write_cm(out / "fanout16_1MB.cm", 1024, [(src, d, 0, 1 * MB) for d in dsts])

    # 2-tier 32 hosts (K = 8, 4 spines) at 400G: a permutation of 4 MB
    p = derangement(32, random.Random(18508))
    write_cm(out / "perm32_4MB.cm", 32, permutation(32, 4 * MB, 0, p))

    # Poisson arrivals of 512 KB flows over 200 us at 50% of the 2-tier 288's 200G host links
    write_cm(out / "poisson288_512KB_200us_load50.cm", 288,
             poisson_at(288, 512 * KB, 200, 0.50, 200, random.Random(18509)))

    # two 8-to-1 incasts of 1 MB into two hosts of one ToR of the 3-tier 432 (senders in other
    # pods), beside a permutation of 256 KB among all the other hosts, all at time 0
    rng = random.Random(18510)
    r1 = rng.randrange(432)
    tor = r1 // 6
    r2 = 6 * tor + (r1 % 6 + 1 + rng.randrange(5)) % 6  # another host of r1's ToR
    far = [h for h in range(432) if h // 36 != tor // 6]
    culprits = rng.sample(far, 16)
    rest = [h for h in range(432) if h not in culprits and h not in (r1, r2)]
    q = derangement(len(rest), rng)
    flows = [(rest[i], rest[q[i]], 0, 256 * KB) for i in range(len(rest))]
    flows += [(s, r1, 0, 1 * MB) for s in culprits[:8]] + [(s, r2, 0, 1 * MB) for s in culprits[8:]]
    write_cm(out / "mix_perm432_2incast8_1MB.cm", 432, flows)


def main(argv: list[str] | None = None) -> int:
    return run(generate, __file__, argv)


if __name__ == "__main__":
    sys.exit(main())

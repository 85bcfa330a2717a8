"""Write the eighth held-out set's connection matrices (.cm) for htsim, with fixed seeds.

    python benchmarks/htsim_heldout8/gen_cm.py [OUT_DIR]     (default: this folder)

Rerunning it rewrites the same files byte for byte (Python's `random`, seeds 19801-19808, none
of the calibration or earlier held-out sets'; a2a32 and ring800 draw nothing, so 19802 and
19803 are unused). Format and rules as `benchmarks/htsim_heldout/gen_cm.py` (whose writer and
helpers this uses): whole-microsecond starts, decimal sizes, every (src, dst) pair unique
within a file. Fabrics (htsim's FatTreeTopologyCfg sizes them from `-nodes`: a 2-tier tree of
K-port switches holds K^2/2 hosts, a 3-tier one K^3/4; hosts numbered ToR by ToR):
- 2-tier, 450 hosts (K = 30): 30 ToRs of 15 hosts, 15 spines, 100 Gb/s; host h on ToR h//15;
- 2-tier, 32 hosts (K = 8): 8 ToRs of 4 hosts, 4 spines, 200 Gb/s (a2a32) or 400 Gb/s (mix);
  ToR h//4;
- 2-tier, 800 hosts (K = 40): 40 ToRs of 20 hosts, 20 spines, 100 Gb/s (ring800) or 200 Gb/s
  (perm800); ToR h//20;
- 3-tier, 54 hosts (K = 6): 6 pods of 3 ToRs x 3 hosts, 3 aggs a pod, 9 cores, 100 Gb/s;
  ToR h//3, pod h//9;
- 3-tier, 686 hosts (K = 14): 14 pods of 7 ToRs x 7 hosts, 7 aggs a pod, 49 cores, 200 Gb/s;
  ToR h//7, pod h//49.
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
    run,
    write_cm,
)


def generate(out: Path) -> None:
    """Every .cm of the eighth held-out set into `out`."""
    # 2-tier 450 hosts at 100G, -failed 5 (spines 0-4 of 15 at 25%): a permutation of 1 MB at 0
    p = derangement(450, random.Random(19801))
    write_cm(out / "perm450_1MB.cm", 450, permutation(450, 1 * MB, 0, p))

    # 2-tier 32 hosts at 200G, -failed 2 (spines 0-1 of 4): an all-to-all of 256 KB among all
    # 32 hosts, at 0 (992 flows)
    write_cm(out / "a2a32_256KB.cm", 32, all_to_all(list(range(32)), 256 * KB))

    # 2-tier 800 hosts at 100G, -failed 6 (spines 0-5 of 20): one step of a ring over ranks
    # interleaved across ToRs (rank r on host 20 (r % 40) + r // 40), rank r sends 512 KB to
    # rank r+1 mod 800 at 0: every flow leaves its ToR, ToR t's 20 flows all go to ToR t+1
    rank = [20 * (r % 40) + r // 40 for r in range(800)]
    write_cm(out / "ring800_xtor_512KB.cm", 800,
             [(rank[r], rank[(r + 1) % 800], 0, 512 * KB) for r in range(800)])

    # 2-tier 450 hosts at 100G: 16 jittered incasts, 16 distinct random receivers, each getting
    # 16 KB from 20 distinct random senders among the other 434 hosts (a host may send into
    # several receivers), each flow starting at a uniform random whole us in [0, 30) (320 flows)
    rng = random.Random(19804)
    recvs = sorted(rng.sample(range(450), 16))
    others = [h for h in range(450) if h not in recvs]
    flows: list[Flow] = []
    for r in recvs:
        flows += [(s, r, rng.randrange(30), 16 * KB) for s in rng.sample(others, 20)]
    write_cm(out / "incast16x20_16KB_jit30us.cm", 450, flows)

    # 3-tier 54 hosts at 100G: a jittered 48-to-1 incast of 24 KB, senders from anywhere but
    # the receiver, each starting at a uniform random whole us in [0, 20)
    rng = random.Random(19805)
    recv, senders = incast_senders(54, 48, rng)
    write_cm(out / "incast48_24KB_jit20us.cm", 54,
             [(s, recv, rng.randrange(20), 24 * KB) for s in senders])

    # 3-tier 686 hosts at 200G: a jittered 150-to-1 incast of 48 KB, senders from anywhere but
    # the receiver, each starting at a uniform random whole us in [0, 50)
    rng = random.Random(19806)
    recv, senders = incast_senders(686, 150, rng)
    write_cm(out / "incast150_48KB_jit50us.cm", 686,
             [(s, recv, rng.randrange(50), 48 * KB) for s in senders])

    # 2-tier 32 hosts at 400G: a permutation of 8 MB at 0 (168 us at 400G) and, from 50 us,
    # 8 incasts of 64 KB: 8 distinct random receivers, each getting 64 KB from 4 distinct random
    # other hosts whose permutation flow does not already go to it (64 flows in all)
    rng = random.Random(19807)
    p = derangement(32, rng)
    flows = permutation(32, 8 * MB, 0, p)
    for r in sorted(rng.sample(range(32), 8)):
        cand = [h for h in range(32) if h != r and p[h] != r]
        flows += [(s, r, 50, 64 * KB) for s in rng.sample(cand, 4)]
    write_cm(out / "mix_perm32_8MB_incast4x8_64KB.cm", 32, flows)

    # 2-tier 800 hosts at 200G: a staggered permutation of 2 MB, each flow starting at a
    # uniform random whole us in [0, 200)
    rng = random.Random(19808)
    p = derangement(800, rng)
    write_cm(out / "perm800_2MB_stag200us.cm", 800,
             [(h, p[h], rng.randrange(200), 2 * MB) for h in range(800)])


def main(argv: list[str] | None = None) -> int:
    return run(generate, __file__, argv)


if __name__ == "__main__":
    sys.exit(main())

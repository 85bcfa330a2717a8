"""Write the sixth held-out set's connection matrices (.cm) for htsim, with fixed seeds.

    python benchmarks/htsim_heldout6/gen_cm.py [OUT_DIR]     (default: this folder)

Rerunning it rewrites the same files byte for byte (Python's `random`, seeds 18801-18810, none
of the calibration or earlier held-out sets'; a2a54 draws nothing). Format and rules as
`benchmarks/htsim_heldout/gen_cm.py` (whose writer and helpers this uses): whole-microsecond
starts, decimal sizes, every (src, dst) pair unique within a file. Fabrics (htsim's
FatTreeTopologyCfg sizes them from `-nodes`: a 2-tier tree of K-port switches holds K^2/2
hosts, a 3-tier one K^3/4; hosts numbered ToR by ToR):
- 2-tier, 98 hosts (K = 14): 14 ToRs of 7 hosts, 7 spines, 400 Gb/s; host h on ToR h//7;
- 2-tier, 242 hosts (K = 22): 22 ToRs of 11 hosts, 11 spines, 100 Gb/s; ToR h//11;
- 2-tier, 338 hosts (K = 26): 26 ToRs of 13 hosts, 13 spines, 200 Gb/s; ToR h//13;
- 2-tier, 450 hosts (K = 30): 30 ToRs of 15 hosts, 15 spines, 100 Gb/s; ToR h//15;
- 2-tier, 50 hosts (K = 10): 10 ToRs of 5 hosts, 5 spines, 200 Gb/s; ToR h//5;
- 3-tier, 686 hosts (K = 14): 14 pods of 7 ToRs x 7 hosts, 7 aggs a pod, 49 cores, 100 Gb/s;
  ToR h//7, pod h//49;
- 3-tier, 54 hosts (K = 6): 6 pods of 3 ToRs x 3 hosts, 3 aggs a pod, 9 cores, 200 Gb/s;
  ToR h//3, pod h//9.
"""

from __future__ import annotations

import math
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
    poisson_mixed,
    run,
    write_cm,
)


def log_uniform(lo: int, hi: int, rng: random.Random) -> int:
    return round(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def generate(out: Path) -> None:
    """Every .cm of the sixth held-out set into `out`."""
    # 2-tier 98 hosts at 400G: a permutation of 8 MB (160 us at 400G), run healthy and with
    # -failed 2 (spines 0-1 of 7 at 25%)
    p = derangement(98, random.Random(18801))
    write_cm(out / "perm98_8MB.cm", 98, permutation(98, 8 * MB, 0, p))

    # 3-tier 686 hosts at 100G: a permutation of 2 MB (160 us at 100G)
    p = derangement(686, random.Random(18802))
    write_cm(out / "perm686_2MB_3tier686.cm", 686, permutation(686, 2 * MB, 0, p))

    # 2-tier 242 hosts at 100G: a permutation of 1 MB, run with -failed 2 (spines 0-1 of 11)
    p = derangement(242, random.Random(18803))
    write_cm(out / "perm242_1MB.cm", 242, permutation(242, 1 * MB, 0, p))

    # a bidirectional ring step on the 2-tier 450 at 100G: the 450 ranks placed on the hosts in
    # random order, rank r sends 1 MB to rank r+1 and 1 MB to rank r-1 at 0 (every host sends
    # two flows and receives two)
    rng = random.Random(18806)
    rank = list(range(450))
    rng.shuffle(rank)
    write_cm(out / "biring450_1MB_2tier100.cm", 450,
             [(rank[r], rank[(r + 1) % 450], 0, 1 * MB) for r in range(450)]
             + [(rank[r], rank[(r - 1) % 450], 0, 1 * MB) for r in range(450)])

    # the reduce-scatter of a recursive halving-doubling all-reduce of 8 MB over 64 random
    # hosts of the 2-tier 338 at 200G: step k (k = 0..5) pairs rank r with rank r xor 2^k, each
    # sending 4 MB / 2^k; step k starts when step k-1 would end at line rate (0, 160, 240, 280,
    # 300, 310 us), with no wait for it (htsim has no dependencies)
    hosts = random.Random(18805).sample(range(338), 64)
    flows: list[Flow] = []
    start = 0
    for k in range(6):
        size = 4 * MB >> k
        flows += [(hosts[r], hosts[r ^ (1 << k)], start, size) for r in range(64)]
        start += round(size * 8 / 200e3)  # us at 200 Gb/s
    write_cm(out / "hd64_rs8MB_2tier338.cm", 338, flows)

    # an all-to-all over the whole 3-tier 54 at 200G (an expert-parallel dispatch): 32 KB a
    # pair, 2,862 flows, all at 0
    write_cm(out / "a2a54_32KB_3tier54.cm", 54, all_to_all(list(range(54)), 32 * KB))

    # an uneven MoE all-to-all among 32 random hosts of the 2-tier 450 at 100G: each ordered
    # pair sends a size log-uniform on [32 KB, 256 KB] (tokens routed unevenly), all at 0
    rng = random.Random(18804)
    members = sorted(rng.sample(range(450), 32))
    write_cm(out / "a2a32_moe32to256KB_2tier450.cm", 450,
             [(s, d, 0, log_uniform(32 * KB, 256 * KB, rng)) for s, d, _, _ in
              all_to_all(members, 0)])

    # Poisson arrivals of mixed sizes, log-uniform on [32 KB, 1 MB], on the 2-tier 242 at 100G
    # over 200 us at 55% of the host links (random pairs)
    write_cm(out / "poisson242_mix32KBto1MB_200us_load55.cm", 242,
             poisson_mixed(242, 32 * KB, 1 * MB, 200, 0.55, random.Random(18807)))

    # a jittered 40-to-1 incast of 128 KB on the 3-tier 686 at 100G: senders from anywhere but
    # the receiver, each starting at a uniform random whole us in [0, 20)
    rng = random.Random(18808)
    recv, senders = incast_senders(686, 40, rng)
    write_cm(out / "incast40_jit20us_128KB_3tier686.cm", 686,
             [(s, recv, rng.randrange(20), 128 * KB) for s in senders])

    # a permutation of 4 MB over the 2-tier 338 at 200G (a data-parallel step) with, at the
    # same time, an all-to-all of 64 KB among 16 random hosts (an MoE dispatch); the
    # permutation is redrawn until it shares no pair with the all-to-all
    rng = random.Random(18809)
    members = sorted(rng.sample(range(338), 16))
    a2a = all_to_all(members, 64 * KB)
    pairs = {(s, d) for s, d, _, _ in a2a}
    while True:
        p = derangement(338, rng)
        if not any((i, d) in pairs for i, d in enumerate(p)):
            break
    write_cm(out / "mix_perm338_4MB_a2a16_64KB.cm", 338, permutation(338, 4 * MB, 0, p) + a2a)

    # a random scatter on the 2-tier 50 at 200G: every host sends 128 KB to 4 distinct random
    # other hosts (so a host receives anything from 0 to many), each flow starting at a uniform
    # random whole us in [0, 10)
    rng = random.Random(18810)
    write_cm(out / "scatter4_128KB_jit10us_2tier50.cm", 50,
             [(s, d, rng.randrange(10), 128 * KB) for s in range(50)
              for d in rng.sample([h for h in range(50) if h != s], 4)])


def main(argv: list[str] | None = None) -> int:
    return run(generate, __file__, argv)


if __name__ == "__main__":
    sys.exit(main())

"""Write the ninth held-out set's connection matrices (.cm) for htsim, with fixed seeds.

    python benchmarks/htsim_heldout9/gen_cm.py [OUT_DIR]     (default: this folder)

Rerunning it rewrites the same files byte for byte (Python's `random`, seeds 19801-19812, one
per scenario, in the order below; every scenario draws from its seed). Format and rules as
`benchmarks/htsim_heldout/gen_cm.py` (whose writer and helpers this uses): whole-microsecond
starts, decimal sizes (1 KB = 1000 bytes, 1 MB = 10^6), every (src, dst) pair unique within a
file. Fabrics (htsim's FatTreeTopologyCfg sizes them from `-nodes`: a 2-tier tree of K-port
switches holds K^2/2 hosts, a 3-tier one K^3/4; hosts numbered ToR by ToR, ToR = h // (K/2)):
- 2-tier, 648 hosts (K = 36): 36 ToRs of 18 hosts, 18 spines, 100 Gb/s; ToR h//18;
  run with -failed 7 (7 of 18 spines slowed);
- 2-tier, 98 hosts (K = 14): 14 ToRs of 7 hosts, 7 spines, 200 Gb/s; ToR h//7; -failed 3
  (3 of 7);
- 2-tier, 242 hosts (K = 22): 22 ToRs of 11 hosts, 11 spines, 200 Gb/s; ToR h//11; -failed 4
  (4 of 11);
- 2-tier, 50 hosts (K = 10): 10 ToRs of 5 hosts, 5 spines, 100 Gb/s; ToR h//5; -failed 2
  (2 of 5);
- 3-tier, 1024 hosts (K = 16): 16 pods of 8 ToRs x 8 hosts, 8 aggs a pod, 64 cores, 200 Gb/s;
  ToR h//8, pod h//64;
- 2-tier, 512 hosts (K = 32): 32 ToRs of 16 hosts, 16 spines, 200 Gb/s; ToR h//16;
- 2-tier, 722 hosts (K = 38): 38 ToRs of 19 hosts, 19 spines, 100 Gb/s; ToR h//19;
- 3-tier, 432 hosts (K = 12): 12 pods of 6 ToRs x 6 hosts, 6 aggs a pod, 36 cores, 100 Gb/s;
  ToR h//6, pod h//36;
- 2-tier, 128 hosts (K = 16): 16 ToRs of 8 hosts, 8 spines, 100 Gb/s; ToR h//8;
- 2-tier, 200 hosts (K = 20): 20 ToRs of 10 hosts, 10 spines, 400 Gb/s; ToR h//10;
- 2-tier, 578 hosts (K = 34): 34 ToRs of 17 hosts, 17 spines, 200 Gb/s; ToR h//17;
- 3-tier, 16 hosts (K = 4): 4 pods of 2 ToRs x 2 hosts, 2 aggs a pod, 4 cores, 200 Gb/s;
  ToR h//2, pod h//4.
`-failed K` (2 tiers only): at every ToR the links to and from spines 0..K-1 run at 25%.
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
    run,
    write_cm,
)


def log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    """A size in bytes drawn log-uniform on [lo, hi], rounded to a whole byte."""
    return round(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def generate(out: Path) -> None:
    """Every .cm of the ninth held-out set into `out`."""
    # 2-tier 648 hosts at 100G, -failed 7 (spines 0-6 of 18 at 25%): a random permutation
    # (derangement) of 1.5 MB, all at 0 (648 flows; 1.5 MB is 120 us at 100G)
    p = derangement(648, random.Random(19801))
    write_cm(out / "perm648_1500KB.cm", 648, permutation(648, 1500 * KB, 0, p))

    # 2-tier 98 hosts at 200G, -failed 3 (spines 0-2 of 7): an all-to-all of 768 KB among 28
    # random hosts, every ordered pair at 0 (756 flows)
    members = sorted(random.Random(19802).sample(range(98), 28))
    write_cm(out / "a2a28_768KB.cm", 98, all_to_all(members, 768 * KB))

    # 2-tier 242 hosts at 200G, -failed 4 (spines 0-3 of 11): one step of a ring over all 242
    # hosts in a random rank order (order = range(242) shuffled; rank r sends 4 MB to rank r+1
    # mod 242 at 0); a flow stays in its ToR only where two consecutive ranks happen to share
    # one (242 flows; 4 MB is 160 us at 200G)
    rng = random.Random(19803)
    order = list(range(242))
    rng.shuffle(order)
    write_cm(out / "ring242_rand_4MB.cm", 242,
             [(order[r], order[(r + 1) % 242], 0, 4 * MB) for r in range(242)])

    # 2-tier 50 hosts at 100G, -failed 2 (spines 0-1 of 5): a ToR shift, the 5 hosts of ToR t
    # send 2 MB each to the 5 hosts of ToR t+1 mod 10, one each, matched by a random bijection
    # drawn per ToR in ToR order (rng.sample(range(5), 5)); all at 0 (50 flows, every one
    # crossing the spines)
    rng = random.Random(19804)
    flows: list[Flow] = []
    for t in range(10):
        slots = rng.sample(range(5), 5)
        nxt = (t + 1) % 10
        flows += [(t * 5 + i, nxt * 5 + slots[i], 0, 2 * MB) for i in range(5)]
    write_cm(out / "shift50_xtor_2MB.cm", 50, flows)

    # 3-tier 1024 hosts at 200G: a jittered 200-to-1 incast of 40 KB (10 packets of 4 KB MTU),
    # a random receiver and 200 distinct senders from any other host (incast_senders), each
    # starting at a uniform random whole us in [0, 60) (8 MB into one host: 320 us at 200G)
    rng = random.Random(19805)
    recv, senders = incast_senders(1024, 200, rng)
    write_cm(out / "incast200_40KB_jit60us.cm", 1024,
             [(s, recv, rng.randrange(60), 40 * KB) for s in senders])

    # 2-tier 512 hosts at 200G: 12 concurrent jittered 32-to-1 incasts of 24 KB; 12 random
    # receivers (sorted), then per receiver in that order 32 distinct senders drawn from the
    # 500 non-receivers (a host may send into several receivers), each flow starting at a
    # uniform random whole us in [0, 20), drawn right after its receiver's senders (384 flows)
    rng = random.Random(19806)
    recvs = sorted(rng.sample(range(512), 12))
    others = [h for h in range(512) if h not in recvs]
    flows = []
    for r in recvs:
        for s in rng.sample(others, 32):
            flows.append((s, r, rng.randrange(20), 24 * KB))
    write_cm(out / "incast32x12_24KB_jit20us.cm", 512, flows)

    # 2-tier 722 hosts at 100G: a jittered scatter from 6 random roots (sorted); per root in
    # that order 60 distinct destinations among the 716 non-roots (a host may receive from
    # several roots), 64 KB each, starting at a uniform random whole us in [0, 40) (360 flows;
    # each root sends 3.84 MB, 307 us at 100G)
    rng = random.Random(19807)
    roots = sorted(rng.sample(range(722), 6))
    others = [h for h in range(722) if h not in roots]
    flows = []
    for r in roots:
        for d in rng.sample(others, 60):
            flows.append((r, d, rng.randrange(40), 64 * KB))
    write_cm(out / "scatter6x60_64KB_jit40us.cm", 722, flows)

    # 3-tier 432 hosts at 100G: 8 concurrent jittered 24-to-1 incasts of 56 KB (14 packets);
    # 8 distinct random pods (sorted), in each one random receiver host; then per receiver in
    # that order 24 distinct senders from the 424 non-receivers (any pod, the receiver's own
    # included), each flow starting at a uniform random whole us in [0, 15) (192 flows)
    rng = random.Random(19808)
    pods = sorted(rng.sample(range(12), 8))
    recvs = [pod * 36 + rng.randrange(36) for pod in pods]
    others = [h for h in range(432) if h not in recvs]
    flows = []
    for r in recvs:
        for s in rng.sample(others, 24):
            flows.append((s, r, rng.randrange(15), 56 * KB))
    write_cm(out / "incast24x8_56KB_jit15us.cm", 432, flows)

    # 2-tier 128 hosts at 100G: a recursive-doubling all-gather over 128 ranks placed on hosts
    # at random (host of rank r = place[r], place = range(128) shuffled); step k = 0..6: rank r
    # sends 64 KB * 2^k (64, 128, 256, 512 KB, 1.024, 2.048, 4.096 MB) to rank r xor 2^k,
    # starting at 6 * (2^k - 1) us (0, 6, 18, 42, 90, 186, 378: step j takes 5.12 * 2^j us
    # alone at 100G, so each step starts just after the previous one could end) (896 flows)
    rng = random.Random(19809)
    place = list(range(128))
    rng.shuffle(place)
    flows = []
    for k in range(7):
        flows += [(place[r], place[r ^ (1 << k)], 6 * ((1 << k) - 1), 64 * KB * (1 << k))
                  for r in range(128)]
    write_cm(out / "ag128_rd64KBto4MB.cm", 128, flows)

    # 2-tier 200 hosts at 400G: a random permutation (derangement, drawn first) whose flows
    # have sizes log-uniform on [16 KB, 8 MB] (whole bytes) and staggered starts, uniform
    # random whole us in [0, 100); per host in order its size then its start (200 flows)
    rng = random.Random(19810)
    p = derangement(200, rng)
    flows = []
    for i in range(200):
        size = log_uniform(rng, 16 * KB, 8 * MB)
        flows.append((i, p[i], rng.randrange(100), size))
    write_cm(out / "perm200_mix16KBto8MB_stag100us.cm", 200, flows)

    # 2-tier 578 hosts at 200G: 4 parameter servers (random, sorted), each with its own 100
    # workers (400 distinct random non-servers, in draw order, server g gets workers
    # 100g..100g+99); every worker pushes 128 KB to its server at a uniform random whole us in
    # [0, 20), and then every server sends 128 KB back to each of its workers at 600 + a
    # uniform random whole us in [0, 20) (drawn in the same worker order after all pushes);
    # each server receives and then sends 12.8 MB (512 us at 200G) (800 flows)
    rng = random.Random(19811)
    ps = sorted(rng.sample(range(578), 4))
    workers = rng.sample([h for h in range(578) if h not in ps], 400)
    push = [(w, ps[g], rng.randrange(20), 128 * KB)
            for g in range(4) for w in workers[100 * g:100 * g + 100]]
    pull = [(ps[g], w, 600 + rng.randrange(20), 128 * KB)
            for g in range(4) for w in workers[100 * g:100 * g + 100]]
    write_cm(out / "ps4x100_push128KB_pull128KB.cm", 578, push + pull)

    # 3-tier 16 hosts at 200G: a skewed all-to-all among all 16 hosts, every ordered pair (in
    # all_to_all's order) sending a size log-uniform on [256 KB, 2 MB] (whole bytes), at 0
    # (240 flows)
    rng = random.Random(19812)
    write_cm(out / "a2a16_skew256KBto2MB.cm", 16,
             [(s, d, 0, log_uniform(rng, 256 * KB, 2 * MB))
              for s, d, _, _ in all_to_all(list(range(16)), 0)])


def main(argv: list[str] | None = None) -> int:
    return run(generate, __file__, argv)


if __name__ == "__main__":
    sys.exit(main())

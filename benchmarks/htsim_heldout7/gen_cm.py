"""Write the seventh held-out set's connection matrices (.cm) for htsim, with fixed seeds.

    python benchmarks/htsim_heldout7/gen_cm.py [OUT_DIR]     (default: this folder)

Rerunning it rewrites the same files byte for byte (Python's `random`, seeds 19701-19712, none
of the calibration or earlier held-out sets'; torus72 and butterfly392 draw nothing, so 19706
and 19707 are unused). Format and rules as `benchmarks/htsim_heldout/gen_cm.py` (whose writer
and helpers this uses): whole-microsecond starts, decimal sizes, every (src, dst) pair unique
within a file. Fabrics (htsim's FatTreeTopologyCfg sizes them from `-nodes`: a 2-tier tree of
K-port switches holds K^2/2 hosts, a 3-tier one K^3/4; hosts numbered ToR by ToR):
- 2-tier, 50 hosts (K = 10): 10 ToRs of 5 hosts, 5 spines, 400 Gb/s; host h on ToR h//5;
- 2-tier, 162 hosts (K = 18): 18 ToRs of 9 hosts, 9 spines, 100 Gb/s; ToR h//9;
- 2-tier, 338 hosts (K = 26): 26 ToRs of 13 hosts, 13 spines, 100 Gb/s; ToR h//13;
- 2-tier, 18 hosts (K = 6): 6 ToRs of 3 hosts, 3 spines, 200 Gb/s; ToR h//3;
- 2-tier, 578 hosts (K = 34): 34 ToRs of 17 hosts, 17 spines, 100 Gb/s; ToR h//17;
- 2-tier, 72 hosts (K = 12): 12 ToRs of 6 hosts, 6 spines, 400 Gb/s; ToR h//6;
- 2-tier, 392 hosts (K = 28): 28 ToRs of 14 hosts, 14 spines, 100 Gb/s; ToR h//14;
- 2-tier, 200 hosts (K = 20): 20 ToRs of 10 hosts, 10 spines, 200 Gb/s; ToR h//10;
- 2-tier, 288 hosts (K = 24): 24 ToRs of 12 hosts, 12 spines, 100 Gb/s; ToR h//12;
- 3-tier, 250 hosts (K = 10): 10 pods of 5 ToRs x 5 hosts, 5 aggs a pod, 25 cores, 100 Gb/s;
  ToR h//5, pod h//25;
- 3-tier, 432 hosts (K = 12): 12 pods of 6 ToRs x 6 hosts, 6 aggs a pod, 36 cores, 200 Gb/s;
  ToR h//6, pod h//36;
- 3-tier, 128 hosts (K = 8): 8 pods of 4 ToRs x 4 hosts, 4 aggs a pod, 16 cores, 100 Gb/s;
  ToR h//4, pod h//16.
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
    """Every .cm of the seventh held-out set into `out`."""
    # 2-tier 50 hosts at 400G, -failed 1 (spine 0 of 5 at 25%): a permutation of 16 MB
    # (320 us at 400G)
    p = derangement(50, random.Random(19701))
    write_cm(out / "perm50_16MB.cm", 50, permutation(50, 16 * MB, 0, p))

    # 2-tier 162 hosts at 100G, -failed 3 (spines 0-2 of 9): a permutation of 2 MB with 12
    # ToR-local flows (in 6 random ToRs two random hosts swap) and the other 150 hosts sending
    # to one another across ToRs only (redrawn until no flow of them stays in its ToR)
    rng = random.Random(19702)
    dst: dict[int, int] = {}
    for tor in sorted(rng.sample(range(18), 6)):
        a, b = rng.sample(range(tor * 9, tor * 9 + 9), 2)
        dst[a], dst[b] = b, a
    rest = [h for h in range(162) if h not in dst]
    while True:
        q = rest[:]
        rng.shuffle(q)
        if all(s // 9 != d // 9 for s, d in zip(rest, q, strict=True)):
            break
    dst.update(zip(rest, q, strict=True))
    write_cm(out / "perm162_2MB_local12.cm", 162, [(h, dst[h], 0, 2 * MB) for h in range(162)])

    # 2-tier 338 hosts at 100G, -failed 2 (spines 0-1 of 13): one step of a ring over ranks
    # interleaved across ToRs (rank r on ToR order[r % 26] in slot r // 26, ToR order and slots
    # random), rank r sends 2 MB to rank r+1 at 0: every flow leaves its ToR, and each ToR sends
    # its 13 flows to one next ToR
    rng = random.Random(19703)
    order = list(range(26))
    rng.shuffle(order)
    slots = {t: rng.sample(range(t * 13, t * 13 + 13), 13) for t in range(26)}
    rank = [slots[order[r % 26]][r // 26] for r in range(338)]
    write_cm(out / "ring338_xtor_2MB.cm", 338,
             [(rank[r], rank[(r + 1) % 338], 0, 2 * MB) for r in range(338)])

    # 2-tier 18 hosts at 200G, -failed 1 (spine 0 of 3): an all-to-all of 1 MB among 12 random
    # hosts, at 0 (132 flows)
    members = sorted(random.Random(19704).sample(range(18), 12))
    write_cm(out / "a2a12_1MB_2tier18.cm", 18, all_to_all(members, 1 * MB))

    # 2-tier 578 hosts at 100G, -failed 4 (spines 0-3 of 17): a permutation of 256 KB and, at
    # the same time, a 16-to-1 incast of 2 MB into one host from senders on other ToRs (none
    # whose permutation flow already goes to that host)
    rng = random.Random(19705)
    p = derangement(578, rng)
    r = rng.randrange(578)
    cand = [h for h in range(578) if h // 17 != r // 17 and p[h] != r]
    senders = rng.sample(cand, 16)
    write_cm(out / "mix_perm578_256KB_incast16_2MB.cm", 578,
             permutation(578, 256 * KB, 0, p) + [(s, r, 0, 2 * MB) for s in senders])

    # 2-tier 72 hosts at 400G: a 2D-torus neighbour exchange over a 9 x 8 grid of ranks in host
    # order (rank (x, y) on host 9y + x), every rank sending 1 MB to each of its four
    # neighbours (x +- 1 mod 9, y +- 1 mod 8) at 0 (288 flows)
    flows: list[Flow] = []
    for y in range(8):
        for x in range(9):
            h = 9 * y + x
            for nx, ny in (((x + 1) % 9, y), ((x - 1) % 9, y), (x, (y + 1) % 8), (x, (y - 1) % 8)):
                flows.append((h, 9 * ny + nx, 0, 1 * MB))
    write_cm(out / "torus72_9x8_1MB.cm", 72, flows)

    # 2-tier 392 hosts at 100G: a butterfly step between ToR pairs, host i of ToR t sends 2 MB
    # to host i of ToR t xor 2, at 0 (392 flows; each ToR's 14 flows all go to one ToR)
    write_cm(out / "butterfly392_xor2_2MB.cm", 392,
             [(h, (h // 14 ^ 2) * 14 + h % 14, 0, 2 * MB) for h in range(392)])

    # 2-tier 200 hosts at 200G: a jittered gather, 10 random aggregators, each of the other 190
    # hosts sends 256 KB to 2 distinct random aggregators, each flow starting at a uniform
    # random whole us in [0, 30) (380 flows)
    rng = random.Random(19708)
    aggs = sorted(rng.sample(range(200), 10))
    write_cm(out / "gather190to10_256KB_jit30us.cm", 200,
             [(s, d, rng.randrange(30), 256 * KB) for s in range(200) if s not in aggs
              for d in rng.sample(aggs, 2)])

    # 3-tier 250 hosts at 100G: a jittered 120-to-1 incast of 32 KB, senders from anywhere but
    # the receiver, each starting at a uniform random whole us in [0, 40)
    rng = random.Random(19709)
    recv, senders = incast_senders(250, 120, rng)
    write_cm(out / "incast120_32KB_jit40us.cm", 250,
             [(s, recv, rng.randrange(40), 32 * KB) for s in senders])

    # 3-tier 432 hosts at 200G: 54 pipelines of 8 stages on randomly placed hosts; forward
    # activations stage s -> s+1 of 1 MB (40 us at 200G) starting at 20 s us, then backward
    # gradients s+1 -> s of 1 MB starting at 300 + 20 (6 - s) us (756 flows)
    rng = random.Random(19710)
    hosts = list(range(432))
    rng.shuffle(hosts)
    fwd, bwd = [], []
    for pp in range(54):
        st = hosts[pp * 8:pp * 8 + 8]
        fwd += [(st[s], st[s + 1], 20 * s, 1 * MB) for s in range(7)]
        bwd += [(st[s + 1], st[s], 300 + 20 * (6 - s), 1 * MB) for s in range(7)]
    write_cm(out / "pp54x8_fwdbwd_1MB.cm", 432, fwd + bwd)

    # 3-tier 128 hosts at 100G: a hierarchical all-reduce step, a ring inside every ToR (host i
    # to host i+1 mod 4 of its ToR, 2 MB at 0) and then, while it still runs, rail rings across
    # ToRs (host i of ToR order[j] to host i of ToR order[j+1], ToR order random, 1 MB at 120 us)
    rng = random.Random(19711)
    order = list(range(32))
    rng.shuffle(order)
    intra = [(t * 4 + i, t * 4 + (i + 1) % 4, 0, 2 * MB) for t in range(32) for i in range(4)]
    rail = [(order[j] * 4 + i, order[(j + 1) % 32] * 4 + i, 120, 1 * MB)
            for i in range(4) for j in range(32)]
    write_cm(out / "hier128_torring2MB_rail1MB.cm", 128, intra + rail)

    # 2-tier 288 hosts at 100G: an MoE all-to-all among 24 random hosts with 3 hot experts,
    # every ordered pair sending 128 KB, or 1 MB into one of the 3 hot hosts, at 0 (552 flows)
    rng = random.Random(19712)
    members = sorted(rng.sample(range(288), 24))
    hot = set(rng.sample(members, 3))
    write_cm(out / "a2a24_moehot3_128KBto1MB.cm", 288,
             [(s, d, 0, 1 * MB if d in hot else 128 * KB) for s, d, _, _ in
              all_to_all(members, 0)])


def main(argv: list[str] | None = None) -> int:
    return run(generate, __file__, argv)


if __name__ == "__main__":
    sys.exit(main())

"""Write the held-out connection matrices (.cm) for htsim, with fixed seeds.

    python benchmarks/htsim_heldout/gen_cm.py [OUT_DIR]     (default: this folder)

Rerunning it rewrites the same files byte for byte (Python's `random` with fixed seeds; the
seeds differ from the calibration set's, so no pair, receiver or arrival sequence is shared).

.cm format read by htsim (connection_matrix.cpp): a `Nodes N` and a `Connections C` line, then
`SRC->DST id K start T size BYTES` per flow, ids 1..C in file order. htsim reads T as whole
microseconds, so every start written here is an integer. Sizes are decimal (1 MB = 10^6 bytes).
Every (src, dst) pair is unique within a file: htsim_roce names a finished flow only by its
pair (convert.py maps its lines back to the .cm that way). Hosts: in the 3-tier 1024-host tree
host h sits on ToR h//8 of pod h//64; in the 2-tier 128-host tree on ToR h//8.
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

KB, MB = 1000, 1000 * 1000
HOSTS3, HOSTS2 = 1024, 128
HOST_GBPS = 100  # the 3-tier fabric's host links (the Poisson loads are fractions of these)

Flow = tuple[int, int, int, int]  # src, dst, start_us, size_bytes


def write_cm(path: Path, nodes: int, flows: list[Flow]) -> None:
    """Write one .cm; ids are 1..len(flows) in order."""
    pairs = [(s, d) for s, d, _, _ in flows]
    if len(set(pairs)) != len(pairs):
        raise ValueError(f"{path}: duplicate (src, dst) pair")
    lines = [f"Nodes {nodes}", f"Connections {len(flows)}"]
    for i, (s, d, t, size) in enumerate(flows, start=1):
        if s == d or not (0 <= s < nodes and 0 <= d < nodes) or t < 0:
            raise ValueError(f"{path}: bad flow {i}: {s}->{d} at {t}")
        lines.append(f"{s}->{d} id {i} start {t} size {size}")
    path.write_text("\n".join(lines) + "\n")
    print(f"{path.name}: {len(flows)} flows")


def derangement(n: int, rng: random.Random) -> list[int]:
    """A uniformly random permutation with no fixed point (no host sends to itself)."""
    while True:
        p = list(range(n))
        rng.shuffle(p)
        if all(i != p[i] for i in range(n)):
            return p


def incast_senders(n: int, count: int, rng: random.Random, per_tor: int = 0
                   ) -> tuple[int, list[int]]:
    """A random receiver and `count` distinct senders from every other host (with `per_tor`
    hosts a ToR, numbered ToR by ToR: only from the other ToRs)."""
    recv = rng.randrange(n)
    if per_tor:
        return recv, rng.sample([h for h in range(n) if h // per_tor != recv // per_tor], count)
    return recv, rng.sample([h for h in range(n) if h != recv], count)


def disjoint_derangements(n: int, rng: random.Random, count: int = 2) -> list[list[int]]:
    """`count` derangements no two of which send a host to the same destination (waves that
    share no (src, dst) pair)."""
    perms: list[list[int]] = []
    while len(perms) < count:
        p = derangement(n, rng)
        if all(all(p[i] != q[i] for i in range(n)) for q in perms):
            perms.append(p)
    return perms


def permutation(n: int, size: int, start: int, perm: Iterable[int]) -> list[Flow]:
    return [(i, d, start, size) for i, d in enumerate(perm)]


def all_to_all(members: list[int], size: int) -> list[Flow]:
    """Every ordered pair of distinct members sends `size` bytes at time 0."""
    return [(s, d, 0, size) for s in members for d in members if s != d]


def random_pairs(n: int, starts: list[int], sizes: list[int], rng: random.Random) -> list[Flow]:
    """One flow per (start, size) with a random source and destination (src != dst, no pair
    twice; a host may send or receive several)."""
    seen: set[tuple[int, int]] = set()
    flows: list[Flow] = []
    for t, size in zip(starts, sizes, strict=True):
        while True:
            s, d = rng.randrange(n), rng.randrange(n)
            if s != d and (s, d) not in seen:
                break
        seen.add((s, d))
        flows.append((s, d, t, size))
    return flows


def poisson(n: int, size: int, window_us: int, load: float, rng: random.Random) -> list[Flow]:
    """Random flows whose bytes over `window_us` are `load` of all host links: the count is
    fixed by the load, the starts are sorted uniform draws floored to whole us (a Poisson
    process conditioned on its count)."""
    count = round(load * n * HOST_GBPS * 1e9 * window_us * 1e-6 / (8 * size))
    starts = sorted(int(rng.uniform(0, window_us)) for _ in range(count))
    return random_pairs(n, starts, [size] * count, rng)


def poisson_mixed(n: int, lo: int, hi: int, window_us: int, load: float,
                  rng: random.Random) -> list[Flow]:
    """As `poisson`, with sizes drawn log-uniform on [lo, hi] bytes until their sum reaches
    `load` of all host links over `window_us` (so the count follows from the draws)."""
    target = load * n * HOST_GBPS * 1e9 * window_us * 1e-6 / 8
    sizes: list[int] = []
    while sum(sizes) < target:
        sizes.append(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
    starts = sorted(int(rng.uniform(0, window_us)) for _ in sizes)
    return random_pairs(n, starts, sizes, rng)


def generate(out: Path) -> None:
    """Every held-out .cm into `out`."""
    # perm1024 at 1 MB and 4 MB: one new permutation (not perm1024_2MB's), same pairs at both sizes
    p = derangement(HOSTS3, random.Random(18001))
    for name, size in (("perm1024b_256KB", 256 * KB), ("perm1024b_1MB", 1 * MB),
                       ("perm1024b_4MB", 4 * MB)):
        write_cm(out / f"{name}.cm", HOSTS3, permutation(HOSTS3, size, 0, p))

    # incast 32-to-1 of 1 MB: a new receiver, 32 senders from anywhere else (its own ToR included)
    recv, senders = incast_senders(HOSTS3, 32, random.Random(18032))
    write_cm(out / "incast32_1MB.cm", HOSTS3, [(s, recv, 0, 1 * MB) for s in senders])

    # incast 16-to-1 of 1 MB on the 2-tier 400G fabric (senders from any other ToR or its own)
    recv, senders = incast_senders(HOSTS2, 16, random.Random(18216))
    write_cm(out / "incast16_1MB_2tier.cm", HOSTS2, [(s, recv, 0, 1 * MB) for s in senders])

    # 2-tier, 128 hosts at 400G: a new permutation of 4 MB flows (run healthy, -failed 1, -failed 4)
    p = derangement(HOSTS2, random.Random(18128))
    write_cm(out / "perm128b_4MB.cm", HOSTS2, permutation(HOSTS2, 4 * MB, 0, p))

    # mixed on 2 tiers: perm128b's pairs at 1 MB (ids 1..128) plus a concurrent 8-to-1 incast of
    # 1 MB (ids 129..136) from 8 culprits of other ToRs into one host, all at time 0
    rng = random.Random(18136)
    r = rng.randrange(HOSTS2)
    cand = [h for h in range(HOSTS2) if h // 8 != r // 8 and p[h] != r]
    culprits = rng.sample(cand, 8)
    write_cm(out / "mix_perm128_incast8_1MB_2tier.cm", HOSTS2,
             permutation(HOSTS2, 1 * MB, 0, p) + [(s, r, 0, 1 * MB) for s in culprits])

    # all-to-all among 32 hosts of the 1024 (a job spread over the fabric), 256 KB per pair
    members = sorted(random.Random(18256).sample(range(HOSTS3), 32))
    write_cm(out / "a2a32_256KB.cm", HOSTS3, all_to_all(members, 256 * KB))

    # two waves of 1 MB permutations: the second (a different derangement, no pair shared with
    # the first) starts at 60 us, while the first is still sending (1 MB is 80 us at 100G)
    w1, w2 = disjoint_derangements(HOSTS3, random.Random(18002))
    write_cm(out / "waves1024_1MB_60us.cm", HOSTS3,
             permutation(HOSTS3, 1 * MB, 0, w1) + permutation(HOSTS3, 1 * MB, 60, w2))

    # a ring step of 1 MB (host i to host i+1, as one step of a ring all-reduce over hosts in
    # rank order): 7 of 8 flows stay in their ToR, the 128 others cross to the next ToR
    write_cm(out / "ring1024_1MB.cm", HOSTS3,
             [(i, (i + 1) % HOSTS3, 0, 1 * MB) for i in range(HOSTS3)])

    # into pod 0 from outside: each of pod 0's 64 hosts receives one 2 MB flow from a distinct
    # host of pods 1..15, at time 0; run healthy and with `-tiers 3 -failed 4` (htsim then slows
    # 4 of the 8 core->aggregation links into aggregation switch 0 of pod 0)
    rng = random.Random(18064)
    senders = rng.sample(range(64, HOSTS3), 64)
    write_cm(out / "pod0in_2MB.cm", HOSTS3, [(s, d, 0, 2 * MB) for d, s in enumerate(senders)])

    # Poisson arrivals of 1 MB flows over 300 us at 30% and 60% of the host links' capacity
    for pct, seed in ((30, 18300), (60, 18600)):
        write_cm(out / f"poisson1024_1MB_300us_load{pct}.cm", HOSTS3,
                 poisson(HOSTS3, 1 * MB, 300, pct / 100, random.Random(seed)))

    # Poisson arrivals of mixed sizes, log-uniform on [64 KB, 4 MB], over 300 us at 40% load
    write_cm(out / "poisson1024_mixed_300us_load40.cm", HOSTS3,
             poisson_mixed(HOSTS3, 64 * KB, 4 * MB, 300, 0.40, random.Random(18400)))


def run(generate_to: Callable[[Path], None], module_file: str, argv: list[str] | None) -> int:
    """A gen_cm's command line: its .cm files into the folder given, or beside `module_file`."""
    args = sys.argv[1:] if argv is None else argv
    generate_to(Path(args[0]) if args else Path(module_file).resolve().parent)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run(generate, __file__, argv)


if __name__ == "__main__":
    sys.exit(main())

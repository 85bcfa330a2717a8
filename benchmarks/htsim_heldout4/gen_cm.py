"""Write the fourth held-out set's connection matrices (.cm) for htsim, with fixed seeds.

    python benchmarks/htsim_heldout4/gen_cm.py [OUT_DIR]     (default: this folder)

Rerunning it rewrites the same files byte for byte (Python's `random`, seeds 18601-18612, none
of the calibration or earlier held-out sets'). Format and rules as
`benchmarks/htsim_heldout/gen_cm.py` (whose writer and helpers this uses): whole-microsecond
starts, decimal sizes, every (src, dst) pair unique within a file. Fabrics (htsim's
FatTreeTopologyCfg sizes them from `-nodes`: a 2-tier tree of K-port switches holds K^2/2
hosts, a 3-tier one K^3/4; hosts numbered ToR by ToR):
- 2-tier, 512 hosts (K = 32): 32 ToRs of 16 hosts, 16 spines, 400 Gb/s; host h on ToR h//16;
- 2-tier, 200 hosts (K = 20): 20 ToRs of 10 hosts, 10 spines, 100 Gb/s; ToR h//10;
- 3-tier, 250 hosts (K = 10): 10 pods of 5 ToRs x 5 hosts, 25 cores, 200 Gb/s; ToR h//5, pod h//25;
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
    derangement,
    disjoint_derangements,
    incast_senders,
    permutation,
    run,
    write_cm,
)


def concurrent_incasts(n: int, per_tor: int, incasts: int, fan_in: int, rng: random.Random
                       ) -> list[tuple[int, list[int]]]:
    """`incasts` receivers on distinct ToRs, each with `fan_in` senders of other ToRs than its
    own; no host is in two incasts."""
    tors = rng.sample(range(n // per_tor), incasts)
    recvs = [per_tor * t + rng.randrange(per_tor) for t in tors]
    free = [h for h in range(n) if h not in recvs]
    rng.shuffle(free)
    out = []
    for r in recvs:
        senders = [h for h in free if h // per_tor != r // per_tor][:fan_in]
        free = [h for h in free if h not in senders]
        out.append((r, senders))
    return out


def generate(out: Path) -> None:
    """Every .cm of the fourth held-out set into `out`."""
    # 2-tier 512 hosts at 400G: a permutation of 512 KB
    p = derangement(512, random.Random(18601))
    write_cm(out / "perm512_512KB.cm", 512, permutation(512, 512 * KB, 0, p))

    # 2-tier 512: another permutation, of 2 MB (run with -failed 2: spines 0-1 of 16 at 25%)
    p = derangement(512, random.Random(18602))
    write_cm(out / "perm512_2MB.cm", 512, permutation(512, 2 * MB, 0, p))

    # 2-tier 200 hosts at 100G: a permutation of 2 MB (run healthy and with -failed 1: one
    # spine of 10 at 25%)
    p = derangement(200, random.Random(18603))
    write_cm(out / "perm200_2MB.cm", 200, permutation(200, 2 * MB, 0, p))

    # a 48-to-1 incast of 1 MB on the 3-tier 1024 (senders from anywhere but the receiver)
    recv, senders = incast_senders(1024, 48, random.Random(18605))
    write_cm(out / "incast48_1MB.cm", 1024, [(s, recv, 0, 1 * MB) for s in senders])

    # 16 concurrent 4-to-1 incasts of 1 MB on the 2-tier 512: receivers on 16 distinct ToRs,
    # every sender on another ToR than its receiver, no host in two incasts
    flows: list[Flow] = []
    for r, senders in concurrent_incasts(512, 16, 16, 4, random.Random(18606)):
        flows += [(s, r, 0, 1 * MB) for s in senders]
    write_cm(out / "incasts16x4_1MB_2tier512.cm", 512, flows)

    # a shift by a quarter of the 2-tier 512: host i sends 1 MB to host i+128 (ToR t to ToR
    # t+8), every flow through a spine
    write_cm(out / "shift128_1MB_2tier512.cm", 512,
             [(i, (i + 128) % 512, 0, 1 * MB) for i in range(512)])

    # a permutation of mixed sizes on the 3-tier 1024: 102 flows (10%, chosen at random) of
    # 8 MB, the other 922 of 128 KB, all at 0
    rng = random.Random(18608)
    p = derangement(1024, rng)
    big = set(rng.sample(range(1024), 102))
    write_cm(out / "perm1024_mix10pc8MB_128KB.cm", 1024,
             [(i, d, 0, 8 * MB if i in big else 128 * KB) for i, d in enumerate(p)])

    # a staggered ring on the 3-tier 1024: one member per ToR (128) in random order, member k
    # sends 1 MB to member k+1 starting at 5k us (a pipeline whose stages start one by one)
    rng = random.Random(18609)
    members = [8 * t + rng.randrange(8) for t in range(128)]
    rng.shuffle(members)
    write_cm(out / "ring128_stag5us_1MB.cm", 1024,
             [(s, members[(k + 1) % 128], 5 * k, 1 * MB) for k, s in enumerate(members)])

    # two permutations of different sizes overlapping on the 3-tier 250 at 200G: 4 MB at 0, and
    # 512 KB in two waves at 40 and 100 us (three derangements sharing no pair)
    a, b1, b2 = disjoint_derangements(250, random.Random(18610), 3)
    write_cm(out / "overlap250_4MB_2x512KB.cm", 250,
             permutation(250, 4 * MB, 0, a) + permutation(250, 512 * KB, 40, b1)
             + permutation(250, 512 * KB, 100, b2))

    # mixed on the 2-tier 200 at 100G (run with -failed 1): a 12-to-1 incast of 1 MB from
    # culprits of other ToRs beside a 512 KB permutation of the other 187 hosts, all at 0
    rng = random.Random(18611)
    recv, culprits = incast_senders(200, 12, rng, per_tor=10)
    rest = [h for h in range(200) if h != recv and h not in culprits]
    q = derangement(len(rest), rng)
    write_cm(out / "mix_perm_incast12_1MB_2tier100.cm", 200,
             [(rest[i], rest[q[i]], 0, 512 * KB) for i in range(len(rest))]
             + [(s, recv, 0, 1 * MB) for s in culprits])

    # a staggered 24-to-1 incast of 256 KB on the 2-tier 200 at 100G: senders on other ToRs,
    # sender k starts at 2k us (the fan-in builds up while the first flows drain)
    recv, senders = incast_senders(200, 24, random.Random(18612), per_tor=10)
    write_cm(out / "incast24_stag2us_256KB_2tier100.cm", 200,
             [(s, recv, 2 * k, 256 * KB) for k, s in enumerate(senders)])


def main(argv: list[str] | None = None) -> int:
    return run(generate, __file__, argv)


if __name__ == "__main__":
    sys.exit(main())

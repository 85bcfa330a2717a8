"""Write the second held-out set's connection matrices (.cm) for htsim, with fixed seeds.

    python benchmarks/htsim_heldout2/gen_cm.py [OUT_DIR]     (default: this folder)

Same format and helpers as benchmarks/htsim_heldout/gen_cm.py; new seeds (27xxx), new shapes
and sizes, so that no scenario here is one the twin's mechanisms were built or checked on.
Hosts: in the 3-tier 1024-host tree host h sits on ToR h//8 of pod h//64; in the 2-tier
128-host tree on ToR h//8.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from benchmarks.htsim_heldout.gen_cm import (
    HOSTS2,
    HOSTS3,
    KB,
    MB,
    all_to_all,
    derangement,
    disjoint_derangements,
    incast_senders,
    permutation,
    poisson,
    run,
    write_cm,
)


def generate(out: Path) -> None:
    """Every .cm of the second held-out set into `out`."""
    # a third 1024-host permutation at a size no other set uses
    p = derangement(HOSTS3, random.Random(27001))
    write_cm(out / "perm1024c_1500KB.cm", HOSTS3, permutation(HOSTS3, 1500 * KB, 0, p))

    # incast 24-to-1 of 512 KB on 3 tiers
    recv, senders = incast_senders(HOSTS3, 24, random.Random(27024))
    write_cm(out / "incast24_512KB.cm", HOSTS3, [(s, recv, 0, 512 * KB) for s in senders])

    # incast 8-to-1 of 4 MB on the 2-tier 400G fabric
    recv, senders = incast_senders(HOSTS2, 8, random.Random(27008))
    write_cm(out / "incast8_4MB_2tier.cm", HOSTS2, [(s, recv, 0, 4 * MB) for s in senders])

    # a new 2-tier permutation of 1 MB (run with -failed 2 and -failed 3)
    p = derangement(HOSTS2, random.Random(27128))
    write_cm(out / "perm128c_1MB.cm", HOSTS2, permutation(HOSTS2, 1 * MB, 0, p))

    # all-to-all among 16 of the 128 hosts of the 2-tier fabric, 1 MB per pair
    members = sorted(random.Random(27016).sample(range(HOSTS2), 16))
    write_cm(out / "a2a16_1MB_2tier.cm", HOSTS2, all_to_all(members, 1 * MB))

    # two waves of 512 KB permutations, the second at 30 us (512 KB is 41 us at 100G)
    w1, w2 = disjoint_derangements(HOSTS3, random.Random(27030))
    write_cm(out / "waves1024_512KB_30us.cm", HOSTS3,
             permutation(HOSTS3, 512 * KB, 0, w1) + permutation(HOSTS3, 512 * KB, 30, w2))

    # Poisson arrivals of 2 MB flows over 400 us at 45% of the host links
    write_cm(out / "poisson1024_2MB_400us_load45.cm", HOSTS3,
             poisson(HOSTS3, 2 * MB, 400, 0.45, random.Random(27045)))

    # a 512 KB permutation on 3 tiers with a concurrent 8-to-1 incast of 512 KB from other pods
    rng = random.Random(27108)
    p = derangement(HOSTS3, rng)
    r = rng.randrange(HOSTS3)
    cand = [h for h in range(HOSTS3) if h // 64 != r // 64 and p[h] != r]
    write_cm(out / "mix_perm1024_incast8_512KB.cm", HOSTS3,
             permutation(HOSTS3, 512 * KB, 0, p)
             + [(s, r, 0, 512 * KB) for s in rng.sample(cand, 8)])


def main(argv: list[str] | None = None) -> int:
    return run(generate, __file__, argv)


if __name__ == "__main__":
    sys.exit(main())

"""An eighth held-out set of htsim runs for issue 18 (BLIND8, 2026-12-04), built while nobody on
the model side could see it: 8 scenarios on fabrics no earlier set has (2-tier fabrics of 450
hosts at 100G with 5 of 15 spines slowed, of 32 at 200G with 2 of 4 slowed, of 800 at 100G with
6 of 20 slowed, of 450 at 100G, of 32 at 400G and of 800 at 200G; 3-tier ones of 54 hosts at
100G and of 686 at 200G) and traffic shapes (a permutation of 1 MB, an all-to-all of 256 KB
among all 32 hosts, a ring step over ranks interleaved across ToRs, 16 jittered 20-to-1 incasts
of 16 KB, a jittered 48-to-1 incast of 24 KB, a jittered 150-to-1 incast of 48 KB, an 8 MB
permutation with 4-to-1 incasts of 64 KB starting 50 us later, a permutation of 2 MB staggered
over 200 us). Run once per regime, to be scored once on the model of the day: never calibrate
on it.

The form of benchmarks/htsim_heldout (SCENARIOS, REGIMES, REFERENCE, available(), runs.json),
so `python benchmarks/htsim_calibration.py --new-runs benchmarks/htsim_heldout8` scores the
twin on it (`score.sh` here wraps that) and `python -m benchmarks.htsim_heldout.run --suite
benchmarks.htsim_heldout8 run --bin DIR` makes the runs.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.htsim_calibration import Scenario, htsim_fat_tree
from benchmarks.htsim_heldout import available_in

REFERENCE = Path(__file__).resolve().parent
REGIMES = ("roce_ecmp", "uec_oblivious", "uec_reps")

# htsim's default sizing from -nodes (htsim_calibration.htsim_fat_tree)
FAT2_450 = htsim_fat_tree(450, 2, 100)
FAT2_32_200 = htsim_fat_tree(32, 2, 200)
FAT2_800 = htsim_fat_tree(800, 2, 100)
FAT2_32_400 = htsim_fat_tree(32, 2, 400)
FAT2_800_200 = htsim_fat_tree(800, 2, 200)
FAT3_54 = htsim_fat_tree(54, 3, 100)
FAT3_686 = htsim_fat_tree(686, 3, 200)

# `failed` is htsim's `-failed K` on 2 tiers: at every ToR the links to and from spines 0..K-1
# run at 25% (with 25% of their queues)
SCENARIOS = {s.name: s for s in (
    Scenario("perm450_1MB_2tier100_failed5", "perm450_1MB.cm", FAT2_450, failed=5),
    Scenario("a2a32_256KB_2tier200_failed2", "a2a32_256KB.cm", FAT2_32_200, failed=2),
    Scenario("ring800_xtor_512KB_2tier100_failed6", "ring800_xtor_512KB.cm", FAT2_800,
             failed=6),
    Scenario("incast16x20_16KB_jit30us_2tier100", "incast16x20_16KB_jit30us.cm", FAT2_450),
    Scenario("incast48_24KB_jit20us_3tier54", "incast48_24KB_jit20us.cm", FAT3_54),
    Scenario("incast150_48KB_jit50us_3tier686", "incast150_48KB_jit50us.cm", FAT3_686),
    Scenario("mix_perm32_8MB_incast4x8_64KB_2tier400", "mix_perm32_8MB_incast4x8_64KB.cm",
             FAT2_32_400),
    Scenario("perm800_2MB_stag200us_2tier200", "perm800_2MB_stag200us.cm", FAT2_800_200),
)}
ALL = SCENARIOS


def available(scenarios: dict[str, Scenario] = SCENARIOS) -> list[str]:
    """The scenarios whose CSVs are here for every regime."""
    return available_in(REFERENCE, scenarios, REGIMES)

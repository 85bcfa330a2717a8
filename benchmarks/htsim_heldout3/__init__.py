"""A third held-out set of htsim runs for issue 18 (TWIN18C, 2026-12-02): fabric sizes, speeds,
fan-ins and traffic shapes no earlier set has (a 2-tier 288-host fabric at 200G, a 3-tier
432-host one, a 32-host one with 4 spines, a staggered all-to-all, a shift across pods, a
fan-out, two incasts beside a permutation). Written, run once per regime and scored once after
the model was fixed: never calibrate on it.

The form of benchmarks/htsim_heldout (SCENARIOS, REGIMES, REFERENCE, available(), runs.json),
so `python benchmarks/htsim_calibration.py --new-runs benchmarks/htsim_heldout3` scores the
twin on it and `python -m benchmarks.htsim_heldout.run --suite benchmarks.htsim_heldout3 run
--bin DIR` makes the runs.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.htsim_calibration import FAT2, FAT3, Scenario, htsim_fat_tree
from benchmarks.htsim_heldout import available_in

REFERENCE = Path(__file__).resolve().parent
REGIMES = ("roce_ecmp", "uec_oblivious", "uec_reps")

# htsim's default sizing from -nodes (htsim_calibration.htsim_fat_tree)
FAT2_288 = htsim_fat_tree(288, 2, 200)
FAT3_432 = htsim_fat_tree(432, 3, 100)
FAT2_32 = htsim_fat_tree(32, 2, 400)

SCENARIOS = {s.name: s for s in (
    Scenario("perm288_1MB_2tier200", "perm288_1MB.cm", FAT2_288),
    Scenario("perm288_1MB_2tier200_failed3", "perm288_1MB.cm", FAT2_288, failed=3),
    Scenario("perm432_768KB_3tier", "perm432_768KB.cm", FAT3_432),
    Scenario("incast32_256KB", "incast32_256KB.cm", FAT3),
    Scenario("incast12_2MB_2tier288", "incast12_2MB_2tier288.cm", FAT2_288),
    Scenario("a2a16_stag3us_512KB_2tier", "a2a16_stag3us_512KB_2tier.cm", FAT2),
    Scenario("shift64_512KB", "shift64_512KB.cm", FAT3),
    Scenario("fanout16_1MB", "fanout16_1MB.cm", FAT3),
    Scenario("perm32_4MB_2tier", "perm32_4MB.cm", FAT2_32),
    Scenario("poisson288_512KB_200us_load50", "poisson288_512KB_200us_load50.cm", FAT2_288),
    Scenario("mix_perm432_2incast8_1MB", "mix_perm432_2incast8_1MB.cm", FAT3_432),
)}
ALL = SCENARIOS


def available(scenarios: dict[str, Scenario] = SCENARIOS) -> list[str]:
    """The scenarios whose CSVs are here for every regime."""
    return available_in(REFERENCE, scenarios, REGIMES)

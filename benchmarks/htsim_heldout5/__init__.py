"""A fifth held-out set of htsim runs for issue 18 (BLIND5, 2026-12-02), built while nobody on
the model side could see it: fabrics, fan-ins and traffic shapes no earlier set has (2-tier
fabrics of 72 hosts at 100G with half of the 6 spines slowed, of 648 at 200G with 4 of 18
slowed, of 392 at 200G and of 162 at 400G, a 3-tier one of 128 hosts at 200G; a 64-to-1 incast
of 64 KB, an 8-to-1 of 16 MB, a ToR-to-ToR hot spot, an all-to-all of 64 KB, a tree all-reduce's
reduce phase in one pod, a permutation under one elephant per ToR, Poisson arrivals at 75% load,
a permutation of four sizes, a permutation with jittered starts). Run once per regime, to be
scored once on the final model: never calibrate on it.

The form of benchmarks/htsim_heldout (SCENARIOS, REGIMES, REFERENCE, available(), runs.json),
so `python benchmarks/htsim_calibration.py --new-runs benchmarks/htsim_heldout5` scores the
twin on it (`score.sh` here wraps that) and `python -m benchmarks.htsim_heldout.run --suite
benchmarks.htsim_heldout5 run --bin DIR` makes the runs.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.htsim_calibration import FAT3, Scenario, htsim_fat_tree
from benchmarks.htsim_heldout import available_in

REFERENCE = Path(__file__).resolve().parent
REGIMES = ("roce_ecmp", "uec_oblivious", "uec_reps")

# htsim's default sizing from -nodes (htsim_calibration.htsim_fat_tree)
FAT2_72 = htsim_fat_tree(72, 2, 100)
FAT2_648 = htsim_fat_tree(648, 2, 200)
FAT2_392 = htsim_fat_tree(392, 2, 200)
FAT2_162 = htsim_fat_tree(162, 2, 400)
FAT3_128 = htsim_fat_tree(128, 3, 200)

SCENARIOS = {s.name: s for s in (
    Scenario("perm72_4MB_2tier100", "perm72_4MB.cm", FAT2_72),
    Scenario("perm72_4MB_2tier100_failed3", "perm72_4MB.cm", FAT2_72, failed=3),
    Scenario("perm648_1MB_2tier200_failed4", "perm648_1MB.cm", FAT2_648, failed=4),
    Scenario("a2a32_64KB_3tier128", "a2a32_64KB_3tier128.cm", FAT3_128),
    Scenario("hotspot_tor14x14_256KB_2tier392", "hotspot_tor14x14_256KB_2tier392.cm", FAT2_392),
    Scenario("incast64_64KB", "incast64_64KB.cm", FAT3),
    Scenario("incast8_16MB_2tier72", "incast8_16MB_2tier72.cm", FAT2_72),
    Scenario("tree64_1MB_pod", "tree64_1MB_pod.cm", FAT3),
    Scenario("perm144_256KB_under18x16MB_2tier162", "perm144_256KB_under18x16MB_2tier162.cm",
             FAT2_162),
    Scenario("poisson72_256KB_300us_load75", "poisson72_256KB_300us_load75.cm", FAT2_72),
    Scenario("perm128_mix4sizes_3tier128", "perm128_mix4sizes_3tier128.cm", FAT3_128),
    Scenario("perm392_512KB_ramp100us_2tier392", "perm392_512KB_ramp100us_2tier392.cm",
             FAT2_392),
)}
ALL = SCENARIOS


def available(scenarios: dict[str, Scenario] = SCENARIOS) -> list[str]:
    """The scenarios whose CSVs are here for every regime."""
    return available_in(REFERENCE, scenarios, REGIMES)

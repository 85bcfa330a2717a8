"""A second held-out set of htsim runs for issue 18, made after the first was used to build
mechanisms: scenario shapes, sizes and seeds that no calibration or held-out run has.

The form of benchmarks/htsim_heldout (SCENARIOS, REGIMES, REFERENCE, available(), runs.json),
so `python benchmarks/htsim_calibration.py --new-runs benchmarks/htsim_heldout2` compares the
twin on it. Made by the lead, not looked at while building a mechanism: never calibrate on it.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.htsim_calibration import FAT2, FAT3, Scenario
from benchmarks.htsim_heldout import available_in

REFERENCE = Path(__file__).resolve().parent
REGIMES = ("roce_ecmp", "uec_oblivious", "uec_reps")

SCENARIOS = {s.name: s for s in (
    Scenario("perm1024c_1500KB", "perm1024c_1500KB.cm", FAT3),
    Scenario("incast24_512KB", "incast24_512KB.cm", FAT3),
    Scenario("incast8_4MB_2tier", "incast8_4MB_2tier.cm", FAT2),
    Scenario("perm128c_1MB_2tier_failed2", "perm128c_1MB.cm", FAT2, failed=2),
    Scenario("perm128c_1MB_2tier_failed3", "perm128c_1MB.cm", FAT2, failed=3),
    Scenario("a2a16_1MB_2tier", "a2a16_1MB_2tier.cm", FAT2),
    Scenario("waves1024_512KB_30us", "waves1024_512KB_30us.cm", FAT3),
    Scenario("poisson1024_2MB_400us_load45", "poisson1024_2MB_400us_load45.cm", FAT3),
    Scenario("mix_perm1024_incast8_512KB", "mix_perm1024_incast8_512KB.cm", FAT3),
)}
ALL = SCENARIOS


def available(scenarios: dict[str, Scenario] = SCENARIOS) -> list[str]:
    """The scenarios whose CSVs are here for every regime."""
    return available_in(REFERENCE, scenarios, REGIMES)

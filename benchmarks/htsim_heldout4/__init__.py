"""A fourth held-out set of htsim runs for issue 18 (BLIND18, 2026-12-02), built while nobody on
the model side could see it: fabrics, fan-ins and traffic shapes no earlier set has (a 2-tier
512-host fabric at 400G with 2 of 16 spines slowed, a 2-tier 200-host one at 100G with 1 of 10
slowed, a 3-tier 250-host one at 200G, a 48-to-1 incast, 16 concurrent 4-to-1 incasts, a
staggered 24-to-1, an incast beside a permutation on a slowed spine, a shift by a quarter of
the fabric, a 10%-elephant permutation, a staggered ring, two overlapping permutations of
different sizes). Run once per regime, to
be scored once on the final model: never calibrate on it.

The form of benchmarks/htsim_heldout (SCENARIOS, REGIMES, REFERENCE, available(), runs.json),
so `python benchmarks/htsim_calibration.py --new-runs benchmarks/htsim_heldout4` scores the
twin on it (`score.sh` here wraps that) and `python -m benchmarks.htsim_heldout.run --suite
benchmarks.htsim_heldout4 run --bin DIR` makes the runs.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.htsim_calibration import FAT3, Scenario, htsim_fat_tree
from benchmarks.htsim_heldout import available_in

REFERENCE = Path(__file__).resolve().parent
REGIMES = ("roce_ecmp", "uec_oblivious", "uec_reps")

# htsim's default sizing from -nodes (htsim_calibration.htsim_fat_tree)
FAT2_512 = htsim_fat_tree(512, 2, 400)
FAT2_200 = htsim_fat_tree(200, 2, 100)
FAT3_250 = htsim_fat_tree(250, 3, 200)

SCENARIOS = {s.name: s for s in (
    Scenario("perm512_512KB_2tier", "perm512_512KB.cm", FAT2_512),
    Scenario("perm512_2MB_2tier_failed2", "perm512_2MB.cm", FAT2_512, failed=2),
    Scenario("perm200_2MB_2tier100", "perm200_2MB.cm", FAT2_200),
    Scenario("perm200_2MB_2tier100_failed1", "perm200_2MB.cm", FAT2_200, failed=1),
    Scenario("incast48_1MB", "incast48_1MB.cm", FAT3),
    Scenario("incasts16x4_1MB_2tier512", "incasts16x4_1MB_2tier512.cm", FAT2_512),
    Scenario("shift128_1MB_2tier512", "shift128_1MB_2tier512.cm", FAT2_512),
    Scenario("perm1024_mix10pc8MB_128KB", "perm1024_mix10pc8MB_128KB.cm", FAT3),
    Scenario("ring128_stag5us_1MB", "ring128_stag5us_1MB.cm", FAT3),
    Scenario("overlap250_4MB_2x512KB_3tier200", "overlap250_4MB_2x512KB.cm", FAT3_250),
    Scenario("mix_perm_incast12_1MB_2tier100_failed1", "mix_perm_incast12_1MB_2tier100.cm",
             FAT2_200, failed=1),
    Scenario("incast24_stag2us_256KB_2tier100", "incast24_stag2us_256KB_2tier100.cm", FAT2_200),
)}
ALL = SCENARIOS


def available(scenarios: dict[str, Scenario] = SCENARIOS) -> list[str]:
    """The scenarios whose CSVs are here for every regime."""
    return available_in(REFERENCE, scenarios, REGIMES)

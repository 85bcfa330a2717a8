"""A sixth held-out set of htsim runs for issue 18 (BLIND6, 2026-12-02), built while nobody on
the model side could see it: fabrics, slowed-spine fractions and traffic shapes no earlier set
has (2-tier fabrics of 98 hosts at 400G with 2 of 7 spines slowed, of 242 at 100G with 2 of 11
slowed, of 338 at 200G, of 450 at 100G and of 50 at 200G; 3-tier ones of 686 hosts at 100G and
of 54 at 200G; an all-to-all of 32 KB over a whole fabric, an all-to-all of uneven MoE sizes, a
recursive halving-doubling reduce-scatter, a bidirectional ring, Poisson arrivals of mixed
sizes, a jittered 40-to-1 incast of 128 KB, a permutation beside an all-to-all, a random
4-way scatter of 128 KB, long permutations). Run once per regime, to be scored once on the
final model: never calibrate on it.

The form of benchmarks/htsim_heldout (SCENARIOS, REGIMES, REFERENCE, available(), runs.json),
so `python benchmarks/htsim_calibration.py --new-runs benchmarks/htsim_heldout6` scores the
twin on it (`score.sh` here wraps that) and `python -m benchmarks.htsim_heldout.run --suite
benchmarks.htsim_heldout6 run --bin DIR` makes the runs.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.htsim_calibration import Scenario, htsim_fat_tree
from benchmarks.htsim_heldout import available_in

REFERENCE = Path(__file__).resolve().parent
REGIMES = ("roce_ecmp", "uec_oblivious", "uec_reps")

# htsim's default sizing from -nodes (htsim_calibration.htsim_fat_tree)
FAT2_98 = htsim_fat_tree(98, 2, 400)
FAT2_242 = htsim_fat_tree(242, 2, 100)
FAT2_338 = htsim_fat_tree(338, 2, 200)
FAT2_450 = htsim_fat_tree(450, 2, 100)
FAT2_50 = htsim_fat_tree(50, 2, 200)
FAT3_686 = htsim_fat_tree(686, 3, 100)
FAT3_54 = htsim_fat_tree(54, 3, 200)

SCENARIOS = {s.name: s for s in (
    Scenario("perm98_8MB_2tier400", "perm98_8MB.cm", FAT2_98),
    Scenario("perm98_8MB_2tier400_failed2", "perm98_8MB.cm", FAT2_98, failed=2),
    Scenario("perm242_1MB_2tier100_failed2", "perm242_1MB.cm", FAT2_242, failed=2),
    Scenario("perm686_2MB_3tier686", "perm686_2MB_3tier686.cm", FAT3_686),
    Scenario("biring450_1MB_2tier100", "biring450_1MB_2tier100.cm", FAT2_450),
    Scenario("hd64_rs8MB_2tier338", "hd64_rs8MB_2tier338.cm", FAT2_338),
    Scenario("a2a54_32KB_3tier54", "a2a54_32KB_3tier54.cm", FAT3_54),
    Scenario("a2a32_moe32to256KB_2tier450", "a2a32_moe32to256KB_2tier450.cm", FAT2_450),
    Scenario("poisson242_mix32KBto1MB_200us_load55", "poisson242_mix32KBto1MB_200us_load55.cm",
             FAT2_242),
    Scenario("incast40_jit20us_128KB_3tier686", "incast40_jit20us_128KB_3tier686.cm", FAT3_686),
    Scenario("mix_perm338_4MB_a2a16_64KB", "mix_perm338_4MB_a2a16_64KB.cm", FAT2_338),
    Scenario("scatter4_128KB_jit10us_2tier50", "scatter4_128KB_jit10us_2tier50.cm", FAT2_50),
)}
ALL = SCENARIOS


def available(scenarios: dict[str, Scenario] = SCENARIOS) -> list[str]:
    """The scenarios whose CSVs are here for every regime."""
    return available_in(REFERENCE, scenarios, REGIMES)

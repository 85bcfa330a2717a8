"""A seventh held-out set of htsim runs for issue 18 (BLIND7, 2026-12-03), built while nobody on
the model side could see it: fabrics, slowed-spine fractions and traffic shapes no earlier set
has (2-tier fabrics of 50 hosts at 400G with 1 of 5 spines slowed, of 162 at 100G with 3 of 9
slowed, of 338 at 100G with 2 of 13 slowed, of 18 at 200G with 1 of 3 slowed, of 578 at 100G
with 4 of 17 slowed, of 72 at 400G, of 392 at 100G, of 200 at 200G and of 288 at 100G; 3-tier
ones of 250 hosts at 100G, of 432 at 200G and of 128 at 100G; a permutation of 16 MB, a
permutation with a few ToR-local flows, a ring step interleaved across ToRs, an all-to-all
among 12 of 18 hosts, an incast beside a permutation, a 2D-torus neighbour exchange, a butterfly
step between ToR pairs, a jittered gather into 10 aggregators, a jittered 120-to-1 incast of
32 KB, pipeline-parallel forward and backward transfers, a hierarchical ToR-ring plus rail-ring
all-reduce step, an MoE all-to-all with hot experts). Run once per regime, to be scored once on
the final model: never calibrate on it.

The form of benchmarks/htsim_heldout (SCENARIOS, REGIMES, REFERENCE, available(), runs.json),
so `python benchmarks/htsim_calibration.py --new-runs benchmarks/htsim_heldout7` scores the
twin on it (`score.sh` here wraps that) and `python -m benchmarks.htsim_heldout.run --suite
benchmarks.htsim_heldout7 run --bin DIR` makes the runs.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.htsim_calibration import Scenario, htsim_fat_tree
from benchmarks.htsim_heldout import available_in

REFERENCE = Path(__file__).resolve().parent
REGIMES = ("roce_ecmp", "uec_oblivious", "uec_reps")

# htsim's default sizing from -nodes (htsim_calibration.htsim_fat_tree)
FAT2_50 = htsim_fat_tree(50, 2, 400)
FAT2_162 = htsim_fat_tree(162, 2, 100)
FAT2_338 = htsim_fat_tree(338, 2, 100)
FAT2_18 = htsim_fat_tree(18, 2, 200)
FAT2_578 = htsim_fat_tree(578, 2, 100)
FAT2_72 = htsim_fat_tree(72, 2, 400)
FAT2_392 = htsim_fat_tree(392, 2, 100)
FAT2_200 = htsim_fat_tree(200, 2, 200)
FAT2_288 = htsim_fat_tree(288, 2, 100)
FAT3_250 = htsim_fat_tree(250, 3, 100)
FAT3_432 = htsim_fat_tree(432, 3, 200)
FAT3_128 = htsim_fat_tree(128, 3, 100)

# `failed` is htsim's `-failed K` on 2 tiers: at every ToR the links to and from spines 0..K-1
# run at 25% (with 25% of their queues)
SCENARIOS = {s.name: s for s in (
    Scenario("perm50_16MB_2tier400_failed1", "perm50_16MB.cm", FAT2_50, failed=1),
    Scenario("perm162_2MB_local12_2tier100_failed3", "perm162_2MB_local12.cm", FAT2_162,
             failed=3),
    Scenario("ring338_xtor_2MB_2tier100_failed2", "ring338_xtor_2MB.cm", FAT2_338, failed=2),
    Scenario("a2a12_1MB_2tier18_failed1", "a2a12_1MB_2tier18.cm", FAT2_18, failed=1),
    Scenario("mix_perm578_256KB_incast16_2MB_failed4", "mix_perm578_256KB_incast16_2MB.cm",
             FAT2_578, failed=4),
    Scenario("torus72_9x8_1MB_2tier400", "torus72_9x8_1MB.cm", FAT2_72),
    Scenario("butterfly392_xor2_2MB_2tier100", "butterfly392_xor2_2MB.cm", FAT2_392),
    Scenario("gather190to10_256KB_jit30us_2tier200", "gather190to10_256KB_jit30us.cm", FAT2_200),
    Scenario("incast120_32KB_jit40us_3tier250", "incast120_32KB_jit40us.cm", FAT3_250),
    Scenario("pp54x8_fwdbwd_1MB_3tier432", "pp54x8_fwdbwd_1MB.cm", FAT3_432),
    Scenario("hier128_torring2MB_rail1MB_3tier128", "hier128_torring2MB_rail1MB.cm", FAT3_128),
    Scenario("a2a24_moehot3_128KBto1MB_2tier288", "a2a24_moehot3_128KBto1MB.cm", FAT2_288),
)}
ALL = SCENARIOS


def available(scenarios: dict[str, Scenario] = SCENARIOS) -> list[str]:
    """The scenarios whose CSVs are here for every regime."""
    return available_in(REFERENCE, scenarios, REGIMES)

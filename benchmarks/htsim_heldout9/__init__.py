"""A ninth held-out set of htsim runs for issue 18 (BLIND8, 2026-12-04; made as an eighth,
committed as the ninth), built while nobody on
the model side could see it: fabrics, slowed-spine fractions and traffic shapes no earlier set
has (2-tier fabrics of 648 hosts at 100G with 7 of 18 spines slowed, of 98 at 200G with 3 of 7
slowed, of 242 at 200G with 4 of 11 slowed, of 50 at 100G with 2 of 5 slowed, of 512 at 200G,
of 722 at 100G, of 128 at 100G, of 200 at 400G and of 578 at 200G; 3-tier ones of 1024 hosts at
200G, of 432 at 100G and of 16 at 200G; a 1.5 MB permutation, an all-to-all of 768 KB among 28
of 98 hosts, a ring step over a random rank order of 4 MB, a ToR shift of 2 MB, a jittered
200-to-1 incast of 40 KB, 12 jittered 32-to-1 incasts of 24 KB, a jittered scatter from 6
roots to 60 hosts each of 64 KB, 8 jittered 24-to-1 incasts of 56 KB, a recursive-doubling
all-gather of 64 KB to 4.096 MB steps, a permutation of log-uniform sizes 16 KB-8 MB staggered
over 100 us, 4 parameter servers with 100 workers each pushing and pulling 128 KB, a skewed
all-to-all of 256 KB-2 MB among 16 hosts). Run once per regime, to be scored once on the model
of the day: never calibrate on it.

The form of benchmarks/htsim_heldout (SCENARIOS, REGIMES, REFERENCE, available(), runs.json),
so `python benchmarks/htsim_calibration.py --new-runs benchmarks/htsim_heldout9` scores the
twin on it (`score.sh` here wraps that) and `python -m benchmarks.htsim_heldout.run --suite
benchmarks.htsim_heldout9 run --bin DIR` makes the runs.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.htsim_calibration import Scenario, htsim_fat_tree
from benchmarks.htsim_heldout import available_in

REFERENCE = Path(__file__).resolve().parent
REGIMES = ("roce_ecmp", "uec_oblivious", "uec_reps")

# htsim's default sizing from -nodes (htsim_calibration.htsim_fat_tree)
FAT2_648 = htsim_fat_tree(648, 2, 100)
FAT2_98 = htsim_fat_tree(98, 2, 200)
FAT2_242 = htsim_fat_tree(242, 2, 200)
FAT2_50 = htsim_fat_tree(50, 2, 100)
FAT3_1024 = htsim_fat_tree(1024, 3, 200)
FAT2_512 = htsim_fat_tree(512, 2, 200)
FAT2_722 = htsim_fat_tree(722, 2, 100)
FAT3_432 = htsim_fat_tree(432, 3, 100)
FAT2_128 = htsim_fat_tree(128, 2, 100)
FAT2_200 = htsim_fat_tree(200, 2, 400)
FAT2_578 = htsim_fat_tree(578, 2, 200)
FAT3_16 = htsim_fat_tree(16, 3, 200)

# `failed` is htsim's `-failed K` on 2 tiers: at every ToR the links to and from spines 0..K-1
# run at 25% (with 25% of their queues)
SCENARIOS = {s.name: s for s in (
    Scenario("perm648_1500KB_2tier648_failed7", "perm648_1500KB.cm", FAT2_648, failed=7),
    Scenario("a2a28_768KB_2tier98_failed3", "a2a28_768KB.cm", FAT2_98, failed=3),
    Scenario("ring242_rand_4MB_2tier242_failed4", "ring242_rand_4MB.cm", FAT2_242, failed=4),
    Scenario("shift50_xtor_2MB_2tier50_failed2", "shift50_xtor_2MB.cm", FAT2_50, failed=2),
    Scenario("incast200_40KB_jit60us_3tier1024", "incast200_40KB_jit60us.cm", FAT3_1024),
    Scenario("incast32x12_24KB_jit20us_2tier512", "incast32x12_24KB_jit20us.cm", FAT2_512),
    Scenario("scatter6x60_64KB_jit40us_2tier722", "scatter6x60_64KB_jit40us.cm", FAT2_722),
    Scenario("incast24x8_56KB_jit15us_3tier432", "incast24x8_56KB_jit15us.cm", FAT3_432),
    Scenario("ag128_rd64KBto4MB_2tier128", "ag128_rd64KBto4MB.cm", FAT2_128),
    Scenario("perm200_mix16KBto8MB_stag100us_2tier200", "perm200_mix16KBto8MB_stag100us.cm",
             FAT2_200),
    Scenario("ps4x100_push128KB_pull128KB_2tier578", "ps4x100_push128KB_pull128KB.cm",
             FAT2_578),
    Scenario("a2a16_skew256KBto2MB_3tier16", "a2a16_skew256KBto2MB.cm", FAT3_16),
)}
ALL = SCENARIOS


def available(scenarios: dict[str, Scenario] = SCENARIOS) -> list[str]:
    """The scenarios whose CSVs are here for every regime."""
    return available_in(REFERENCE, scenarios, REGIMES)

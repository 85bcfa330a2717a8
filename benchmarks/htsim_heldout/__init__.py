"""Held-out packet-level runs of htsim for issue 18: scenarios the twin was never tuned on.

Declared in the form of `benchmarks/htsim_calibration.py` (its `Scenario` and fabrics), with
`REFERENCE` the folder holding the .cm files, the per-run CSVs and the README with htsim's wall
times. The .cm files come from `gen_cm.py` (fixed seeds), the CSVs from `run.py` (one htsim
run at a time) and `convert.py` (htsim's output to the CSV). Never calibrate on these.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.htsim_calibration import FAT2, FAT3, Scenario

REFERENCE = Path(__file__).resolve().parent

# the regimes run here (the three targets; roce_ar is not one)
REGIMES = ("roce_ecmp", "uec_oblivious", "uec_reps")

# `failed` is htsim's `-failed K` on 2 tiers: at every ToR the links to and from spines 0..K-1
# run at 25% (htsim_calibration.fabric_state applies the same)
SCENARIOS = {s.name: s for s in (
    Scenario("perm1024b_256KB", "perm1024b_256KB.cm", FAT3),
    Scenario("perm1024b_1MB", "perm1024b_1MB.cm", FAT3),
    Scenario("perm1024b_4MB", "perm1024b_4MB.cm", FAT3),
    Scenario("incast32_1MB", "incast32_1MB.cm", FAT3),
    Scenario("incast16_1MB_2tier", "incast16_1MB_2tier.cm", FAT2),
    Scenario("perm128b_4MB_2tier", "perm128b_4MB.cm", FAT2),
    Scenario("perm128b_4MB_2tier_failed1", "perm128b_4MB.cm", FAT2, failed=1),
    Scenario("perm128b_4MB_2tier_failed4", "perm128b_4MB.cm", FAT2, failed=4),
    Scenario("mix_perm128_incast8_1MB_2tier", "mix_perm128_incast8_1MB_2tier.cm", FAT2),
    Scenario("a2a32_256KB", "a2a32_256KB.cm", FAT3),
    Scenario("ring1024_1MB", "ring1024_1MB.cm", FAT3),
    Scenario("pod0in_2MB", "pod0in_2MB.cm", FAT3),
    Scenario("waves1024_1MB_60us", "waves1024_1MB_60us.cm", FAT3),
    Scenario("poisson1024_1MB_300us_load30", "poisson1024_1MB_300us_load30.cm", FAT3),
    Scenario("poisson1024_1MB_300us_load60", "poisson1024_1MB_300us_load60.cm", FAT3),
    Scenario("poisson1024_mixed_300us_load40", "poisson1024_mixed_300us_load40.cm", FAT3),
)}

# htsim's `-tiers 3 -failed K` means something else: K of the 8 core->aggregation links into
# aggregation switch 0 of pod 0 (cores 0, 8, ..., 8(K-1)) run at 25% with 25% of the queue, in
# that direction only. htsim_calibration.fabric_state applies the 2-tier meaning to any `failed`,
# so these are kept out of SCENARIOS: a twin run must slow those links itself before comparing.
TIER3_FAILED = {s.name: s for s in (
    Scenario("pod0in_2MB_3tier_failed4", "pod0in_2MB.cm", FAT3, failed=4),
)}

ALL = SCENARIOS | TIER3_FAILED


def available_in(folder: Path, scenarios: dict[str, Scenario], regimes: tuple[str, ...]
                 ) -> list[str]:
    """The scenarios of `folder` whose CSVs are there for every regime (a run may be skipped)."""
    return [name for name, sc in scenarios.items()
            if all((folder / sc.csv_name(r)).is_file() for r in regimes)]


def available(scenarios: dict[str, Scenario] = SCENARIOS) -> list[str]:
    """The scenarios whose CSVs are here for every regime (a run may have been skipped)."""
    return available_in(REFERENCE, scenarios, REGIMES)

"""htsim's spread over its hash seeds (benchmarks/htsim_seeds.py) and its lines in the harness."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import HTSIM_REFERENCE, REPO

from benchmarks.htsim_calibration import SCENARIOS, Row, load_seeds, seed_spread
from benchmarks.htsim_seeds import command, pooled_scenarios


def test_the_command_line_is_the_reference_readmes_plus_the_seed():
    readme = REPO.parent / "shared" / "reference" / "htsim" / "README.md"
    sc = SCENARIOS["perm128_2MB_2tier_failed2"]
    cmd = command(sc, Path(sc.cm), 13, Path("htsim_roce"))
    line = " ".join(cmd[:-2])
    assert cmd[-2:] == ["-seed", "13"]
    if readme.is_file():
        assert line in readme.read_text()
    else:  # the README's line, as it reads there
        assert line == ("htsim_roce -tiers 2 -q 100 -linkspeed 400000 -nodes 128 -strat ecmp_host "
                        "-paths 1 -failed 2 -end 20000 -tm perm128_2MB.cm")


def test_only_runs_the_twin_pools_are_seeded():
    if not HTSIM_REFERENCE.is_dir():  # every calibration .cm is read for its flow count
        pytest.skip("../shared/reference/htsim not present")
    names = pooled_scenarios()
    assert "perm128_2MB_2tier_failed2" in names and "incast16_2MB" in names
    assert "perm1024_2MB" not in names  # 1,024 flows: one draw, no pool


def test_spread_lines_compare_the_twin_with_htsims_median_over_seeds(tmp_path):
    path = tmp_path / "seeds.json"
    path.write_text(json.dumps({"perm128_2MB_2tier_failed2": {
        "13": [131.4, 740.0], "1": [117.7, 740.9], "2": [116.8, 657.5]}}))
    seeds = load_seeds(path)
    assert seeds["perm128_2MB_2tier_failed2"][2] == (116.8, 657.5)
    row = Row("perm128_2MB_2tier_failed2", "roce_ecmp", "128/128", (131.4, 740.0, 747.3),
              (116.6, 658.8, 658.8), 0.04, 2.1)
    other = Row("perm128_2MB_2tier_failed2", "uec_reps", "128/128", (1, 1, 1), (1, 1, 1), 0.0, None)
    lines = seed_spread([row, other], seeds)
    # htsim's medians over the 3 seeds: 117.7 and 740.0; the twin -0.9% / -11.0%
    assert "median 116.8-131.4 (117.7)" in lines[0] and "-0.9% / -11.0%" in lines[0]
    assert lines[-1].endswith("1 of 1 rows meet both bars")
    assert load_seeds(tmp_path / "none.json") == {} and seed_spread([row], {}) == []

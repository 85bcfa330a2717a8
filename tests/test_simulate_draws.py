"""`fabtwin simulate` pools ECMP's hash draws in its completion statistics, as the harness does."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner
from conftest import HTSIM_DATA

from benchmarks.htsim_calibration import SCENARIOS, twin_fct_us, twin_pooled_fct_us
from fabtwin.cli import main
from twin.scenario import fct_stats

REPO = Path(__file__).resolve().parents[1]
PERM128 = REPO / "scenarios" / "htsim_perm128_2tier_roce_ecmp.toml"


def _json(*args: str) -> dict:
    out = CliRunner().invoke(main, ["simulate", str(PERM128), "--json", "-q", *args])
    assert out.exit_code == 0, out.output
    return json.loads(out.output)["flows"]


def test_the_statistics_pool_eight_draws_as_the_harness_does():
    fl = _json()
    assert (fl["count"], fl["hash_draws"], fl["pooled_count"], fl["pooled_finished"]) == (128, 8, 1024, 1024)
    want = fct_stats(twin_pooled_fct_us(SCENARIOS["perm128_2MB_2tier"], "roce_ecmp", HTSIM_DATA))
    assert all(np.isclose(fl[f"fct_{k}_s"] * 1e6, want[k], rtol=1e-9) for k in want)


def test_one_draw_is_the_scenarios_seed_alone():
    fl = _json("--draws", "1")
    assert (fl["hash_draws"], fl["pooled_count"]) == (1, 128)
    want = fct_stats(twin_fct_us(SCENARIOS["perm128_2MB_2tier"], "roce_ecmp", HTSIM_DATA, seed=0))
    assert all(np.isclose(fl[f"fct_{k}_s"] * 1e6, want[k], rtol=1e-9) for k in want)


def test_the_help_says_how_many_draws():
    out = CliRunner().invoke(main, ["simulate", "--help"])
    assert "ceil(1000 / flows)" in out.output and "--draws" in out.output


def test_sprayed_traffic_has_no_draw_to_pool(tmp_path):
    sc = tmp_path / "spray.toml"
    sc.write_text(PERM128.read_text().replace('mode = "ecmp"', 'mode = "spray"').replace(
        'kind = "roce"', 'kind = "uec"').replace("../tests/data/htsim/perm128_2MB.cm",
                                                 str(REPO / "tests/data/htsim/perm128_2MB.cm")))
    out = CliRunner().invoke(main, ["simulate", str(sc), "--json", "-q"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["flows"]["hash_draws"] == 1

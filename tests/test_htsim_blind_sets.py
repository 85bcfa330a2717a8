"""The blind held-out htsim sets (benchmarks/htsim_heldout2, benchmarks/htsim_heldout3): each
set's .cm files come out of its gen_cm byte for byte, every run of every scenario is there with
one CSV row per .cm flow, and the calibration harness reads it as a new-runs folder."""

from __future__ import annotations

import importlib

import pytest

from benchmarks.htsim_calibration import htsim_fct_us, new_runs
from benchmarks.htsim_heldout.convert import read_cm

SETS = ("htsim_heldout2", "htsim_heldout3")


@pytest.fixture(params=SETS)
def blind(request):
    return importlib.import_module(f"benchmarks.{request.param}")


def test_gen_cm_rewrites_the_committed_files(blind, tmp_path):
    importlib.import_module(f"{blind.__name__}.gen_cm").generate(tmp_path)
    names = {sc.cm for sc in blind.SCENARIOS.values()}
    assert {p.name for p in tmp_path.glob("*.cm")} == names
    for name in names:
        assert (tmp_path / name).read_bytes() == (blind.REFERENCE / name).read_bytes(), name


def test_every_run_is_there_and_finished(blind):
    assert blind.available() == list(blind.SCENARIOS)
    for sc in blind.SCENARIOS.values():
        flows = len(read_cm(blind.REFERENCE / sc.cm))
        for regime in blind.REGIMES:
            fct, total = htsim_fct_us(blind.REFERENCE / sc.csv_name(regime))
            assert total == flows and len(fct) == flows, (sc.name, regime)
            assert (fct > 0).all()


def test_the_harness_reads_it_as_new_runs(blind):
    scenarios, regimes, walls = new_runs(blind.REFERENCE)
    assert list(scenarios) == list(blind.SCENARIOS) and regimes == blind.REGIMES
    assert len(walls) == len(blind.SCENARIOS) * len(blind.REGIMES)

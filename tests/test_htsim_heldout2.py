"""The second held-out htsim set (benchmarks/htsim_heldout2): its .cm files come out of gen_cm
byte for byte, every run of every scenario is there with one CSV row per .cm flow, and the
calibration harness reads it as a new-runs folder."""

from __future__ import annotations

from benchmarks.htsim_calibration import htsim_fct_us, new_runs
from benchmarks.htsim_heldout.convert import read_cm
from benchmarks.htsim_heldout2 import REFERENCE, REGIMES, SCENARIOS, available
from benchmarks.htsim_heldout2.gen_cm import generate


def test_gen_cm_rewrites_the_committed_files(tmp_path):
    generate(tmp_path)
    names = {sc.cm for sc in SCENARIOS.values()}
    assert {p.name for p in tmp_path.glob("*.cm")} == names
    for name in names:
        assert (tmp_path / name).read_bytes() == (REFERENCE / name).read_bytes(), name


def test_every_run_is_there_and_finished():
    assert available() == list(SCENARIOS)
    for sc in SCENARIOS.values():
        flows = len(read_cm(REFERENCE / sc.cm))
        for regime in REGIMES:
            fct, total = htsim_fct_us(REFERENCE / sc.csv_name(regime))
            assert total == flows and len(fct) == flows, (sc.name, regime)
            assert (fct > 0).all()


def test_the_harness_reads_it_as_new_runs():
    scenarios, regimes, walls = new_runs(REFERENCE)
    assert list(scenarios) == list(SCENARIOS) and regimes == REGIMES
    assert len(walls) == len(SCENARIOS) * len(REGIMES)

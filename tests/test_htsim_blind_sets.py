"""The blind held-out htsim sets (benchmarks/htsim_heldout2, htsim_heldout3, htsim_heldout4,
htsim_heldout5, htsim_heldout6, htsim_heldout7, htsim_heldout8, htsim_heldout9):
each set's .cm files come out of its gen_cm byte for byte, every run of every scenario is there
with one CSV row per .cm flow, the calibration harness reads it as a new-runs folder, and the
twin's fabric of each scenario is the one htsim sizes from `-nodes`."""

from __future__ import annotations

import importlib
import re
import subprocess

import pytest

from benchmarks.htsim_calibration import REPO, htsim_fct_us, new_runs
from benchmarks.htsim_heldout.convert import read_cm
from twin.topology import build

SETS = ("htsim_heldout2", "htsim_heldout3", "htsim_heldout4", "htsim_heldout5",
        "htsim_heldout6", "htsim_heldout7", "htsim_heldout8", "htsim_heldout9")


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


def test_the_twins_fabrics_are_htsims(blind):
    # FatTreeTopologyCfg: K-port switches; 2 tiers K ToRs of K/2 hosts and K/2 spines (K^2/2
    # hosts), 3 tiers K pods of K/2 ToRs of K/2 hosts, K/2 aggs a pod, K^2/4 cores (K^3/4)
    for sc in blind.SCENARIOS.values():
        spec = sc.spec
        f = build(spec)
        k = round((2 * spec.hosts) ** 0.5) if spec.tiers == 2 else round((4 * spec.hosts) ** (1 / 3))
        kinds = [int((f.node_kind == i).sum()) for i in (1, 2, 3)]
        want = [k, k // 2, 0] if spec.tiers == 2 else [k * k // 2, k * k // 2, k * k // 4]
        assert kinds == want and f.hosts_per_leaf == k // 2, sc.name
        assert spec.tiers == 2 or not sc.failed, sc.name  # htsim's 3-tier -failed is other links
        text = (blind.REFERENCE / sc.cm).read_text()
        assert re.match(rf"Nodes {spec.hosts}\n", text), sc.name


@pytest.mark.parametrize("name", ("htsim_heldout4", "htsim_heldout5", "htsim_heldout6",
                                  "htsim_heldout7", "htsim_heldout8", "htsim_heldout9"))
def test_score_sh_overwrites_nothing_and_wants_a_checkout(name, tmp_path):
    score = REPO / "benchmarks" / name / "score.sh"
    out = tmp_path / "kept.txt"
    out.write_text("the lead's\n")
    # an unknown scenario too: were the guard broken, the script stops there (exit 2), before
    # any twin run on the blind set
    run = subprocess.run([str(score), str(REPO), str(out), "no_such_scenario"], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 1 and "not overwritten" in run.stderr
    assert out.read_text() == "the lead's\n"
    run = subprocess.run([str(score), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "not a fabtwin checkout" in run.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["kept.txt"]

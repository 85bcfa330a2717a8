"""The third held-out htsim set (benchmarks/htsim_heldout3): its .cm files come out of gen_cm
byte for byte, every run is there with one CSV row per .cm flow, the harness reads it as a
new-runs folder, and its fabrics are the ones htsim sizes from `-nodes`."""

from __future__ import annotations

import re

from benchmarks.htsim_calibration import htsim_fct_us, new_runs
from benchmarks.htsim_heldout.convert import read_cm
from benchmarks.htsim_heldout3 import REFERENCE, REGIMES, SCENARIOS, available
from benchmarks.htsim_heldout3.gen_cm import generate
from twin.topology import build


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


def test_the_twins_fabrics_are_htsims():
    # FatTreeTopologyCfg: K-port switches; 2 tiers K ToRs of K/2 hosts and K/2 spines (K^2/2
    # hosts), 3 tiers K pods of K/2 ToRs of K/2 hosts, K/2 aggs a pod, K^2/4 cores (K^3/4)
    for sc in SCENARIOS.values():
        spec = sc.spec
        f = build(spec)
        k = round((2 * spec.hosts) ** 0.5) if spec.tiers == 2 else round((4 * spec.hosts) ** (1 / 3))
        kinds = [int((f.node_kind == i).sum()) for i in (1, 2, 3)]
        want = [k, k // 2, 0] if spec.tiers == 2 else [k * k // 2, k * k // 2, k * k // 4]
        assert kinds == want and f.hosts_per_leaf == k // 2, sc.name
        text = (REFERENCE / sc.cm).read_text()
        assert re.match(rf"Nodes {spec.hosts}\n", text), sc.name

"""The twin against a packet-level reference: htsim on a 1024-host 3-tier fat tree.

The same permutation of 2 MB flows (`tests/data/htsim/perm1024_2MB.cm`) on the same topology
(16 pods x 8 ToRs x 8 hosts, 8 aggs per pod, 64 cores, 100G links, 1 us per hop).

Regimes, stated honestly:
- RoCE + per-flow ECMP (`roce_ecmp`): modelled. Completion times come from ECMP collisions,
  which the fluid max-min twin reproduces: median within 15%, p99 within 25% (held below).
- Per-packet spraying and adaptive routing: the fluid twin predicts line rate for a permutation
  on a non-blocking fabric (160 us + 6 us of propagation). htsim's UEC runs (`uec_oblivious`,
  `uec_reps`) take 27% and 22% longer at the median, from per-packet queueing that their
  congestion control trades for a tight tail; `roce_ar` (no end-to-end CC, PFC) is 3x slower
  from head-of-line blocking. Neither effect is in a flow-level model: out of the twin's reach
  for now, and this test pins the gap so that a future queueing model shows up here.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest
from conftest import REPO

from twin.engine import Flows, simulate
from twin.routing import FabricState
from twin.topology import FabricSpec, build
from twin.workload import read_connection_matrix

DATA = REPO / "tests" / "data" / "htsim"


@pytest.fixture(scope="module")
def setup():
    fabric = build(FabricSpec(hosts=1024, tiers=3, leaf_radix=16, spine_radix=16,
                              host_speed_gbps=100, fabric_speed_gbps=100))
    src, dst, start, size = read_connection_matrix(DATA / "perm1024_2MB.cm")
    return fabric, Flows(src, dst, size, start)  # htsim host i is endpoint i (1 NIC, 1 plane)


def reference(run: str) -> np.ndarray:
    with open(DATA / f"perm1024_2MB_{run}.fct.csv") as fh:
        return np.array([float(r["finish_us"]) - float(r["start_us"]) for r in csv.DictReader(fh)])


def twin_fct_us(setup, mode: str, seed: int = 0) -> np.ndarray:
    fabric, flows = setup
    res = simulate(FabricState(fabric, mode=[mode], seed=seed), flows, hop_latency_s=1e-6)
    assert np.all(np.isfinite(res.finish))
    return res.fct * 1e6


def test_ecmp_regime_matches_htsim_median_and_tail(setup):
    ref = reference("roce_ecmp")
    # ECMP outcomes depend on the hash: hold the claim over several hash seeds
    for seed in range(5):
        fct = twin_fct_us(setup, "ecmp", seed)
        assert np.median(fct) == pytest.approx(np.median(ref), rel=0.15), seed
        assert np.percentile(fct, 99) == pytest.approx(np.percentile(ref, 99), rel=0.25), seed


@pytest.mark.parametrize("mode,run", [("spray", "uec_oblivious"), ("ar", "uec_reps")])
def test_split_regimes_predict_line_rate_below_htsim(setup, mode, run):
    fct = twin_fct_us(setup, mode)
    ref = reference(run)
    # 160 us of serialization + 1 us per hop: 6 hops across pods, 4 within a pod, 2 within a ToR
    assert set(np.round(fct, 6)) <= {162.0, 164.0, 166.0} and np.median(fct) == pytest.approx(166)
    assert 0.7 < np.median(fct) / np.median(ref) < 0.85  # the stated gap, not a claim

"""twin/pfc_loop.py: the rate a lossless port loses to PFC's pause/resume loop."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from benchmarks.htsim_calibration import FAT2, HOP_LATENCY_S, Scenario, fabric_state
from benchmarks.htsim_forced_paths import entropies_for
from twin.engine import Flows, simulate
from twin.pfc_loop import HTSIM_ROCE, PfcLoop, efficiency_per_link, egress_efficiency
from twin.queueing import ROCE
from twin.routing import _leaf_rows
from twin.topology import FabricSpec


def test_the_loop_costs_nothing_where_the_xon_reserve_outlasts_it():
    # 100G, 1 us wires: a resumed ingress waits 2 wire latencies + a packet (2.3 us) for new
    # packets and drains C/2 x 2.3 us = 3.6 packets meanwhile, well under the 11 it holds at XON
    assert egress_efficiency(2, 100.0, 100.0) == 1.0
    assert egress_efficiency(8, 100.0, 100.0) == 1.0
    # one ingress cannot oversubscribe its port: nothing is paused at all
    assert egress_efficiency(1, 400.0, 400.0) == 1.0


def test_at_400g_two_ingress_ports_run_dry_in_every_loop():
    # 400G: the same 2.08 us loop drains C/2 x 2.08 us = 12.8 packets of 4,064 bytes, more than
    # the 48,000 bytes (11.8 packets) under XON: both ingress ports idle once per cycle
    eff = egress_efficiency(2, 400.0, 400.0)
    assert 0.9 < eff < 0.995
    # the same port with its XON reserve above the loop's drain (or short wires) loses nothing
    assert egress_efficiency(2, 400.0, 400.0, PfcLoop(xoff_packets=40, xon_packets=30)) == 1.0
    assert egress_efficiency(2, 400.0, 400.0, dataclasses.replace(HTSIM_ROCE, wire_latency_s=0.2e-6)) == 1.0
    # a longer loop loses more; three ingress ports drain C/3 each, 8.5 packets: no loss
    assert egress_efficiency(2, 400.0, 400.0, dataclasses.replace(HTSIM_ROCE, wire_latency_s=1.5e-6)) < eff
    assert egress_efficiency(3, 400.0, 400.0) == 1.0


def test_per_link_efficiency_runs_once_per_kind_of_port():
    n = np.array([0, 1, 2, 2, 3, 2])
    gbps = np.array([400.0, 400.0, 400.0, 400.0, 400.0, 100.0])
    out = efficiency_per_link(n, gbps, gbps)
    assert out[[0, 1, 4, 5]].tolist() == [1.0, 1.0, 1.0, 1.0]
    assert out[2] == out[3] == egress_efficiency(2, 400.0, 400.0) < 1.0


def _two_colliding(spec: FabricSpec, size: float, transport) -> np.ndarray:
    """Hosts 8 and 16 (two ToRs) send to hosts 0 and 1 (a third), both up to spine 3: they
    share spine 3's port down to that ToR and nothing else (htsim's two-flow run)."""
    state = fabric_state(Scenario("two", "two.cm", spec), "ecmp")
    f = state.fabric
    index, _ = _leaf_rows(f)
    row = np.full(f.n_nodes, -1, dtype=np.int64)
    row[list(index)] = list(index.values())
    src, dst = np.array([8, 16]), np.array([0, 1])
    entropy = entropies_for(state, row[f.ep_leaf[src]], row[f.ep_leaf[dst]], np.array([3, 3]))
    res = simulate(state, Flows(src, dst, np.full(2, size), np.zeros(2), entropy=entropy),
                   hop_latency_s=HOP_LATENCY_S, idle_tail=False, transport=transport)
    return res.fct * 1e6


@pytest.mark.parametrize(("size", "htsim_us"), [(2e6, 92.0), (8e6, 343.7)])
def test_two_flows_colliding_at_a_400g_port_finish_when_htsim_says(size, htsim_us):
    # htsim_roce (-tiers 2 -nodes 128 -linkspeed 400000 -q 100, its default PFC thresholds),
    # 8->0 and 16->1 hashed to one spine: both finish at 92.0 us (2 MB) and 343.7 us (8 MB);
    # at a full share of the port they would at 89.5 / 333.4 (-2.7% / -3.0%)
    fct = _two_colliding(FAT2, size, ROCE)
    assert abs(fct.max() - htsim_us) / htsim_us < 0.01
    without = _two_colliding(FAT2, size, dataclasses.replace(ROCE, pause_loop=False))
    assert without.max() < fct.max() * 0.985


def test_at_100g_the_loop_changes_nothing():
    spec = dataclasses.replace(FAT2, host_speed_gbps=100.0, fabric_speed_gbps=100.0)
    on = _two_colliding(spec, 2e6, ROCE)
    off = _two_colliding(spec, 2e6, dataclasses.replace(ROCE, pause_loop=False))
    assert np.array_equal(on, off)


def test_dcqcn_senders_are_not_greedy_so_their_ports_lose_nothing():
    # the loop runs on senders that refill a paused port at line rate; DCQCN's rates back off
    # before that (its runs keep the capacity they had)
    dcqcn = dataclasses.replace(ROCE, cc="dcqcn")
    on = _two_colliding(FAT2, 1e6, dcqcn)
    off = _two_colliding(FAT2, 1e6, dataclasses.replace(dcqcn, pause_loop=False))
    assert np.array_equal(on, off)

"""UEC's window against the queues of per-packet spraying (`twin.queueing.windowed_rates`):
known answers on hand-built incidences, and what the engine makes of them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import brentq

from twin.engine import Flows, simulate
from twin.maxmin import Incidence, max_min_rates
from twin.queueing import UEC, Transport, base_rtt, windowed_rates, worst_path_delay
from twin.routing import FabricState, route
from twin.topology import FabricSpec, build

C = 100e9  # bits/s
PKT_S = UEC.packet_bytes * 8 / C  # one packet's serialization at 100G


def _incidence(paths: list[list[int]], n_links: int) -> Incidence:
    rows = [link for p in paths for link in p]
    cols = [f for f, p in enumerate(paths) for _ in p]
    return Incidence(sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_links, len(paths))))


def _solve(inc: Incidence, cap_bps: np.ndarray, rtt: float, queued: np.ndarray):
    fair = max_min_rates(inc, cap_bps) / 8
    window = np.full(inc.n_flows, UEC.window_bdp * C / 8 * rtt)
    rates, delay, _ = windowed_rates(inc, cap_bps, fair, window, np.full(inc.n_flows, rtt), queued, UEC)
    return rates, delay


def test_one_flow_through_one_queue_runs_where_window_meets_queue():
    """NIC link (paced by the window: no queue) then one M/D/1 port: the rate x (share of C)
    solves x (T + q(x) P) = 1.5 T, q(x) = x^2 / (2 (1 - x)) packets; solved here independently."""
    inc = _incidence([[0, 1]], 2)
    rtt = 14e-6
    rates, delay = _solve(inc, np.full(2, C), rtt, np.array([False, True]))

    def gap(x: float) -> float:
        return x * (rtt + x * x / (2 * (1 - x)) * PKT_S) - UEC.window_bdp * rtt

    x = brentq(gap, 0.5, 0.999999)
    assert rates[0] * 8 / C == pytest.approx(x, rel=1e-3)
    # the queue is steep in the rate near full load: 10 halvings pin the rate to 1e-3, the
    # delay to a few percent
    assert delay[0] == pytest.approx(x * x / (2 * (1 - x)) * PKT_S, rel=3e-2)
    assert 0.9 < x < 0.99  # a rate loss of a few percent: the window binds


def test_more_queues_on_the_path_cost_more_rate():
    """Five queued hops (a 3-tier sprayed path) slow the flow more than one."""
    one, _ = _solve(_incidence([[0, 1]], 6), np.full(6, C), 14e-6, np.arange(6) > 0)
    five, d5 = _solve(_incidence([[0, 1, 2, 3, 4, 5]], 6), np.full(6, C), 14e-6, np.arange(6) > 0)
    assert five[0] < one[0] < C / 8
    assert d5[0] > 5 * PKT_S


def test_n_flows_sharing_a_port_keep_their_fair_share_with_a_full_queue():
    """Four flows into one port: their four windows (6 BDP) overfill it, so the port stays busy
    (rates C/4 each, max-min) and its queue is the buffer (100 packets) for each of them."""
    inc = _incidence([[f, 4] for f in range(4)], 5)
    rates, delay = _solve(inc, np.full(5, C), 14e-6, np.arange(5) == 4)
    assert rates * 8 == pytest.approx(np.full(4, C / 4))
    assert delay == pytest.approx(np.full(4, UEC.queue_packets * PKT_S))


def test_light_load_leaves_max_min_alone():
    """A flow held to 30G by its NIC loads the port to 0.3: its window never binds."""
    inc = _incidence([[0, 1]], 2)
    cap = np.array([30e9, C])
    rates, delay = _solve(inc, cap, 14e-6, np.array([False, True]))
    assert rates[0] * 8 == pytest.approx(30e9)
    assert delay[0] == pytest.approx(0.09 / 1.4 * PKT_S)  # M/D/1 at rho = 0.3


def test_engine_adds_the_queueing_delay_and_the_rate_loss():
    """A sprayed flow between two leaves of a 2-tier fabric, alone: FCT = wire bytes at the
    windowed rate + base latency + the queueing delay of its last packet; without the window
    it is the line-rate FCT. Its receiver's port carries it alone: counted as M/D/1 (neither
    `paced` nor `paced_streams`) that queue dominates; paced, its own packets do not wait there
    and, as NIC-paced streams (`paced_streams`), not at the hops before: every port on its way
    is fed over one link by its one NIC, so it completes at the line-rate FCT."""
    fab = build(FabricSpec(hosts=16, leaf_radix=8, spine_radix=8, hosts_per_leaf=4,
                           host_speed_gbps=100, fabric_speed_gbps=100))
    state = FabricState(fab, mode=["spray"])
    flows = Flows(np.array([0]), np.array([5]), np.array([2e6]), np.array([0.0]))
    windowed = simulate(state, flows, hop_latency_s=1e-6, idle_tail=False,
                        transport=dataclasses.replace(UEC, paced=False, paced_streams=False))
    paced = simulate(state, flows, hop_latency_s=1e-6, idle_tail=False, transport=UEC)
    plain = Transport(UEC.payload_bytes, UEC.header_bytes)
    line = simulate(state, flows, hop_latency_s=1e-6, idle_tail=False, transport=plain)
    wire_s = 2e6 * UEC.wire_factor * 8 / C
    # 4 hops: 8 us there and back, 3 store-and-forward hops of one packet
    assert line.fct[0] == pytest.approx(wire_s + 8e-6 + 3 * PKT_S, rel=1e-6)
    inc = flows.incidence(state)
    rtt = base_rtt(inc, state.link_capacity_bps(), 1e-6, UEC)[0]
    assert rtt == pytest.approx(8e-6 + 4 * PKT_S)
    # the spine hops carry a quarter of the flow each: the host downlink's queue dominates
    assert windowed.fct[0] > line.fct[0] + wire_s * 0.01
    assert windowed.fct[0] < line.fct[0] * 1.15
    assert paced.fct[0] == pytest.approx(line.fct[0], rel=1e-9)


def test_a_full_queue_sits_at_its_bound():
    """A link marked full (spraying offers it more than it carries) waits the whole queue."""
    inc = _incidence([[0, 1]], 2)
    cap = np.array([30e9, C])
    fair = max_min_rates(inc, cap) / 8
    window = np.full(1, UEC.window_bdp * C / 8 * 14e-6)
    _, delay, links = windowed_rates(inc, cap, fair, window, np.full(1, 14e-6), np.array([False, True]),
                                     UEC, max_delay_s=np.array([0.0, 5e-6]),
                                     full=np.array([False, True]))
    assert links.tolist() == [0.0, 5e-6] and delay[0] == pytest.approx(5e-6)


def test_the_slowest_path_sets_a_sprayed_flows_last_packet():
    """Flow 0 sprays over links 1 and 2 (half each) then 3; flow 1 takes 1 then 3. Per hop the
    worst link the flow loads: 4 us (link 2) + 1 us, and 2 + 1 for the single path."""
    a = sp.csc_matrix(np.array([[1, 1], [0.5, 1], [0.5, 0], [1, 1]]))
    pos = np.array([0, 1, 1, 2])
    delay = np.array([0.0, 2e-6, 4e-6, 1e-6])
    assert worst_path_delay(a, np.array([0, 1]), delay, pos) == pytest.approx([5e-6, 3e-6])


def _two_slow_spines(trims: bool) -> FabricState:
    fab = build(FabricSpec(hosts=32, leaf_radix=8, spine_radix=8, hosts_per_leaf=4,
                           host_speed_gbps=400, fabric_speed_gbps=400))
    state = FabricState(fab, mode=["spray"], spray_trims=trims)
    for leaf in sorted(fab.leaf_up_cables):
        state.cable_gbps[fab.leaf_up_cables[leaf][:2]] = 100.0  # to spines 0 and 1, both ways
    state.nic_notices()
    return state


def test_trimmed_spraying_delivers_what_each_path_carries():
    """4 hosts per leaf at 400G, 4 uplinks, 2 of them at 100G. Every host sends to the next
    leaf: each uplink is offered 400 of the leaf's 1,600. Without trimming the even split
    stalls at the slow uplinks (4 x 100 / (1/4) / 4 = 100 per flow); with it a slow path
    delivers 100/400 of its share: weights 1/10, 1/10, 4/10, 4/10, 100 + 100 + 400 + 400 =
    1,000 per leaf, 250 per flow; the slow uplinks are marked full."""
    fab = _two_slow_spines(False).fabric
    src = np.arange(32)
    dst = (src + 4) % 32
    out = {}
    for trims in (False, True):
        state = _two_slow_spines(trims)
        inc = route(state, src, dst)
        out[trims] = max_min_rates(inc, state.link_capacity_bps()) / 1e9
        if trims:
            slow = np.concatenate([2 * np.asarray(fab.leaf_up_cables[leaf][:2]) for leaf in fab.leaf_up_cables])
            assert state.overflowing[slow].all() and state.overflowing.sum() == len(slow) * 2
    assert out[False] == pytest.approx(np.full(32, 100.0))
    assert out[True] == pytest.approx(np.full(32, 250.0))

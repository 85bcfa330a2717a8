"""Known answers of the latency and bandwidth outputs (`twin.latency`), the NIC plane balancing
reaction times (`twin.planes`) and ECMP's reroute after control-plane convergence."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from conftest import REPO

from twin.engine import Flows, LinkChange, simulate
from twin.latency import HopLatency, latency_model, md1_wait_survival, rocev2, uec
from twin.maxmin import max_min_rates
from twin.planes import LinkDownDetection, PlaneBalancing, QpRetry
from twin.queueing import queue_state
from twin.routing import FabricState, route
from twin.topology import FabricSpec, build
from twin.workload import endpoints

sys.path.insert(0, str(REPO))
from benchmarks.paper.experiments import plane_failure_timeline  # noqa: E402


@pytest.fixture(scope="module")
def fab():
    return build(FabricSpec(hosts=16, leaf_radix=8, spine_radix=8, hosts_per_leaf=4))


def test_rocev2_framing_at_mtu_4096_gives_the_exact_goodput():
    f = rocev2(4096)
    # preamble+SFD 8, Ethernet 14, IPv4 20, UDP 8, BTH 12, ICRC 4, FCS 4, inter-frame gap 12
    assert f.overhead_bytes == 82 and f.wire_bytes == 4178
    assert f.goodput_bps(400e9) == pytest.approx(400e9 * 4096 / 4178, rel=1e-12)  # 392.149 Gb/s
    assert rocev2(1024).efficiency == pytest.approx(1024 / 1106)
    assert uec(4096).wire_bytes == 4096 + 64 + 4 + 20  # htsim's 64 header bytes, FCS, preamble/IFG


def test_a_flow_at_line_rate_completes_at_its_wire_bytes(fab):
    # one flow inside a leaf: 2 hops, one store-and-forward; no propagation, no ACK wait
    framing = rocev2(4096)
    size = 40_960_000.0  # 10,000 packets
    fl = Flows(endpoints(fab, np.array([0])), endpoints(fab, np.array([1])), np.array([size]), np.zeros(1))
    res = simulate(FabricState(fab), fl, transport=framing.transport(acked=False))
    wire = size / 4096 * 4178
    assert res.fct[0] == pytest.approx(wire * 8 / 400e9 + 4178 * 8 / 400e9, rel=1e-9)
    # what a user reads as the flow's bandwidth: the goodput, below line rate by the headers
    assert size * 8 / res.fct[0] == pytest.approx(framing.goodput_bps(400e9), rel=1e-3)


@pytest.mark.parametrize("rho", [0.5, 0.75, 0.9])
def test_md1_wait_distribution_has_the_pollaczek_khinchine_mean(rho):
    t = np.linspace(0, 400, 40001)  # in service times
    mean = np.trapezoid(md1_wait_survival(np.array([rho]), t)[0], t)
    # the exponential tail (Cramer-Lundberg) is asymptotic: its mean is within 2% at 50% load
    assert mean == pytest.approx(rho / (2 * (1 - rho)), rel=0.02)
    assert md1_wait_survival(np.array([rho]), np.array([0.0]))[0, 0] == pytest.approx(rho)  # P(W>0)


def _balanced_cross_leaf(fab, load):
    """Hosts of leaf 0 to hosts of leaf 1 under adaptive routing at `load` of line rate."""
    st = FabricState(fab, mode=["ar"])
    src, dst = endpoints(fab, np.arange(4)), endpoints(fab, np.arange(4, 8))
    inc = route(st, src, dst)
    cap = st.link_capacity_bps()
    demand = np.full(4, load * 400e9)
    rates = max_min_rates(inc, cap, flow_cap=demand)
    q = queue_state(inc, rates, cap, demand, np.ones(4, bool), link_pos=fab.link_position)
    return inc, rates, cap, q


def test_latency_is_hops_times_switching_plus_md1_queueing(fab):
    framing, hop = rocev2(4096), HopLatency(switch_s=0.5e-6, cable_m=10, ns_per_m=5)
    inc, rates, cap, q = _balanced_cross_leaf(fab, 0.75)
    m = latency_model(inc, rates, cap, fab.link_position, q.queue_bytes, q.utilization >= 1 - 1e-6,
                      framing, hop)
    d = 4178 * 8 / 400e9
    fixed = 4 * (0.5e-6 + 50e-9) + 4 * d  # 4 hops of switching and propagation, store-and-forward
    assert m.fixed_s == pytest.approx(np.full(4, fixed))
    # three switch egress ports at 75% (the NIC's own port paces its sender): 3 x 1.5 D
    assert m.mean_s() == pytest.approx(np.full(4, fixed + 3 * 1.5 * d), rel=0.01)
    p50, p99 = m.percentile(50), m.percentile(99)
    assert fixed <= p50 < m.mean_s()[0] < p99
    # the tail of three M/D/1 queues: above one queue's p99 (8 D), below three of them
    assert fixed + 8 * d < p99 < fixed + 3 * 8.1 * d
    # lighter load, shorter tail: the queueing part is an output of the utilization
    inc2, r2, c2, q2 = _balanced_cross_leaf(fab, 0.25)
    light = latency_model(inc2, r2, c2, fab.link_position, q2.queue_bytes, q2.utilization >= 1,
                          framing, hop)
    assert light.percentile(99) < p99


def test_a_saturated_port_adds_its_standing_queue(fab):
    # two hosts of leaf 0 to one host of leaf 1: its leaf port saturates, DCQCN's queue stands there
    st = FabricState(fab, mode=["ar"])
    inc = route(st, endpoints(fab, np.array([0, 1])), endpoints(fab, np.array([4, 4])))
    cap = st.link_capacity_bps()
    rates = max_min_rates(inc, cap)
    q = queue_state(inc, rates, cap, np.full(2, 400e9), np.ones(2, bool), link_pos=fab.link_position)
    sat = q.utilization >= 1 - 1e-6
    port = 2 * fab.ep_cable[endpoints(fab, np.array([4]))[0]] + 1
    assert sat[port] and q.queue_bytes[port] > 150e3
    m = latency_model(inc, rates, cap, fab.link_position, q.queue_bytes, sat, rocev2(), HopLatency())
    standing = q.queue_bytes[port] * 8 / 400e9
    # the standing queue is a fixed wait: the flow's median is at least fixed + standing
    assert np.all(m.flow_percentile(50) >= m.fixed_s + standing - m.bin_s)


def test_qp_give_up_time_is_the_ack_timeout_formula():
    # the first sending and each of the 7 retries wait one timeout: 8 timeouts, then error
    assert QpRetry(18, 7).give_up_s == pytest.approx(4.096e-6 * 2**18 * 8)  # 8.59 s
    assert QpRetry(14, 7).give_up_s == pytest.approx(0.5369, abs=1e-4)
    assert QpRetry().give_up_s == pytest.approx(4.096e-6 * 2**20 * 8)  # NCCL's defaults: 34.4 s
    # a QP with no retries still waits for the ACK of its one sending
    assert QpRetry(15, 0).give_up_s == pytest.approx(4.096e-6 * 2**15)
    with pytest.raises(ValueError, match="retry count 8"):
        QpRetry(14, 8)


def test_link_down_detection_follows_the_pcs_alignment_markers():
    # 4 bad markers, one every 16,384 66-bit blocks of a 5.15625 Gb/s lane (100GBASE-R)
    assert LinkDownDetection().detect_s == pytest.approx(4 * 16384 * 66 / 5.15625e9)  # 0.839 ms
    assert LinkDownDetection(debounce_s=1e-3).detect_s == pytest.approx(1.839e-3, abs=1e-6)


@pytest.mark.parametrize("exponent", [12, 14])
def test_software_plane_recovery_equals_the_configured_qp_timeout(exponent):
    planes = PlaneBalancing(qp=QpRetry(exponent, 7))
    back = 0.01 + 4.096e-6 * 2**exponent * 8  # 8 timeouts
    t, frac = plane_failure_timeline("sw", planes, until=back + 0.01, step=1e-4, hosts=16)
    assert np.all(frac[(t > 0.0101) & (t <= back - 1e-4)] == 0)  # stuck QPs hold the transfers
    assert frac[t >= back + 1e-4] == pytest.approx(0.75)
    # the sample holding the give-up carries 75% for the part after it: the time is exact
    k = np.flatnonzero(t > back - 1e-12)[0]
    assert frac[k] == pytest.approx(0.75 * (t[k] - back) / 1e-4, abs=1e-6)


def test_hardware_plane_recovery_follows_link_down_detection():
    det = LinkDownDetection(debounce_s=2e-3)
    t, frac = plane_failure_timeline("hw", PlaneBalancing(link_down=det), until=0.02, step=1e-4,
                                      hosts=16)
    back = 0.01 + det.detect_s
    assert np.all(frac[(t > 0.0101) & (t <= back - 1e-4)] == 0)
    assert frac[t >= back + 1e-4] == pytest.approx(0.75)


def test_ecmp_convergence_stalls_the_rerouted_flow_for_exactly_that_time():
    f = build(FabricSpec(hosts=16, leaf_radix=8, spine_radix=8, hosts_per_leaf=4))
    # leaf 0 -> leaf 1 and leaf 2 -> leaf 3: no fabric link in common
    fl = Flows(endpoints(f, np.array([0, 8])), endpoints(f, np.array([4, 12])), np.full(2, 50e6), np.zeros(2))
    base = simulate(FabricState(f, mode=["ecmp"], seed=3), fl)
    inc = route(FabricState(f, mode=["ecmp"], seed=3), fl.src, fl.dst)
    a = inc.explicit().tocsc()
    fabric_links = [lk for lk in a[:, 0].indices if f.cable_tier[lk // 2] == 1]
    cable = fabric_links[0] // 2
    other = a[:, 1].indices
    assert 2 * cable not in other and 2 * cable + 1 not in other  # flow 1 does not cross it
    for conv in (0.01, 0.1):
        res = simulate(FabricState(f, mode=["ecmp"], seed=3), fl,
                       changes=[LinkChange(1e-4, int(cable), 0.0)], convergence_s=conv)
        # flow 0 sends nothing from the failure until the control plane converges, then rehashes
        # (here onto a free spine link, at its old rate): late by exactly the convergence time
        assert res.finish[0] - base.finish[0] == pytest.approx(conv, rel=1e-9)
        assert res.finish[1] == pytest.approx(base.finish[1], rel=1e-12)
    ar = simulate(FabricState(f, mode=["ar"]), fl, changes=[LinkChange(1e-4, int(cable), 0.0)],
                  convergence_s=0.1)
    assert ar.finish.max() < 0.1  # adaptive routing moves at once


def test_each_link_change_converges_on_its_own_clock():
    """Two failures 0.4 ms apart: each flow stalls for the convergence time after its own link's
    failure (one convergence for both would free the second flow 0.4 ms early)."""
    f = build(FabricSpec(hosts=16, leaf_radix=8, spine_radix=8, hosts_per_leaf=4))
    fl = Flows(endpoints(f, np.array([0, 8])), endpoints(f, np.array([4, 12])), np.full(2, 50e6), np.zeros(2))
    base = simulate(FabricState(f, mode=["ecmp"], seed=3), fl)
    a = route(FabricState(f, mode=["ecmp"], seed=3), fl.src, fl.dst).explicit().tocsc()
    cables = [next(lk // 2 for lk in a[:, i].indices if f.cable_tier[lk // 2] == 1) for i in (0, 1)]
    changes = [LinkChange(1e-4, int(cables[0]), 0.0), LinkChange(5e-4, int(cables[1]), 0.0)]
    res = simulate(FabricState(f, mode=["ecmp"], seed=3), fl, changes=changes, convergence_s=0.01)
    assert res.finish - base.finish == pytest.approx([0.01, 0.01], rel=1e-9)

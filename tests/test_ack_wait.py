"""The last ACK's wait in a lossless fabric's paused queues (`twin.ack_wait`), against htsim's
queue logic stepped with ACKs (`benchmarks/htsim_pfc_steps.step` with `rpaths`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import HTSIM_DATA

from benchmarks.htsim_calibration import HOP_LATENCY_S, SCENARIOS, fabric_state, twin_inputs
from benchmarks.htsim_pfc_steps import step
from twin.ack_wait import AckWait
from twin.engine import simulate
from twin.maxmin import Incidence
from twin.pfc_loop import HTSIM_ROCE, paused_ingress
from twin.queueing import ROCE, UEC

GBPS = 100.0
# links: 0-3 the NICs of A, B, C and R; 4 B's uplink, which A's ACK crosses on its way back
# from R; 5 C's uplink; 6 the downlink where B and C collide; 7, 8 A's own way to R; 9 the
# ACK's last link, to A
POS = np.array([0, 0, 0, 0, 1, 1, 2, 1, 2, 2])
FORWARD = [[0, 7, 8], [1, 4, 6], [2, 5, 6]]
BACK = [[3, 4, 9], [3, 5, 9], [3, 5, 9]]


def _incidence(paths: list[list[int]]) -> Incidence:
    rows = [link for p in paths for link in p]
    cols = [f for f, p in enumerate(paths) for _ in p]
    return Incidence(sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(POS), len(paths))))


def test_an_ack_through_an_uplink_paused_from_below_waits_its_queue_as_the_stepping_does():
    """B and C collide at 6: PFC pauses B's uplink 4 from below, which keeps a paused ingress's
    worth of B's packets, drained at B's 50 Gb/s. A's short flow to R goes its own way, but its
    ACKs come back through 4: the stepping (A started at 20 phases of B's pause loop) has its
    last ACK wait 9.6 us on average beyond the wires; the twin prices it from the rates alone.
    A flow whose ACK meets no paused queue waits nothing."""
    extra = []
    for t0 in np.arange(40e-6, 60e-6, 1e-6):
        packets, starts = [50, 5000, 5000], [float(t0), 0.0, 0.0]
        data = step([GBPS] * len(POS), FORWARD, packets, starts)
        acked = step([GBPS] * len(POS), FORWARD, packets, starts, rpaths=BACK)
        extra.append(acked[0] - data[0] - len(BACK[0]) * HOP_LATENCY_S)
    inc, back = _incidence(FORWARD), _incidence(BACK)
    wait = AckWait(inc, back, POS, np.full(len(POS), GBPS))
    rates = np.array([GBPS, GBPS / 2, GBPS / 2]) * 1e9 / 8  # max-min: B and C share 6
    per_link = wait.link_waits(inc.link_load(rates), np.full(len(POS), GBPS * 1e9),
                               np.ones(3, bool), np.array([1e5, 2e7, 2e7]))
    assert np.mean(extra) > 5e-6
    assert back.path_sum(per_link)[0] == pytest.approx(np.mean(extra), rel=0.2)
    quiet = AckWait(inc, _incidence([[3, 7, 9]] * 3), POS, np.full(len(POS), GBPS))
    assert quiet.waits(np.array([0]), inc.link_load(rates), np.full(len(POS), GBPS * 1e9),
                       np.ones(3, bool), np.array([1e5, 2e7, 2e7]))[0] == 0.0


def test_a_short_flow_backs_up_no_more_than_it_has_left():
    """The queue a flow holds in the switches is at most what it has still to deliver: with
    B and C nearly done (two packets each left), B's uplink holds two packets, not a paused
    ingress's fourteen, and A's ACK waits that much less."""
    inc, back = _incidence(FORWARD), _incidence(BACK)
    wait = AckWait(inc, back, POS, np.full(len(POS), GBPS))
    rates = np.array([GBPS, GBPS / 2, GBPS / 2]) * 1e9 / 8
    load, cap = inc.link_load(rates), np.full(len(POS), GBPS * 1e9)
    full = wait.link_waits(load, cap, np.ones(3, bool), np.array([1e5, 2e7, 2e7]))[4]
    ending = wait.link_waits(load, cap, np.ones(3, bool), np.array([1e5, 8128.0, 8128.0]))[4]
    held = paused_ingress(GBPS)[0]
    assert full == pytest.approx(held / load[4])
    # B backs up two switch queues (4, and 6 where it is held): half its bytes in each
    assert ending == pytest.approx(4064.0 / load[4])


def test_a_paused_ingress_holds_between_xon_and_xoff_plus_the_wire():
    """What the pause loop leaves queued per paused ingress: above XON less a wire's worth of
    drain, below XOFF plus the two wires' worth a PAUSE takes to act (htsim_roce's 15 / 12
    packets, 1 us wires)."""
    loop = HTSIM_ROCE
    for gbps in (100.0, 400.0):
        held, swing = paused_ingress(gbps)
        wire = gbps * 1e9 / 8 * loop.wire_latency_s
        assert loop.xon_packets * loop.data_bytes - wire < held
        assert held < loop.xoff_packets * loop.data_bytes + 2 * wire
        assert 0 < swing < 2 * (loop.xoff_packets - loop.xon_packets) * loop.data_bytes + 4 * wire


def test_ack_waits_only_delay_lossless_completions():
    """On perm128 (htsim's 2-tier fabric at 400G) the ACK waits move RoCE's completions later,
    never earlier (the rates are the same), and leave UEC's untouched."""
    sc = SCENARIOS["perm128_2MB_2tier"]
    flows, _ = twin_inputs(sc, "roce_ecmp", HTSIM_DATA)
    state = fabric_state(sc, "ecmp")
    on = simulate(state, flows, hop_latency_s=HOP_LATENCY_S, idle_tail=False, transport=ROCE).fct
    off = simulate(state, flows, hop_latency_s=HOP_LATENCY_S, idle_tail=False,
                   transport=dataclasses.replace(ROCE, ack_wait=False)).fct
    assert (on >= off - 1e-15).all()
    assert np.median(on) > np.median(off) * 1.02
    spray = fabric_state(sc, "spray")
    u_on = simulate(spray, flows, hop_latency_s=HOP_LATENCY_S, idle_tail=False, transport=UEC).fct
    u_off = simulate(spray, flows, hop_latency_s=HOP_LATENCY_S, idle_tail=False,
                     transport=dataclasses.replace(UEC, ack_wait=False)).fct
    np.testing.assert_array_equal(u_on, u_off)

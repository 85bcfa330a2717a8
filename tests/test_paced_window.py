"""A window-based flow's own packets, paced by its NIC, do not wait for each other in the
sprayed queues (`Transport.paced`, `twin.queueing.windowed_rates(own=...)`): known answers on
hand-built incidences, a flow alone in htsim's mixed-size run, and the row it brings within
the bars."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from benchmarks.htsim_calibration import fabric_state, run_row
from benchmarks.htsim_heldout import REFERENCE as HELDOUT
from benchmarks.htsim_heldout import SCENARIOS as NEW
from twin.engine import Flows, simulate
from twin.maxmin import Incidence, max_min_rates
from twin.queueing import UEC, md1_packets, windowed_rates
from twin.workload import read_connection_matrix

C = 100e9
RTT = 14e-6
PKT_S = UEC.packet_bytes * 8 / C
MIXED = "poisson1024_mixed_300us_load40"


def _solve(paths: list[list[int]], n_links: int, own: bool, nic_bps: float = C):
    rows = [link for p in paths for link in p]
    cols = [f for f, p in enumerate(paths) for _ in p]
    m = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_links, len(paths)))
    inc = Incidence(m)
    cap = np.full(n_links, C)
    cap[:len(paths)] = nic_bps  # the senders' NIC links come first
    fair = max_min_rates(inc, cap) / 8
    window = np.full(inc.n_flows, UEC.window_bdp * C / 8 * RTT)
    return windowed_rates(inc, cap, fair, window, np.full(inc.n_flows, RTT), np.arange(n_links) > 0,
                          UEC, own=m.multiply(m).T.tocsr() if own else None)


def test_a_flow_alone_on_its_port_waits_for_nothing():
    """NIC link, then one port the flow has to itself: counted as M/D/1 it waits there and
    its window binds (a few percent under line rate); its own packets, paced, do not queue:
    line rate, no wait."""
    alone, d_alone, _ = _solve([[0, 1]], 2, own=True)
    mm1, d_md1, _ = _solve([[0, 1]], 2, own=False)
    assert alone[0] * 8 == pytest.approx(C) and d_alone[0] == 0.0
    assert mm1[0] * 8 < 0.99 * C and d_md1[0] > 5 * PKT_S


def test_two_flows_on_a_port_wait_for_each_others_half():
    """Two flows from 40G NICs into one 100G port (80% load, no window binds): each waits for
    the other's packets, half the M/D/1 queue (its own half leaves its NIC paced)."""
    rates, delay, links = _solve([[0, 2], [1, 2]], 3, own=True, nic_bps=0.4 * C)
    rho = 2 * rates[0] * 8 / C
    assert rates[0] * 8 == pytest.approx(0.4 * C) and rates[1] == pytest.approx(rates[0])
    assert delay[0] == pytest.approx(0.5 * md1_packets(np.array([rho]))[0] * PKT_S, rel=1e-6)
    assert links[2] == pytest.approx(2 * delay[0], rel=1e-6)  # the port's own queue is whole


def test_htsims_first_flow_of_the_mixed_run_at_line_rate():
    """The mixed-size run's first flow (302,008 bytes, 3 hops up and down, alone at t = 0):
    htsim 38.6 us, within 0.5 us of line rate plus the round trip; the twin 38.8 us paced,
    46.1 us when it waits at its receiver's port as if other packets were there."""
    sc = NEW[MIXED]
    if not (HELDOUT / sc.cm).is_file():
        pytest.skip("held-out .cm not present")
    src, dst, start, size = read_connection_matrix(HELDOUT / sc.cm)
    i = np.argsort(start, kind="stable")[:1]
    flows = Flows(src[i], dst[i], size[i], np.zeros(1))

    def fct(transport):
        res = simulate(fabric_state(sc, "spray"), flows, hop_latency_s=1e-6, idle_tail=False,
                       transport=transport)
        return res.fct[0] * 1e6

    assert size[i][0] == 302008
    assert fct(UEC) == pytest.approx(38.6, abs=0.5)
    assert fct(dataclasses.replace(UEC, paced=False, paced_streams=False)) > 45.0  # M/D/1


def test_mixed_sizes_oblivious_row_meets_the_bars():
    """htsim's mixed sizes at 40% load, uec_oblivious: median +17.0% without the pacing (the
    small flows pay a receiver-port wait htsim's do not), within the bars with it."""
    sc = NEW[MIXED]
    if not (HELDOUT / sc.csv_name("uec_oblivious")).is_file():
        pytest.skip("held-out CSV not present")
    row = run_row(sc, "uec_oblivious", HELDOUT, {})
    assert row.meets(), row
    assert row.err[0] < 12.0

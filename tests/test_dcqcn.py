"""DCQCN's fluid model (`twin.dcqcn`) against answers derived here from its equations and
parameters (Zhu et al. 2015), not from runs of the twin: the queue where N flows into one
bottleneck settle, their fair shares, PFC pauses stopping once the rates converge; and what the
engine makes of it (`Transport.cc = "dcqcn"`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import brentq

from twin.dcqcn import DcqcnFluid, DcqcnParams, red_probability
from twin.engine import Flows, simulate
from twin.maxmin import Incidence
from twin.queueing import ROCE, QueueConfig
from twin.routing import FabricState
from twin.topology import FabricSpec, build

C = 100e9 / 8  # bytes/s
PKT = ROCE.packet_bytes
KMIN, KMAX, PMAX = ROCE.kmin_bytes, ROCE.kmax_bytes, ROCE.pmax
XOFF = 100 * PKT
DT = 20e-6  # the fixed point does not depend on the step (5, 10, 20 us: the same queue to 1e-4)


def incast(n: int, rates: np.ndarray | None = None, enabled: bool = True):
    """N senders, each on its own NIC link (0..n-1, no marking), into one switch port (n)."""
    rows, cols = list(range(n)) + [n] * n, list(range(n)) * 2
    inc = Incidence(sp.csr_matrix((np.ones(2 * n), (rows, cols)), shape=(n + 1, n)))
    model = DcqcnFluid(n, n + 1, np.full(n, C), np.arange(n + 1) == n, np.full(n + 1, XOFF), PKT,
                       KMIN, KMAX, PMAX, DcqcnParams(step_s=DT), enabled=enabled)
    if rates is not None:
        model.rc[:], model.rt[:] = rates, rates
    return inc, model


def settle(inc, model, seconds: float) -> list[float]:
    cap, active = np.full(inc.n_links, C), np.ones(inc.n_flows, bool)
    pauses = []
    for _ in range(int(round(seconds / DT))):
        model.step(inc, cap, active, DT)
        pauses.append(model.paused_s[-1])
    return pauses


def fixed_point_queue(n: int, prm: DcqcnParams | None = None) -> float:
    """The queue where N flows at C/N each hold still, from the fluid equations alone.

    With R = C / N (packets/s), dR_C/dt = 0 and dR_T/dt = 0 give R_T - R_C = tau I(p) / A and
    R alpha A / (2 tau) = (R_T - R_C)(e_B + e_T) / 2, so R alpha A^2 = tau^2 I(p) (e_B + e_T),
    alpha = 1 - (1-p)^(tau' R) from d alpha/dt = 0: one equation in the marking probability
    p, solved by bracketing; RED maps p back to a queue, Kmin + p / Pmax (Kmax - Kmin)."""
    prm = prm or DcqcnParams()
    r = C / n / PKT
    tau, tau2, t, f = prm.cnp_interval_s, prm.alpha_timer_s, prm.rate_timer_s, prm.fast_recovery_steps
    b = prm.byte_counter_bytes / PKT
    rai, rhai = prm.rai_bps / 8 / PKT, prm.rhai_bps / 8 / PKT

    def gap(p: float) -> float:
        keep = 1 - p
        a = 1 - keep ** (tau * r)
        alpha = 1 - keep ** (tau2 * r)
        e_b = r * p / (keep ** -b - 1)
        e_t = r * p / (keep ** (-t * r) - 1)
        hyper = keep ** (f * max(b, t * r))
        inc = rai * (e_b * (keep ** (f * b) - hyper) + e_t * (keep ** (f * t * r) - hyper)) \
            + rhai * (e_b + e_t) * hyper
        return r * alpha * a * a - tau * tau * inc * (e_b + e_t)

    p = brentq(gap, 1e-9, PMAX * (1 - 1e-9), xtol=1e-16, rtol=1e-14)
    return KMIN + p / PMAX * (KMAX - KMIN)


@pytest.mark.parametrize("n", [2, 8])
def test_n_flows_settle_where_marking_balances_the_increase(n):
    inc, model = incast(n)
    settle(inc, model, 0.12)
    want = fixed_point_queue(n)
    assert KMIN < want < KMAX
    assert model.queue[n] == pytest.approx(want, rel=5e-3)
    # at the fixed point the port is exactly full: every flow at its fair share
    assert model.rc == pytest.approx(np.full(n, C / n), rel=1e-3)
    # and alpha where its EWMA holds still: the chance of a mark in tau' at that rate
    p = (model.queue[n] - KMIN) / (KMAX - KMIN) * PMAX
    assert model.alpha == pytest.approx(1 - (1 - p) ** (55e-6 * C / n / PKT), rel=1e-2)


def test_more_flows_stand_a_longer_queue():
    assert fixed_point_queue(2) < fixed_point_queue(4) < fixed_point_queue(8)


def test_flows_that_start_unequal_converge_to_fair_shares():
    inc, model = incast(2, rates=np.array([C, 0.1 * C]))
    settle(inc, model, 0.05)
    assert 1.1 * model.rc[1] < model.rc[0] < 5 * model.rc[1]  # closing at the pace of alpha's EWMA
    settle(inc, model, 0.15)
    assert model.rc[0] == pytest.approx(model.rc[1], rel=1e-2)
    assert model.rc.sum() == pytest.approx(C, rel=1e-3)


def test_pfc_pauses_stop_once_dcqcn_converges():
    """Without end-to-end control (htsim's RoCE) 4 senders at line rate keep the port's queue at
    its XOFF point: its feeders are paused 3/4 of the time for good. DCQCN pauses them only
    while its first cuts take hold."""
    n = 4
    inc, off = incast(n, enabled=False)
    inc, on = incast(n)
    settle(inc, off, 0.02)
    p_on = settle(inc, on, 0.02)
    assert off.paused_s[n] == pytest.approx(0.02 * (1 - 1 / n), rel=0.05)
    assert on.paused_s[n] < 0.05 * off.paused_s[n]
    # the pauses are all in the first few tens of microseconds
    assert p_on[-1] == p_on[int(200e-6 / DT)] and on.queue[n] < KMAX


def test_red_marks_between_kmin_and_kmax_and_all_above():
    q = np.array([0.0, KMIN, (KMIN + KMAX) / 2, KMAX, KMAX + 1])
    assert red_probability(q, KMIN, KMAX, PMAX).tolist() == pytest.approx([0, 0, PMAX / 2, PMAX, 1.0])


def test_engine_runs_an_incast_at_dcqcn_rates_and_stops_pausing():
    """The engine with Transport.cc = "dcqcn": an 8-to-1 incast delivers the receiver's link
    at most a quarter late (alpha starts at 1: the first CNPs halve the rates, below the fair
    share, and the rates take tens of us to recover), finishes every sender together (same
    CNPs, same rates; the senders on the receiver's leaf only skip two hops' latency), marks
    at the receiver's port and pauses only at first."""
    f = build(FabricSpec(hosts=16, leaf_radix=8, spine_radix=8, hosts_per_leaf=4,
                         host_speed_gbps=100, fabric_speed_gbps=100))
    src, dst = np.arange(1, 9), np.zeros(8, np.int64)
    flows = Flows(src, dst, np.full(8, 5e5), np.zeros(8))
    on = simulate(FabricState(f), flows, transport=dataclasses.replace(ROCE, cc="dcqcn"),
                  telemetry=QueueConfig(), sample_every=20e-6)
    ideal = 8 * 5e5 * ROCE.wire_factor / C
    assert ideal < on.fct.max() < 1.25 * ideal
    assert on.fct.max() - on.fct.min() < 1e-2 * on.fct.max()
    host_in = 2 * f.ep_cable[0] + 1  # the receiver's port
    marks, pauses = on.counters_at["ecn_marked"], on.counters_at["pause_s"].sum(axis=1)
    assert marks[-1].argmax() == host_in and marks[-1, host_in] > 0
    # alpha = 1 halves the rates on every CNP, one per 50 us at most: 8 senders need 3 cuts to
    # reach C in all and a 4th (at 150 us) to drain the XOFF queue (406 KB at C/2: 65 us), so
    # the pauses end near 215 us: still on at 100 us, over by 300 us
    assert pauses[5] > pauses[4] > 0 and pauses[-1] == pauses[15]
    fed = np.flatnonzero(on.counters_at["pause_s"][-1])  # the receiver's leaf's feeders
    assert host_in not in fed and len(fed) >= 4
    off = simulate(FabricState(f), flows, transport=ROCE)
    assert off.fct.max() == pytest.approx(ideal, rel=1e-2)  # line-rate senders: + store-and-forward


def test_unknown_cc_is_refused():
    f = build(FabricSpec(hosts=4, leaf_radix=4, spine_radix=4, hosts_per_leaf=2))
    flows = Flows(np.array([0]), np.array([1]), np.array([1e6]), np.zeros(1))
    with pytest.raises(ValueError, match="timely"):
        simulate(FabricState(f), flows, transport=dataclasses.replace(ROCE, cc="timely"))

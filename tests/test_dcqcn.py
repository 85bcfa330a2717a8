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

from twin.dcqcn import DcqcnFluid, DcqcnParams, red_probability, red_queue_bytes
from twin.dcqcn_equilibrium import marking_probability, standing_queue_bytes
from twin.engine import Flows, simulate
from twin.maxmin import Incidence
from twin.queueing import ROCE, QueueConfig, Transport
from twin.routing import FabricState
from twin.topology import FabricSpec, build

C = 100e9 / 8  # bytes/s
PKT = ROCE.packet_bytes
KMIN, KMAX, PMAX = ROCE.kmin_bytes, ROCE.kmax_bytes, ROCE.pmax
XOFF = 100 * PKT
# Euler steps: 10 us settles at 100G with RED's 150 KB / 1.5 MB / 0.2 slope (20 us oscillates
# there; 400G needs 2 us: 5 us holds a 19 KB limit cycle there that 1 and 2 us do not)
DT = 10e-6


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


def incasts(cases: list[tuple[float, int]]):
    """One N-to-1 incast per (Gb/s, N), side by side in one model (one vectorized run): each
    sender on its own NIC link at the port's speed, into one marking switch port."""
    rows, cols, line, cap, port = [], [], [], [], []
    link = flow = 0
    for gbps, n in cases:
        for k in range(n):
            rows += [link + k, link + n]
            cols += [flow + k] * 2
        line += [gbps * 1e9 / 8] * n
        cap += [gbps * 1e9 / 8] * (n + 1)
        port.append(link + n)
        link, flow = link + n + 1, flow + n
    inc = Incidence(sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(link, flow)))
    marking = np.isin(np.arange(link), port)
    # XOFF far above the fixed points: where DCQCN settles, not PFC, is under test
    model = DcqcnFluid(flow, link, np.array(line), marking, np.full(link, 1e7), PKT, KMIN, KMAX, PMAX,
                       DcqcnParams(step_s=2e-6))
    return inc, model, np.array(cap), np.array(port)


CASES = [(25, 2), (25, 4), (100, 2), (100, 8), (400, 2), (400, 16)]


def settled(snapshots: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Where a state closing on its limit geometrically ends, from its last three snapshots an
    equal time apart: (the limit, the ratio by which each step shrank its distance). For a
    contraction by rho the distance left is rho / (1 - rho) times the last step, and the limit
    is Aitken's extrapolation x2 + (x2 - x1) rho / (1 - rho)."""
    x0, x1, x2 = snapshots
    rho = (x2 - x1) / (x1 - x0)
    return x2 + (x2 - x1) * rho / (1 - rho), rho


def test_fixed_point_is_where_the_fluid_model_settles():
    """`twin.dcqcn_equilibrium` solves `DcqcnFluid`'s equations at rest: the queue the fluid
    model settles at, run in 2 us steps, is its closed form. From 50 ms on every state closes
    on its limit geometrically at one pace (alpha's EWMA, tau' / g = 14 ms, sets it: 0.83-0.86
    per 2 ms, measured), so the run stops at 64 ms and the limit is what the contraction leaves
    (`settled`; measured at 64 ms: the queue within 8.3e-5 of the closed form, alpha 1.4e-3;
    the queue itself 2.9e-3 off at 64 ms, 1.1e-4 at 100 ms and 1e-5 at 140 ms)."""
    inc, model, cap, port = incasts(CASES)
    active = np.ones(inc.n_flows, bool)
    queues, alphas = [], []
    for k in range(1, 32_001):
        model.step(inc, cap, active, 2e-6)
        if k in (30_000, 31_000, 32_000):  # 60, 62 and 64 ms
            queues.append(model.queue[port].copy())
            alphas.append(model.alpha.copy())
    queue, rho_q = settled(queues)
    alpha, rho_a = settled(alphas)
    assert np.all((rho_q > 0.5) & (rho_q < 0.9)) and np.all((rho_a > 0.5) & (rho_a < 0.9))
    n = np.array([c[1] for c in CASES])
    gbps = np.array([c[0] for c in CASES], dtype=float)
    want = standing_queue_bytes(n, gbps * 1e9, PKT, QueueConfig())
    assert np.all((want > KMIN) & (want < KMAX))
    assert queue == pytest.approx(want, rel=3e-4)
    # and the test's own derivation of the same equations agrees to the solver's precision
    assert want[[2, 3]] == pytest.approx([fixed_point_queue(2), fixed_point_queue(8)], rel=1e-9)
    # at the fixed point every port is exactly full, every flow at its fair share ...
    share = np.repeat(gbps * 1e9 / 8 / n, n)
    assert model.rc == pytest.approx(share, rel=1e-4)
    # ... and alpha where its EWMA holds still: the chance of a mark in tau' at that rate
    p = np.repeat(marking_probability(gbps * 1e9 / n, PKT), n)
    assert alpha == pytest.approx(1 - (1 - p) ** (55e-6 * share / PKT), rel=1e-2)


def test_one_set_of_marking_thresholds():
    """The engine's DCQCN (`Transport`) and the snapshot queues (`QueueConfig`) mark by the same
    RED thresholds by default (150 KB / 1.5 MB / 0.2, design.md's setup)."""
    t, q = Transport(4000), QueueConfig()
    assert (t.kmin_bytes, t.kmax_bytes, t.pmax) == (q.kmin_bytes, q.kmax_bytes, q.pmax)


def test_red_inverse_maps_the_marking_back_to_its_queue():
    q = np.array([KMIN, (KMIN + KMAX) / 2, KMAX * 0.99])
    assert red_queue_bytes(red_probability(q, KMIN, KMAX, PMAX), KMIN, KMAX, PMAX) == pytest.approx(q)


def test_more_flows_stand_a_longer_queue():
    assert fixed_point_queue(2) < fixed_point_queue(4) < fixed_point_queue(8)


def test_flows_that_start_unequal_converge_to_fair_shares():
    inc, model = incast(2, rates=np.array([C, 0.1 * C]))
    settle(inc, model, 0.02)
    # closing at the pace of alpha's EWMA (measured: 1.22 at 20 ms, 1.07 at 50 ms, 1.0001 at 150 ms)
    assert 1.1 * model.rc[1] < model.rc[0] < 5 * model.rc[1]
    settle(inc, model, 0.13)
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
    # Zhu et al.'s 40G thresholds (5 KB, 200 KB, 1%), inputs: with the defaults (150 KB, 1.5 MB,
    # 0.2) marks start so late that these 500 KB flows end paused (1.003 x ideal, pauses
    # falling from 117 to 16 us per 20 us sample by the end)
    zhu = dataclasses.replace(ROCE, cc="dcqcn", kmin_bytes=5e3, kmax_bytes=200e3, pmax=0.01)
    on = simulate(FabricState(f), flows, transport=zhu, telemetry=QueueConfig(), sample_every=20e-6)
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

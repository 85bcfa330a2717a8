"""Where DCQCN holds the queue of a saturated port: the fixed point of its fluid model.

At an egress port that `N` flows saturate, DCQCN (Zhu et al., SIGCOMM 2015) keeps the rates at
the port's share by ECN marks: the port marks packets by RED between Kmin and Kmax (up to
`pmax` at Kmax); each flow's receiver returns a CNP at most once per `cnp_interval_s` when
marked packets arrived, and the sender cuts its rate by alpha / 2 (alpha an EWMA, gain `g`,
of the CNP-carrying intervals); without CNPs it recovers towards its target rate after each
`timer_s` and each `byte_counter_bytes` sent (`fast_recovery_steps` halvings, then additive
increase by `rai_bps`). The fluid model of Zhu et al. (CoNEXT 2016, "ECN or Delay") writes
this per flow, with rates R_C (current) and R_T (target) in packets per second and p the
marking probability:

    cut(p)     = 1 - (1 - p)^(tau' R_C)                   CNP per interval tau'
    ev(p, n, k) = p (1 - p)^(k n) / ((1 - p)^-n - 1)        counter expiries of n packets per
                                                           packet, after the first k since a mark
    E_C(p)     = R_C [ev(p, B, 0) + ev(p, T R_C, 0)]       every increase event (per second)
    E_T(p)     = R_C [ev(p, B, F) + ev(p, T R_C, F)]       the additive ones, after F recoveries
    d alpha/dt = g / tau' (cut - alpha)
    dR_T/dt    = -(R_T - R_C) cut / tau' + R_AI E_T
    dR_C/dt    = -R_C alpha cut / (2 tau') + (R_T - R_C) E_C / 2
    dq/dt      = N R_C - C

At the fixed point R_C = C / N, alpha = cut, and the two rate equations give
R_C cut(p)^3 = tau'^2 R_AI E_T(p) E_C(p): one equation in p (`marking_probability`), whose root sets
the queue through RED's inverse: q = Kmin + (Kmax - Kmin) p / pmax (`standing_queue_bytes`).
The feedback delay does not enter the fixed point, only whether the queue settles on it;
`fluid_queue` integrates the model in time (with the delay) to check that it does.

Inputs: the DCQCN parameters are the published defaults of Zhu et al. 2015 (`Dcqcn`); the ECN
thresholds are the run's (`twin.queueing.QueueConfig`). The marking probability and the queue
are outputs. With those defaults p* is of order 1e-4, far below pmax: the queue stands a few
KB above Kmin whatever N, so Kmin (an input) sets the standing delay, not Kmax.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from twin.queueing import QueueConfig


@dataclass(frozen=True)
class Dcqcn:
    """DCQCN's reaction-point settings (defaults: Zhu et al., SIGCOMM 2015, section 5)."""

    g: float = 1 / 256
    cnp_interval_s: float = 50e-6  # tau': CNPs at most once per interval, alpha updated as often
    timer_s: float = 55e-6  # T: rate-increase timer
    byte_counter_bytes: float = 10e6  # B: rate-increase byte counter
    fast_recovery_steps: int = 5  # F
    rai_bps: float = 40e6  # R_AI: additive increase


def _ev(p: float, n: float, steps: int) -> float:
    """ev(p, n, steps) of the module docstring, in log space ((1 - p)^-n overflows for large n)."""
    lg = math.log1p(-p)
    x = -n * lg
    if x > 700:
        return 0.0
    return p * math.exp(steps * n * lg) / math.expm1(x)


def _residual(p: float, rate_pps: float, b_pkts: float, cc: Dcqcn, rai_pps: float) -> float:
    cut = 1 - (1 - p) ** (cc.cnp_interval_s * rate_pps)
    e_c, e_t = _events(p, rate_pps, b_pkts, cc)
    return rate_pps * cut**3 - cc.cnp_interval_s**2 * rai_pps * e_t * e_c


def _events(p: float, rate_pps: float, b_pkts: float, cc: Dcqcn) -> tuple[float, float]:
    """(E_C, E_T): every rate-increase event per second, and the additive ones."""
    timer_pkts = cc.timer_s * rate_pps
    e_c = rate_pps * (_ev(p, b_pkts, 0) + _ev(p, timer_pkts, 0))
    e_t = rate_pps * (_ev(p, b_pkts, cc.fast_recovery_steps) + _ev(p, timer_pkts, cc.fast_recovery_steps))
    return e_c, e_t


def marking_probability(rate_bps: np.ndarray, packet_bytes: float, cc: Dcqcn | None = None) -> np.ndarray:
    """The ECN marking probability at which DCQCN flows at `rate_bps` (their share of the port)
    neither speed up nor slow down: the root of R_C cut^3 = tau'^2 R_AI E_T E_C."""
    cc = cc or Dcqcn()
    rate = np.asarray(rate_bps, dtype=float)
    out = np.zeros_like(rate)
    b_pkts = cc.byte_counter_bytes / packet_bytes
    rai_pps = cc.rai_bps / 8 / packet_bytes
    uniq, inv = np.unique(rate.ravel(), return_inverse=True)  # few: the shares at saturated ports
    roots = np.zeros(len(uniq))
    for k, r in enumerate(uniq):
        if r <= 0:
            continue
        pps = r / 8 / packet_bytes
        # below the root the increase wins (residual < 0), above it the cuts do
        roots[k] = brentq(_residual, 1e-12, 1 - 1e-9, args=(pps, b_pkts, cc, rai_pps), xtol=1e-15)
    out.ravel()[:] = roots[inv]
    return out


def standing_queue_bytes(n_flows: np.ndarray, capacity_bps: np.ndarray, packet_bytes: float,
                         cfg: QueueConfig | None = None, cc: Dcqcn | None = None) -> np.ndarray:
    """Per port, the queue DCQCN holds when `n_flows` (>= 1) flows share its `capacity_bps`:
    RED's inverse at the fixed-point marking probability (Kmax and beyond if p* > pmax)."""
    cfg = cfg or QueueConfig()
    n = np.maximum(np.asarray(n_flows, dtype=float), 1)
    p = marking_probability(np.asarray(capacity_bps, dtype=float) / n, packet_bytes, cc)
    return np.where(p < cfg.pmax, cfg.kmin_bytes + (cfg.kmax_bytes - cfg.kmin_bytes) * p / cfg.pmax,
                    cfg.kmax_bytes)


def fluid_queue(n_flows: int, capacity_bps: float, demand_bps: float, packet_bytes: float,
                feedback_s: float, cfg: QueueConfig | None = None, cc: Dcqcn | None = None,
                dt: float = 0.5e-6, until_s: float = 0.05) -> np.ndarray:
    """The queue (bytes) over time of `n_flows` DCQCN flows, each offering `demand_bps`, at one
    port of `capacity_bps`, by Euler steps of `dt` of the fluid model with marks seen
    `feedback_s` late; the flows start at their demand with alpha = 1. A check of
    `standing_queue_bytes` (one port, scalar steps: not for a hot path)."""
    cfg = cfg or QueueConfig()
    cc = cc or Dcqcn()
    cap, demand = capacity_bps / 8 / packet_bytes, demand_bps / 8 / packet_bytes
    b_pkts, rai = cc.byte_counter_bytes / packet_bytes, cc.rai_bps / 8 / packet_bytes
    lag = max(1, int(round(feedback_s / dt)))
    seen_p, seen_r = [0.0] * lag, [demand] * lag  # ring buffers of what the senders learn late
    q, rc, rt, alpha = 0.0, demand, demand, 1.0
    out = np.empty(int(until_s / dt))
    for i in range(len(out)):
        p, r = min(max(seen_p[i % lag], 1e-12), 1 - 1e-9), seen_r[i % lag]
        cut = 1 - (1 - p) ** (cc.cnp_interval_s * r)
        e_c, e_t = _events(p, r, b_pkts, cc)
        alpha += cc.g / cc.cnp_interval_s * (cut - alpha) * dt
        d_rt = -(rt - rc) / cc.cnp_interval_s * cut + rai * e_t
        d_rc = -rc * alpha / (2 * cc.cnp_interval_s) * cut + (rt - rc) / 2 * e_c
        rt = min(rt + d_rt * dt, demand)
        rc = min(max(rc + d_rc * dt, 1e-3 * cap), rt)
        q = max(0.0, q + (n_flows * rc - cap) * dt)
        qb = q * packet_bytes
        mark = 0.0 if qb <= cfg.kmin_bytes else (
            1.0 if qb >= cfg.kmax_bytes else (qb - cfg.kmin_bytes) / (cfg.kmax_bytes - cfg.kmin_bytes) * cfg.pmax)
        seen_p[i % lag], seen_r[i % lag] = mark, rc
        out[i] = qb
    return out

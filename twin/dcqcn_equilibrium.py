"""Where DCQCN holds the queue of a saturated port: the fixed point of `twin.dcqcn`'s fluid model.

The same equations and parameters as `twin.dcqcn.DcqcnFluid` (`DcqcnParams`; the terms come
from `twin.dcqcn.rate_terms`, the marking from `twin.dcqcn.red_probability`), solved at rest
instead of stepped in time. At an egress port that N flows saturate, each flow at its share
R = C / N (in packets/s) and p the marking probability of its packets:

- d alpha/dt = 0:  alpha = 1 - (1 - p)^(tau' R)
- dR_T/dt = 0:     (R_T - R_C) A / tau = I(p), the target's increase (R_AI, R_HAI and their events)
- dR_C/dt = 0:     R_C alpha A / (2 tau) = (R_T - R_C) (e_B + e_T) / 2

so R alpha A^2 = tau^2 I(p) (e_B + e_T), with A = 1 - (1 - p)^(tau R): one equation in p
(`marking_probability`), whose root sets the queue through RED's inverse,
q = Kmin + (Kmax - Kmin) p / pmax (`twin.dcqcn.red_queue_bytes`, `standing_queue_bytes`).
Below the root the increase wins, above it the cuts do, so the root is found by bisection
(vectorized over the ports' shares). The control loop's delay does not enter the fixed point;
the NIC's rate floor and line rate are left out (a share C / N between them is assumed).

Inputs: `DcqcnParams` (Zhu et al. 2015's defaults) and the ECN thresholds of the run
(`twin.queueing.QueueConfig`); the marking probability and the queue are outputs.
"""

from __future__ import annotations

import numpy as np

from twin.dcqcn import DcqcnParams, rate_terms, red_queue_bytes
from twin.queueing import QueueConfig

_BISECTIONS = 64  # halvings of [1e-12, 1 - 1e-9] in log p: p to a relative 1e-17


def _residual(share_Bps: np.ndarray, log_p: np.ndarray, packet_bytes: float,
              cc: DcqcnParams) -> np.ndarray:
    """R alpha A^2 - tau^2 I (e_B + e_T) at the fixed point (bytes/s): < 0 where the rates
    would still grow, > 0 where the cuts win."""
    log1mp = np.log1p(-np.exp(log_p))
    cnp_window, alpha, events, increase = rate_terms(share_Bps, log1mp, packet_bytes, cc)
    return share_Bps * alpha * cnp_window**2 - cc.cnp_interval_s**2 * increase * events


def marking_probability(rate_bps: np.ndarray, packet_bytes: float,
                        cc: DcqcnParams | None = None) -> np.ndarray:
    """The ECN marking probability at which DCQCN flows at `rate_bps` (their share of the port)
    neither speed up nor slow down (0 for a share of 0)."""
    cc = cc or DcqcnParams()
    rate = np.asarray(rate_bps, dtype=float)
    # the shares at saturated ports are few (C / N): solve each once
    share, back = np.unique(rate.ravel() / 8, return_inverse=True)
    lo = np.full(share.shape, np.log(1e-12))
    hi = np.full(share.shape, np.log1p(-1e-9))
    live = share > 0
    s = np.where(live, share, 1.0)
    for _ in range(_BISECTIONS):  # a fixed number of vectorized halvings: no loop over ports
        mid = (lo + hi) / 2
        cuts_win = _residual(s, mid, packet_bytes, cc) > 0
        hi, lo = np.where(cuts_win, mid, hi), np.where(cuts_win, lo, mid)
    return np.where(live, np.exp((lo + hi) / 2), 0.0)[back].reshape(rate.shape)


def standing_queue_bytes(n_flows: np.ndarray, capacity_bps: np.ndarray, packet_bytes: float,
                         cfg: QueueConfig | None = None, cc: DcqcnParams | None = None) -> np.ndarray:
    """Per port, the queue DCQCN holds when `n_flows` (>= 1) flows share its `capacity_bps`:
    RED's inverse at the fixed-point marking probability (Kmax and beyond if p* > pmax)."""
    cfg = cfg or QueueConfig()
    n = np.maximum(np.asarray(n_flows, dtype=float), 1)
    p = marking_probability(np.asarray(capacity_bps, dtype=float) / n, packet_bytes, cc)
    return red_queue_bytes(p, cfg.kmin_bytes, cfg.kmax_bytes, cfg.pmax)

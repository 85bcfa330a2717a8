"""DCQCN as a fluid model: ECN marks at the switches set the RoCE senders' rates (issue 18).

DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015) is
the rate-based end-to-end control of RoCEv2 NICs. Its fluid model (the paper's section 5),
vectorized here over every flow and egress port of an `Incidence`, with the hyper-increase
stage the paper's model leaves out:

- Each egress port l has a queue q_l (bytes) fed by the sending rates of the flows crossing
  it: dq_l/dt = sum_f a_lf R_f - C_l, held in [0, xoff_l]. RED marks a packet leaving it with
  probability p_l = 0 below Kmin, Pmax (q - Kmin) / (Kmax - Kmin) between, 1 above Kmax.
- A flow's packets are marked with p = 1 - prod_l (1 - p_l) over its switch ports (the
  sender's own NIC port marks nothing). With R the current rate in packets/s:
  * CNPs: the receiver sends at most one CNP per `cnp_interval_s` (tau) if a marked packet came
    in it, so a window of tau holds one with A = 1 - (1 - p)^(tau R);
  * alpha: d alpha/dt = g / tau' ((1 - (1 - p)^(tau' R)) - alpha), tau' = `alpha_timer_s`;
  * increase events: the byte counter (every B packets) and the timer (every T) expire at
    e_B = R p / ((1 - p)^-B - 1) and e_T = R p / ((1 - p)^-(T R) - 1) (R / B and 1 / T with no
    marks); an event F steps past the last CNP is additive (target += R_AI), one past F steps
    on both counters is hyper (target += R_HAI): probabilities (1 - p)^(F B), (1 - p)^(F T R)
    and (1 - p)^(F max(B, T R));
  * dR_T/dt = -(R_T - R_C) A / tau + R_AI (e_B ((1-p)^(FB) - P_h) + e_T ((1-p)^(FTR) - P_h))
    + R_HAI (e_B + e_T) P_h;
  * dR_C/dt = -R_C alpha A / (2 tau) + (R_T - R_C) / 2 (e_B + e_T) (the cut by alpha / 2 on a
    CNP; fast recovery halving the gap to the target on every event).
- Lossless (PFC): a port whose queue reaches its XOFF point pauses its feeders for the share
  1 - C / load of the time its load exceeds its capacity (`paused_fraction`); such a port
  passes at most C, every flow through it slowed in proportion (FIFO), which is also what a
  flow delivers (`delivered`): its sending rate times the least C / load on its path.

Assumptions: the control loop's delay (the paper's tau*, a few us against tau = 50 us) is left
out; a queue sees the flows' sending rates (mean field, not the upstream ports' output); rates
stay between `min_rate_bps` and the NIC's line rate; explicit Euler steps of `step_s`.
Every parameter is an input (`DcqcnParams`); the queue where the rates settle, the rates and the
pauses are outputs. The same equations solved at rest (`rate_terms`, `twin.dcqcn_equilibrium`)
give the queue a saturated port holds in closed form; run to steady state, this model settles
there to 1e-4 (tests/test_dcqcn.py: 25, 100 and 400G, 2 to 16 flows) if the Euler step is small
enough for RED's slope: with 150 KB / 1.5 MB / 0.2, 10 us settles at 100G, 20 us oscillates
there, and 400G needs 2 us (5 us holds a 19 KB limit cycle); the engine steps 1 us.

Packet level (htsim_roce's `-dcqcn K`: marking when the queue exceeds K packets, R_AI = line / 20,
R_HAI = line / 10, one alpha shared by every sender): a 2-to-1 incast of 1 MB at 100G on 2 tiers
with K = 20 finishes at 285.6 / 286.8 us in htsim, 225.2 us here with those parameters (-21%;
171.5 without control): htsim's CNPs keep coming for packets marked while the queue was full
(the loop delay left out here), so three halvings take its senders to 12.5 Gb/s each. An 8-to-1
incast of 2 MB did not finish in htsim (its senders stalled at 250 of 500 packets).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.maxmin import Incidence


@dataclass(frozen=True)
class DcqcnParams:
    """DCQCN's sender (reaction point) and receiver (notification point) parameters.

    Defaults are those of Zhu et al. 2015 (inputs, not fitted): g = 1/256, a CNP at most every
    50 us, the alpha and rate-increase timers at 55 us, a 10 MB byte counter, F = 5 fast
    recovery steps, R_AI = 40 Mb/s. R_HAI is not in the paper's fluid model: 10 x R_AI, the
    ratio of ConnectX NICs' defaults (rpg_ai_rate 5, rpg_hai_rate 50 Mb/s). The ECN marking
    thresholds belong to the switches: `twin.queueing.Transport.kmin_bytes` and its neighbours.
    """

    g: float = 1 / 256
    cnp_interval_s: float = 50e-6  # tau: the receiver's CNP spacing
    alpha_timer_s: float = 55e-6  # tau': alpha decays when no CNP came in it
    rate_timer_s: float = 55e-6  # T: a rate-increase event every T without a CNP
    byte_counter_bytes: float = 10e6  # B: a rate-increase event every B bytes sent
    fast_recovery_steps: int = 5  # F
    rai_bps: float = 40e6  # additive increase step
    rhai_bps: float = 400e6  # hyper increase step
    min_rate_bps: float = 100e6  # the NIC's floor for a throttled QP
    step_s: float = 1e-6  # the fluid model's time step (Euler)


def red_probability(queue_bytes: np.ndarray, kmin: float, kmax: float, pmax: float) -> np.ndarray:
    """RED/ECN marking probability of a packet leaving a queue of `queue_bytes`."""
    p = pmax * np.clip((queue_bytes - kmin) / (kmax - kmin), 0.0, 1.0)
    return np.where(queue_bytes > kmax, 1.0, p)


def red_queue_bytes(p: np.ndarray, kmin: float, kmax: float, pmax: float) -> np.ndarray:
    """`red_probability`'s inverse: the queue at which RED marks with probability `p` (Kmax
    for any p at or above pmax, where the marking jumps to 1)."""
    return np.where(p < pmax, kmin + (kmax - kmin) * np.asarray(p) / pmax, kmax)


def _event_rate(r_pkts: np.ndarray, p: np.ndarray, log1mp: np.ndarray, n_pkts: np.ndarray) -> np.ndarray:
    """Rate of a counter of `n_pkts` packets that each mark resets: R p / ((1 - p)^-n - 1),
    R / n without marks."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = r_pkts * p / np.expm1(-n_pkts * log1mp)
    # out >= 0 (r, p, n >= 0 and log(1 - p) <= 0): nan and +inf are its only non-finite values,
    # and both mean no event; one isfinite test is cheaper than nan_to_num (a hot path)
    return np.where(p > 0, np.where(np.isfinite(out), out, 0.0), r_pkts / np.maximum(n_pkts, 1e-300))


class DcqcnFluid:
    """The state of DCQCN over one run: per flow R_C, R_T and alpha (rates in bytes/s), per
    directed link its queue (bytes) and counters; `step` integrates it, `delivered` gives the
    rates the engine moves bytes at.

    `marking`: links whose queue marks and pauses (switch egress ports; not the NIC's own);
    `xoff_bytes`: per link, the queue at which PFC pauses its feeders; `enabled=False` keeps
    every sender at its line rate (RoCE without end-to-end control, as htsim's runs): the same
    queues and pauses, for comparison. Without `lossless` a full queue drops what PFC would
    have paused (`drops_bytes`)."""

    def __init__(self, n_flows: int, n_links: int, line_rate_Bps: np.ndarray, marking: np.ndarray,
                 xoff_bytes: np.ndarray, packet_bytes: float, kmin_bytes: float, kmax_bytes: float,
                 pmax: float, params: DcqcnParams | None = None, enabled: bool = True,
                 lossless: bool = True):
        self.p = params or DcqcnParams()
        self.line = np.asarray(line_rate_Bps, dtype=float)
        self.rc = self.line.copy()  # a QP starts at line rate
        self.rt = self.line.copy()
        self.alpha = np.ones(n_flows)  # as the NICs (and the paper) start it
        self.queue = np.zeros(n_links)
        self.marking, self.xoff = np.asarray(marking, bool), np.asarray(xoff_bytes, float)
        self.pkt, self.kmin, self.kmax, self.pmax = packet_bytes, kmin_bytes, kmax_bytes, pmax
        self.enabled, self.lossless = enabled, lossless
        self.paused_s = np.zeros(n_links)  # per link, seconds its sender was paused (PFC)
        self.marked_pkts = np.zeros(n_links)
        self.cnps = np.zeros(n_flows)
        self.drops_bytes = np.zeros(n_links)

    def start(self, flows: np.ndarray) -> None:
        """Flows that begin now start at line rate with alpha = 1."""
        self.rc[flows], self.rt[flows], self.alpha[flows] = self.line[flows], self.line[flows], 1.0

    def _load(self, inc: Incidence, active: np.ndarray) -> np.ndarray:
        return inc.link_load(np.where(active, self.rc, 0.0))

    def scale(self, inc: Incidence, capacity_Bps: np.ndarray, active: np.ndarray) -> np.ndarray:
        """Per link the share min(1, C / load) that it passes of what its flows send."""
        return _passed_share(self._load(inc, active), capacity_Bps)

    def delivered(self, inc: Incidence, capacity_Bps: np.ndarray, active: np.ndarray) -> np.ndarray:
        """Rates (bytes/s) at which each active flow's bytes get through: its sending rate
        times the least share its path's ports pass (`scale`)."""
        s = self.scale(inc, capacity_Bps, active)
        return np.where(active, self.rc * _path_min(inc, s), 0.0)

    def paused_fraction(self, inc: Incidence, capacity_Bps: np.ndarray, active: np.ndarray) -> np.ndarray:
        """Per link: the share of time PFC pauses the ports feeding it now (its queue at XOFF
        and its load above its capacity); the engine puts it on those feeders, as
        `twin.queueing.queue_state` does."""
        return self._paused(self._load(inc, active), capacity_Bps)

    def _paused(self, load: np.ndarray, capacity_Bps: np.ndarray) -> np.ndarray:
        """`paused_fraction` from the links' `load` (computed once per step)."""
        if not self.lossless:
            return np.zeros_like(self.queue)
        at_xoff = self.queue >= self.xoff * (1 - 1e-9)
        return np.where(at_xoff & self.marking, 1.0 - _passed_share(load, capacity_Bps), 0.0)

    def marks_per_s(self, inc: Incidence, capacity_Bps: np.ndarray, active: np.ndarray) -> np.ndarray:
        """Per link, ECN-marked packets per second now."""
        p_link = np.where(self.marking, red_probability(self.queue, self.kmin, self.kmax, self.pmax), 0.0)
        return p_link * np.minimum(self._load(inc, active), capacity_Bps) / self.pkt

    def step(self, inc: Incidence, capacity_Bps: np.ndarray, active: np.ndarray, dt: float) -> None:
        """Advance queues, marks, pauses and (when enabled) the senders' rates by `dt` seconds."""
        load = self._load(inc, active)
        pause = self._paused(load, capacity_Bps)
        self.paused_s += pause * dt
        p_link = np.where(self.marking, red_probability(self.queue, self.kmin, self.kmax, self.pmax), 0.0)
        self.marked_pkts += p_link * np.minimum(load, capacity_Bps) / self.pkt * dt
        if self.enabled:
            self._react(inc, p_link, active, dt)
        grown = self.queue + np.where(self.marking, (load - capacity_Bps) * dt, 0.0)
        if not self.lossless:  # a full lossy queue drops the excess
            self.drops_bytes += np.maximum(grown - self.xoff, 0.0)
        self.queue = np.clip(grown, 0.0, self.xoff)

    def _react(self, inc: Incidence, p_link: np.ndarray, active: np.ndarray, dt: float) -> None:
        """One Euler step of the senders' rate equations (module docstring)."""
        prm = self.p
        log1mp = inc.path_sum(np.log1p(-np.minimum(p_link, 1 - 1e-12)))  # log(1 - p) per flow
        cnp_window, alpha_target, events, increase = rate_terms(self.rc, log1mp, self.pkt, prm)
        tau = prm.cnp_interval_s
        d_alpha = prm.g / prm.alpha_timer_s * (alpha_target - self.alpha)
        gap = self.rt - self.rc
        d_rt = -gap * cnp_window / tau + increase
        d_rc = -self.rc * self.alpha * cnp_window / (2 * tau) + gap / 2 * events
        self.cnps += np.where(active, cnp_window / tau * dt, 0.0)
        floor = prm.min_rate_bps / 8
        self.alpha = np.where(active, np.clip(self.alpha + d_alpha * dt, 0.0, 1.0), self.alpha)
        self.rt = np.where(active, np.clip(self.rt + d_rt * dt, floor, self.line), self.rt)
        self.rc = np.where(active, np.clip(self.rc + d_rc * dt, floor, self.line), self.rc)
        self.rt = np.maximum(self.rt, self.rc)


def rate_terms(rate_Bps: np.ndarray, log1mp: np.ndarray, packet_bytes: float,
               prm: DcqcnParams) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The terms of the rate equations (module docstring) for senders at `rate_Bps` whose
    packets are marked with probability p = 1 - exp(`log1mp`): (A, a CNP in a window of tau;
    the alpha that d alpha/dt holds still at, 1 - (1 - p)^(tau' R); e_B + e_T, increase events
    per second; the target's increase in bytes/s^2, R_AI and R_HAI weighted by their events).
    `DcqcnFluid` steps them in time and `twin.dcqcn_equilibrium` solves them at rest."""
    p = -np.expm1(log1mp)
    r = rate_Bps / packet_bytes  # packets/s
    t_inc, f = prm.rate_timer_s, prm.fast_recovery_steps
    b = prm.byte_counter_bytes / packet_bytes
    cnp_window = -np.expm1(prm.cnp_interval_s * r * log1mp)
    alpha_target = -np.expm1(prm.alpha_timer_s * r * log1mp)
    e_b = _event_rate(r, p, log1mp, np.full_like(r, b))
    e_t = _event_rate(r, p, log1mp, t_inc * r)
    p_ai_b, p_ai_t = np.exp(f * b * log1mp), np.exp(f * t_inc * r * log1mp)
    p_hyper = np.exp(f * np.maximum(b, t_inc * r) * log1mp)
    increase = (prm.rai_bps / 8 * (e_b * (p_ai_b - p_hyper) + e_t * (p_ai_t - p_hyper))
                + prm.rhai_bps / 8 * (e_b + e_t) * p_hyper)
    return cnp_window, alpha_target, e_b + e_t, increase


def _passed_share(load_Bps: np.ndarray, capacity_Bps: np.ndarray) -> np.ndarray:
    """Per link min(1, C / load): the share of what its flows send that it passes."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(load_Bps > capacity_Bps, capacity_Bps / load_Bps, 1.0)


def _path_min(inc: Incidence, per_link: np.ndarray) -> np.ndarray:
    """Per flow, the least of `per_link` over the links it loads (1.0 for a flow on none)."""
    a = inc.explicit_csc()
    out = np.ones(inc.n_flows)
    nonempty = np.diff(a.indptr) > 0
    if a.nnz:
        vals = np.where(a.data > 0, per_link[a.indices], np.inf)
        out[nonempty] = np.minimum.reduceat(vals, a.indptr[:-1][nonempty])
    return np.minimum(out, 1.0)

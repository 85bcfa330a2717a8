"""UEC's NSCC windows in a synchronized incast: why the senders do not finish together.

A flow-level model shares a saturated port equally among the flows that cross it. UEC's
sender-based congestion control (NSCC, htsim's uec.cpp) does not: each sender's window moves
on its own ACKs, by an additive increase that is the same for every flow (fair_increase,
proportional_increase, eta) and by multiplicative decreases that come with the ECN marks its
own packets happen to carry (multiplicative_decrease, at most once per base RTT), plus trims
and quick_adapt in the first overflow. Which packets are marked is random, and additive
increase pulls the windows together only slowly, so the senders' shares stay apart and they
finish at different times. (htsim's debug trace of its 16-to-1 incast: windows apart by a
coefficient of variation of 0.40, correlated over 400-800 us; the order changes with `-seed`;
turning marking off, `-ecn 98 99`, narrows the first/last finish from 0.50 to 0.74.)

`incast_weights` runs those rules per packet-time step for the flows of each synchronized
incast (one receiver port, one start, every sender alone on its NIC), vectorized over all such
flows, with seeded draws of the trims and marks, and returns each flow's share while they all
send, relative to its incast's mean: the engine's weighted max-min then shares the port in
those proportions (`twin.engine`). The spread is an output of the rules; the inputs are
htsim's NSCC constants and its switch's defaults (`Nscc`), the port's queue and speed, and each
flow's base RTT. Acknowledgements are taken as arriving with the packets they acknowledge (a
fluid clock), so the model is a reduction of htsim's, not a copy. It agrees with htsim where
htsim runs by default (the queue at about 34 packets, 11 us, against htsim's 11-12 us of
average delay; first completions of a 16-to-1 incast at 1,500-1,760 us against 1,330-1,410),
not under every ablation: with marking off its windows split further apart (trims and
quick_adapt), where htsim's come closer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Nscc:
    """htsim's NSCC constants (uec.cpp `initNsccParams`, with trimming) and its ECN marking
    defaults (main_uec.cpp: RED from 0.2 to 0.8 of a BDP in packets on every queue)."""

    target_rtts: float = 0.75  # target queueing delay, in network RTTs (trimming on)
    fair_mss: float = 5.0  # fair_increase: _fi = 5 MSS x scaling_a per window acked
    proportional_mss: float = 4.0  # proportional_increase: _alpha = 4 MSS x a x b / target
    eta_mss: float = 0.15  # eta: 0.15 MSS x a once per network RTT
    gamma: float = 0.8  # multiplicative_decrease: x (1 - gamma (avg - target) / avg), >= 0.5
    delay_alpha: float = 0.0125  # the delay EWMA's weight per ACK
    qa_gate: int = 3  # quick_adapt only below maxwnd / 2^qa_gate achieved
    max_window_bdp: float = 1.5  # maxwnd
    ecn_low_bdp: float = 0.2
    ecn_high_bdp: float = 0.8
    reference_rtt_s: float = 12e-6  # NSCC's scaling reference: 100 Gb/s x 12 us
    reference_bps: float = 100e9
    step_s: float = 1e-6  # the model's clock
    # an incast longer than this is weighed by its shares over this long (htsim's windows stay
    # correlated for 400-800 us; it bounds the model's cost, 1 us steps)
    horizon_s: float = 20e-3


def incast_groups(src: np.ndarray, dst: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Per flow, its synchronized incast (an index) or -1: two or more flows to one receiver
    starting at the same time, each from a sender that starts fewer flows then than its
    receiver takes, so that the receiver's port is where the windows meet (an all-to-all's
    senders share their NIC as much as their receivers, and the NIC paces its flows alike)."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    t = np.round(np.asarray(start, float) * 1e9).astype(np.int64)  # ns: equal starts
    _, into, n_into = np.unique(np.stack([dst, t]), axis=1, return_inverse=True, return_counts=True)
    _, out, n_out = np.unique(np.stack([src, t]), axis=1, return_inverse=True, return_counts=True)
    into, out = into.ravel(), out.ravel()
    member = (n_into[into] >= 2) & (n_out[out] < n_into[into]) & (src != dst)
    member &= np.bincount(into, weights=member, minlength=len(n_into))[into] >= 2
    groups = np.full(len(src), -1, np.int64)
    groups[member] = np.unique(into[member], return_inverse=True)[1].ravel()
    return groups


def incast_weights(groups: np.ndarray, size_bytes: np.ndarray, rtt_s: np.ndarray,
                   port_bps: np.ndarray, packet_bytes: float, queue_bytes: np.ndarray,
                   seed: int = 0, p: Nscc | None = None) -> np.ndarray:
    """Each flow's share of its incast's port while every member sends, over the incast's mean
    (1.0 for a flow in no incast). groups: `incast_groups`; size_bytes: wire bytes per flow;
    rtt_s: base RTT per flow; port_bps, queue_bytes: per group, the receiver port's speed and
    queue."""
    w = np.ones(len(groups))
    idx = np.flatnonzero(groups >= 0)
    if idx.size == 0:
        return w
    run = _Incasts(groups[idx], np.asarray(size_bytes, float)[idx], np.asarray(rtt_s, float)[idx],
                   np.asarray(port_bps, float), packet_bytes, np.asarray(queue_bytes, float),
                   np.random.default_rng(seed), p or Nscc())
    share = run.shares()
    g = run.g
    mean = np.bincount(g, weights=share, minlength=run.n_g) / np.maximum(np.bincount(g, minlength=run.n_g), 1)
    w[idx] = np.divide(share, mean[g], out=np.ones(len(idx)), where=mean[g] > 0)
    return w


class _Incasts:
    """The senders of every incast at once: their windows (NSCC's per-flow state) and each
    incast's queue at its receiver's port, stepped on one clock."""

    def __init__(self, g: np.ndarray, size: np.ndarray, rtt: np.ndarray, port_bps: np.ndarray,
                 mss: float, queue_bytes: np.ndarray, rng: np.random.Generator, p: Nscc):
        self.g, self.n_g, self.rng, self.p, self.mss = g, int(g.max()) + 1, rng, p, mss
        self.rtt, self.b = rtt, queue_bytes
        self.cg = port_bps / 8  # bytes/s, per incast
        self.c = self.cg[g]
        rtt_g = np.zeros(self.n_g)
        np.maximum.at(rtt_g, g, rtt)  # htsim's network RTT: the largest unloaded one
        self.net_rtt = rtt_g[g]
        self.target = p.target_rtts * self.net_rtt
        scale_a = self.c * self.net_rtt / (p.reference_bps / 8 * p.reference_rtt_s)
        self.fi = p.fair_mss * mss * scale_a
        self.eta = p.eta_mss * mss * scale_a
        self.alpha = p.proportional_mss * mss * scale_a / p.reference_rtt_s
        bdp_pkts = np.ceil(self.cg * rtt_g / mss)  # per incast: its port's marking thresholds
        self.kmin = np.ceil(bdp_pkts * p.ecn_low_bdp) * mss
        self.kmax = np.ceil(bdp_pkts * p.ecn_high_bdp) * mss
        n = len(g)
        self.maxw = p.max_window_bdp * self.c * rtt
        self.cwnd = self.maxw.copy()
        self.rem = size.copy()
        self.sent = np.zeros(n)
        self.q = np.zeros(self.n_g)
        self.avg, self.inc, self.recv, self.ach = (np.zeros(n) for _ in range(4))
        self.last_adj, self.last_dec, self.qa_end = (np.zeros(n) for _ in range(3))
        self.trig = np.zeros(n, bool)
        # per-step constants, computed once (the step loop runs a thousand times or more)
        self.drain = self.cg * p.step_s  # bytes each port sends per step
        self.mark_span = np.maximum(self.kmax - self.kmin, 1.0)
        self.keep_base = 1 - p.delay_alpha
        self.rtt_quarter = self.rtt * 0.25
        self.qa_cap = self.maxw / 2**p.qa_gate

    def shares(self) -> np.ndarray:
        """Bytes each flow delivered until its incast's first completion (one step per
        microsecond: a loop over time, every flow of every incast at once)."""
        g, n_g = self.g, self.n_g
        first_done = np.full(n_g, np.inf)
        share = np.zeros(len(g))
        t = 0.0
        open_g = np.ones(n_g, bool)  # incasts with no completion yet (first_done infinite)
        n_done = 0
        while n_done < n_g and t < self.p.horizon_s:
            act = (self.rem > 0) & open_g[g]
            d = (self.q / self.cg)[g]  # the incast's queueing delay
            tr, n_ack, n_marked = self.network(act, d)
            self.window(t, act, d, tr, n_ack, n_marked)
            t += self.p.step_s
            fin = act & (self.rem <= 0)
            if not fin.any():  # most steps: no flow completes
                continue
            new = (np.bincount(g, weights=fin, minlength=n_g) > 0) & open_g
            first_done[new] = t
            open_g &= ~new
            n_done += int(new.sum())
            share[new[g]] = self.sent[new[g]]
        open_ = ~np.isfinite(first_done)[g]  # past the horizon: the shares so far
        share[open_] = self.sent[open_]
        return share

    def network(self, act: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One step of sending: each window's rate into its incast's queue, trims past the
        queue, ECN marks (RED between kmin and kmax) on what is delivered; returns the trimmed
        bytes, the packets acknowledged and how many of them were marked, per flow."""
        g, mss, rng = self.g, self.mss, self.rng
        a = np.where(act, np.minimum(self.cwnd / (self.rtt + d), self.c) * self.p.step_s, 0.0)
        a = np.minimum(a, self.rem)
        tot = np.bincount(g, weights=a, minlength=self.n_g)
        q2 = self.q + tot - self.drain
        trimmed = np.maximum(q2 - self.b, 0.0)
        self.q = _clip(q2, 0.0, self.b)
        p_trim = np.divide(trimmed, tot, out=np.zeros(self.n_g), where=tot > 0)[g]
        tr = np.minimum(rng.binomial(_packets(a / mss, rng), p_trim) * mss, a)
        good = a - tr
        self.rem -= good
        self.sent += good
        self.ach += good
        self.recv += good
        pm = _clip((self.q - self.kmin) / self.mark_span, 0.0, 1.0)[g]
        n_ack = _packets(good / mss, rng)
        return tr, n_ack, rng.binomial(n_ack, pm)

    def window(self, t: float, act: np.ndarray, d: np.ndarray, tr: np.ndarray, n_ack: np.ndarray,
               n_marked: np.ndarray) -> None:
        """NSCC's reaction to one step's ACKs and NACKs (uec.cpp updateCwndOnAck_NSCC,
        updateCwndOnNack_NSCC, quick_adapt, fulfill_adjustment)."""
        p, mss, target = self.p, self.mss, self.target
        marked = n_marked > 0
        unmarked = (n_ack - n_marked) * mss  # bytes the ACKs acknowledge unmarked
        keep = self.keep_base ** n_ack
        sample = np.where((d > target) & ~marked, self.rtt_quarter, d)  # update_delay's rule
        self.avg = keep * self.avg + (1 - keep) * sample
        # quick_adapt: once per base RTT + target, after a trim, to what was achieved
        self.trig |= tr > 0
        due = act & (t > self.qa_end)
        fire = due & (self.qa_end > 0) & (self.trig | (d > 4 * target)) & (self.ach < self.qa_cap)
        cwnd = np.where(fire, np.maximum(self.ach, mss), np.maximum(self.cwnd - tr, mss))
        self.inc = np.where(fire, 0.0, self.inc)
        self.recv = np.where(fire, 0.0, self.recv)
        self.trig &= ~fire
        self.ach = np.where(due, 0.0, self.ach)
        self.qa_end = np.where(due, t + self.rtt + target, self.qa_end)
        up = ~fire & act
        self.inc += np.where(up & (d >= target), self.fi * unmarked,
                             np.where(up, self.alpha * unmarked * np.maximum(target - d, 0.0), 0.0))
        md = up & marked & (d >= target) & (self.avg > target) & (t - self.last_dec > self.rtt)
        factor = np.maximum(1 - p.gamma * (self.avg - target) / np.maximum(self.avg, 1e-15), 0.5)
        cwnd = _clip(np.where(md, cwnd * factor, cwnd), mss, self.maxw)
        self.last_dec = np.where(md, t, self.last_dec)
        adj = act & ((self.recv > 8 * mss) | (t - self.last_adj > self.net_rtt))
        cwnd = np.where(adj, cwnd + self.inc / cwnd, cwnd)
        period = adj & (t - self.last_adj >= self.net_rtt)
        cwnd = np.where(period, cwnd + self.eta, cwnd)
        self.last_adj = np.where(period, t, self.last_adj)
        self.inc = np.where(adj, 0.0, self.inc)
        self.recv = np.where(adj, 0.0, self.recv)
        self.cwnd = _clip(cwnd, mss, self.maxw)


def flow_weights(src: np.ndarray, dst: np.ndarray, start: np.ndarray, size_bytes: np.ndarray,
                 rtt_s: np.ndarray, receiver_bps: np.ndarray, packet_bytes: float,
                 queue_packets: float, seed: int = 0) -> np.ndarray | None:
    """The engine's per-flow max-min weights (`incast_weights`), None when no flow is in a
    synchronized incast. receiver_bps: per flow, its receiver port's speed; the port's queue
    holds `queue_packets` packets (htsim's `-q`)."""
    groups = incast_groups(src, dst, start)
    groups[np.asarray(receiver_bps, float) <= 0] = -1  # a dead receiver port: nothing to share
    groups[groups >= 0] = np.unique(groups[groups >= 0], return_inverse=True)[1].ravel()
    if not (groups >= 0).any():
        return None
    member = np.flatnonzero(groups >= 0)
    first = np.zeros(int(groups.max()) + 1, np.int64)
    first[groups[member][::-1]] = member[::-1]  # one member per incast: its receiver port
    port = np.asarray(receiver_bps, float)[first]
    return incast_weights(groups, size_bytes, rtt_s, port, packet_bytes,
                          np.full(len(first), queue_packets * packet_bytes), seed)


def _clip(x: np.ndarray, lo: float | np.ndarray, hi: float | np.ndarray) -> np.ndarray:
    """`np.clip` as two ufuncs, without its Python wrapper (four calls a step; the same values:
    no NaN or signed zero reaches it here)."""
    return np.minimum(np.maximum(x, lo), hi)


def _packets(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Whole packets of a fluid count, the fraction rounded at random."""
    whole = np.floor(x)
    return (whole + (rng.random(len(x)) < x - whole)).astype(np.int64)

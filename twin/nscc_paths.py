"""UEC's NSCC window over obliviously sprayed paths of uneven speed (issue 18, fidelity).

An oblivious UEC sender sprays its packets over all its paths, but it has one window. When
some of those paths cross a slowed port (htsim's `-failed K`: a link at 25% with 25% of the
queue), the packets sprayed there beyond what the port carries are trimmed, and every NACK
takes its bytes off the window (htsim's uec.cpp `updateCwndOnNack_NSCC`: `_cwnd -=
nacked_bytes`) for all paths at once; the ACKs of the fast paths raise it again
(proportional_increase, fair_increase, eta). The window settles where the two balance, under
what the paths could carry: with half the spines slowed (`-failed 4`) a flow runs at about 130
Gb/s where trimming alone would let it deliver 250 (htsim's median is 1.7x the closed form's);
with one slowed spine in eight the trims are few and the window stays near maxwnd.

`sprayed_rate_caps` follows that loop in time for every flow of a fabric with a slowed port:
per flow its window (NSCC's state: cwnd, delay average, increase accumulator), per directed
link a fluid queue (arrivals of every path through it, drained at its speed, trimmed past its
size, RED-marked between its thresholds), packets passing the hops of each path in turn. It
returns each flow's mean delivered rate over its life; the engine caps a flow's rate there
when that binds over its life (`twin.engine._binding_caps`: the closed form of
`twin.queueing.windowed_rates` holds where the window stays near maxwnd). Every input is
htsim's: NSCC's constants (`twin.nscc.Nscc`, initNsccParams), the marking thresholds (0.2/0.8
of a BDP, scaled with a slowed link as fat_tree_topology.cpp scales them), the queue size
(`-q`), the paths of the hashed entropies (`twin.routing.sprayed_paths`). The multiplicative
decrease fires on the first marked ACK of a delay over the target once a base RTT has passed
since the last one, as htsim's does, counted across steps (a flow sending a fraction of a
packet per step on each path still meets one). It matters where a slowed queue's delay is long
against the target: htsim's own per-flow counters (`multi_dec` / `nack_dec` of its "finished
at" lines) on htsim_heldout7's perm162_local12 with 3 of 9 spines slowed, oblivious, are 170 /
99 KB at 100 Gb/s, 118 / 229 at 200, 6 / 432 at 400; the model gives 136 / 99, 24 / 251,
0 / 383 (it gave no decrease at all while it asked for half a packet of such ACKs per step).
Left out (a reduction of htsim, not a copy): quick_adapt and fast_increase (the achieved bytes
stay above maxwnd / 8; the slow paths' delays reset fast_increase's count every few packets),
the ACKs' own path (ACKs take no queue), propagation inside a step (one step is two packet
times at the sender's speed).
UEC's `ar` regime, REPS, runs in the same model (`Transport.reps`): each path's share of a
flow's sends moves with the entropies its unmarked ACKs hand back (`twin.reps.recycle`).
A link's next hop is fed what the link sends on (at most its speed), not what it accepted into
its queue: a slowed uplink filling at three times its speed does not overrun the slowed
downlink after it, which (loaded at exactly its speed by the uplinks that feed it) would never
drain again. The model also gives the engine each flow's last-packet wait (`_Paths.last_delay`):
the delay of each of its paths less the gap since a trimming port there last accepted one of its
packets, drawn (htsim, 512 KB permutations on 200 hosts at 100G with one spine of ten slowed:
+33 us median over the unslowed run, one full slowed queue, where the old rule waited two; 50
flows from 5 ToRs: FCTs min / median 55.9 / 81.5 us against 58.5 unslowed, so some flows' last
packets wait nothing there; the twin 62.1 / 86.9, 89.6 / 90.5 with the whole queue for all).
"""

from __future__ import annotations

import numpy as np

from twin.nscc import Nscc, _clip
from twin.queueing import Transport
from twin.reps import recycle, recycled_share
from twin.routing import FabricState, sprayed_paths

# one step of the model, in packet times at the sender's NIC speed: 0.17 us at 400 Gb/s; 1 and
# 4 packets gave medians within 1% and 3% of 0.5 packets on perm128b_4MB -failed 4
STEP_PACKETS = 2.0


def fabric_caps(state: FabricState, src_ep: np.ndarray, dst_ep: np.ndarray, start: np.ndarray,
                wire_bytes: np.ndarray, entropy: np.ndarray, rtt_s: np.ndarray,
                transport: Transport) -> tuple[np.ndarray, np.ndarray] | None:
    """The engine's per-flow caps (bytes/s, inf: none) for the flows between endpoints that
    `state` sprays obliviously (not from a leaf left in ECMP or weighted), from
    `sprayed_rate_caps` on their hashed paths, and each such flow's last-packet wait
    (`_Paths.last_delay`, s; NaN for a flow not modelled); None when no flow sprays. With
    `transport.reps`, UEC's `ar` regime is REPS: its flows too, their entropies recycled
    (`twin.reps`)."""
    f = state.fabric
    modes = ("spray", "ar") if transport.reps else ("spray",)
    plane_sprays = np.array([m in modes for m in state.mode])
    plane_reps = np.array([m == "ar" for m in state.mode])
    sprayed = plane_sprays[f.ep_plane[src_ep]]
    overridden = set(state.ecmp_switches) | set(state.weighted_switches)  # leaves not spraying
    if overridden:
        sprayed &= ~np.isin(f.ep_leaf[src_ep], list(overridden))
    if not sprayed.any():
        return None
    w, links = sprayed_paths(state, src_ep[sprayed], dst_ep[sprayed], entropy[sprayed])
    cap = state.link_capacity_bps()
    caps = np.full(len(src_ep), np.inf)
    last = np.full(len(src_ep), np.nan)
    caps[sprayed], last[sprayed] = sprayed_rate_caps(
        w, links, start[sprayed], wire_bytes[sprayed], rtt_s[sprayed],
        cap[2 * f.ep_cable[src_ep[sprayed]]], cap, np.repeat(f.cable_gbps * 1e9, 2),
        transport.packet_bytes, transport.queue_packets, transport.window_bdp or 0.0,
        recycle_share=np.where(plane_reps[f.ep_plane[src_ep[sprayed]]],
                               recycled_share(transport.packet_bytes), 0.0), last_delay=True,
        seed=state.seed)
    return caps, last


def sprayed_rate_caps(w: np.ndarray, links: np.ndarray, start: np.ndarray, wire_bytes: np.ndarray,
                      rtt_s: np.ndarray, nic_bps: np.ndarray, capacity_bps: np.ndarray,
                      nominal_bps: np.ndarray, packet_bytes: float, queue_packets: float,
                      window_bdp: float, p: Nscc | None = None, nack_decrease: bool = True,
                      recycle_share: np.ndarray | None = None, last_delay: bool = False,
                      seed: int = 0) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Per flow, its mean delivered rate (bytes/s) under NSCC over its sprayed paths.

    w: flows x paths, each flow's share per path; links: flows x paths x hops, the directed
    links of each path from the sender's NIC (hop 0, which the window paces: no queue) to the
    receiver (-1: none); start (s), wire_bytes, rtt_s (base RTT), nic_bps: per flow;
    capacity_bps, nominal_bps: per directed link, its speed now and as built (a slowed link's
    queue and marking thresholds shrink with it). A flow that does not finish within the
    model's horizon gets its rate so far. nack_decrease: NSCC's window loss per NACK (False
    only to measure what it brings). recycle_share: per flow the share of its unmarked packets
    whose entropy REPS reuses (`twin.reps.recycled_share`; None or 0: oblivious spraying, the
    hashed shares `w` throughout). last_delay: also return, per flow, what its last packet
    waits in the queues beyond its last byte's departure (`_Paths.last_delay`; seeded draws
    of the gaps between the packets each path delivers, `seed`)."""
    p = p or Nscc()
    run = _Paths(w, links, np.asarray(start, float), np.asarray(wire_bytes, float),
                 np.asarray(rtt_s, float), np.asarray(nic_bps, float) / 8,
                 np.asarray(capacity_bps, float) / 8, np.asarray(nominal_bps, float) / 8,
                 packet_bytes, queue_packets, window_bdp, p, np.random.default_rng(seed))
    rates = run.rates(nack_decrease,
                      None if recycle_share is None else np.asarray(recycle_share, float))
    return (rates, run.last_delay) if last_delay else rates


class _Paths:
    """Every flow's window and every link's queue, stepped on one clock."""

    def __init__(self, w: np.ndarray, links: np.ndarray, start: np.ndarray, size: np.ndarray,
                 rtt: np.ndarray, nic: np.ndarray, cap: np.ndarray, nominal: np.ndarray,
                 mss: float, queue_packets: float, window_bdp: float, p: Nscc,
                 rng: np.random.Generator | None = None):
        n, n_paths, n_hops = links.shape
        self.n, self.n_paths, self.p, self.mss = n, n_paths, p, mss
        self.rng = rng or np.random.default_rng(0)
        self.start, self.size, self.rtt, self.nic, self.cap = start, size, rtt, nic, cap
        self.w = w.ravel()
        self.flow_of = np.repeat(np.arange(n), n_paths)
        ratio = np.divide(cap, nominal, out=np.ones_like(cap), where=nominal > 0)
        self.qmax = queue_packets * mss * ratio
        # htsim's network RTT: the largest unloaded one (its fabric's diameter); its BDP at the
        # senders' speed sets NSCC's scaling and the switches' marking thresholds
        self.net_rtt = float(rtt.max(initial=0.0))
        host = float(nic.max(initial=0.0))
        bdp_pkts = np.ceil(self.net_rtt * host / mss)
        self.kmin = np.ceil(bdp_pkts * p.ecn_low_bdp) * mss * ratio
        self.kmax = np.ceil(bdp_pkts * p.ecn_high_bdp) * mss * ratio
        self.target = p.target_rtts * self.net_rtt
        scale_a = host * self.net_rtt / (p.reference_bps / 8 * p.reference_rtt_s)
        self.fi = p.fair_mss * mss * scale_a
        self.eta = p.eta_mss * mss * scale_a
        self.alpha = p.proportional_mss * mss * scale_a / p.reference_rtt_s
        self.maxw = window_bdp * nic * rtt
        self.dt = STEP_PACKETS * mss / max(host, 1.0)
        # per hop after the NIC: the (flow, path) entries that cross a link there, and the link
        flat = links.reshape(n * n_paths, n_hops)
        used = self.w > 0
        self.hops = []
        for h in range(1, n_hops):
            ent = np.flatnonzero(used & (flat[:, h] >= 0))
            # the links of this hop (each link is at one hop of every path through it) and
            # each entry's index among them
            lk, at = np.unique(flat[ent, h], return_inverse=True)
            self.hops.append((ent, lk, at.ravel()))
        self.q = np.zeros(len(cap))
        self.span = np.maximum(self.kmax - self.kmin, 1.0)
        # per flow, what its last packet waits in the queues after its last bytes left (NaN:
        # not finished), `_last_wait`
        self.last_delay = np.full(n, np.nan)

    def rates(self, nack_decrease: bool = True, share: np.ndarray | None = None) -> np.ndarray:
        """Step until every flow has delivered its bytes (or the horizon); mean rates. share:
        per flow REPS' recycled share (`twin.reps.recycle`), None: none recycles."""
        p, n, mss = self.p, self.n, self.mss
        reps = share is not None and bool((share > 0).any())
        w = self.w.copy()  # each path's share of its flow's sends now
        cwnd = self.maxw.copy()
        avg, inc, recv, last_dec, last_adj, hot = (np.zeros(n) for _ in range(6))
        rem = self.size.copy()
        finish = np.full(n, np.inf)
        d_path = np.zeros(n * self.n_paths)
        t = float(self.start.min(initial=0.0))
        end = t + p.horizon_s
        keep_base = 1 - p.delay_alpha
        while t < end:
            act = (self.start <= t) & (rem > 0) & np.isinf(finish)
            if not act.any():
                later = self.start[np.isinf(finish) & (self.start > t)]
                if later.size == 0:
                    break
                t = float(later.min())
                continue
            d_mean = np.bincount(self.flow_of, weights=w * d_path, minlength=n)
            x = np.where(act, np.minimum(cwnd / (self.rtt + d_mean), self.nic), 0.0)
            sent = np.minimum(x * self.dt, rem)
            b = sent[self.flow_of] * w  # bytes per (flow, path) this step
            offered = b.copy() if reps else b
            w_sent = w  # the shares this step's bytes went out on (REPS moves `w` below)
            d_path, unmarked_frac = self._network(b)
            if reps:  # the next sends' paths: the entropies of unmarked ACKs, else random
                kept = np.divide(b, offered, out=np.ones_like(b), where=offered > 0) * unmarked_frac
                moved = recycle(w, self.w, kept, share, self.flow_of, n)
                w = np.where((sent > 0)[self.flow_of], moved, w)
            good = np.bincount(self.flow_of, weights=b, minlength=n)
            trimmed = sent - good
            rem = rem - good
            t += self.dt
            done = act & (rem <= 1.0)
            finish[done] = t
            if done.any():
                self.last_delay[done] = self._last_wait(done, x, w_sent, sent, b, d_path)
            # NSCC's reaction to this step's ACKs (per path: its delay and marks) and NACKs
            hi = d_path >= self.target
            marked_b = b * (1 - unmarked_frac)
            unm_b = b - marked_b
            acks = np.bincount(self.flow_of, weights=b, minlength=n) / mss
            nacks = trimmed / mss
            # update_delay: a marked ACK or a low delay counts as it is, an unmarked one above
            # the target as a quarter base RTT; a NACK as the network RTT
            sample_ack = np.where(hi, (1 - unmarked_frac) * d_path
                                  + unmarked_frac * 0.25 * self.rtt[self.flow_of], d_path)
            total = acks + nacks
            mean_sample = np.divide(np.bincount(self.flow_of, weights=b / mss * sample_ack, minlength=n)
                                    + nacks * self.net_rtt, total, out=avg.copy(), where=total > 0)
            keep = keep_base ** total
            avg = keep * avg + (1 - keep) * mean_sample
            inc += np.bincount(self.flow_of, weights=unm_b * np.where(
                hi, self.fi, self.alpha * np.maximum(self.target - d_path, 0.0)), minlength=n)
            # htsim decreases on a marked ACK of a delay over the target once a base RTT has
            # passed since its last decrease: such ACKs are counted from then on, across steps
            # (a flow sending a fraction of a packet per step on a marking path still gets one)
            open_ = t - last_dec > self.rtt
            hot = np.where(open_, hot + np.bincount(self.flow_of, weights=marked_b * hi,
                                                    minlength=n) / mss, 0.0)
            md = act & open_ & (hot >= 1.0) & (avg > self.target)
            factor = np.maximum(1 - p.gamma * (avg - self.target) / np.maximum(avg, 1e-15), 0.5)
            cwnd = np.where(md, cwnd * factor, cwnd)
            last_dec = np.where(md, t, last_dec)
            hot = np.where(md, 0.0, hot)
            if nack_decrease:  # a NACK takes its bytes off the window
                cwnd = np.maximum(cwnd - trimmed, mss)
            recv += good
            adj = act & ((recv > 8 * mss) | (t - last_adj > self.net_rtt))
            cwnd = np.where(adj, cwnd + inc / cwnd, cwnd)
            period = adj & (t - last_adj >= self.net_rtt)
            cwnd = np.where(period, cwnd + self.eta, cwnd)
            last_adj = np.where(period, t, last_adj)
            inc = np.where(adj, 0.0, inc)
            recv = np.where(adj, 0.0, recv)
            cwnd = _clip(cwnd, mss, self.maxw)
        took = np.where(np.isfinite(finish), finish, t) - self.start
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = (self.size - np.maximum(rem, 0.0)) / took
        return np.where(took > 0, rate, np.inf)

    def _last_wait(self, done: np.ndarray, x: np.ndarray, w: np.ndarray, sent: np.ndarray,
                   delivered: np.ndarray, d_path: np.ndarray) -> np.ndarray:
        """For the flows `done` this step, how long after its last byte left the last of its
        packets arrives. A sprayed flow's packets cross every path it hashes to, each path's
        queue making them wait its delay D_p; but packets are whole, and a trimming queue
        accepts only some of them: the last packet a path delivered left a gap G_p before the
        flow's end, so that path's last arrival is max(D_p - G_p, 0) after it. The gaps are
        drawn (exponential, at the rate the path delivers the flow's packets: the flow's
        sending rate `x` x its share `w` there x what the path's queues passed of `sent`): a
        slowed port full at 25% of the speed waits its whole queue only for a flow whose
        last packets it happened to accept (htsim's 512 KB permutation on 200 hosts with
        one slowed spine: +23 us median where the full queue is 33 us). Returns the largest
        over the flow's paths (s)."""
        idx = np.flatnonzero(done)
        cols = (idx[:, None] * self.n_paths + np.arange(self.n_paths)[None, :]).ravel()
        offered = sent[self.flow_of[cols]] * w[cols]
        passed = np.divide(delivered[cols], offered, out=np.zeros(len(cols)), where=offered > 0)
        rate = x[self.flow_of[cols]] * w[cols] * passed / self.mss  # packets/s the path delivers
        gap = np.full(len(cols), np.inf)
        on = rate > 0
        gap[on] = self.rng.exponential(1.0 / rate[on])
        wait = np.maximum(d_path[cols] - gap, 0.0)
        return wait.reshape(len(idx), self.n_paths).max(axis=1)

    def _network(self, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One step of the queues, hop by hop: what each link trims of its arrivals (`b`, per
        (flow, path), reduced in place to what passes), each path's queueing delay and the
        fraction of its packets that no link marked. A link's next hop is fed what it sends
        on this step (at most its speed), not what it accepted into its queue: a slowed port
        filling at three times its speed hands the port after it only its own 25%, which is
        then not overrun by the fill."""
        d = np.zeros(len(b))
        unmarked = np.ones(len(b))
        fed = b.copy()  # per entry, the bytes reaching the current hop this step
        for ent, lk, at in self.hops:
            arrive = np.bincount(at, weights=fed[ent], minlength=len(lk))
            before = self.q[lk]
            q = np.maximum(before + arrive - self.cap[lk] * self.dt, 0.0)
            over = np.maximum(q - self.qmax[lk], 0.0)
            q -= over
            self.q[lk] = q
            pass_frac = 1 - np.divide(over, arrive, out=np.zeros(len(lk)), where=arrive > 0)
            b[ent] *= pass_frac[at]
            # what leaves the link this step, in the mix of what arrived
            sent_frac = np.divide(before + arrive - over - q, arrive, out=np.zeros(len(lk)),
                                  where=arrive > 0)
            fed[ent] *= sent_frac[at]
            d[ent] += np.divide(q, self.cap[lk], out=np.zeros(len(lk)), where=self.cap[lk] > 0)[at]
            marking = _clip((q - self.kmin[lk]) / self.span[lk], 0.0, 1.0)
            unmarked[ent] *= 1 - marking[at]
        return d, unmarked

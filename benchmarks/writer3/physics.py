"""writer3's traffic physics, one-second steps: demand from jobs, rates bounded by link speeds and
pauses, conservation on every switch (what a port sends its peer receives but for the losses a
fault puts on that direction), ECN where queues build, PFC pauses where a fault or an overload
stops the upstream sender.

Directions: `2*l` carries lower -> upper on link l, `2*l + 1` upper -> lower (fabric.Fabric).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .fabric import Fabric, paths

FRAME = 4150.0  # a RoCE frame at MTU 4096, with headers
PAUSE_QUANTA_BITS = 65535 * 512  # one pause frame stops a port this many bit times


@dataclass
class Job:
    job_id: str
    hosts: list[int]  # host indices (Fabric.hosts order)
    start: float  # seconds from the bundle start (negative: before it)
    end: float | None  # None: still running at the end
    level: float  # share of the NIC line rate it offers
    ring: float  # share of its traffic to the ring neighbour (the rest all-to-all)
    period: float  # iteration period, s


@dataclass
class State:
    """What the faults change, per second (T) and link (L) or direction (D)."""

    up: np.ndarray  # (T, L) share of the second the link was up
    speed: np.ndarray  # (L,) negotiated speed, b/s
    phi: np.ndarray  # (T, D) share of the time the sender of the direction is paused
    loss: np.ndarray  # (T, D) share of frames lost with no counter (silent loss)
    err: np.ndarray  # (T, D) share of frames received with a bad FCS (counted, dropped)
    ecn_extra: np.ndarray  # (T, D) ECN marks/s a fault adds (queues of paused ports)
    weights: dict[int, tuple[np.ndarray, dict[int, float]]] = field(default_factory=dict)
    # ^ device -> (mask over T, {uplink link: weight}): first-hop shares of an uneven switch
    storms: list[tuple[int, int, int, np.ndarray]] = field(default_factory=list)  # (i, p, r, mask)
    incasts: list[tuple[int, int, int, list[int], float, np.ndarray]] = field(default_factory=list)
    # ^ (receiver i, p, r, senders, offered share of line rate per sender, mask over T)
    slow: np.ndarray | None = None  # (T, hosts) factor on what each host offers (stalled jobs)


@dataclass
class Rates:
    """Per second and direction: what the sender transmitted and the receiver counted."""

    tx_bytes: np.ndarray
    rx_bytes: np.ndarray
    tx_pkts: np.ndarray
    rx_pkts: np.ndarray
    err_pkts: np.ndarray
    ecn: np.ndarray  # marks by the sender of the direction (its egress queue)
    pauses: np.ndarray  # frames the receiver sent to stop the sender
    nic: dict[str, np.ndarray]  # (T, ports) NIC-side RDMA counter rates, host ports only
    util: np.ndarray  # (T, D) tx / line rate


def new_state(fab: Fabric, seconds: int) -> State:
    n_l = len(fab.link_a)
    return State(np.ones((seconds, n_l)), fab.port_speed[fab.link_a].astype(float),
                 np.zeros((seconds, 2 * n_l)), np.zeros((seconds, 2 * n_l)),
                 np.zeros((seconds, 2 * n_l)), np.zeros((seconds, 2 * n_l)))


def job_demand(fab: Fabric, jobs: list[Job], seconds: int, rng) -> np.ndarray:
    """(T, H, H): share of a NIC's line rate host i offers to host j, on every (plane, rail)."""
    n = len(fab.hosts)
    out = np.zeros((seconds, n, n))
    t = np.arange(seconds) + 0.5
    for job in jobs:
        h = job.hosts
        k = len(h)
        pat = np.zeros((n, n))
        for x, i in enumerate(h):
            pat[i, h[(x + 1) % k]] += job.ring
            for j in h:
                if j != i:
                    pat[i, j] += (1 - job.ring) / (k - 1)
        walk = np.cumsum(rng.normal(0, 0.01, seconds))
        walk -= np.linspace(0, walk[-1], seconds)  # a bounded wander around the level
        level = job.level * (1 + 0.12 * np.sin(2 * np.pi * t / job.period + rng.uniform(0, 6))
                             + walk + rng.normal(0, 0.02, seconds))
        active = (t >= job.start) & (t < (job.end if job.end is not None else 1e12))
        level = np.clip(level, 0.02, 0.92) * active
        out += level[:, None, None] * pat[None]
    idle = np.ones(n, bool)
    for job in jobs:
        idle[job.hosts] = False
    out[:, idle, :] += 2e-5  # management and storage chatter of idle hosts
    out[:, np.arange(n), np.arange(n)] = 0
    return out


def _plane_shares(fab: Fabric, state: State, r: int) -> np.ndarray | None:
    """(T, H, H, P): share of i->j traffic on each plane of rail r when host ports are down
    (NIC plane balancing moves it to the planes where both ends are up); None if all are up."""
    m = np.stack([state.up[:, fab.port_link[[fab.nic[i, p, r] for i in range(len(fab.hosts))]]]
                  for p in range(fab.planes)], axis=2)  # (T, H, P)
    if m.min() >= 1:
        return None
    both = m[:, :, None, :] * m[:, None, :, :]
    den = both.sum(axis=3, keepdims=True)
    return np.where(den > 0, both / np.maximum(den, 1e-12), 0.0)


def _host_level(fab: Fabric, state: State, base: np.ndarray, p: int, r: int, cap_b: np.ndarray):
    """(T, H, H) offered bytes/s on (p, r), bounded by both host edges, and the edge dirs."""
    n = len(fab.hosts)
    ports = np.array([fab.nic[i, p, r] for i in range(n)])
    up_d = 2 * fab.port_link[ports]  # host -> leaf
    dn_d = up_d + 1
    line = fab.port_speed[ports[0]] / 8
    shares = _plane_shares(fab, state, r)
    t0 = base * line  # `base` is a share of one port's line rate, on every plane
    if shares is not None:  # a plane down at either end: its share moves to the others
        t0 = t0 * shares[..., p] * fab.planes
    if state.slow is not None:
        t0 = t0 * state.slow[:, :, None]
    for i, pp, rr, mask in state.storms:
        if (pp, rr) == (p, r):  # nothing reaches a storming NIC, and it sends nothing
            t0[mask, :, i] = 0
            t0[mask, i, :] = 0
    for j, pp, rr, senders, share, mask in state.incasts:
        if (pp, rr) == (p, r):
            t0[np.ix_(mask, senders, [j])] += share * line
    tx = t0.sum(axis=2)
    f = np.minimum(1, cap_b[:, up_d] * 0.985 / np.maximum(tx, 1e-9))
    t0 *= f[:, :, None]
    rx = t0.sum(axis=1)
    f = np.minimum(1, cap_b[:, dn_d] * 0.985 / np.maximum(rx, 1e-9))
    t0 *= f[:, None, :]
    return t0, up_d, dn_d, f


def _weights(fab: Fabric, state: State, plist, pair_of, seconds: int, n_pairs: int) -> np.ndarray:
    """(T, paths) share of each path in its pair: adaptive routing splits in proportion to
    the bottleneck speed of each live path; an uneven switch imposes its own first-hop shares."""
    base = np.array([min(state.speed[d // 2] for d in pl) for pl in plist], float)
    w = np.tile(base, (seconds, 1))
    for dev, (mask, shares) in state.weights.items():
        for k, pl in enumerate(plist):  # upward hops leaving the uneven switch
            for d in pl:
                if d % 2 == 0 and fab.port_dev[int(fab.link_a[d // 2])] == dev and d // 2 in shares:
                    w[mask, k] *= shares[d // 2] * len(shares)
    for k, pl in enumerate(plist):
        for d in pl:
            w[:, k] *= state.up[:, d // 2]
    tot = np.zeros((seconds, n_pairs))
    np.add.at(tot.T, np.array(pair_of), w.T)
    pof = np.array(pair_of)
    return np.where(tot[:, pof] > 0, w / np.maximum(tot[:, pof], 1e-12), 0.0)


def simulate(fab: Fabric, jobs: list[Job], state: State, rng) -> Rates:
    """Rates of every direction for every second of the bundle."""
    seconds, n_l = state.up.shape
    n_d = 2 * n_l
    cap_b = (state.speed[np.arange(n_d) // 2] / 8)[None, :] * state.up[:, np.arange(n_d) // 2]
    cap_b = cap_b * (1 - state.phi)
    base = job_demand(fab, jobs, seconds, rng)
    pairs, plist, pair_of = paths(fab)
    pidx = {k: x for x, k in enumerate(pairs)}
    grp = fab.host_group
    edge: dict[tuple[int, int], tuple] = {}
    demand = np.zeros((seconds, len(pairs)))
    load = np.zeros((seconds, n_d))
    hot = np.zeros((seconds, n_d), bool)  # directions whose capacity bounds the traffic
    for p in range(fab.planes):
        for r in range(fab.rails):
            t0, up_d, dn_d, f_rx = _host_level(fab, state, base, p, r, cap_b)
            hot[:, dn_d] |= f_rx < 0.999
            keep = 1 - state.loss[:, up_d] - state.err[:, up_d]  # what the leaf receives
            t0 = t0 * keep[:, :, None]
            edge[p, r] = (t0, up_d, dn_d, keep)
            for a in range(fab.groups):
                for b in range(fab.groups):
                    if a != b:
                        demand[:, pidx[p, r, a, b]] = t0[:, grp == a][:, :, grp == b].sum(axis=(1, 2))
    w = _weights(fab, state, plist, pair_of, seconds, len(pairs))
    pof = np.array(pair_of)
    hops = max(len(pl) for pl in plist) if plist else 0
    hop_d = np.array([pl + [-1] * (hops - len(pl)) for pl in plist]) if plist else np.zeros((0, 0), int)
    g = np.ones((seconds, len(plist)))
    for _ in range(4):  # bound every fabric direction by its capacity, shrinking the flows on it
        x = demand[:, pof] * w * g
        load[:] = 0
        for h in range(hops):
            ok = hop_d[:, h] >= 0
            np.add.at(load.T, hop_d[ok, h], x[:, ok].T)
        f = np.minimum(1, cap_b * 0.985 / np.maximum(load, 1e-9))
        f_ext = np.concatenate([f, np.ones((seconds, 1))], axis=1)
        g = g * np.min(f_ext[:, hop_d], axis=2)
        hot |= f < 0.999
    x = demand[:, pof] * w * g
    tx = np.zeros((seconds, n_d))
    surv = np.ones((seconds, len(plist)))
    for h in range(hops):  # losses on a hop reach neither the next hop nor the receiver
        ok = hop_d[:, h] >= 0
        d = hop_d[ok, h]
        np.add.at(tx.T, d, (x[:, ok] * surv[:, ok]).T)
        surv[:, ok] *= 1 - state.loss[:, d] - state.err[:, d]
    thr = np.zeros((seconds, len(pairs)))  # what congestion control lets each pair send
    np.add.at(thr.T, pof, (w * g).T)
    delivered = np.zeros((seconds, len(pairs)))
    np.add.at(delivered.T, pof, (w * g * surv).T)
    nic = {k: np.zeros((seconds, len(fab.port_dev))) for k in
           ("np_ecn", "cnp_sent", "cnp_handled", "oos", "ack_timeout")}
    rates = _edges(fab, state, edge, thr, delivered, pidx, tx, seconds)
    _finish(fab, state, rates, hot, cap_b, edge, nic, rng)
    return rates


def _edges(fab, state, edge, thr, delivered, pidx, tx, seconds) -> Rates:
    """Host edges: each sender throttled to what the fabric carries, intra-leaf traffic whole."""
    grp = fab.host_group
    for (p, r), (t0, up_d, dn_d, keep) in edge.items():
        fthr = np.ones((seconds, fab.groups, fab.groups))
        fdel = np.ones((seconds, fab.groups, fab.groups))
        for a in range(fab.groups):
            for b in range(fab.groups):
                if a != b:
                    fthr[:, a, b] = thr[:, pidx[p, r, a, b]]
                    fdel[:, a, b] = delivered[:, pidx[p, r, a, b]]
        sent = (t0 * fthr[:, grp][:, :, grp]).sum(axis=2)  # the leaf gets this from each host
        t = t0 * fdel[:, grp][:, :, grp]  # what reaches the destination leaf
        tx[:, up_d] += sent / np.maximum(keep, 1e-9)
        tx[:, dn_d] += t.sum(axis=1)
        edge[p, r] = (t, up_d, dn_d, keep)
    # every live direction carries a little control traffic (LLDP, BGP, telemetry)
    tx += 900.0 * (state.up[:, np.arange(tx.shape[1]) // 2] > 0)
    z = np.zeros_like(tx)
    return Rates(tx, z.copy(), z.copy(), z.copy(), z.copy(), z.copy(), z.copy(), {}, z.copy())


def _finish(fab, state, rates: Rates, hot, cap_b, edge, nic, rng) -> None:
    """Packets, errors, ECN marks, pauses, and the receiving NICs' view of the marks."""
    n_d = rates.tx_bytes.shape[1]
    line = state.speed[np.arange(n_d) // 2] / 8
    # ACKs and CNPs make the mean frame a bit smaller; one size for the whole fabric, so that a
    # switch forwards as many packets as it receives
    size = FRAME * float(rng.uniform(0.93, 0.99))
    rates.tx_pkts = rates.tx_bytes / size
    rates.err_pkts = rates.tx_pkts * state.err
    rates.rx_pkts = rates.tx_pkts * (1 - state.loss - state.err)
    rates.rx_bytes = rates.tx_bytes * (1 - state.loss - state.err)
    rates.util = rates.tx_bytes / line
    rho = np.clip((rates.util - 0.55) / 0.4, 0, 1)
    p_mark = 4e-5 * rho ** 2 + hot * rng.uniform(0.02, 0.06)
    rates.ecn = rates.tx_pkts * p_mark + state.ecn_extra
    rates.ecn = np.minimum(rates.ecn, rates.tx_pkts)
    full = state.speed[np.arange(n_d) // 2] / PAUSE_QUANTA_BITS
    rates.pauses = state.phi * full[None, :] * rng.uniform(1.0, 1.4)
    # the receiving NIC sees the marks of its leaf's egress and a share of the marks on the
    # fabric directions into its leaf; it answers with CNPs that its senders handle
    for (p, r), (t, _up, dn_d, _keep) in edge.items():
        ports = np.array([fab.nic[i, p, r] for i in range(len(fab.hosts))])
        marks = rates.ecn[:, dn_d] * (1 - state.loss[:, dn_d])
        cnp = marks * 0.6
        share = t / np.maximum(t.sum(axis=1, keepdims=True), 1e-9)  # (T, i, j) i's part of j
        nic["np_ecn"][:, ports] = marks
        nic["cnp_sent"][:, ports] = cnp
        nic["cnp_handled"][:, ports] = np.einsum("tij,tj->ti", share, cnp)
        lost = rates.tx_pkts[:, dn_d] * (state.loss[:, dn_d] + state.err[:, dn_d])
        nic["oos"][:, ports] = lost
        nic["ack_timeout"][:, ports] = np.einsum("tij,tj->ti", share, lost) * 0.01
    rates.nic = nic

"""writer3's faults: each changes the physics' State and returns its label (design section 8).

A fault dict carries what the files need beyond the physics: link transitions (`trans`: link ->
[(t, "down"|"up")]), whether syslog shows them (`logged`), devices that export nothing
(`silent`), the storming NIC (`storm`).
"""

from __future__ import annotations

import numpy as np

from .fabric import Fabric
from .physics import Job, State


def _mask(seconds: int, t0: float, t1: float) -> np.ndarray:
    t = np.arange(seconds) + 0.5
    return (t >= t0) & (t < t1)


def _down(state: State, link: int, t0: float, t1: float) -> None:
    """Link down from t0 to t1 (seconds, fractions allowed), as shares of each second."""
    seconds = state.up.shape[0]
    t = np.arange(seconds)
    overlap = np.clip(np.minimum(t + 1, t1) - np.maximum(t, t0), 0, 1)
    state.up[:, link] = np.minimum(state.up[:, link], 1 - overlap)


def _fabric_links(fab: Fabric, rng, plane: int | None = None, tier: str | None = None) -> int:
    """A fabric link that carries traffic (a loss or a fault nothing crosses shows nothing)."""
    cand = [k for k, t in enumerate(fab.link_tier) if t != "host"
            and (plane is None or fab.link_plane[k] == plane) and (tier is None or t == tier)]
    load = fab.link_load[cand]
    busy = [k for k, x in zip(cand, load, strict=True) if x >= 0.3 * load.max()]
    return int(rng.choice(busy or cand))


def _host_link(fab: Fabric, rng, jobs: list[Job]) -> tuple[int, int, int, int]:
    """(host i, plane, rail, link) of a NIC port of a host in a job."""
    busy = sorted({i for j in jobs for i in j.hosts})
    i = int(rng.choice(busy))
    p, r = int(rng.integers(fab.planes)), int(rng.integers(fab.rails))
    return i, p, r, int(fab.port_link[fab.nic[i, p, r]])


def _siblings(fab: Fabric, link: int) -> list[str]:
    """The other uplinks of the link's lower device: they take its load."""
    dev = fab.port_dev[int(fab.link_a[link])]
    return [fab.port_id(int(fab.link_a[k])) for (lo, _), k in sorted(fab.up.items())
            if lo == dev and k != link]


def link_down(fab, state, jobs, rng, seconds, variant):
    if variant == "host":
        _, _, _, link = _host_link(fab, rng, jobs)
    else:
        link = _fabric_links(fab, rng)
    t0 = float(rng.uniform(0.2, 0.65) * seconds)
    _down(state, link, t0, seconds + 1)
    silent = []
    if variant == "silent_upper":
        silent = [fab.devices[fab.port_dev[int(fab.link_b[link])]].name]
    return dict(kind="link_down", root=("link", fab.link_id(link)), start=t0, end=float(seconds),
                victims=_siblings(fab, link), trans={link: [(t0, "down")]}, logged=True,
                silent=silent, hard="silent_device" if silent else None)


def link_flap(fab, state, jobs, rng, seconds, variant, interval):
    link = _host_link(fab, rng, jobs)[3] if rng.random() < 0.3 else _fabric_links(fab, rng)
    t = float(rng.uniform(0.15, 0.5) * seconds)
    trans = []
    if variant == "short":
        n, lo, hi = 1, 0.3, min(3.0, 0.3 * interval)
    elif variant == "repeated":
        n, lo, hi = int(rng.integers(3, 7)), 4.0, 40.0
    else:
        n, lo, hi = 1, 1.5 * interval, 6.0 * interval
    for _ in range(n):
        dt = float(rng.uniform(lo, hi))
        _down(state, link, t, t + dt)
        trans += [(t, "down"), (t + dt, "up")]
        t += dt + float(rng.uniform(20, 120))
    return dict(kind="link_flap", root=("link", fab.link_id(link)), start=trans[0][0],
                end=trans[-1][0], victims=_siblings(fab, link), trans={link: trans},
                logged=variant != "short", silent=[],
                hard="short_flap" if variant == "short" else None)


def link_degraded(fab, state, jobs, rng, seconds, variant):
    link = _fabric_links(fab, rng)
    d = 2 * link + int(rng.integers(2))
    t0, t1 = float(rng.uniform(0.15, 0.5) * seconds), float(seconds)
    m = _mask(seconds, t0, t1)
    hard = None
    if variant == "low_speed":  # negotiated at a lower speed from before the bundle began
        state.speed[link] /= float(rng.choice([2, 4]))
        t0, hard = 0.0, "low_speed"
    elif variant == "silent_loss":
        state.loss[m, d] = float(rng.uniform(0.004, 0.03))
        hard = "silent_loss"
    else:
        state.err[m, d] = float(10 ** rng.uniform(-5, -3))
    return dict(kind="link_degraded", root=("link", fab.link_id(link)), start=t0, end=t1,
                victims=_siblings(fab, link), trans={}, logged=True, silent=[], hard=hard,
                ber_dir=d if variant == "fcs" else None)


def _leaf_ports(fab: Fabric, leaf: int) -> tuple[list[int], list[int]]:
    """(downward directions into the leaf from above, its uplinks' upward directions)."""
    ups = [k for (lo, _), k in sorted(fab.up.items()) if lo == leaf]
    return [2 * k + 1 for k in ups], [2 * k for k in ups]


def _uppers_feeders(fab: Fabric, leaf: int, plane: int, rail: int) -> list[int]:
    """Upward directions of the other leaves of the plane and rail into the leaf's uppers."""
    uppers = {u for (lo, u) in fab.up if lo == leaf}
    out = []
    for (p, _g, r), other in fab.leaf.items():
        if p == plane and r == rail and other != leaf:
            out += [2 * k for (lo, u), k in sorted(fab.up.items()) if lo == other and u in uppers]
    return out


def congestion(fab, state, jobs, rng, seconds, variant):
    job = max(jobs, key=lambda j: len(j.hosts))
    j = int(rng.choice(job.hosts))
    p, r = int(rng.integers(fab.planes)), int(rng.integers(fab.rails))
    g = int(fab.host_group[j])
    others = [i for i in job.hosts if fab.host_group[i] != g]
    local = [i for i in job.hosts if fab.host_group[i] == g and i != j]
    senders = sorted(set(rng.choice(others, min(len(others), int(rng.integers(4, 9))), replace=False))
                     | set(local[:1]))
    t0 = float(rng.uniform(0.2, 0.5) * seconds)
    t1 = t0 + float(rng.uniform(150, 450))
    m = _mask(seconds, t0, t1)
    state.incasts.append((j, p, r, [int(s) for s in senders], float(rng.uniform(0.3, 0.6)), m))
    leaf = fab.leaf[p, g, r]
    root = fab.nic[j, p, r]
    root_port = fab.peer(root)
    downs, ups = _leaf_ports(fab, leaf)
    phi1 = float(rng.uniform(0.05, 0.25))
    for d in downs + [2 * int(fab.port_link[fab.nic[s, p, r]]) for s in senders if s in local]:
        state.phi[m, d] = np.maximum(state.phi[m, d], phi1)
    for d in _uppers_feeders(fab, leaf, p, r):
        state.phi[m, d] = np.maximum(state.phi[m, d], phi1 * 0.4)
    root_pkts = fab.port_speed[root] / 8 / 4150.0
    loud = variant == "loud_victims"
    for d in downs:  # the paused spine ports' queues build and mark
        f = float(rng.uniform(1.5, 3.0) if loud else rng.uniform(0.1, 0.4))
        state.ecn_extra[m, d] += f * 0.04 * root_pkts
    if variant == "multi_ecn":  # the receiver's other planes see some marks too
        for q in range(fab.planes):
            if q != p:
                d = fab.rx_dir(fab.nic[j, q, r])
                state.ecn_extra[m, d] += float(rng.uniform(0.05, 0.2)) * 0.04 * root_pkts
    victims = [fab.port_id(int(fab.link_b[d // 2])) for d in downs]
    return dict(kind="congestion", root=("port", fab.port_id(root_port)), start=t0, end=t1,
                victims=victims, trans={}, logged=True, silent=[],
                hard="loud_victims" if loud else None)


def pfc_storm(fab, state, jobs, rng, seconds, variant):
    job = max(jobs, key=lambda j: len(j.hosts))
    i = int(rng.choice(job.hosts))
    p, r = int(rng.integers(fab.planes)), int(rng.integers(fab.rails))
    g = int(fab.host_group[i])
    t0 = float(rng.uniform(0.2, 0.55) * seconds)
    t1 = min(t0 + float(rng.uniform(60, 400)), seconds - 30.0)
    m = _mask(seconds, t0, t1)
    state.storms.append((i, p, r, m))
    nic = fab.nic[i, p, r]
    leaf = fab.leaf[p, g, r]
    state.phi[m, fab.rx_dir(nic)] = 1.0  # the NIC keeps its leaf port paused
    downs, _ = _leaf_ports(fab, leaf)
    phi1 = float(rng.uniform(0.3, 0.7))
    local = [k for k in job.hosts if fab.host_group[k] == g and k != i]
    for d in downs + [fab.tx_dir(fab.nic[k, p, r]) for k in local]:
        state.phi[m, d] = np.maximum(state.phi[m, d], phi1)
    for d in _uppers_feeders(fab, leaf, p, r):
        state.phi[m, d] = np.maximum(state.phi[m, d], phi1 * 0.3)
    if state.slow is None:
        state.slow = np.ones((seconds, len(fab.hosts)))
    state.slow[np.ix_(m, job.hosts)] *= 0.6  # the job waits for its stuck member
    host = fab.devices[fab.hosts[i]].name
    silent = [host] if variant == "silent_host" else []
    victims = [fab.port_id(fab.peer(nic))] + [fab.port_id(int(fab.link_b[d // 2])) for d in downs]
    return dict(kind="pfc_storm", root=("port", fab.port_id(nic)), start=t0, end=t1,
                victims=victims, trans={}, logged=True, silent=silent, storm=(nic, t0, t1),
                hard="silent_host" if silent else None)


def load_imbalance(fab, state, jobs, rng, seconds, variant):
    cand = [d for d, dev in enumerate(fab.devices) if dev.role in ("leaf", "agg")
            and sum(1 for (lo, _) in fab.up if lo == d) >= 2]
    # a switch whose uplinks carry traffic: an uneven split of nothing is no imbalance
    up_load = np.array([sum(fab.link_load[k] for (lo, _), k in fab.up.items() if lo == d)
                        for d in cand])
    cand = [d for d, x in zip(cand, up_load, strict=True) if x >= 0.3 * up_load.max()]
    dev = int(rng.choice(cand))
    ups = [k for (lo, _), k in sorted(fab.up.items()) if lo == dev]
    n = len(ups)
    while True:
        if variant == "mild":
            w = 1 + float(rng.uniform(0.15, 0.25)) * rng.normal(size=n)
        elif variant == "polarised":
            w = np.where(rng.permutation(n) < max(1, n // 2), 1.0, 0.05)
        else:
            w = rng.multinomial(int(rng.integers(2 * n, 4 * n)), np.ones(n) / n) + 0.02
        w = np.clip(w, 0.02, None)
        cv = float(np.std(w) / np.mean(w))
        if (0.12 if variant == "mild" else 0.3) <= cv <= (0.3 if variant == "mild" else 2.0):
            break
    w = w / w.sum()
    t0 = 0.0 if rng.random() < 0.5 else float(rng.uniform(0.1, 0.4) * seconds)
    state.weights[dev] = (_mask(seconds, t0, seconds + 1), {k: float(x) for k, x in zip(ups, w, strict=True)})
    hot = [fab.port_id(int(fab.link_a[k])) for k, x in zip(ups, w, strict=True) if x > 1.2 / n]
    return dict(kind="load_imbalance", root=("device", fab.devices[dev].name), start=t0,
                end=float(seconds), victims=hot, trans={}, logged=True, silent=[],
                hard="mild_imbalance" if variant == "mild" else None)


FAULTS = {"link_down": link_down, "link_flap": link_flap, "link_degraded": link_degraded,
          "congestion": congestion, "pfc_storm": pfc_storm, "load_imbalance": load_imbalance}

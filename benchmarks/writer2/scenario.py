"""Scenarios for writer2: a fabric, a job, faults (hard cases included) and fleet noise.

`draw(seed, case)` returns a `Scenario`: the fabric with every port's per-second counters filled
in, the link-state events the devices log, the ground truth and which devices export nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .model import GBPS, Fabric, Run, build, finish_packets, new_run, route

KINDS = ("link_down", "link_flap", "link_degraded", "congestion", "pfc_storm", "load_imbalance")
# hard cases of issue 17, each a variant of one kind
HARD = {
    "silent_device": "link_down",  # the device at one end exports nothing
    "silent_loss": "link_degraded",  # rx counts fewer packets than the peer sent, no error counter
    "low_speed": "link_degraded",  # negotiated a lower speed than its peers
    "short_flap": "link_flap",  # down for less than a sample: only carrier/link_down deltas
    "loud_victims": "congestion",  # the spine ports it pauses mark more ECN than the root
    "mild_imbalance": "load_imbalance",  # uplink weights with a CV of about 0.2, not a hash
    "upper_imbalance": "load_imbalance",  # a pod spine of a 3-tier fabric hashes, not a leaf
}
T = 300  # seconds per bundle
VENDOR_MIXES = (["cumulus"], ["sonic"], ["eos"], ["cumulus", "sonic"], ["cumulus", "sonic", "eos"])


@dataclass
class Scenario:
    """What `formats.write` needs to write a bundle."""

    seed: int
    fabric: Fabric
    run: Run
    t0: float  # epoch seconds of second 0
    faults: list[dict] = field(default_factory=list)  # labels.json entries (seconds, not ISO)
    events: list[tuple[float, int, str]] = field(default_factory=list)  # (second, port, up/down/storm/restored)
    silent: set[str] = field(default_factory=set)  # devices that export nothing
    clear: dict[str, int] = field(default_factory=dict)  # device -> second its counters clear
    job: tuple[str, float] = ("", 0.0)  # job id, start (epoch s)
    mode: str = "ar"


def _fabric_links(f: Fabric) -> list[int]:
    return [i for i, p in enumerate(f.ports) if p.role in ("leaf_up", "spine_up")]


def _host_links(f: Fabric) -> list[int]:
    return [i for i, p in enumerate(f.ports) if p.role == "host"]


def draw(seed: int, case: str, small: bool = False) -> Scenario:
    """One scenario: `case` is a fault kind, a hard case (HARD), `healthy`, or `two:<k1>,<k2>`.
    `small`: 2 planes of 16 hosts, 2 leaves and 2 spines each, every vendor (for tests)."""
    rng = np.random.default_rng(seed)
    planes = 2 if small else int(rng.choice([1, 2, 2, 4]))
    tiers = 2 if small else int(rng.choice([2, 2, 3]))
    if "upper_imbalance" in case:  # only a 3-tier fabric has switches with uplinks above leaves
        tiers = 3
    if small:
        n_hosts, hpl, spines = 16, 8, 2
    elif tiers == 3:
        n_hosts, hpl, spines = 32, 8, 2
    else:
        n_hosts = int(rng.choice([16, 32]))
        hpl = int(rng.choice([4, 8]))
        spines = int(rng.choice([2, 4]))
    mix = VENDOR_MIXES[-1 if small else int(rng.integers(len(VENDOR_MIXES)))]
    f = build(planes, tiers, n_hosts, hpl, spines, mix, rng)
    run = new_run(f, T)
    t0 = 1791252000.0 + 3600 * int(rng.integers(0, 24 * 30))  # some hour of Oct/Nov 2026
    sc = Scenario(seed, f, run, t0)
    sc.job = (str(4100 + int(rng.integers(0, 5000))), t0 - int(rng.integers(60, 7200)))
    if case == "healthy":
        cases = []
    elif case.startswith("two:"):
        cases = case[4:].split(",")
    else:
        cases = [case]

    # 1. link states, which routing needs first
    loss: dict[int, np.ndarray] = {}
    ecmp: dict[str, float] = {}
    flow_mods: list = []
    used: set[str] = set()  # devices a fault already touches: two faults stay apart
    for c in cases:
        kind = HARD.get(c, c)
        hard = c if c in HARD else ""
        if kind in ("link_down", "link_flap", "link_degraded"):
            pool = _fabric_links(f) if (hard in ("silent_device",) or rng.random() < 0.75) \
                else _host_links(f)
            pool = [i for i in pool if not {f.ports[i].device, f.ports[f.ports[i].peer].device} & used]
            i = pool[int(rng.integers(len(pool)))]
            j = f.ports[i].peer
            used |= {f.ports[i].device, f.ports[j].device}
            _link_fault(sc, kind, hard, i, j, rng, loss)
        elif kind in ("congestion", "pfc_storm"):
            hosts = [h for h in range(n_hosts) if f.hosts[h] not in used]
            h = hosts[int(rng.integers(len(hosts)))]
            p = int(rng.integers(planes))
            used.add(f.hosts[h])
            used.add(f.ports[f.ports[f.by_dev[f.hosts[h]][p]].peer].device)
            flow_mods.append((kind, hard, h, p, rng.integers(40, 170), rng.integers(40, 110)))
        else:  # load_imbalance: a leaf (or a pod spine) with adaptive routing off, all along
            role = "spine_up" if hard == "upper_imbalance" else "leaf_up"
            devs = [d for d in f.switches if d not in used
                    and any(f.ports[i].role == role for i in f.by_dev[d])]
            dev = devs[int(rng.integers(len(devs)))]
            used.add(dev)
            ecmp[dev] = float(rng.uniform(0.14, 0.22)) if hard == "mild_imbalance" else 0.0
            sc.faults.append({"kind": "load_imbalance", "root_cause": {"type": "device", "id": dev},
                              "start": 0.0, "end": float(T), "hard_case": hard,
                              "victims": [f.link_id(i) for i in f.by_dev[dev]
                                          if f.ports[i].role == role]})

    # 2. the job: a ring over the hosts in a shuffled order, 2 QPs per hop and plane
    order = rng.permutation(n_hosts)
    util = float(rng.uniform(0.45, 0.7))
    host_gain = rng.normal(1, 0.02, n_hosts)
    flows = []
    for a in range(n_hosts):
        src, dst = int(order[a]), int(order[(a + 1) % n_hosts])
        for p in range(planes):
            base = util * 400 * GBPS * host_gain[src] / 2
            for _qp in range(2):
                rate = base * (1 + rng.normal(0, 0.03, T)) * (1 + 0.02 * np.sin(np.arange(T) / 7 + a))
                flows.append([src, dst, p, np.clip(rate, 0, None)])
    for kind, hard, h, p, at, dur in flow_mods:
        _traffic_fault(sc, flows, kind, hard, h, p, int(at), int(dur), util, rng)
    _route_observably(sc, [tuple(x) for x in flows], ecmp, rng, loss)
    for kind, hard, h, p, at, dur in flow_mods:
        _queue_effects(sc, kind, hard, h, p, int(at), int(dur), rng)
    _noise(sc, rng)
    finish_packets(run)
    return sc


UNEVEN = 1.25  # a hashing switch's busiest uplink carries at least this times its idlest
HASH_DRAWS = 16
UPLINK_ROLES = ("leaf_up", "spine_up")


def _route_observably(sc: Scenario, flows: list, ecmp: dict[str, float],
                      rng: np.random.Generator, loss: dict[int, np.ndarray]) -> None:
    """Route the flows; a switch that hashes (a leaf or, in an upper imbalance, a pod spine)
    whose flows happen to land evenly on its uplinks (2 of 4 crossing flows on each of 2
    uplinks: a fair hash of few flows) shows no imbalance at all, so its flows are hashed again
    (the next draws of `rng`), up to HASH_DRAWS times, until its busiest uplink carries UNEVEN
    times its idlest: the labelled fault is one the counters can show. Every other scenario
    routes once, as before."""
    f, run = sc.fabric, sc.run
    hashing = [d for d, v in ecmp.items() if v == 0.0
               and any(f.ports[i].role in UPLINK_ROLES for i in f.by_dev[d])]
    before = {c: a.copy() for c, a in run.inc.items()} if hashing else {}
    for _ in range(HASH_DRAWS):
        route(f, run, flows, ecmp, rng, loss)
        if all(_uplink_skew(sc, d) >= UNEVEN for d in hashing):
            return
        for c, a in before.items():
            run.inc[c][...] = a


def _uplink_skew(sc: Scenario, dev: str) -> float:
    """Busiest over idlest uplink of `dev` in tx bytes over the bundle (inf if one is idle)."""
    f = sc.fabric
    ups = [i for i in f.by_dev[dev] if f.ports[i].role in UPLINK_ROLES]
    tot = sc.run.inc["tx_bytes"][ups].sum(axis=1)
    return float(tot.max() / tot.min()) if tot.min() > 0 else float("inf")


def _interval(at: int, dur: int) -> slice:
    return slice(max(0, at), min(T, at + dur))


def _link_fault(sc: Scenario, kind: str, hard: str, i: int, j: int, rng: np.random.Generator,
                loss: dict[int, np.ndarray]) -> None:
    f, run = sc.fabric, sc.run
    at = int(rng.integers(50, 170))
    victims: list[str] = []
    if kind == "link_down":
        start, end = at, T
        run.up[[i, j], at:] = False
        for p in (i, j):
            run.inc["carrier"][p, at] += 1
            if f.ports[p].role == "host":
                run.inc["link_down_events"][p, at] += 1
            sc.events.append((at + rng.uniform(0, 0.9), p, "down"))
        if hard == "silent_device":
            sw = j if f.ports[j].role in ("spine_down", "super_down") else i
            sc.silent.add(f.ports[sw].device)
        dev = f.ports[i].device
        victims = [f.link_id(k) for k in f.by_dev[dev] if f.ports[k].role == f.ports[i].role and k != i]
    elif kind == "link_flap":
        repeat = int(rng.integers(1, 4))
        t = float(at)
        start = at
        for _ in range(repeat):
            down = float(rng.uniform(0.05, 0.8)) if hard == "short_flap" else float(rng.integers(12, 40))
            a, b = int(t), int(t + down)
            if hard != "short_flap":
                run.up[[i, j], a:b] = False
                for p in (i, j):
                    sc.events.append((t + rng.uniform(0, 0.2), p, "down"))
                    sc.events.append((t + down + rng.uniform(0, 0.2), p, "up"))
            for p in (i, j):
                run.inc["carrier"][p, a] += 1
                run.inc["carrier"][p, min(b, T - 1)] += 1
                if f.ports[p].role == "host":
                    run.inc["link_down_events"][p, a] += 1
            t += down + float(rng.integers(15, 50))
            if t >= T - 20:
                break
        end = min(T, int(t))
    else:  # link_degraded
        start, end = at, min(T, at + int(rng.integers(40, 120)))
        sl = slice(start, end)
        if hard == "low_speed":  # renegotiated at 200G (or 100G) for the whole bundle
            f.speed[[i, j]] = float(rng.choice([200.0, 100.0]))
            start, end = 0, T
        elif hard == "silent_loss":
            frac = np.zeros(T)
            frac[sl] = float(rng.uniform(0.01, 0.05))
            loss[i] = frac
        else:
            rx = [j] if rng.random() < 0.6 else [i, j]
            rate = float(rng.choice([30.0, 300.0, 3000.0]))
            for p in rx:
                run.inc["rx_fcs"][p, sl] += rng.poisson(rate, end - start)
                run.inc["symbol_err"][p, sl] += rng.poisson(rate * 4, end - start)
                run.inc["corrected"][p, sl] += rng.poisson(rate * 200, end - start)
                if rng.random() < 0.5:
                    run.inc["rx_discards"][p, sl] += rng.poisson(rate / 3, end - start)
    sc.faults.append({"kind": kind, "root_cause": {"type": "link", "id": f.link_id(i)},
                      "start": float(start), "end": float(end), "hard_case": hard,
                      "victims": victims})


def _traffic_fault(sc: Scenario, flows: list, kind: str, hard: str, h: int, p: int, at: int,
                   dur: int, util: float, rng: np.random.Generator) -> None:
    """Change the job's flows: an incast into host h, or a NIC that stops taking traffic."""
    f = sc.fabric
    sl = _interval(at, dur)
    if kind == "congestion":
        others = [x for x in range(len(f.hosts)) if x != h]
        k = int(rng.integers(3, min(12, len(others))))
        senders = rng.choice(others, size=k, replace=False)
        room = (0.985 - util * 1.0) * 400 * GBPS  # the receiver's port runs at line rate
        for s in senders:
            rate = np.zeros(T)
            rate[sl] = room / k * (1 + rng.normal(0, 0.02, sl.stop - sl.start))
            flows.append([int(s), h, p, rate])
        host_port = f.by_dev[f.hosts[h]][p]
        root = f.ports[host_port].peer
        sc.faults.append({"kind": "congestion", "root_cause": {"type": "port", "id": f.ports[root].id},
                          "start": float(sl.start), "end": float(sl.stop), "hard_case": hard,
                          "victims": [f.hosts[int(s)] for s in senders]})
    else:  # pfc_storm: host h's NIC p pauses its leaf port without end and takes almost nothing
        for fl in flows:
            if fl[1] == h and fl[2] == p:
                fl[3] = fl[3].copy()
                fl[3][sl] *= 0.02
            elif fl[0] == h and fl[2] == p:
                fl[3] = fl[3].copy()
                fl[3][sl] *= 0.3  # the ring stalls behind it
        host_port = f.by_dev[f.hosts[h]][p]
        sc.faults.append({"kind": "pfc_storm", "root_cause": {"type": "port", "id": f.ports[host_port].id},
                          "start": float(sl.start), "end": float(sl.stop), "hard_case": hard,
                          "victims": [f.ports[f.ports[host_port].peer].id]})


def _queue_effects(sc: Scenario, kind: str, hard: str, h: int, p: int, at: int, dur: int,
                   rng: np.random.Generator) -> None:
    """ECN marks, queue depth and pause frames the fault causes, after routing."""
    f, run = sc.fabric, sc.run
    sl = _interval(at, dur)
    n = sl.stop - sl.start
    host_port = f.by_dev[f.hosts[h]][p]
    leaf_port = f.ports[host_port].peer
    leaf = f.ports[leaf_port].device
    ups = [i for i in f.by_dev[leaf] if f.ports[i].role == "leaf_up"]
    if kind == "congestion":
        root_ecn = float(rng.uniform(4e3, 9e3) if hard == "loud_victims" else rng.uniform(2e4, 8e4))
        run.inc["ecn"][leaf_port, sl] += rng.poisson(root_ecn, n)
        run.queue[leaf_port, sl] = rng.uniform(1.5e6, 6e6, n)
        run.inc["no_buffer"][leaf_port, sl] += rng.poisson(2.0, n)
        run.inc["ecn_roce"][host_port, sl] += rng.poisson(root_ecn * 0.9, n)
        run.inc["cnp_sent"][host_port, sl] += rng.poisson(root_ecn * 0.5, n)
        for fault in sc.faults:
            if fault["kind"] == "congestion" and fault["root_cause"]["id"] == f.ports[leaf_port].id:
                for s in fault["victims"]:
                    sp = f.by_dev[s][p]
                    run.inc["cnp_handled"][sp, sl] += rng.poisson(root_ecn * 0.5 / len(fault["victims"]), n)
        # the leaf's ingress fills: it pauses the spines, whose queues towards it fill in turn
        victim_gain = rng.uniform(1.5, 3.0) if hard == "loud_victims" else rng.uniform(0.05, 0.3)
        for u in ups:
            d = f.ports[u].peer
            pauses = rng.poisson(rng.uniform(300, 3000), n)
            run.inc["tx_pause"][u, sl] += pauses
            run.inc["rx_pause"][d, sl] += pauses
            run.inc["ecn"][d, sl] += rng.poisson(root_ecn * victim_gain, n)
            run.queue[d, sl] = rng.uniform(0.5e6, 3e6, n) * (victim_gain if hard else 0.3)
    else:
        storm = rng.poisson(rng.uniform(2e4, 6e4), n)
        run.inc["tx_pause"][host_port, sl] += storm
        run.inc["rx_pause"][leaf_port, sl] += storm
        run.inc["storm_warn"][host_port, sl.start:sl.stop:8] += 1  # mlx5 warns every few seconds
        run.queue[leaf_port, sl] = rng.uniform(2e6, 8e6, n)
        for u in ups:  # upstream: the leaf pauses the spines feeding the stuck port
            d = f.ports[u].peer
            pauses = rng.poisson(rng.uniform(500, 5000), n)
            run.inc["tx_pause"][u, sl] += pauses
            run.inc["rx_pause"][d, sl] += pauses
        sc.events.append((sl.start + 1.0 + rng.uniform(0, 2), leaf_port, "storm"))
        sc.events.append((sl.stop + rng.uniform(0, 2), leaf_port, "restored"))


def _noise(sc: Scenario, rng: np.random.Generator) -> None:
    """What healthy fleets show: rare FCS errors, stray pauses, ECN microbursts, counter clears."""
    f, run = sc.fabric, sc.run
    n = len(f.ports)
    for _ in range(int(rng.integers(1, 4))):  # a handful of FCS errors on a healthy link
        i = int(rng.integers(n))
        run.inc["rx_fcs"][i, int(rng.integers(T))] += int(rng.integers(1, 4))
        run.inc["symbol_err"][i, int(rng.integers(T))] += int(rng.integers(1, 10))
    run.inc["corrected"] += rng.poisson(2.0, run.inc["corrected"].shape)  # FEC at work
    hosts = [i for i, p in enumerate(f.ports) if p.role == "host"]
    for _ in range(int(rng.integers(1, 4))):  # a stray burst of pause frames from a NIC
        i = hosts[int(rng.integers(len(hosts)))]
        t = int(rng.integers(T))
        k = int(rng.integers(5, 300))
        run.inc["tx_pause"][i, t] += k
        run.inc["rx_pause"][f.ports[i].peer, t] += k
    egress = [i for i, p in enumerate(f.ports) if p.role != "host"]
    for _ in range(int(rng.integers(1, 4))):  # an ECN microburst: one or two seconds
        i = egress[int(rng.integers(len(egress)))]
        t = int(rng.integers(T - 2))
        w = int(rng.integers(1, 3))
        run.inc["ecn"][i, t:t + w] += rng.integers(500, 5000, w)
        run.queue[i, t:t + w] = np.maximum(run.queue[i, t:t + w], rng.uniform(2e5, 1e6, w))
    run.queue += np.abs(rng.normal(0, 2e4, run.queue.shape)) * (run.inc["tx_bytes"] > 0)
    if rng.random() < 0.5:  # someone cleared a switch's counters (or it rebooted its agent)
        sw = f.switches[int(rng.integers(len(f.switches)))]
        sc.clear[sw] = int(rng.integers(30, T - 30))

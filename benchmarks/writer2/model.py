"""Writer2's own fabric and traffic model: ports, per-second counter increments, fault effects.

Deliberately simple and independent of twin/: a rail-optimized multiplane fabric (each plane a
2-tier leaf/spine or a 3-tier leaf/pod-spine/super-spine tree), hosts with one NIC port per
plane, one job's ring traffic as per-port byte rates with noise; adaptive routing splits a
leaf's traffic near-equally over its live uplinks, ECMP hashes each flow onto one of them.
Everything is an array over the seconds of the bundle (1 s resolution).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np

GBPS = 1e9 / 8  # bytes per second in one Gb/s
MTU_PKT = 4160  # bytes per RoCE packet on the wire (4096 payload + headers)
NETDEVS = ("enp24s0f0np0", "enp41s0f0np0", "enp94s0f0np0", "enp163s0f0np0")  # NIC i -> plane i
PCI = ("0000:18:00.0", "0000:29:00.0", "0000:5e:00.0", "0000:a3:00.0")

# counters kept per port (per-second increments); names are writer2's own, mapped per format
COUNTERS = ("tx_bytes", "rx_bytes", "tx_pkts", "rx_pkts", "rx_fcs", "symbol_err", "corrected",
            "rx_discards", "tx_discards", "ecn", "tx_pause", "rx_pause", "no_buffer",
            "carrier", "link_down_events", "storm_warn", "cnp_sent", "cnp_handled",
            "ecn_roce", "out_of_seq")


def ifname(vendor: str, n: int) -> str:
    """The n-th (1-based) front-panel port as each NOS names it."""
    if vendor == "cumulus":
        return f"swp{n}"
    if vendor == "sonic":
        return f"Ethernet{4 * (n - 1)}"
    return f"Ethernet{n}/1"  # eos


@dataclass
class Port:
    """One end of a cable; `peer` is the index of the other end."""

    device: str
    ifname: str
    role: str  # host, leaf_down, leaf_up, spine_down, spine_up, super_down
    plane: int
    peer: int = -1

    @property
    def id(self) -> str:
        return f"{self.device}:{self.ifname}"


@dataclass
class Fabric:
    """The topology and, once `run` is called, every port's per-second counters."""

    planes: int
    tiers: int
    hosts: list[str]
    hpl: int
    spines: int  # per plane (2-tier) or per pod (3-tier)
    pods: int
    supers: int  # super spines per spine group (3-tier)
    vendors: dict[str, str]  # switch -> cumulus / sonic / eos
    ports: list[Port] = field(default_factory=list)
    by_dev: dict[str, list[int]] = field(default_factory=dict)
    speed: np.ndarray | None = None  # Gb/s per port

    def add_cable(self, a: tuple[str, str, str], b: tuple[str, str, str], plane: int) -> None:
        ia, ib = len(self.ports), len(self.ports) + 1
        self.ports.append(Port(a[0], a[1], a[2], plane, ib))
        self.ports.append(Port(b[0], b[1], b[2], plane, ia))
        self.by_dev.setdefault(a[0], []).append(ia)
        self.by_dev.setdefault(b[0], []).append(ib)

    def link_id(self, i: int) -> str:
        return "--".join(sorted((self.ports[i].id, self.ports[self.ports[i].peer].id)))

    def port_index(self, port_id: str) -> int:
        return next(i for i, p in enumerate(self.ports) if p.id == port_id)

    @property
    def switches(self) -> list[str]:
        return sorted(self.vendors)


def leaf_name(p: int, j: int) -> str:
    return f"p{p}-leaf-{j + 1:02d}"


def build(planes: int, tiers: int, n_hosts: int, hpl: int, spines: int, vendor_mix: list[str],
          rng: np.random.Generator) -> Fabric:
    """A rail-optimized fabric: host h's NIC p goes to leaf h // hpl of plane p."""
    hosts = [f"gpu{h + 1:03d}" for h in range(n_hosts)]
    leaves = n_hosts // hpl
    pods = 2 if tiers == 3 else 1
    supers = 2 if tiers == 3 else 0
    vendors: dict[str, str] = {}
    f = Fabric(planes, tiers, hosts, hpl, spines, pods, supers, vendors)
    for p in range(planes):
        role_vendor = {r: vendor_mix[int(rng.integers(len(vendor_mix)))] for r in ("leaf", "spine", "super")}
        lpp = leaves // pods  # leaves per pod
        for j in range(leaves):
            vendors[leaf_name(p, j)] = role_vendor["leaf"]
        spine_names = {}
        for o in range(pods):
            for k in range(spines):
                name = f"p{p}-spine-{o * spines + k + 1:02d}"
                spine_names[o, k] = name
                vendors[name] = role_vendor["spine"]
        for h, host in enumerate(hosts):
            leaf = leaf_name(p, h // hpl)
            f.add_cable((host, NETDEVS[p], "host"),
                        (leaf, ifname(vendors[leaf], h % hpl + 1), "leaf_down"), p)
        for j in range(leaves):
            o, jl = divmod(j, lpp)
            leaf = leaf_name(p, j)
            for k in range(spines):
                sp = spine_names[o, k]
                f.add_cable((leaf, ifname(vendors[leaf], hpl + k + 1), "leaf_up"),
                            (sp, ifname(vendors[sp], jl + 1), "spine_down"), p)
        for (o, k), sp in spine_names.items():
            for m in range(supers):
                ss = f"p{p}-super-{k * supers + m + 1:02d}"
                vendors[ss] = role_vendor["super"]
                f.add_cable((sp, ifname(vendors[sp], lpp + m + 1), "spine_up"),
                            (ss, ifname(vendors[ss], o + 1), "super_down"), p)
    f.speed = np.full(len(f.ports), 400.0)
    return f


def _out(f: Fabric, dev: str, role: str) -> list[int]:
    return [i for i in f.by_dev[dev] if f.ports[i].role == role]


def paths(f: Fabric, src: int, dst: int, p: int) -> list[list[int]]:
    """Every equal-cost path from host src to host dst in plane p, as the tx port of each hop."""
    host_port = f.by_dev[f.hosts[src]][p]
    leaf_s = f.ports[f.ports[host_port].peer].device
    dst_port = f.by_dev[f.hosts[dst]][p]
    leaf_d_port = f.ports[dst_port].peer  # the leaf port facing dst: its tx reaches dst
    leaf_d = f.ports[leaf_d_port].device
    if leaf_s == leaf_d:
        return [[host_port, leaf_d_port]]
    out = []
    for up in _out(f, leaf_s, "leaf_up"):
        spine = f.ports[f.ports[up].peer].device
        down = [i for i in _out(f, spine, "spine_down") if f.ports[f.ports[i].peer].device == leaf_d]
        if down:  # same pod
            out.append([host_port, up, down[0], leaf_d_port])
            continue
        for sup in _out(f, spine, "spine_up"):
            ss = f.ports[f.ports[sup].peer].device
            for sd in _out(f, ss, "super_down"):
                sp2 = f.ports[f.ports[sd].peer].device
                d2 = [i for i in _out(f, sp2, "spine_down") if f.ports[f.ports[i].peer].device == leaf_d]
                if d2:
                    out.append([host_port, up, sup, sd, d2[0], leaf_d_port])
    return out


@dataclass
class Run:
    """Per-port per-second increments of every counter, link state and speeds."""

    T: int
    inc: dict[str, np.ndarray]  # counter -> (ports, T)
    up: np.ndarray  # (ports, T) bool: oper up
    queue: np.ndarray  # (ports, T) max queue length in bytes (a gauge)


def new_run(f: Fabric, T: int) -> Run:
    n = len(f.ports)
    return Run(T, {c: np.zeros((n, T)) for c in COUNTERS}, np.ones((n, T), bool), np.zeros((n, T)))


def route(f: Fabric, run: Run, flows: list[tuple[int, int, int, np.ndarray]],
          ecmp_leaves: dict[str, float], rng: np.random.Generator,
          loss: dict[int, np.ndarray]) -> None:
    """Add each flow's bytes to the tx of the ports on its paths and the rx of their peers.

    A leaf in `ecmp_leaves` hashes each flow to one path (value 0) or, for a mild imbalance
    (value > 0), splits with weights of that spread; every other leaf splits near-equally over
    the paths whose links are all up, weighted by link speed (adaptive routing). A pod spine in
    `ecmp_leaves` (value 0) hashes each flow it carries upward to one of its own uplinks: the
    leaves below still split evenly over the spines, and the spine's share of the flow goes up
    one uplink only. `loss` maps a tx port to the fraction (per second) of its bytes its peer
    never counts (silent loss)."""
    alive_link = run.up & run.up[[p.peer for p in f.ports]]
    cap = f.speed[:, None] * GBPS
    for src, dst, p, rate in flows:
        ps = paths(f, src, dst, p)
        if not ps:
            continue
        alive = np.array([alive_link[path].all(axis=0) for path in ps], float)  # (paths, T)
        w = np.array([min(f.speed[i] for i in path) for path in ps])[:, None] * alive
        w = _spine_hash(f, ps, w, ecmp_leaves, rng)
        leaf = f.ports[f.ports[ps[0][0]].peer].device
        if leaf in ecmp_leaves and len(ps) > 1:
            spread = ecmp_leaves[leaf]
            if spread == 0:  # hash: one path, the next live one when it dies (after convergence)
                h = int(rng.integers(len(ps)))
                order = [(h + k) % len(ps) for k in range(len(ps))]
                choice = np.zeros_like(w)
                taken = np.zeros(run.T, bool)
                for k in order:
                    pick = (alive[k] > 0) & ~taken
                    choice[k] = pick
                    taken |= pick
                w = choice
            else:
                w = w * _mild_weights(leaf, len(ps), spread)[:, None]
        tot = w.sum(axis=0)
        frac = np.divide(w, tot, out=np.zeros_like(w), where=tot > 0)
        frac *= 1 + rng.normal(0, 0.004, frac.shape) * (frac > 0)  # AR is near-equal, not exact
        for k, path in enumerate(ps):
            b = rate * frac[k]
            for tx in path:
                b = np.minimum(b, cap[tx])
                run.inc["tx_bytes"][tx] += b
                run.inc["rx_bytes"][f.ports[tx].peer] += b * (1 - loss.get(tx, 0.0))  # (T,) or 0


def _spine_hash(f: Fabric, ps: list[list[int]], w: np.ndarray, ecmp: dict[str, float],
                rng: np.random.Generator) -> np.ndarray:
    """The weights of a flow's paths once each hashing pod spine on them (`route`) has picked
    one of its uplinks for it: the paths through its other uplinks get nothing, those through
    the picked one its whole share (as many times their weight as it has uplinks)."""
    picked: dict[str, int] = {}
    w = w.copy()
    for k, path in enumerate(ps):
        if len(path) < 6:  # within a pod: no spine uplink on the way
            continue
        spine = f.ports[path[2]].device
        if spine not in ecmp or "-leaf-" in spine:
            continue
        ups = _out(f, spine, "spine_up")
        h = picked.setdefault(spine, int(rng.integers(len(ups))))
        w[k] *= len(ups) if path[2] == ups[h] else 0.0
    return w


def _mild_weights(leaf: str, n: int, spread: float) -> np.ndarray:
    """Fixed per-leaf uplink weights with a coefficient of variation of about `spread`."""
    g = np.random.default_rng(zlib.crc32(leaf.encode()))  # str hash() varies per process
    w = 1 + spread * np.linspace(-1.5, 1.5, n)
    g.shuffle(w)
    return np.clip(w, 0.2, None)


def finish_packets(run: Run) -> None:
    """Packets from bytes (RoCE MTU-sized packets)."""
    run.inc["tx_pkts"] += np.round(run.inc["tx_bytes"] / MTU_PKT)
    run.inc["rx_pkts"] += np.round(run.inc["rx_bytes"] / MTU_PKT)


def cumulate(inc: np.ndarray, base: np.ndarray, clear_at: np.ndarray | None = None) -> np.ndarray:
    """Monotonic counters from increments: a starting value per port and, where `clear_at`
    (per port, -1 for none) says so, a clear to 0 at that second."""
    cum = base[:, None] + np.cumsum(np.round(inc), axis=1)
    if clear_at is not None:
        for i in np.flatnonzero(clear_at >= 0):
            c = int(clear_at[i])
            cum[i, c:] -= cum[i, c - 1] if c > 0 else base[i]
    return cum

"""A twin of the fabric the telemetry describes: build a `Fabric` from cabling rows.

The rows are what the store's `neighbors` table holds (LLDP seen from either end, containerlab
links): `(device, ifname, peer_device, peer_ifname)`; each cable may appear once or twice.
Roles come from the graph: hosts are the devices no switch-like name claims and that cable only
to switches; leaves are the switches cabled to hosts; spines the switches cabled to leaves only.
Planes are the connected components of the switch graph. A host port's NIC index is its rank
among the host's ports in that plane (natural order of the interface names).

Three tiers: switches cabled to leaves are aggs when some switch sits above them (cores, cabled
to aggs only); the pods are the groups of leaves and aggs that cores do not join.

The simulator wants a regular rail-optimized layout: every host with the same number of ports
in every plane, every leaf of a pod cabled to the same aggs. A fabric that is not (a missing
cable, a host in one plane only) is refused with the first irregularity named.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from twin.topology import Fabric, FabricSpec, Pods, TopologyError

SWITCH_NAME = re.compile(r"(leaf|spine|tor|agg|core|super|switch|sw\d|^sw-|^sw_)", re.IGNORECASE)


def natural_key(text: str) -> list:
    """`swp10` after `swp9`."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


@dataclass
class Layout:
    """What the cabling says before any regularity is asked of it: the cables (port-id pairs,
    smaller first, each once), the device graph (each device's cabled neighbours), the roles
    and the planes (sets of
    switches, in natural order of their first switch). `fabtwin check` reads it to name what
    breaks the rail-optimized design; `from_cabling` builds the twin on it."""

    cables: dict[tuple[str, str], None]
    graph: dict[str, dict[str, None]]  # device -> the devices cabled to it, in cabling order
    hosts: set[str]
    leaves: set[str]
    middle: set[str]  # spines (2 tiers) or aggs (3 tiers)
    cores: set[str]
    planes: list[set[str]]

    @property
    def plane_of(self) -> dict[str, int]:
        """Switch -> its plane's index."""
        return {n: p for p, comp in enumerate(self.planes) for n in comp}


def layout(rows: Iterable[tuple[str, str, str, str]]) -> Layout:
    """The `Layout` of cabling rows (TopologyError when there are none, or a core cabled to
    something other than an agg)."""
    cables: dict[tuple[str, str], None] = {}
    for dev, ifn, peer, pif in rows:
        a, b = f"{dev}:{ifn}", f"{peer}:{pif}"
        cables[(min(a, b), max(a, b))] = None
    if not cables:
        raise TopologyError("no cabling: ingest LLDP (lldpctl -f json) or a containerlab topology first")
    # a plain adjacency, not networkx: roles and components are all the twin asks of the graph,
    # and importing networkx was about 100 ms of CPU on every investigate
    g: dict[str, dict[str, None]] = {}  # ordered like networkx's: errors name the same device
    for a, b in cables:
        da, db = a.split(":", 1)[0], b.split(":", 1)[0]
        g.setdefault(da, {})[db] = None
        g.setdefault(db, {})[da] = None
    hosts, leaves, middle, cores = _roles(g)
    planes = _components(g, set(g) - hosts)
    planes.sort(key=lambda comp: natural_key(min(comp, key=natural_key)))
    return Layout(cables, g, hosts, leaves, middle, cores, planes)


def from_cabling(rows: Iterable[tuple[str, str, str, str]],
                 speeds_gbps: dict[str, float] | None = None, default_gbps: float = 400.0) -> Fabric:
    """A validated Fabric from cabling rows; `speeds_gbps` maps port ids to their speed.

    One pass over the cables sorts them into host and switch cables with their devices, so
    the loops below do no string work per cable (12,288 cables: 250 -> 60 ms of CPU)."""
    lay = layout(rows)
    g, hosts, leaves, middle, cores = lay.graph, lay.hosts, lay.leaves, lay.middle, lay.cores
    tiers = 3 if cores else 2
    planes = lay.planes
    plane_of = lay.plane_of
    host_list = sorted(hosts, key=natural_key)
    speed = speeds_gbps or {}

    host_ports, switch_cables = _split_cables(lay.cables, hosts, plane_of)
    nics_per_host = _ports_per_plane(host_ports, host_list, len(planes))
    names = list(host_list)
    kind = [0] * len(names)
    node_plane = [-1] * len(names)
    index = {n: i for i, n in enumerate(names)}
    pods_of_plane: list[list[tuple[list[str], list[str]]]] = []
    for p, comp in enumerate(planes):
        pods = _pods(g, comp, leaves, middle) if tiers == 3 else [
            (sorted(comp & leaves, key=natural_key), sorted(comp & middle, key=natural_key))]
        pods_of_plane.append(pods)
        ordered = [(1, n) for pod_leaves, _ in pods for n in pod_leaves]
        ordered += [(2, n) for _, pod_aggs in pods for n in pod_aggs]
        ordered += [(3, n) for n in sorted(comp & cores, key=natural_key)]
        for role, n in ordered:
            index[n] = len(names)
            names.append(n)
            kind.append(role)
            node_plane.append(p)
    ep_host, ep_nic, ep_plane, ep_leaf, pa, pb = _endpoints(host_ports, host_list, len(planes),
                                                            index)
    # the endpoints' cables are the first ones, in endpoint order (cable_a: the host)
    n_ep = len(ep_host)
    ca, cb, cp, tier = list(ep_host), list(ep_leaf), list(ep_plane), [0] * n_ep
    # uplinks in columns aligned by the switch above (and parallel cable), padded with -1
    up: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for a, b, da, db in sorted(switch_cables):
        ia, ib = index[da], index[db]
        lo, hi, ilo, ihi, dhi = (a, b, ia, ib, db) if kind[ia] < kind[ib] else (b, a, ib, ia, da)
        t_lo = kind[ilo]
        if kind[ihi] != t_lo + 1:
            raise TopologyError(f"cable {a}--{b} does not join adjacent tiers")
        up[ilo][dhi].append(len(ca))
        ca.append(ilo)
        cb.append(ihi)
        pa.append(lo)
        pb.append(hi)
        cp.append(plane_of[dhi])
        tier.append(t_lo)
    gb = np.array([float(speed.get(a) or speed.get(b) or default_gbps) for a, b in zip(pa, pb, strict=True)]
                  if speed else np.full(len(ca), float(default_gbps)), dtype=float)
    tiers_arr = np.array(tier, dtype=np.int64)
    leaf_up, agg_up, pods = _uplinks(up, index, planes, pods_of_plane, cores, tiers)
    kinds = np.array(kind)
    degree = np.bincount(np.concatenate([ca, cb]).astype(np.int64), minlength=len(names))
    spec = FabricSpec(hosts=len(host_list), nics_per_host=nics_per_host, planes=len(planes),
                      tiers=tiers, leaf_radix=int(degree[kinds == 1].max(initial=1)),
                      spine_radix=int(degree[kinds >= 2].max(initial=1)),
                      host_speed_gbps=float(np.median(gb[:n_ep])),
                      fabric_speed_gbps=float(np.median(gb[tiers_arr != 0]) if (tiers_arr != 0).any()
                                              else default_gbps),
                      host_prefix="")
    fabric = Fabric(spec, names, kinds, np.array(node_plane), np.array(ca), np.array(cb), pa,
                    pb, gb, np.array(cp), tiers_arr, np.array(ep_host),
                    np.array(ep_nic), np.array(ep_plane), np.arange(n_ep), np.array(ep_leaf),
                    leaf_up_cables=leaf_up, agg_up_cables=agg_up, pods=pods,
                    discovered=True)
    fabric.validate()
    return fabric


def _split_cables(cables: dict[tuple[str, str], None], hosts: set[str], plane_of: dict[str, int]
                  ) -> tuple[dict[tuple[str, int], list[tuple[str, str]]], list[tuple[str, str, str, str]]]:
    """(host, plane) -> its cables as (host port, leaf port); the switch cables with their
    devices: one pass, so that no later loop splits a port id."""
    host_ports: dict[tuple[str, int], list[tuple[str, str]]] = defaultdict(list)
    switch_cables: list[tuple[str, str, str, str]] = []
    for a, b in cables:
        da, db = a.split(":", 1)[0], b.split(":", 1)[0]
        if da in hosts:
            host_ports[(da, plane_of[db])].append((a, b))
        elif db in hosts:
            host_ports[(db, plane_of[da])].append((b, a))
        else:
            switch_cables.append((a, b, da, db))
    return host_ports, switch_cables


def _endpoints(host_ports: dict, host_list: list[str], n_planes: int, index: dict[str, int]
               ) -> tuple[list[int], list[int], list[int], list[int], list[str], list[str]]:
    """(host, NIC, plane, leaf) node indexes of every endpoint, and its (host, leaf) ports:
    per plane, per host, its ports in natural order of their names (its NIC indexes)."""
    if_keys: dict[str, list] = {}  # a fabric has a few distinct host ifnames

    def by_ifname(hp_lp: tuple[str, str]) -> list:
        # within one host, ordering 'host:ifname' by natural_key is ordering the ifnames
        ifn = hp_lp[0].split(":", 1)[1]
        key = if_keys.get(ifn)
        if key is None:
            key = if_keys[ifn] = natural_key(ifn)
        return key

    ep_host, ep_nic, ep_plane, ep_leaf = [], [], [], []
    hps, lps = [], []
    for p in range(n_planes):
        for h in host_list:
            hi = index[h]
            ports = host_ports[(h, p)]
            for nic, (hp, lp) in enumerate(sorted(ports, key=by_ifname) if len(ports) > 1
                                           else ports):
                ep_host.append(hi)
                ep_nic.append(nic)
                ep_plane.append(p)
                ep_leaf.append(index[lp.split(":", 1)[0]])
                hps.append(hp)
                lps.append(lp)
    return ep_host, ep_nic, ep_plane, ep_leaf, hps, lps


def _components(g: dict[str, dict[str, None]], nodes: set[str]) -> list[set[str]]:
    """The connected components of the graph `g` restricted to `nodes`, in order of their first
    node in `g`."""
    out, seen = [], set()
    for start in g:
        if start not in nodes or start in seen:
            continue
        comp, todo = {start}, [start]
        while todo:
            for m in g[todo.pop()]:
                if m in nodes and m not in comp:
                    comp.add(m)
                    todo.append(m)
        seen |= comp
        out.append(comp)
    return out


def _roles(g: dict[str, dict[str, None]]) -> tuple[set[str], set[str], set[str], set[str]]:
    """(hosts, leaves, spines or aggs, cores) of the device graph."""
    switches = {n for n in g if SWITCH_NAME.search(n)}
    hosts = {n for n in g if n not in switches and all(m in switches for m in g[n])}
    switches |= set(g) - hosts
    leaves = {n for n in switches if any(m in hosts for m in g[n])}
    upper = switches - leaves
    middle = {n for n in upper if any(m in leaves for m in g[n])}
    cores = upper - middle
    for c in sorted(cores, key=natural_key):  # the same error every run
        if any(m not in middle for m in g[c]):
            raise TopologyError(f"{c} is cabled to {next(m for m in g[c] if m not in middle)}: "
                                "only leaf, spine/agg and core tiers are supported")
    return hosts, leaves, middle, cores


def _ports_per_plane(host_ports: dict, host_list: list[str], n_planes: int) -> int:
    """The ports every host has in every plane (TopologyError naming the first host that differs)."""
    counts = [len(host_ports.get((h, p), [])) for h in host_list for p in range(n_planes)]
    norm = max(set(counts), key=counts.count)  # what most hosts have
    odd = next((i for i, c in enumerate(counts) if c != norm), None)
    if odd is not None:
        h, p = host_list[odd // n_planes], odd % n_planes
        raise TopologyError(f"irregular fabric: {h} has {counts[odd]} port(s) in plane {p}, "
                            f"the other hosts {norm}")
    return norm


def _uplinks(up: dict, index: dict[str, int], planes: list[set[str]], pods_of_plane: list,
             cores: set[str], tiers: int) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray], dict[int, Pods]]:
    """(leaf -> uplink cables, agg -> core cables, plane -> pods), columns aligned by the switch
    above and padded with -1."""
    leaf_up: dict[int, np.ndarray] = {}
    agg_up: dict[int, np.ndarray] = {}
    pods: dict[int, Pods] = {}
    for p, comp in enumerate(planes):
        for pod_leaves, pod_aggs in pods_of_plane[p]:
            leaf_up.update(_aligned(up, index, pod_leaves, pod_aggs))
        if tiers == 3:
            # aggs at the same place in their pods reach the same cores (a k-ary fat tree):
            # column m of position j is the m-th of those cores, in every pod
            widths = {len(pod_aggs) for _, pod_aggs in pods_of_plane[p]}
            if len(widths) != 1:
                raise TopologyError(f"plane {p}: pods with different numbers of aggs")
            for j in range(widths.pop()):
                at_j = [pod_aggs[j] for _, pod_aggs in pods_of_plane[p]]
                reach = sorted({u for a in at_j for u in up[index[a]]}, key=natural_key)
                agg_up.update(_aligned(up, index, at_j, reach))
            lpp = {len(pl) for pl, _ in pods_of_plane[p]}
            if len(lpp) != 1:
                raise TopologyError(f"plane {p}: pods of different sizes ({sorted(lpp)} leaves)")
            pods[p] = Pods(lpp.pop(), [[index[a] for a in pod_aggs] for _, pod_aggs in pods_of_plane[p]],
                           [index[c] for c in sorted(comp & cores, key=natural_key)])
    if tiers == 3:
        width = max(len(v) for v in agg_up.values())
        agg_up = {a: np.concatenate([v, np.full(width - len(v), -1)]) for a, v in agg_up.items()}
    return leaf_up, agg_up, pods


def _pods(g: dict[str, dict[str, None]], comp: set[str], leaves: set[str], aggs: set[str]) -> list[tuple[list[str], list[str]]]:
    """Pods of a 3-tier plane: connected groups of its leaves and aggs, without the cores."""
    pods = []
    for part in _components(g, (comp & leaves) | (comp & aggs)):
        pods.append((sorted(part & leaves, key=natural_key), sorted(part & aggs, key=natural_key)))
    pods.sort(key=lambda pod: natural_key(pod[0][0]) if pod[0] else [])
    return pods


def _aligned(up: dict, index: dict[str, int], lower: list[str], upper: list[str]) -> dict[int, np.ndarray]:
    """Each lower switch's uplink cables in columns aligned by upper switch (parallel cables
    side by side), -1 where a cable is missing, so column k means the same next hop for all."""
    width = {u: max((len(up[index[n]][u]) for n in lower), default=0) for u in upper}
    out = {}
    for n in lower:
        cols: list[int] = []
        for u in upper:
            have = up[index[n]][u]
            cols += have + [-1] * (width[u] - len(have))
        out[index[n]] = np.array(cols, dtype=np.int64)
    return out

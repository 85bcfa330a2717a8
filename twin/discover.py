"""A twin of the fabric the telemetry describes: build a `Fabric` from cabling rows.

The rows are what the store's `neighbors` table holds (LLDP seen from either end, containerlab
links): `(device, ifname, peer_device, peer_ifname)`; each cable may appear once or twice.
Roles come from the graph: hosts are the devices no switch-like name claims and that cable only
to switches; leaves are the switches cabled to hosts; spines the switches cabled to leaves only.
Planes are the connected components of the switch graph. A host port's NIC index is its rank
among the host's ports in that plane (natural order of the interface names).

The simulator wants a regular rail-optimized layout: every host with the same number of ports
in every plane. A fabric that is not (a missing cable, a host in one plane only) is refused with
the first irregularity named; 3-tier discovery is not supported yet.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

import networkx as nx
import numpy as np

from twin.topology import Fabric, FabricSpec, TopologyError

SWITCH_NAME = re.compile(r"(leaf|spine|tor|agg|core|super|switch|sw\d|^sw-|^sw_)", re.IGNORECASE)


def natural_key(text: str) -> list:
    """`swp10` after `swp9`."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def from_cabling(rows: Iterable[tuple[str, str, str, str]],
                 speeds_gbps: dict[str, float] | None = None, default_gbps: float = 400.0) -> Fabric:
    """A validated Fabric from cabling rows; `speeds_gbps` maps port ids to their speed."""
    cables: dict[tuple[str, str], None] = {}
    for dev, ifn, peer, pif in rows:
        a, b = f"{dev}:{ifn}", f"{peer}:{pif}"
        cables[(min(a, b), max(a, b))] = None
    if not cables:
        raise TopologyError("no cabling: ingest LLDP (lldpctl -f json) or a containerlab topology first")
    g = nx.MultiGraph()
    for a, b in cables:
        g.add_edge(a.split(":", 1)[0], b.split(":", 1)[0], ports=(a, b))
    switches = {n for n in g if SWITCH_NAME.search(n)}
    hosts = {n for n in g if n not in switches and all(m in switches for m in g[n])}
    switches |= set(g) - hosts
    leaves = {n for n in switches if any(m in hosts for m in g[n])}
    upper = switches - leaves
    for s in upper:
        if any(m not in leaves for m in g[s]):
            raise TopologyError(f"{s} is cabled above the spine layer: 3-tier discovery is not supported yet")
    planes = list(nx.connected_components(g.subgraph(switches)))
    planes.sort(key=lambda comp: natural_key(min(comp, key=natural_key)))
    plane_of = {n: p for p, comp in enumerate(planes) for n in comp}
    host_list = sorted(hosts, key=natural_key)
    speed = speeds_gbps or {}

    def gbps(a: str, b: str) -> float:
        return float(speed.get(a) or speed.get(b) or default_gbps)

    # host ports per plane
    host_ports: dict[tuple[str, int], list[tuple[str, str]]] = defaultdict(list)
    for a, b in cables:
        da, db = a.split(":", 1)[0], b.split(":", 1)[0]
        if da in hosts or db in hosts:
            hp, lp = (a, b) if da in hosts else (b, a)
            host_ports[(hp.split(":", 1)[0], plane_of[lp.split(":", 1)[0]])].append((hp, lp))
    counts = [len(host_ports.get((h, p), [])) for h in host_list for p in range(len(planes))]
    norm = max(set(counts), key=counts.count)  # what most hosts have
    odd = next((i for i, c in enumerate(counts) if c != norm), None)
    if odd is not None:
        h, p = host_list[odd // len(planes)], odd % len(planes)
        raise TopologyError(f"irregular fabric: {h} has {counts[odd]} port(s) in plane {p}, "
                            f"the other hosts {norm}")
    nics_per_host = norm
    names = list(host_list)
    kind = [0] * len(names)
    node_plane = [-1] * len(names)
    index = {n: i for i, n in enumerate(names)}
    for p, comp in enumerate(planes):
        for role, members in ((1, comp & leaves), (2, comp & upper)):
            for n in sorted(members, key=natural_key):
                index[n] = len(names)
                names.append(n)
                kind.append(role)
                node_plane.append(p)
    ca, cb, pa, pb, gb, cp, tier = [], [], [], [], [], [], []

    def add(lo: str, hi: str, t: int) -> int:
        ca.append(index[lo.split(":", 1)[0]])
        cb.append(index[hi.split(":", 1)[0]])
        pa.append(lo)
        pb.append(hi)
        gb.append(gbps(lo, hi))
        cp.append(plane_of[hi.split(":", 1)[0]])
        tier.append(t)
        return len(ca) - 1

    ep_host, ep_nic, ep_plane, ep_cable, ep_leaf = [], [], [], [], []
    for p in range(len(planes)):
        for h in host_list:
            ports = sorted(host_ports[(h, p)], key=lambda hp: natural_key(hp[0]))
            for nic, (hp, lp) in enumerate(ports):
                ep_host.append(index[h])
                ep_nic.append(nic)
                ep_plane.append(p)
                ep_cable.append(add(hp, lp, 0))
                ep_leaf.append(index[lp.split(":", 1)[0]])
    # leaf uplinks in columns aligned by spine (and parallel cable), padded with -1
    up: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for a, b in sorted(cables):
        da, db = a.split(":", 1)[0], b.split(":", 1)[0]
        if da in hosts or db in hosts:
            continue
        lo, hi = (a, b) if da in leaves else (b, a)
        if lo.split(":", 1)[0] not in leaves or hi.split(":", 1)[0] not in upper:
            raise TopologyError(f"cable {a}--{b} joins two switches of the same tier")
        up[index[lo.split(":", 1)[0]]][hi.split(":", 1)[0]].append(add(lo, hi, 1))
    leaf_up: dict[int, np.ndarray] = {}
    for p, comp in enumerate(planes):
        spines = sorted(comp & upper, key=natural_key)
        width = {s: max((len(up[leaf][s]) for leaf in up if node_plane[leaf] == p), default=0)
                 for s in spines}
        for n in sorted(comp & leaves, key=natural_key):
            cols = []
            for s in spines:
                have = up[index[n]][s] if index[n] in up else []
                cols += have + [-1] * (width[s] - len(have))
            leaf_up[index[n]] = np.array(cols, dtype=np.int64)
    degree = np.bincount(np.concatenate([ca, cb]), minlength=len(names))
    spec = FabricSpec(hosts=len(host_list), nics_per_host=nics_per_host, planes=len(planes), tiers=2,
                      leaf_radix=int(degree[np.array(kind) == 1].max(initial=1)),
                      spine_radix=int(degree[np.array(kind) == 2].max(initial=1)),
                      host_speed_gbps=float(np.median([gb[c] for c in ep_cable])),
                      fabric_speed_gbps=float(np.median([g_ for g_, t in zip(gb, tier, strict=True) if t]
                                                        or [default_gbps])),
                      host_prefix="")
    fabric = Fabric(spec, names, np.array(kind), np.array(node_plane), np.array(ca), np.array(cb), pa,
                    pb, np.array(gb, dtype=float), np.array(cp), np.array(tier), np.array(ep_host),
                    np.array(ep_nic), np.array(ep_plane), np.array(ep_cable), np.array(ep_leaf),
                    leaf_up_cables=leaf_up, extra={"discovered": True})
    fabric.validate()
    return fabric

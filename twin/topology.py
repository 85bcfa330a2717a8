"""Multiplane leaf/spine fabrics as arrays (for simulation) and networkx graphs (for analysis).

A fabric has `planes` independent fat trees. Every host has `nics_per_host` NICs and every NIC
one port per plane, so a host has `nics_per_host * planes` ports (`eth0`..). Placement is
rail-optimized: NIC i of the hosts of one leaf group lands on leaf rail i of every plane.

Tiers: 2 (leaf, spine) or 3 (leaf, agg, core; pods of leaves and aggs, as a k-ary fat tree).
Names follow design section 3: hosts `gpu-node-0001`, switches `leaf-p0-03`, `spine-p0-01`,
`agg-p0-00-01`, `core-p0-01`, switch ports `swp1`.. (1-based), host ports `eth0`...

Links are cables; the simulator uses directed links, two per cable: `2*c` goes from
`cable_a[c]` to `cable_b[c]` (upwards: host->leaf, leaf->spine...) and `2*c + 1` back down.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import networkx as nx


class TopologyError(ValueError):
    """A fabric that cannot exist as described."""


@dataclass(frozen=True)
class FabricSpec:
    """Parameters of a fabric, as a scenario file gives them."""

    hosts: int
    nics_per_host: int = 1
    planes: int = 1
    tiers: int = 2
    leaf_radix: int = 64
    spine_radix: int = 64
    host_speed_gbps: float = 400.0
    fabric_speed_gbps: float = 400.0
    oversubscription: float = 1.0  # leaf down:up capacity ratio
    hosts_per_leaf: int | None = None  # default: half the leaf radix scaled by oversubscription
    pods: int | None = None  # 3-tier only
    host_prefix: str = "gpu-node-"

    def __post_init__(self) -> None:
        if self.tiers not in (2, 3):
            raise TopologyError(f"tiers must be 2 or 3, not {self.tiers}")
        for name in ("hosts", "nics_per_host", "planes", "leaf_radix", "spine_radix"):
            if getattr(self, name) < 1:
                raise TopologyError(f"{name} must be at least 1")
        if self.oversubscription <= 0:
            raise TopologyError("oversubscription must be positive")


@dataclass
class Pods:
    """The pods of one plane of a 3-tier fabric: leaves per pod (the same in every pod), the
    agg nodes of each pod, in order, and the plane's core nodes."""

    leaves_per_pod: int
    aggs: list[list[int]]
    cores: list[int]


@dataclass
class Fabric:
    """A built fabric: node and cable arrays plus names."""

    spec: FabricSpec
    node_name: list[str]
    node_kind: np.ndarray  # 0 host, 1 leaf, 2 spine/agg, 3 core
    node_plane: np.ndarray  # -1 for hosts
    cable_a: np.ndarray  # lower end (host or lower tier)
    cable_b: np.ndarray
    cable_port_a: list[str]
    cable_port_b: list[str]
    cable_gbps: np.ndarray
    cable_plane: np.ndarray
    cable_tier: np.ndarray  # 0 host-leaf, 1 leaf-spine/agg, 2 agg-core
    # endpoints: one per (host, nic, plane)
    ep_host: np.ndarray
    ep_nic: np.ndarray
    ep_plane: np.ndarray
    ep_cable: np.ndarray  # the host-leaf cable of the endpoint
    ep_leaf: np.ndarray  # node index of the leaf
    # structure for routing
    leaf_up_cables: dict[int, np.ndarray] = field(default_factory=dict)  # leaf -> cables to tier 2
    agg_up_cables: dict[int, np.ndarray] = field(default_factory=dict)  # 3-tier: agg -> core cables (-1 pad)
    pods: dict[int, Pods] = field(default_factory=dict)  # 3-tier: plane -> its pods
    spines: dict[int, list[int]] = field(default_factory=dict)  # 2-tier built: plane -> spine nodes
    hosts_per_leaf: int = 0  # built from a spec (0 when discovered)
    leaf_uplinks: int = 0
    leaf_groups: int = 0
    discovered: bool = False  # from cabling (`twin.discover`), not from a spec

    @property
    def n_nodes(self) -> int:
        return len(self.node_name)

    @property
    def n_cables(self) -> int:
        return len(self.cable_a)

    @property
    def n_links(self) -> int:
        """Directed links: two per cable."""
        return 2 * self.n_cables

    @cached_property
    def link_capacity_bps(self) -> np.ndarray:
        return np.repeat(self.cable_gbps * 1e9, 2)

    @cached_property
    def link_position(self) -> np.ndarray:
        """Per directed link, its place on an up-down path: host->leaf 0, leaf->spine 1, ...
        then the down links in order, so that a link with a lower position comes first."""
        top = 2 * self.spec.tiers - 1  # positions 0..top
        up = self.cable_tier
        out = np.empty(self.n_links, dtype=np.int64)
        out[0::2] = up
        out[1::2] = top - up
        return out

    def link_id(self, cable: int) -> str:
        """Design section 3 id of a cable: the two port ids joined by `--`, smaller first."""
        a, b = self.cable_port_a[cable], self.cable_port_b[cable]
        return f"{min(a, b)}--{max(a, b)}"

    def host_name(self, host: int) -> str:
        return f"{self.spec.host_prefix}{host + 1:04d}"

    def graph(self) -> nx.Graph:
        """The cabling as an undirected networkx multigraph-free Graph (parallel cables merged)."""
        import networkx as nx  # here, not at import: it is a third of the twin's start-up

        g = nx.Graph()
        for i, name in enumerate(self.node_name):
            g.add_node(name, kind=int(self.node_kind[i]), plane=int(self.node_plane[i]))
        for c in range(self.n_cables):
            a, b = self.node_name[self.cable_a[c]], self.node_name[self.cable_b[c]]
            if g.has_edge(a, b):
                g[a][b]["gbps"] += float(self.cable_gbps[c])
                g[a][b]["cables"].append(c)
            else:
                g.add_edge(a, b, gbps=float(self.cable_gbps[c]), cables=[c])
        return g

    def validate(self) -> None:
        """Raise TopologyError on a switch in two planes, a NIC port not in exactly one plane,
        or a switch using more ports than its radix."""
        sw = self.node_kind > 0
        for end in (self.cable_a, self.cable_b):
            ends_sw = sw[end]
            if np.any(self.node_plane[end][ends_sw] != self.cable_plane[ends_sw]):
                bad = int(np.flatnonzero(self.node_plane[end][ends_sw] != self.cable_plane[ends_sw])[0])
                raise TopologyError(f"switch {self.node_name[end[ends_sw][bad]]} is cabled into two planes")
        per_ep = np.bincount(self.ep_cable, minlength=self.n_cables)
        if np.any(per_ep[self.cable_tier == 0] != 1):
            raise TopologyError("a NIC port is not in exactly one plane")
        degree = np.bincount(np.concatenate([self.cable_a, self.cable_b]), minlength=self.n_nodes)
        radix = np.where(self.node_kind == 1, self.spec.leaf_radix, self.spec.spine_radix)
        over = np.flatnonzero(sw & (degree > radix))
        if over.size:
            n = int(over[0])
            raise TopologyError(f"{self.node_name[n]} uses {int(degree[n])} ports, radix is {int(radix[n])}")


def build(spec: FabricSpec) -> Fabric:
    """Build the fabric a spec describes (2- or 3-tier per plane), validated."""
    b = _Builder(spec)
    fabric = b.build()
    fabric.validate()
    return fabric


class _Builder:
    def __init__(self, spec: FabricSpec) -> None:
        self.s = spec
        self.names: list[str] = []
        self.kind: list[int] = []
        self.plane: list[int] = []
        self.ports_used: list[int] = []
        self.ca: list[int] = []
        self.cb: list[int] = []
        self.pa: list[str] = []
        self.pb: list[str] = []
        self.gbps: list[float] = []
        self.cplane: list[int] = []
        self.tier: list[int] = []

    def node(self, name: str, kind: int, plane: int) -> int:
        self.names.append(name)
        self.kind.append(kind)
        self.plane.append(plane)
        self.ports_used.append(0)
        return len(self.names) - 1

    def port(self, node: int) -> str:
        self.ports_used[node] += 1
        return f"{self.names[node]}:swp{self.ports_used[node]}"

    def cable(self, a: int, port_a: str, b: int, gbps: float, plane: int, tier: int) -> int:
        self.ca.append(a)
        self.cb.append(b)
        self.pa.append(port_a)
        self.pb.append(self.port(b))
        self.gbps.append(gbps)
        self.cplane.append(plane)
        self.tier.append(tier)
        return len(self.ca) - 1

    def build(self) -> Fabric:
        s = self.s
        hpl = s.hosts_per_leaf or max(1, round(s.leaf_radix * s.oversubscription / (1 + s.oversubscription)))
        leaf_up = max(1, round(hpl * s.host_speed_gbps / s.oversubscription / s.fabric_speed_gbps))
        if hpl + leaf_up > s.leaf_radix:
            raise TopologyError(f"a leaf needs {hpl} host ports + {leaf_up} uplinks > radix {s.leaf_radix}")
        groups = -(-s.hosts // hpl)
        for h in range(s.hosts):
            self.node(f"{s.host_prefix}{h + 1:04d}", 0, -1)
        ep_host, ep_nic, ep_plane, ep_cable, ep_leaf = [], [], [], [], []
        leaf_up_cables: dict[int, np.ndarray] = {}
        self.spines: dict[int, list[int]] = {}
        self.pods: dict[int, Pods] = {}
        self.agg_up: dict[int, np.ndarray] = {}
        for p in range(s.planes):
            leaves = {}
            for g in range(groups):
                for r in range(s.nics_per_host):
                    leaves[g, r] = self.node(f"leaf-p{p}-{g * s.nics_per_host + r + 1:02d}", 1, p)
            for h in range(s.hosts):
                g = h // hpl
                for r in range(s.nics_per_host):
                    leaf = leaves[g, r]
                    ifname = f"eth{r * s.planes + p}"
                    c = self.cable(h, f"{self.names[h]}:{ifname}", leaf, s.host_speed_gbps, p, 0)
                    ep_host.append(h)
                    ep_nic.append(r)
                    ep_plane.append(p)
                    ep_cable.append(c)
                    ep_leaf.append(leaf)
            leaf_list = list(leaves.values())
            if s.tiers == 2:
                self._two_tier(p, leaf_list, leaf_up, leaf_up_cables)
            else:
                self._three_tier(p, leaf_list, leaf_up, leaf_up_cables)
        return Fabric(
            spec=s, node_name=self.names, node_kind=np.array(self.kind), node_plane=np.array(self.plane),
            cable_a=np.array(self.ca), cable_b=np.array(self.cb), cable_port_a=self.pa,
            cable_port_b=self.pb, cable_gbps=np.array(self.gbps, dtype=float),
            cable_plane=np.array(self.cplane), cable_tier=np.array(self.tier),
            ep_host=np.array(ep_host), ep_nic=np.array(ep_nic), ep_plane=np.array(ep_plane),
            ep_cable=np.array(ep_cable), ep_leaf=np.array(ep_leaf),
            leaf_up_cables=leaf_up_cables, agg_up_cables=self.agg_up, pods=self.pods,
            spines=self.spines, hosts_per_leaf=hpl, leaf_uplinks=leaf_up, leaf_groups=groups,
        )

    def _two_tier(self, p: int, leaves: list[int], leaf_up: int, up: dict) -> None:
        spines_n = min(leaf_up, self.s.spine_radix)
        if leaf_up % spines_n:
            raise TopologyError(f"{leaf_up} leaf uplinks cannot spread evenly over {spines_n} spines")
        per = leaf_up // spines_n
        if len(leaves) * per > self.s.spine_radix:
            raise TopologyError(
                f"{len(leaves)} leaves x {per} links exceed the spine radix {self.s.spine_radix}: use tiers = 3")
        spines = [self.node(f"spine-p{p}-{i + 1:02d}", 2, p) for i in range(spines_n)]
        self.spines[p] = spines
        for leaf in leaves:
            cables = [self.cable(leaf, self.port(leaf), sp, self.s.fabric_speed_gbps, p, 1)
                      for sp in spines for _ in range(per)]
            up[leaf] = np.array(cables)

    def _three_tier(self, p: int, leaves: list[int], leaf_up: int, up: dict) -> None:
        s = self.s
        pods = s.pods or max(1, -(-len(leaves) // max(1, s.spine_radix // 2)))
        if len(leaves) % pods:
            raise TopologyError(f"{len(leaves)} leaves do not divide into {pods} pods")
        lpp = len(leaves) // pods
        aggs_per_pod = leaf_up
        agg_up = lpp  # non-blocking at the agg: as many up as down
        if lpp + agg_up > s.spine_radix:
            raise TopologyError(f"an agg needs {lpp} down + {agg_up} up ports > radix {s.spine_radix}")
        cores = [self.node(f"core-p{p}-{i + 1:02d}", 3, p) for i in range(aggs_per_pod * agg_up)]
        pod_aggs = []
        agg_up_cables = {}
        for pod in range(pods):
            aggs = [self.node(f"agg-p{p}-{pod:02d}-{j + 1:02d}", 2, p) for j in range(aggs_per_pod)]
            pod_aggs.append(aggs)
            for leaf in leaves[pod * lpp:(pod + 1) * lpp]:
                up[leaf] = np.array([self.cable(leaf, self.port(leaf), a, s.fabric_speed_gbps, p, 1)
                                     for a in aggs])
            for j, a in enumerate(aggs):
                agg_up_cables[a] = np.array([
                    self.cable(a, self.port(a), cores[j * agg_up + m], s.fabric_speed_gbps, p, 2)
                    for m in range(agg_up)])
        self.pods[p] = Pods(lpp, pod_aggs, cores)
        self.agg_up.update(agg_up_cables)

"""How bytes choose paths: ECMP, oblivious spraying and adaptive routing in the switches, and
plane balancing in the NIC, as a flow-link incidence for `twin.maxmin`.

Directed link `2*c` runs up cable c (host->leaf, leaf->spine/agg, agg->core), `2*c + 1` down.

Modes (per plane: `FabricState.mode[p]`):
- `ecmp`: each flow hashes its 5-tuple (here: flow id and its QP entropy) at every tier to one
  equal-cost next hop, so collisions emerge. Next hops are those alive as of the last
  control-plane convergence; until then a flow hashed onto a dead link carries nothing.
- `spray`: oblivious per-packet spraying, in the fluid limit an even split over the equal-cost
  paths alive as of the last convergence.
- `ar`: adaptive routing: per packet towards the least-loaded equal-cost port. Its fluid limit is
  a split in proportion to each path's capacity, over the paths alive now (a dead local link is
  dropped at once). It does not model reaction to other flows' congestion beyond that.

A flow between two endpoints of one plane takes its host links directly and its fabric part
through a route class shared by every flow with the same (source leaf, destination leaf) pair in
a split mode, or its own path in ECMP. NIC plane balancing splits a transfer over planes before
that: see `twin.workload`.

Each mode is one function of `BALANCERS` (a `Balancer`: the flows of that mode that cross
leaves, in; the links and route classes they load, out). A new mode is one such function and
one line in `BALANCERS`; `MODES` lists the names for the CLI and the scenario files.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from twin.maxmin import Incidence
from twin.topology import Fabric

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def goodput_factor(loss: np.ndarray, window: int) -> np.ndarray:
    """Share of a lossy link's capacity left for new data under RoCE go-back-N: each lost
    packet costs the `window` packets sent after it, (1 - p) / (1 + p * window). Losses of
    1e-3 already cost RoCE 6%, which is why a flapping or dirty optic hurts training."""
    p = np.clip(loss, 0.0, 1.0)
    return (1 - p) / (1 + p * window)


def mix_hash(*keys: np.ndarray) -> np.ndarray:
    """A vectorized 64-bit mix (splitmix64 finalizer) of integer arrays: the switch's hash."""
    h = np.zeros(np.broadcast(*keys).shape, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in keys:
            h = (h ^ np.asarray(k, dtype=np.uint64)) * _GOLDEN
            h ^= h >> np.uint64(31)
            h *= np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(27)
    return h


NIC_MODES = ("hw", "sw")


@dataclass
class FabricState:
    """Per-cable capacity now (0 = down) and as each mechanism last saw it, plus modes.

    Mechanisms react to a link change at different times: adaptive routing at once, the NIC's
    hardware plane balancing once its port is declared down, software (per-QP) plane balancing
    once the QP's transport gives up (`twin.planes`; `simulate`'s `nic_hw_delay_s` and
    `nic_sw_delay_s` override them), ECMP and spraying after the control plane converges.
    """

    fabric: Fabric
    mode: list[str] = field(default_factory=list)  # per plane: a BALANCERS name
    seed: int = 0
    nic_mode: str = "hw"  # hw | sw plane balancing
    gbn_window: int = 64  # packets a RoCE go-back-N sender resends per loss (about a BDP)
    ecmp_switches: set[int] = field(default_factory=set)  # leaves hashing per flow whatever the plane does
    # a trimming transport (UEC): oblivious spraying's packets beyond what a path carries are
    # cut to their headers and sent again, sprayed anew, so each path delivers at most its
    # capacity (`_trimmed_spray`); without it an even split stalls on the slowest path
    spray_trims: bool = False
    # oblivious spraying over this many entropies per flow (htsim's `-paths`), each hashed by
    # the switches to one path, so a flow's split is uneven (`_hashed_spray`); 0: the fluid
    # limit, an even split over every path
    spray_paths: int = 0
    # leaves splitting over their uplinks by fixed weights (one per leaf_up_cables entry)
    weighted_switches: dict[int, np.ndarray] = field(default_factory=dict)
    cable_gbps: np.ndarray = field(init=False)  # current capacity (degraded or 0 when down)
    converged_alive: np.ndarray = field(init=False)  # cable usable for ECMP/spray next hops
    nic_gbps: np.ndarray = field(init=False)  # cable capacity as the NIC's plane balancing knows it
    cable_loss: np.ndarray = field(init=False)  # packet loss probability per cable (a dirty optic)
    # per directed link: the last `route` sprayed more onto it than it carries, so with
    # `spray_trims` its queue stays full (packets trimmed at its tail)
    overflowing: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        if not self.mode:
            self.mode = ["ar"] * self.fabric.spec.planes
        if len(self.mode) != self.fabric.spec.planes:
            raise ValueError(f"{len(self.mode)} balancing modes for {self.fabric.spec.planes} planes")
        for m in self.mode:
            if m not in BALANCERS:
                raise ValueError(f"unknown load balancing mode {m!r}; one of {', '.join(BALANCERS)}")
        if self.nic_mode not in NIC_MODES:
            raise ValueError(f"unknown NIC plane balancing {self.nic_mode!r}; one of hw, sw")
        self.cable_gbps = self.fabric.cable_gbps.astype(float).copy()
        self.cable_loss = np.zeros(self.fabric.n_cables)
        self.converged_alive = self.cable_gbps > 0
        self.nic_gbps = self.cable_gbps.copy()
        self.overflowing = np.zeros(2 * self.fabric.n_cables, dtype=bool)

    def copy(self) -> FabricState:
        """An independent copy of the link states and modes (the fabric itself is shared: it
        is not changed by a simulation)."""
        other = copy.copy(self)
        other.mode = list(self.mode)
        other.ecmp_switches = set(self.ecmp_switches)
        other.weighted_switches = dict(self.weighted_switches)
        for name in ("cable_gbps", "cable_loss", "converged_alive", "nic_gbps", "overflowing"):
            setattr(other, name, getattr(self, name).copy())
        return other

    def converge(self, cables: np.ndarray | None = None) -> None:
        """The control plane has caught up with the current state of `cables` (default: all)."""
        if cables is None:
            self.converged_alive = self.cable_gbps > 0
        else:
            self.converged_alive[cables] = self.cable_gbps[cables] > 0

    def nic_notices(self, cables: np.ndarray | None = None) -> None:
        """The NICs' plane balancing has caught up with the current state of `cables` (default: all)."""
        if cables is None:
            self.nic_gbps = self.cable_gbps.copy()
        else:
            self.nic_gbps[cables] = self.cable_gbps[cables]

    def link_capacity_bps(self) -> np.ndarray:
        """Goodput capacity per directed link: speed times the loss efficiency."""
        return np.repeat(self.cable_gbps * 1e9 * goodput_factor(self.cable_loss, self.gbn_window), 2)


def route_transfers(state: FabricState, src_host: np.ndarray, dst_host: np.ndarray,
                    nic: np.ndarray | None = None, qps: int = 12,
                    entropy: np.ndarray | None = None) -> Incidence:
    """Incidence of host-to-host transfers, each spread by the NIC over the planes.

    NIC `nic[t]` of the source sends to the same NIC index of the destination (rail-aligned).
    Hardware plane balancing splits every transfer over the planes its NIC sees as usable, in
    proportion to the capacity of its two NIC ports there; software balancing pins each of
    `qps` queue pairs to one usable plane by hash, so a transfer's share of a plane is the
    fraction of its QPs there. A transfer is one max-min flow whose incidence mixes its planes:
    a plane that dies under it stalls it until the NIC moves its bytes (as a collective stalls).
    """
    f = state.fabric
    planes = f.spec.planes
    src_host = np.asarray(src_host, dtype=np.int64)
    dst_host = np.asarray(dst_host, dtype=np.int64)
    n = len(src_host)
    nic = np.zeros(n, dtype=np.int64) if nic is None else np.asarray(nic, dtype=np.int64)
    entropy = np.arange(n, dtype=np.int64) if entropy is None else np.asarray(entropy)
    per_plane = f.spec.hosts * f.spec.nics_per_host
    src_ep = (np.arange(planes)[:, None] * per_plane + src_host * f.spec.nics_per_host + nic).ravel()
    dst_ep = (np.arange(planes)[:, None] * per_plane + dst_host * f.spec.nics_per_host + nic).ravel()
    sub = route(state, src_ep, dst_ep, np.tile(entropy, planes))
    # what the NIC knows of each plane: its two port links, as of its last reaction
    port_cap = state.nic_gbps
    cap = np.minimum(port_cap[f.ep_cable[src_ep]], port_cap[f.ep_cable[dst_ep]]).reshape(planes, n)
    cap = np.where(src_ep.reshape(planes, n) == dst_ep.reshape(planes, n), 1.0, cap)
    if state.nic_mode == "hw":
        w = cap
    else:
        usable = cap > 0
        n_ok = usable.sum(axis=0)
        rank = np.cumsum(usable, axis=0) - 1  # each plane's index among the usable ones
        offset = (mix_hash(entropy, np.full(n, state.seed + 1)) % np.uint64(planes)).astype(np.int64)
        counts = np.zeros((planes, n))
        for q in range(qps):  # QPs go round-robin over the usable planes, from a hashed offset
            k = (offset + q) % np.maximum(n_ok, 1)
            counts += usable & (rank == k[None, :])
        stuck = n_ok == 0  # no usable plane: the QPs stay where they were, and stall
        counts[:, stuck] = 1.0
        w = counts
    total = w.sum(axis=0, keepdims=True)
    w = np.divide(w, total, out=np.full_like(w, 1.0 / planes), where=total > 0)
    rows = np.arange(planes * n)
    mixw = sp.csr_matrix((w.ravel(), (rows, np.tile(np.arange(n), planes))), shape=(planes * n, n))
    direct = sub.direct @ mixw
    if sub.routes is None:
        return Incidence(direct)
    return Incidence(direct, sub.routes, mix=sub.mix @ mixw)


def _leaf_rows(fabric: Fabric) -> tuple[dict[int, int], np.ndarray]:
    """Leaf node -> row, and the (leaves x uplinks) matrix of uplink cables."""
    leaves = sorted(fabric.leaf_up_cables)
    index = {leaf: i for i, leaf in enumerate(leaves)}
    width = max(len(fabric.leaf_up_cables[leaf]) for leaf in leaves)
    up = np.full((len(leaves), width), -1, dtype=np.int64)
    for leaf, i in index.items():
        cables = fabric.leaf_up_cables[leaf]
        up[i, : len(cables)] = cables
    return index, up


@dataclass(frozen=True)
class Crossing:
    """The flows of one balancing mode whose source and destination leaves differ: what a
    `Balancer` routes. Per-flow arrays cover every flow of the `route` call; `idx` picks this
    mode's."""

    state: FabricState
    up: np.ndarray  # leaf rows x uplink cables (-1: none), see `_leaf_rows`
    s_leaf: np.ndarray  # per flow: leaf row of the source
    d_leaf: np.ndarray
    entropy: np.ndarray  # per flow: what a hash picks a path by
    clean: np.ndarray  # per flow: its plane has every fabric cable up at speed, converged
    idx: np.ndarray  # positions of this mode's flows


@dataclass
class Part:
    """What a balancer makes of its flows: links each flow loads on its own (`rows` links,
    `cols` flow positions, `vals` shares) and route classes shared by flows (`routes`, links x
    classes, with flow position `mix_cols` taking class `mix_rows` at weight one)."""

    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    cols: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    vals: np.ndarray = field(default_factory=lambda: np.zeros(0))
    routes: list[sp.csr_matrix] = field(default_factory=list)
    mix_rows: list[np.ndarray] = field(default_factory=list)  # class index within its block
    mix_cols: list[np.ndarray] = field(default_factory=list)

    def add_routes(self, routes: sp.csr_matrix, mix_rows: np.ndarray, mix_cols: np.ndarray) -> Part:
        self.routes.append(routes)
        self.mix_rows.append(mix_rows)
        self.mix_cols.append(mix_cols)
        return self


Balancer = Callable[[Crossing], Part]


def route(state: FabricState, src_ep: np.ndarray, dst_ep: np.ndarray,
          entropy: np.ndarray | None = None) -> Incidence:
    """The flow-link incidence of flows from endpoint `src_ep[f]` to `dst_ep[f]` (same plane).

    entropy: per-flow integer that ECMP hashes (a QP number, a UDP source port); defaults to
    the flow index, so distinct flows spread as distinct 5-tuples do. Host links are loaded
    here; the fabric part of flows between leaves is each plane's balancer's (`BALANCERS`).
    """
    f = state.fabric
    src_ep = np.asarray(src_ep, dtype=np.int64)
    dst_ep = np.asarray(dst_ep, dtype=np.int64)
    n = len(src_ep)
    state.overflowing[:] = False  # the balancers mark them anew
    if np.any(f.ep_plane[src_ep] != f.ep_plane[dst_ep]):
        raise ValueError("a flow's endpoints must be in the same plane")
    entropy = np.arange(n, dtype=np.int64) if entropy is None else np.asarray(entropy)
    leaf_index, up = _leaf_rows(f)
    to_row = np.full(f.n_nodes, -1, dtype=np.int64)
    to_row[list(leaf_index)] = list(leaf_index.values())
    s_leaf = to_row[f.ep_leaf[src_ep]]
    d_leaf = to_row[f.ep_leaf[dst_ep]]
    # host links: up at the source, down at the destination (none for a flow to itself)
    own = src_ep != dst_ep
    host = Part(np.concatenate([2 * f.ep_cable[src_ep][own], 2 * f.ep_cable[dst_ep][own] + 1]),
                np.tile(np.flatnonzero(own), 2), np.ones(2 * own.sum()))
    cross = own & (s_leaf != d_leaf)
    plane = f.ep_plane[src_ep]
    modes = np.array([state.mode[p] for p in range(f.spec.planes)])[plane]
    if state.ecmp_switches:  # leaves left in ECMP (misconfigured, adaptive routing off)
        modes = np.where(np.isin(f.ep_leaf[src_ep], list(state.ecmp_switches)), "ecmp", modes)
    if state.weighted_switches:
        modes = np.where(np.isin(f.ep_leaf[src_ep], list(state.weighted_switches)), "weighted", modes)
    clean = _clean_planes(state)[plane]
    parts = [host]
    for name in dict.fromkeys(modes[cross].tolist()):  # modes in first-use order
        idx = np.flatnonzero(cross & (modes == name))
        balancer = weighted if name == "weighted" else BALANCERS[name]
        parts.append(balancer(Crossing(state, up, s_leaf, d_leaf, entropy, clean, idx)))
    return _incidence(parts, f.n_links, n)


def _incidence(parts: list[Part], n_links: int, n: int) -> Incidence:
    """The balancers' parts as one incidence: direct links summed, route blocks side by side."""
    rows = np.concatenate([p.rows for p in parts])
    direct = sp.csr_matrix((np.concatenate([p.vals for p in parts]),
                            (rows, np.concatenate([p.cols for p in parts]))), shape=(n_links, n))
    blocks = [m for p in parts for m in p.routes]
    if not blocks:
        return Incidence(direct)
    mix_rows, offset = [], 0
    for p in parts:
        for m, r in zip(p.routes, p.mix_rows, strict=True):
            mix_rows.append(offset + r)
            offset += m.shape[1]
    r = np.concatenate(mix_rows)
    c = np.concatenate([c for p in parts for c in p.mix_cols])
    mix = sp.csr_matrix((np.ones(len(r)), (r, c)), shape=(offset, n))
    return Incidence(direct, sp.hstack(blocks, format="csr"), mix=mix)


def _clean_planes(state: FabricState) -> np.ndarray:
    """Per plane: every fabric cable up at its nominal speed, now and as last converged."""
    f = state.fabric
    bad = (f.cable_tier > 0) & ((state.cable_gbps != f.cable_gbps) | ~state.converged_alive)
    return np.bincount(f.cable_plane[bad], minlength=f.spec.planes) == 0


def _separable_routes(state: FabricState, up: np.ndarray, s_leaf: np.ndarray, d_leaf: np.ndarray,
                      idx: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """Route classes of split flows in clean planes, where every equal-cost path is alike.

    There spraying and adaptive routing both split evenly, so a flow's fabric load is the sum of
    independent parts: its source leaf's uplinks, its destination leaf's downlinks and, across
    pods of a 3-tier fabric, the source pod's agg->core and the destination pod's core->agg
    links. One class per part (per leaf, per pod) instead of one per leaf pair keeps a random
    permutation on 131K endpoints at two to four classes per flow.
    Returns (routes, mix rows, mix columns) with mix weights 1.
    """
    f = state.fabric
    n_leaf, width = up.shape
    cols_up = np.repeat(np.arange(n_leaf), width)
    ok = up.ravel() >= 0
    per_leaf = np.maximum((up >= 0).sum(axis=1), 1)
    w = (1.0 / per_leaf)[cols_up][ok]
    upm = sp.csr_matrix((w, (2 * up.ravel()[ok], cols_up[ok])), shape=(f.n_links, n_leaf))
    downm = sp.csr_matrix((w, (2 * up.ravel()[ok] + 1, cols_up[ok])), shape=(f.n_links, n_leaf))
    blocks = [upm, downm]
    rows = [s_leaf[idx], n_leaf + d_leaf[idx]]
    cols = [idx, idx]
    if f.spec.tiers == 3:
        lpp = f.pods[0].leaves_per_pod
        n_pod = n_leaf // lpp
        agg_up = f.agg_up_cables
        agg_of_leaf = f.cable_b[up]  # every leaf of a pod reaches the same aggs
        pod_rows, pod_cables = [], []
        for pod in range(n_pod):
            cables = np.concatenate([agg_up[a] for a in agg_of_leaf[pod * lpp]])
            pod_rows.append(np.full(len(cables), pod))
            pod_cables.append(cables)
        pr, pc = np.concatenate(pod_rows), np.concatenate(pod_cables)
        pw = np.full(len(pc), 1.0 / (len(pc) // n_pod))
        blocks += [sp.csr_matrix((pw, (2 * pc, pr)), shape=(f.n_links, n_pod)),
                   sp.csr_matrix((pw, (2 * pc + 1, pr)), shape=(f.n_links, n_pod))]
        inter = idx[(s_leaf[idx] // lpp) != (d_leaf[idx] // lpp)]
        rows += [2 * n_leaf + s_leaf[inter] // lpp, 2 * n_leaf + n_pod + d_leaf[inter] // lpp]
        cols += [inter, inter]
    return sp.hstack(blocks, format="csr"), np.concatenate(rows), np.concatenate(cols)


def _path_cables(state: FabricState, up: np.ndarray, s: np.ndarray, d: np.ndarray):
    """Candidate paths of leaf pairs (s[i], d[i]): cables (pairs x paths x hops) going up then
    down. 2-tier: leaf-spine-leaf over each uplink index; 3-tier: leaf-agg-[core-agg-]leaf."""
    f = state.fabric
    if f.spec.tiers == 2:
        return np.stack([up[s], up[d]], axis=2), np.array([0, 1])
    lpp = f.pods[0].leaves_per_pod
    same_pod = (s // lpp) == (d // lpp)
    agg_up = f.agg_up_cables
    # agg node of (leaf row, uplink j) and its core cables (aggs x m)
    agg_nodes = f.cable_b[up]  # leaf rows x j
    m_width = len(next(iter(agg_up.values())))
    core = np.full((f.n_nodes, m_width), -1, dtype=np.int64)
    for a, cables in agg_up.items():
        core[a] = cables
    j = up.shape[1]
    s_up = np.repeat(up[s][:, :, None], m_width, axis=2)  # pairs x j x m
    d_up = np.repeat(up[d][:, :, None], m_width, axis=2)
    s_core = core[agg_nodes[s]]  # pairs x j x m
    d_core = core[agg_nodes[d]]
    paths = np.stack([s_up, s_core, d_core, d_up], axis=3).reshape(len(s), j * m_width, 4)
    # a pair inside one pod turns at the agg: keep the j distinct two-hop paths, pad the rest
    if same_pod.any():
        two = np.stack([up[s], up[d]], axis=2)  # pairs x j x 2
        pad = np.full((len(s), j * m_width, 4), -1, dtype=np.int64)
        pad[:, :j, 0] = two[:, :, 0]
        pad[:, :j, 3] = two[:, :, 1]
        paths = np.where(same_pod[:, None, None], pad, paths)
    return paths, np.array([0, 0, 1, 1])


def _ecmp_links(state: FabricState, up: np.ndarray, s: np.ndarray, d: np.ndarray,
                entropy: np.ndarray):
    """Per-flow hashed path: rows (links), cols (flow positions), vals (ones)."""
    paths, down = _path_cables(state, up, s, d)
    usable = _path_ok(state.converged_alive, paths)
    n_ok = usable.sum(axis=1)
    h = mix_hash(entropy, s, d, np.full(len(s), state.seed))
    # pick the k-th usable path, k = hash mod count (all paths if none is usable: blackholed)
    k = np.where(n_ok > 0, h % np.maximum(n_ok, 1).astype(np.uint64), h % np.uint64(paths.shape[1]))
    k = k.astype(np.int64)
    order = np.argsort(~usable, axis=1, kind="stable")  # usable paths first, in index order
    chosen = np.where(n_ok > 0, order[np.arange(len(s)), k], k)
    cables = paths[np.arange(len(s)), chosen]  # flows x hops
    ok = cables >= 0
    links = 2 * cables + down[None, :]
    flow = np.repeat(np.arange(len(s))[:, None], cables.shape[1], axis=1)
    return links[ok], flow[ok], np.ones(ok.sum())


def _path_ok(alive: np.ndarray, paths: np.ndarray) -> np.ndarray:
    present = paths >= 0
    hop_ok = np.where(present, alive[np.maximum(paths, 0)], True)
    return present.any(axis=2) & hop_ok.all(axis=2)


AR_ROUNDS = 30


def _balance_ar(w: np.ndarray, usable: np.ndarray, links: np.ndarray, demand: np.ndarray,
                capacity: np.ndarray, n_links: int) -> np.ndarray:
    """Adaptive routing's response to load: multiplicative weight updates that move each pair's
    traffic (`demand`, in flows) towards its paths' least utilized links, as per-packet choices
    of the least-loaded port do in aggregate. w: pairs x paths, rows summing to one."""
    idx = np.where(usable[:, :, None], links, -1)  # pairs x paths x hops
    ok = idx >= 0
    cap = np.where(ok, capacity[np.maximum(idx, 0)], np.inf)
    for _ in range(AR_ROUNDS):
        flow = (w * demand[:, None])[:, :, None] * ok
        load = np.bincount(idx[ok], weights=flow[ok], minlength=n_links)
        util = np.where(ok, load[np.maximum(idx, 0)] / cap, 0.0).max(axis=2)  # per path
        w = w * np.exp(-2.0 * (util - (w * util).sum(axis=1, keepdims=True)) / max(util.max(), 1e-12))
        w = np.where(usable, w, 0.0)
        w /= np.maximum(w.sum(axis=1, keepdims=True), 1e-300)
    return w


def _trimmed_spray(state: FabricState, w: np.ndarray, links: np.ndarray,
                   demand: np.ndarray) -> np.ndarray:
    """What oblivious spraying delivers over each path when packets a port cannot carry are
    trimmed and resent: every sender offers its line rate, split as `w`; a link offered more
    than its capacity delivers the fraction capacity / offered of it, a path the fraction of
    its worst link; resent packets are sprayed as the first ones, so the delivered split is
    `w` times that fraction, renormalized. w: pairs x paths; links: pairs x paths x hops
    (-1: none); demand: flows per pair."""
    ok = links >= 0
    host_bps = state.fabric.spec.host_speed_gbps * 1e9
    offered = np.bincount(links[ok], weights=np.broadcast_to((w * demand[:, None] * host_bps)[:, :, None],
                                                             links.shape)[ok],
                          minlength=state.fabric.n_links)
    cap = state.link_capacity_bps()
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(offered > cap, cap / offered, 1.0)
    state.overflowing |= offered > cap * (1 + 1e-9)
    path = np.where(ok, frac[np.maximum(links, 0)], 1.0).min(axis=2)
    out = w * path
    total = out.sum(axis=1, keepdims=True)
    return np.divide(out, total, out=w.copy(), where=total > 0)


def _split_routes(state: FabricState, up: np.ndarray, pairs: np.ndarray, adaptive: bool,
                  demand: np.ndarray | None = None) -> sp.csr_matrix:
    """Route classes (links x pairs) of the split modes: weights over each pair's paths.

    Spraying splits evenly over the paths of the last convergence. Adaptive routing starts from
    each path's capacity and then balances load across pairs (`_balance_ar`), so traffic to a
    leaf that lost spine links moves off the uplinks it depends on.
    """
    s, d = pairs[:, 0], pairs[:, 1]
    is_ar = np.full(len(s), adaptive)
    paths, down = _path_cables(state, up, s, d)
    present = paths >= 0
    cap_now = state.cable_gbps[np.maximum(paths, 0)]
    path_cap = np.where(present, cap_now, np.inf).min(axis=2)
    path_cap = np.where(present.any(axis=2), path_cap, 0.0)
    converged = _path_ok(state.converged_alive, paths)
    # spray: even over the paths of the last convergence; ar: by capacity over paths alive now
    w = np.where(is_ar[:, None], path_cap, converged.astype(float))
    total = w.sum(axis=1, keepdims=True)
    w = np.divide(w, total, out=np.zeros_like(w), where=total > 0)
    # a pair with no usable path keeps an even split (its flows stall on dead links)
    none = total[:, 0] <= 0
    if none.any():
        w[none] = present.any(axis=2)[none] / np.maximum(present.any(axis=2)[none].sum(1, keepdims=True), 1)
    links = 2 * paths + down[None, None, :]
    if not adaptive and state.spray_trims and demand is not None:
        w = _trimmed_spray(state, w, np.where(present, links, -1), demand)
    ar = is_ar & ~none
    if demand is not None and ar.any():
        cap = state.link_capacity_bps()
        w[ar] = _balance_ar(w[ar], (path_cap > 0)[ar], np.where(present, links, -1)[ar], demand[ar],
                            cap, state.fabric.n_links)
    weight = np.repeat(w[:, :, None], paths.shape[2], axis=2)
    col = np.broadcast_to(np.arange(len(s))[:, None, None], paths.shape)
    keep = present & (weight > 0)
    m = sp.csr_matrix((weight[keep], (links[keep], col[keep])),
                      shape=(state.fabric.n_links, len(s)))
    m.sum_duplicates()  # paths sharing a link (the leaf uplink of 3-tier paths) add up
    return m


def _split(c: Crossing, adaptive: bool) -> Part:
    """Spraying or adaptive routing: in clean planes, per-leaf and per-pod classes
    (`_separable_routes`); elsewhere one class per (source leaf, destination leaf) pair."""
    part = Part()
    sep, pair = c.idx[c.clean[c.idx]], c.idx[~c.clean[c.idx]]
    if sep.size:
        part.add_routes(*_separable_routes(c.state, c.up, c.s_leaf, c.d_leaf, sep))
    if pair.size:
        pairs, inverse = np.unique(np.stack([c.s_leaf[pair], c.d_leaf[pair]], 1), axis=0,
                                   return_inverse=True)
        demand = np.bincount(inverse.ravel(), minlength=len(pairs)).astype(float)
        part.add_routes(_split_routes(c.state, c.up, pairs, adaptive, demand), inverse.ravel(), pair)
    return part


def ecmp(c: Crossing) -> Part:
    """ECMP: each flow on one hashed path of the last convergence."""
    rows, cols, vals = _ecmp_links(c.state, c.up, c.s_leaf[c.idx], c.d_leaf[c.idx], c.entropy[c.idx])
    return Part(rows, c.idx[cols], vals)


def spray(c: Crossing) -> Part:
    """Oblivious per-packet spraying: an even split over the paths of the last convergence, or
    over `spray_paths` hashed entropies per flow."""
    if c.state.spray_paths > 0:
        return _hashed_spray(c)
    return _split(c, adaptive=False)


def _hashed_spray(c: Crossing) -> Part:
    """Oblivious spraying as a UEC sender does it: its packets cycle evenly over
    `spray_paths` entropy values and the switches hash each (flow, entropy) to one equal-cost
    path (htsim's `-paths 64`: freeBSDHash(flow, path id) mod the next hops at every tier). So
    a flow loads its paths as the hash falls, in multiples of 1/N (with 64 entropies over 8
    uplinks each one carries 8 +- 2.6 of them), not evenly, and a link can be offered more than
    it carries: trimmed there (`_trimmed_spray`), its queue full. Per-flow links, no classes."""
    state = c.state
    w, links = _entropy_split(state, c.up, c.s_leaf[c.idx], c.d_leaf[c.idx], c.entropy[c.idx])
    present = links >= 0
    if state.spray_trims:
        before = state.overflowing.copy()
        w = _trimmed_spray(state, w, links, np.ones(len(w)))
        # a slowed port (htsim's `-failed`: offered 4x) trims all along, its queue full; a port
        # the hash offers up to a third more is held under by the windows reacting to its delay
        slowed = np.repeat(state.cable_gbps < state.fabric.cable_gbps, 2)
        state.overflowing[:] = before | (state.overflowing & slowed)
    weight = np.broadcast_to(w[:, :, None], links.shape)
    keep = present & (weight > 0)
    flow = np.broadcast_to(np.arange(len(w))[:, None, None], links.shape)
    return Part(links[keep], c.idx[flow[keep]], weight[keep])


def _entropy_split(state: FabricState, up: np.ndarray, s: np.ndarray, d: np.ndarray,
                   entropy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each flow's share per candidate path from its `spray_paths` hashed entropies (flows x
    paths, multiples of 1/N) and the paths' directed links (flows x paths x hops, -1: none),
    for flows between leaf rows s and d."""
    paths, down = _path_cables(state, up, s, d)
    usable = _path_ok(state.converged_alive, paths)
    n_ok = usable.sum(axis=1)
    n_ev = state.spray_paths
    ev = np.arange(n_ev, dtype=np.uint64)[None, :]
    h = mix_hash(entropy[:, None], ev, np.full((1, 1), state.seed + 7, np.uint64))
    width = np.where(n_ok > 0, n_ok, paths.shape[1]).astype(np.uint64)
    k = (h % width[:, None]).astype(np.int64)  # flows x entropies: the k-th usable path
    order = np.argsort(~usable, axis=1, kind="stable")  # usable paths first (all if none is)
    chosen = np.take_along_axis(order, k, axis=1)
    w = np.zeros(paths.shape[:2])
    np.add.at(w, (np.repeat(np.arange(len(s)), n_ev), chosen.ravel()), 1.0 / n_ev)
    return w, np.where(paths >= 0, 2 * paths + down[None, None, :], -1)


def sprayed_paths(state: FabricState, src_ep: np.ndarray, dst_ep: np.ndarray,
                  entropy: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The paths hashed oblivious spraying (`_hashed_spray`) sends each flow's packets on,
    before any trimming: per flow its share per path (flows x paths) and each path's directed
    links from the sender's NIC to the receiver's (flows x paths x hops, -1: none; a flow within
    one leaf has one path, its two host links). For models that follow packets path by path
    (`twin.nscc_paths`)."""
    f = state.fabric
    src_ep, dst_ep = np.asarray(src_ep, np.int64), np.asarray(dst_ep, np.int64)
    n = len(src_ep)
    entropy = np.arange(n, dtype=np.int64) if entropy is None else np.asarray(entropy)
    leaf_index, up = _leaf_rows(f)
    to_row = np.full(f.n_nodes, -1, dtype=np.int64)
    to_row[list(leaf_index)] = list(leaf_index.values())
    s_leaf, d_leaf = to_row[f.ep_leaf[src_ep]], to_row[f.ep_leaf[dst_ep]]
    w_x, mid = _entropy_split(state, up, s_leaf, d_leaf, entropy)
    n_paths, n_mid = mid.shape[1], mid.shape[2]
    links = np.full((n, n_paths, n_mid + 2), -1, np.int64)
    w = np.zeros((n, n_paths))
    cross = s_leaf != d_leaf
    links[cross, :, 1:-1] = mid[cross]
    w[cross] = w_x[cross]
    w[~cross, 0] = 1.0
    own = src_ep != dst_ep
    carried = own[:, None] & (w > 0)
    links[:, :, 0] = np.where(carried, 2 * f.ep_cable[src_ep][:, None], -1)
    links[:, :, -1] = np.where(carried, 2 * f.ep_cable[dst_ep][:, None] + 1, -1)
    return w, links


def ar(c: Crossing) -> Part:
    """Adaptive routing: by capacity over the paths alive now, then balanced on load."""
    return _split(c, adaptive=True)


def weighted(c: Crossing) -> Part:
    """A leaf splitting its flows over its uplinks by fixed weights (`weighted_switches`: a
    misconfigured weighted ECMP or adaptive-routing port weights), over the paths alive now;
    each uplink's share is spread evenly over the paths above it."""
    state = c.state
    f = state.fabric
    s, d = c.s_leaf[c.idx], c.d_leaf[c.idx]
    paths, down = _path_cables(state, c.up, s, d)
    usable = _path_ok(state.cable_gbps > 0, paths)
    leaves = sorted(f.leaf_up_cables)
    weights = np.zeros(c.up.shape)
    for node, w in state.weighted_switches.items():
        weights[leaves.index(node), : len(w)] = w
    # the uplink (position in c.up's row) each path leaves by
    j = np.argmax(paths[:, :, :1] == c.up[s][:, None, :], axis=2)
    onehot = (j[:, :, None] == np.arange(c.up.shape[1])) & usable[:, :, None]
    per_uplink = np.take_along_axis(onehot.sum(axis=1), j, axis=1)  # usable paths on each one
    w = np.where(usable, weights[s[:, None], j] / np.maximum(per_uplink, 1), 0.0)
    w /= np.maximum(w.sum(axis=1, keepdims=True), 1e-300)
    present = (paths >= 0) & (w[:, :, None] > 0)
    links = 2 * paths + down[None, None, :]
    flow = np.broadcast_to(np.arange(len(s))[:, None, None], paths.shape)
    vals = np.broadcast_to(w[:, :, None], paths.shape)
    return Part(links[present], c.idx[flow[present]], vals[present])


# the load balancing modes, by the name scenarios and the CLI use; a new mode is one line here
BALANCERS: dict[str, Balancer] = {"ecmp": ecmp, "spray": spray, "ar": ar}
MODES = tuple(BALANCERS)

"""Max-min fair rates by progressive filling, vectorized over a sparse flow-link incidence.

Model: flow f puts `a[l, f] * rate[f]` on link l (a is 1 on a single path, a fraction when the
flow is split over several paths, as spraying and adaptive routing do in the fluid limit). The
max-min fair allocation raises every unfrozen flow's rate at the same pace until some link
saturates (or a flow reaches its own cap), freezes the flows crossing that link, and repeats.

The incidence is given in factored form so that sprayed traffic stays small at scale:

    A = direct + routes @ onehot(flow_route)

`direct` (links x flows) holds per-flow links (the NIC port links), `routes` (links x R) the
fabric part shared by every flow of one route class (same source and destination leaf, same
balancing mode), and `flow_route[f]` the class of flow f (-1 for none). A 131K-endpoint ring
step then needs a few entries per flow plus one column per leaf pair, not one per path.

Complexity: each round is O(nnz(direct) + nnz(routes) + flows); the number of rounds is the
number of distinct bottleneck levels (1 for a symmetric fabric, a handful for ECMP collisions).

>>> import numpy as np, scipy.sparse as sp
>>> A = sp.csr_matrix(np.array([[1, 1, 0], [0, 1, 1]], dtype=float))  # 2 links, 3 flows
>>> max_min_rates(Incidence(A), np.array([1.0, 2.0])).round(3).tolist()
[0.5, 0.5, 1.5]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import scipy.sparse as sp

REL_EPS = 1e-9


class Victims(Protocol):
    """PFC's head-of-line blocking as `max_min_rates` asks it (`twin.hol.HolBlocking`)."""

    def victims(self, held: np.ndarray, saturated: np.ndarray, live: np.ndarray) -> np.ndarray:
        """Live flows (not in `held`) blocked behind the flows `held` at links `saturated`."""
        ...


@dataclass
class Incidence:
    """Flow-link incidence `direct + routes @ mix` (see module docstring).

    `mix` (route classes x flows) says how much of each flow follows each route class: one-hot
    for a flow in one class (give `flow_route` instead), fractions for a flow split over
    classes (a NIC spreading a transfer over planes).
    """

    direct: sp.csr_matrix  # links x flows
    routes: sp.csr_matrix | None = None  # links x route classes
    flow_route: np.ndarray | None = None  # int per flow, -1 when the flow has no route class
    mix: sp.csr_matrix | None = None  # route classes x flows; built from flow_route if absent

    def __post_init__(self) -> None:
        self.direct = sp.csr_matrix(self.direct)
        self._direct_t = self.direct.T.tocsr()
        if self.routes is not None:
            self.routes = sp.csr_matrix(self.routes)
            self._routes_t = self.routes.T.tocsr()
            if self.mix is None:
                fr = np.asarray(self.flow_route, dtype=np.int64)
                has = np.flatnonzero(fr >= 0)
                self.mix = sp.csr_matrix((np.ones(len(has)), (fr[has], has)),
                                         shape=(self.routes.shape[1], len(fr)))
            self.mix = sp.csr_matrix(self.mix)
            self._mix_t = self.mix.T.tocsr()

    @property
    def n_links(self) -> int:
        return self.direct.shape[0]

    @property
    def n_flows(self) -> int:
        return self.direct.shape[1]

    def link_load(self, per_flow: np.ndarray) -> np.ndarray:
        """Per-link sum of a[l, f] * per_flow[f]."""
        out = self.direct @ per_flow
        if self.routes is not None:
            out = out + self.routes @ (self.mix @ per_flow)
        return out

    def hops(self) -> np.ndarray:
        """Links each flow crosses (a split flow: the mean over its paths, weights summing to
        one per hop)."""
        out = np.asarray(self.direct.sum(axis=0)).ravel()
        if self.routes is not None:
            per_route = np.asarray(self.routes.sum(axis=0)).ravel()
            out = out + self._mix_t @ per_route
        return out

    def path_sum(self, per_link: np.ndarray) -> np.ndarray:
        """Per flow, the sum over its links of a[l, f] * per_link[l] (a path's total delay)."""
        out = self._direct_t @ per_link
        if self.routes is not None:
            out = out + self._mix_t @ (self._routes_t @ per_link)
        return np.asarray(out)

    def flows_of_links(self, links: np.ndarray) -> np.ndarray:
        """Indices of the flows putting load on any of `links` (unique, sorted)."""
        parts = [_gather(self.direct, links)[0]]
        if self.routes is not None:
            classes = np.unique(_gather(self.routes, links)[0])
            if classes.size:
                parts.append(_gather(self.mix, classes)[0])
        return np.unique(np.concatenate(parts)) if parts else np.empty(0, np.int64)

    def load_of_flows(self, flows: np.ndarray) -> np.ndarray:
        """Per-link load of the given flows at unit rate (dense, links long)."""
        if not hasattr(self, "_direct_c"):
            self._direct_c = self.direct.tocsc()
            if self.routes is not None:
                self._routes_c = self.routes.tocsc()
                self._mix_c = self.mix.tocsc()
        idx, val, _ = _gather(self._direct_c, flows)
        out = np.bincount(idx, weights=val, minlength=self.n_links)
        if self.routes is not None:
            m_idx, m_val, _ = _gather(self._mix_c, flows)
            if m_idx.size:
                per_class = np.bincount(m_idx, weights=m_val, minlength=self.routes.shape[1])
                classes = np.flatnonzero(per_class)
                r_idx, r_val, r_len = _gather(self._routes_c, classes)
                out = out + np.bincount(r_idx, weights=r_val * np.repeat(per_class[classes], r_len),
                                        minlength=self.n_links)
        return out

    def explicit(self) -> sp.csr_matrix:
        """The whole incidence as one links x flows matrix (built once: an incidence is not
        changed after it is made)."""
        if self.routes is None:
            return self.direct
        if not hasattr(self, "_explicit"):
            self._explicit = (self.direct + self.routes @ self.mix).tocsr()
        return self._explicit

    def explicit_csc(self) -> sp.csc_matrix:
        """`explicit()` in CSC form (built once), for gathering flows' columns."""
        if not hasattr(self, "_explicit_csc"):
            self._explicit_csc = sp.csc_matrix(self.explicit())
            self._explicit_csc.sum_duplicates()
        return self._explicit_csc

    def flows_touching(self, link_mask: np.ndarray) -> np.ndarray:
        """Boolean per flow: does the flow put load on any link of `link_mask`?"""
        x = link_mask.astype(np.float64)
        hit = self._direct_t @ x
        if self.routes is not None:
            hit = hit + self._mix_t @ (self._routes_t @ x)
        return hit > 0


def _gather(m: sp.csr_matrix | sp.csc_matrix, major: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stored entries of rows (CSR) or columns (CSC) `major`: their minor indices, values
    and the count per selected row. Plain numpy on indptr: scipy's fancy indexing builds a
    matrix each time, which dominated the progressive filling's rounds."""
    major = np.asarray(major, dtype=np.int64)
    starts = m.indptr[major]
    lens = m.indptr[major + 1] - starts
    total = int(lens.sum())
    if total == 0:
        return np.empty(0, np.int64), np.empty(0), lens
    offsets = np.repeat(starts - np.cumsum(lens) + lens, lens) + np.arange(total)
    return m.indices[offsets], m.data[offsets], lens


def max_min_rates(
    inc: Incidence,
    capacity: np.ndarray,
    flow_cap: np.ndarray | None = None,
    active: np.ndarray | None = None,
    coupled: np.ndarray | None = None,
    hol: Victims | None = None,
) -> np.ndarray:
    """Max-min fair rate of every flow.

    capacity: per link (0 for a dead link: the flows crossing it get rate 0).
    flow_cap: optional per-flow ceiling (a NIC's line rate, an application's demand).
    active: optional mask; inactive flows get rate 0 and take no capacity.
    coupled: optional group per flow (-1: none); a flow that freezes freezes its whole group
    at its level. Lossless RoCE: a NIC paused by PFC serves its queue pairs round robin, so
    every flow it sends goes at the pace of the one held back (head-of-line blocking).
    hol: optional PFC head-of-line blocking (`twin.hol.HolBlocking`): the flows a saturated
    link holds back pause the links before their first bottleneck, and every flow through a
    paused link is held at their level (a lossless switch's FIFO serves its ingress ports
    alike).
    A flow that crosses no link and has no cap is unbounded: its rate is `inf`.

    Progressive filling with incremental bookkeeping: every live flow sits at the same level,
    so a round costs O(links still loaded + entries of the flows it freezes), not O(nnz).
    """
    n = inc.n_flows
    rates = np.zeros(n)
    live = np.ones(n, dtype=bool) if active is None else np.asarray(active, dtype=bool).copy()
    capacity = np.asarray(capacity, dtype=np.float64)
    residual = capacity.copy()
    scale = max(float(residual.max(initial=0.0)), 1.0)
    cap = np.full(n, np.inf) if flow_cap is None else np.asarray(flow_cap, dtype=np.float64)
    coef = inc.link_load(live.astype(np.float64))
    # flows on a dead link are stuck at zero from the start
    dead = (residual <= REL_EPS * scale) & (coef > REL_EPS)
    if dead.any():
        stuck = inc.flows_of_links(np.flatnonzero(dead))
        stuck = stuck[live[stuck]]
        live[stuck] = False
        coef -= inc.load_of_flows(stuck)
    used = np.flatnonzero(coef > REL_EPS)
    cap_order = np.argsort(cap, kind="stable")
    cap_order = cap_order[live[cap_order] & np.isfinite(cap[cap_order])]
    cap_ptr = 0
    level = 0.0
    tol = REL_EPS * np.maximum(capacity, scale * REL_EPS)
    if coupled is not None:  # a lookup table per group instead of np.isin every round
        group_of = np.where(coupled >= 0, coupled, -1)
        group_held = np.zeros(int(group_of.max(initial=0)) + 2, dtype=bool)  # [-1]: no group
    while live.any():
        while cap_ptr < len(cap_order) and not live[cap_order[cap_ptr]]:
            cap_ptr += 1
        step_caps = cap[cap_order[cap_ptr]] - level if cap_ptr < len(cap_order) else np.inf
        step_links = (residual[used] / coef[used]).min() if used.size else np.inf
        step = min(step_links, step_caps)
        if not np.isfinite(step):
            rates[live] = np.inf
            break
        step = max(step, 0.0)
        level += step
        residual[used] -= step * coef[used]
        saturated = used[residual[used] <= tol[used]]
        frozen = inc.flows_of_links(saturated) if saturated.size else np.empty(0, np.int64)
        frozen = frozen[live[frozen]]  # unique and sorted already (flows_of_links)
        capped = []
        while cap_ptr < len(cap_order) and cap[cap_order[cap_ptr]] <= level * (1 + REL_EPS):
            f = cap_order[cap_ptr]
            if live[f]:
                capped.append(f)
            cap_ptr += 1
        if hol is not None and frozen.size:
            victims = hol.victims(frozen, saturated, live)
            if victims.size:
                frozen = np.union1d(frozen, victims)
        if capped:
            frozen = np.unique(np.concatenate([frozen, capped]))
        if coupled is not None and frozen.size:
            held = coupled[frozen]
            held = held[held >= 0]
            if held.size:
                group_held[held] = True
                # a mask, not union1d: the rounds of a coupled filling are many and small
                mask = live & group_held[group_of]
                mask[frozen] = True
                frozen = np.flatnonzero(mask)
        rates[frozen] = level
        live[frozen] = False
        if frozen.size:
            coef -= inc.load_of_flows(frozen)
            used = used[coef[used] > REL_EPS]
    return rates


@dataclass
class IngressGroups:
    """The flows of each (ingress link, egress link) pair of a switch, for the flows that take
    one path (weight 1 on each of their links): `incidence` is groups x flows, `egress` the
    egress link of each group. A flow's first link (its NIC's) has no ingress: no group."""

    incidence: sp.csr_matrix
    egress: np.ndarray
    ingress: np.ndarray | None = None  # the ingress link of each group (as `of` builds them)

    def csc(self) -> sp.csc_matrix:
        """`incidence` in CSC form (built once), for gathering flows' columns."""
        if not hasattr(self, "_csc"):
            self._csc = self.incidence.tocsc()
        return self._csc

    @classmethod
    def of(cls, inc: Incidence, link_pos: np.ndarray,
           egress_mask: np.ndarray | None = None) -> IngressGroups:
        """Groups from the links of each single-path flow, in path order (`link_pos`); with
        `egress_mask`, only the groups of those egress links."""
        a = inc.explicit().tocsc()
        a.sum_duplicates()
        n_links, n = a.shape
        cols = np.repeat(np.arange(n), np.diff(a.indptr))
        # split flows (fractional weights on some link) stay out: no one ingress per hop
        split = np.bincount(cols, weights=np.abs(a.data - 1.0) > 1e-9, minlength=n) > 0
        keep = ~split[cols]
        rows, cols = a.indices[keep], cols[keep]
        order = np.lexsort((link_pos[rows], cols))
        rows, cols = rows[order], cols[order]
        nxt = np.flatnonzero(cols[1:] == cols[:-1]) + 1  # every link after a flow's first
        if egress_mask is not None:
            nxt = nxt[egress_mask[rows[nxt]]]
        key = rows[nxt - 1].astype(np.int64) * n_links + rows[nxt]
        uniq, inverse = np.unique(key, return_inverse=True)
        m = sp.csr_matrix((np.ones(len(nxt)), (inverse.ravel(), cols[nxt])), shape=(len(uniq), n))
        return cls(m, uniq % n_links, uniq // n_links)


def port_fair_rates(inc: Incidence, capacity: np.ndarray, groups: IngressGroups,
                    active: np.ndarray, fair: np.ndarray | None = None, rounds: int = 6,
                    coupled: np.ndarray | None = None) -> np.ndarray:
    """Max-min rates where every congested egress port first shares its capacity equally among
    the ingress ports that feed it, then among the flows of each ingress.

    This is a lossless (PFC) switch: when an egress queue backs up, the switch pauses its
    ingress ports and serves them round robin, so an ingress carrying one flow gets as much as
    one carrying three together. Each group (ingress, egress) is a virtual link of capacity
    C_e / (groups active at e); capacity a group leaves unused (its flows are held back
    elsewhere) is handed to the groups that want more, water-filling, for a few rounds.
    `coupled` as in `max_min_rates` (NIC head-of-line blocking), in the refill too.
    Only egress ports that per-flow max-min (`fair`, computed when not given) saturates and
    whose ingress ports carry unequal numbers of flows can differ; if there are none, `fair`
    is the answer, which keeps runs of many events cheap.
    """
    n_links = inc.n_links
    if fair is None:
        fair = max_min_rates(inc, capacity, active=active, coupled=coupled)
    flows_per_group = groups.incidence @ active.astype(float)
    live = flows_per_group > 0
    load = inc.link_load(np.where(np.isfinite(fair), fair, 0.0))
    saturated = load >= capacity * (1 - 1e-6)
    most = np.zeros(n_links)
    np.maximum.at(most, groups.egress[live], flows_per_group[live])
    least = np.full(n_links, np.inf)
    np.minimum.at(least, groups.egress[live], flows_per_group[live])
    uneven = saturated & (most > least)
    sel = live & uneven[groups.egress]
    if not sel.any():
        return fair
    sub = groups.incidence[np.flatnonzero(sel)]
    egress = groups.egress[sel]
    egress_cap = capacity[egress]
    k = np.bincount(egress, minlength=n_links)[egress]
    vcap = egress_cap / k
    # only the flows through those ports are refilled, in what the others leave at their
    # per-flow rates (as `twin.engine` does after departures): the refill stays small
    moved = np.zeros(inc.n_flows, dtype=bool)
    moved[sub.indices] = True
    if coupled is not None:  # a NIC's flows move together: they keep one pace
        mates = coupled[moved & (coupled >= 0)]
        moved |= np.isin(coupled, mates) & (coupled >= 0)
    moved &= active
    kept = np.where(active & ~moved & np.isfinite(fair), fair, 0.0)
    capacity = np.maximum(capacity - inc.link_load(kept), 0.0)
    egress_cap = capacity[egress]
    cols = np.flatnonzero(moved)
    # the moved flows' links and their (ingress, egress) groups as one incidence, gathered
    # from cached CSC copies: scipy's column indexing of the CSR matrices was a third of a
    # lossless run with staggered arrivals
    group_row = np.full(groups.incidence.shape[0], -1, np.int64)
    group_row[np.flatnonzero(sel)] = np.arange(int(sel.sum())) + n_links
    l_idx, l_val, l_len = _gather(inc.explicit_csc(), cols)
    g_idx, g_val, g_len = _gather(groups.csc(), cols)
    g_row = group_row[g_idx]
    keep_g = g_row >= 0
    local = np.arange(len(cols))
    both = Incidence(sp.csr_matrix(
        (np.concatenate([l_val, g_val[keep_g]]),
         (np.concatenate([l_idx, g_row[keep_g]]),
          np.concatenate([np.repeat(local, l_len), np.repeat(local, g_len)[keep_g]]))),
        shape=(n_links + int(sel.sum()), len(cols))))

    def refill(vcap: np.ndarray) -> np.ndarray:
        out = np.where(active, fair, 0.0)
        out[cols] = max_min_rates(both, np.concatenate([capacity, vcap]),
                                  coupled=None if coupled is None else coupled[cols])
        return out

    rates = refill(vcap)
    for _ in range(rounds - 1):
        use = sub @ np.where(np.isfinite(rates), rates, 0.0)
        held = use >= vcap * (1 - 1e-6)  # groups their share holds back
        spare = np.bincount(egress[~held], weights=use[~held], minlength=n_links)
        n_held = np.bincount(egress[held], minlength=n_links)
        share = (capacity - spare) / np.maximum(n_held, 1)
        new = np.minimum(np.maximum(share[egress], vcap), egress_cap)
        if np.allclose(new, vcap, rtol=1e-6):
            break
        vcap = new
        rates = refill(vcap)
    return rates


def paused_port_fair(inc: Incidence, capacity: np.ndarray, rates: np.ndarray,
                     host: IngressGroups, tiers: list[IngressGroups], active: np.ndarray,
                     held_at: np.ndarray, coupled: np.ndarray | None = None) -> np.ndarray:
    """`port_fair_rates` again with the switch ports above a congested host port, tier by
    tier from the host down: a lossless port that PFC pauses (every flow it carries held by a
    saturated host port, so it carries less than its speed) backs its queue up, pauses its
    own ingress ports in turn and serves them round robin at the pace it is let through.

    htsim's incasts over ECMP show it (a 32-to-1 on the 2-tier fabric): the flows of one
    source ToR hashed to one spine finish together, at levels set by how many source ToRs
    that spine's port towards the receiver serves, not by its flow count. `rates` and
    `capacity` in bits/s; `host` the host ports' ingress groups, `tiers` those of each down
    tier's egress ports, nearest the hosts first; `held_at`: the host ports."""
    a = inc.explicit()
    inc_g, egress = [host.incidence], [host.egress]
    ports = np.zeros(inc.n_links, bool)  # the paused tiers' egress ports so far
    for groups in tiers:
        use = np.where(np.isfinite(rates), rates, 0.0)
        load = inc.link_load(use)
        sat = (load >= capacity * (1 - 1e-6)) & held_at
        held = (a.T @ sat.astype(float)) > 0  # flows through a saturated host port
        free = a @ (active & ~held).astype(float)  # flows a port carries that nothing holds
        paused = (load < capacity * (1 - 1e-6)) & (load > 0) & (free == 0)
        # only a paused port whose ingress ports carry unequal numbers of flows shares
        # otherwise than per flow: skip the refill (most events of a staggered run) if none
        per_group = groups.incidence @ active.astype(float)
        live = (per_group > 0) & paused[groups.egress]
        most = np.zeros(inc.n_links)
        np.maximum.at(most, groups.egress[live], per_group[live])
        least = np.full(inc.n_links, np.inf)
        np.minimum.at(least, groups.egress[live], per_group[live])
        if not (most > least).any():
            continue
        ports[groups.egress] = True
        inc_g.append(groups.incidence)
        egress.append(groups.egress)
        both = IngressGroups(sp.vstack(inc_g).tocsr(), np.concatenate(egress))
        # a paused port runs at the pace it is let through: its load is its capacity now
        rates = port_fair_rates(inc, np.where(paused & ports, load, capacity), both, active,
                                fair=rates, coupled=coupled)
    return rates


def down_tiers(inc: Incidence, link_pos: np.ndarray) -> list[IngressGroups]:
    """The ingress groups of the ports on the way down to a host above its ToR's port
    (spine -> ToR; core -> aggregation and aggregation -> ToR on 3 tiers), nearest the hosts
    first: where `paused_port_fair` looks (the upward ports carry one flow per sending host
    in an incast)."""
    top = int(link_pos.max())
    return [IngressGroups.of(inc, link_pos, link_pos == pos) for pos in range(top - 1, top // 2, -1)]


def refill_after_departures(inc: Incidence, cap: np.ndarray, active: np.ndarray,
                            rates: np.ndarray, departed: float,
                            coupled: np.ndarray | None = None, hol: Victims | None = None,
                            flow_cap: np.ndarray | None = None) -> np.ndarray:
    """Max-min rates after flows of rate >= `departed` (bytes/s) left, nothing else changing.

    Progressive filling reaches every level below `departed` without the departed flows (they
    were still rising there and crossed no link that saturated), so the flows slower than them
    keep their rates; only the others are refilled, in the capacity the slow ones leave.
    This is what makes ECMP runs, with their many completion times, cheap. A flow at its own
    ceiling (`flow_cap`, bits/s) below `departed` stays there too.
    """
    keep = active & (rates < departed * (1 - 1e-9))
    if not keep.any():
        return max_min_rates(inc, cap, flow_cap, active=active, coupled=coupled, hol=hol) / 8.0
    redo = active & ~keep
    if not redo.any():
        return np.where(keep, rates, 0.0)
    left = np.maximum(cap - inc.link_load(np.where(keep, rates, 0.0)) * 8.0, 0.0)
    new = max_min_rates(inc, left, flow_cap, active=redo, coupled=coupled, hol=hol) / 8.0
    return np.where(keep, rates, new)

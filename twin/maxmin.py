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

import numpy as np
import scipy.sparse as sp

REL_EPS = 1e-9


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

    def flows_of_links(self, links: np.ndarray) -> np.ndarray:
        """Indices of the flows putting load on any of `links` (unique, sorted)."""
        parts = [self.direct[links].indices]
        if self.routes is not None:
            classes = np.unique(self.routes[links].indices)
            if classes.size:
                parts.append(self.mix[classes].indices)
        return np.unique(np.concatenate(parts)) if parts else np.empty(0, np.int64)

    def load_of_flows(self, flows: np.ndarray) -> np.ndarray:
        """Per-link load of the given flows at unit rate (dense, links long)."""
        if not hasattr(self, "_direct_c"):
            self._direct_c = self.direct.tocsc()
            if self.routes is not None:
                self._routes_c = self.routes.tocsc()
                self._mix_c = self.mix.tocsc()
        out = np.zeros(self.n_links)
        sub = self._direct_c[:, flows]
        np.add.at(out, sub.indices, sub.data)
        if self.routes is not None:
            m = self._mix_c[:, flows]
            if m.nnz:
                per_class = np.bincount(m.indices, weights=m.data, minlength=self.routes.shape[1])
                classes = np.flatnonzero(per_class)
                r = self._routes_c[:, classes]
                np.add.at(out, r.indices, r.data * np.repeat(per_class[classes], np.diff(r.indptr)))
        return out

    def flows_touching(self, link_mask: np.ndarray) -> np.ndarray:
        """Boolean per flow: does the flow put load on any link of `link_mask`?"""
        x = link_mask.astype(np.float64)
        hit = self._direct_t @ x
        if self.routes is not None:
            hit = hit + self._mix_t @ (self._routes_t @ x)
        return hit > 0


def max_min_rates(
    inc: Incidence,
    capacity: np.ndarray,
    flow_cap: np.ndarray | None = None,
    active: np.ndarray | None = None,
) -> np.ndarray:
    """Max-min fair rate of every flow.

    capacity: per link (0 for a dead link: the flows crossing it get rate 0).
    flow_cap: optional per-flow ceiling (a NIC's line rate, an application's demand).
    active: optional mask; inactive flows get rate 0 and take no capacity.
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
        frozen = frozen[live[frozen]]
        while cap_ptr < len(cap_order) and cap[cap_order[cap_ptr]] <= level * (1 + REL_EPS):
            f = cap_order[cap_ptr]
            if live[f]:
                frozen = np.append(frozen, f)
            cap_ptr += 1
        frozen = np.unique(frozen)
        rates[frozen] = level
        live[frozen] = False
        if frozen.size:
            coef -= inc.load_of_flows(frozen)
            used = used[coef[used] > REL_EPS]
    return rates

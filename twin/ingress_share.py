"""How a congested lossless port shares itself among ingress ports that also carry other flows.

htsim's lossless egress (queue_lossless_output.cpp) is one FIFO; each ingress
(queue_lossless_input.cpp) pauses its upstream sender past 15 packets of it queued and resumes
it below 12. An ingress link carrying m flows, j of them to a congested port, brings that port
only j/m of its speed while it is not paused, where an ingress carrying only the port's flows
brings all of it: the FIFO fills, and is served, in that proportion between the pauses. So a
flow entering a congested port through such a shared ingress gets less than max-min's (or
round robin's) share, the flows on its own ingress get more, and the ingress's other flows,
paused with it, go at its pace.

`SHARE` is what htsim's queue logic, stepped packet by packet (`benchmarks/htsim_pfc_steps.step`
with htsim_roce's defaults: XOFF / XON 15 / 12 packets of 4,000 bytes, 4,064 on the wire, 1 us
per wire), gives the j flows of such an ingress together, relative to one greedy flow on an
ingress of its own at the same port (one flow per host, all greedy, 600 packets each): inputs
all, nothing fitted to a scenario. A group whose ingress carries only the port's flows (m = j)
keeps the round robin share `twin.maxmin.port_fair_rates` gives it (htsim's incasts); one with
m > j gets SHARE[m, j] / SHARE[j, j] of it. Beyond the stepped m = 4: m and j scaled to 4.
Stepped on perm128_2MB_2tier's htsim paths (`benchmarks/htsim_forced_paths.py`), htsim's own
per flow agrees with the stepping (correlation 0.998); what this adds to the twin is printed in
`benchmarks/htsim_calibration.py`'s docstring (WEIGHT18).
"""

from __future__ import annotations

import numpy as np

from twin.maxmin import (
    Incidence,
    IngressGroups,
    _gather,
    down_tiers,
    paused_port_fair,
    port_fair_rates,
)

SPEEDS_GBPS = np.array([100.0, 200.0, 400.0, 800.0])
# SHARE[speed, m - 1, j - 1]: the group's rate over a lone ingress's flow (`benchmarks/
# htsim_pfc_steps.step`, stepped 2026-12-02; tests/test_ingress_share.py steps some again)
SHARE = np.array([
    [[1.001, 0, 0, 0], [0.742, 1.337, 0, 0], [0.458, 1.009, 1.507, 0],
     [0.324, 0.782, 1.197, 1.622]],
    [[1.001, 0, 0, 0], [0.830, 1.283, 0, 0], [0.503, 1.067, 1.461, 0],
     [0.323, 0.772, 1.192, 1.548]],
    [[1.001, 0, 0, 0], [0.711, 1.335, 0, 0], [0.511, 1.027, 1.516, 0],
     [0.368, 0.780, 1.210, 1.621]],
    [[1.001, 0, 0, 0], [0.704, 1.292, 0, 0], [0.570, 1.117, 1.534, 0],
     [0.403, 0.824, 1.224, 1.719]],
])


def group_weight(m: np.ndarray, j: np.ndarray, gbps: np.ndarray) -> np.ndarray:
    """Weight of an ingress group (m flows on its ingress link, j of them to the port) against
    a group whose ingress carries only the port's flows (weight 1), at the nearest stepped speed."""
    m = np.asarray(m, float)
    j = np.asarray(j, float)
    big = np.maximum(m / 4.0, 1.0)  # beyond the table: keep the proportion j / m
    mi = np.clip(np.rint(m / big), 1, 4).astype(int)
    ji = np.clip(np.rint(j / big), 1, mi).astype(int)
    s = np.abs(np.log(np.asarray(gbps, float))[..., None] - np.log(SPEEDS_GBPS)).argmin(-1)
    return np.where(m > j, SHARE[s, mi - 1, ji - 1] / SHARE[s, ji - 1, ji - 1], 1.0)


class IngressShare:
    """The shared-ingress shares over one incidence (built once per routing): every switch
    egress port's (ingress, egress) groups of the single-path flows."""

    def __init__(self, inc: Incidence, link_pos: np.ndarray) -> None:
        self.inc = inc
        self.groups = IngressGroups.of(inc, link_pos, link_pos > 0)
        self.csc = (inc.explicit_csc() > 0).astype(float)
        self.on_link = self.csc.tocsr()
        # per group, the flows of its ingress link (groups x flows)
        self.on_ingress = self.on_link[self.groups.ingress].tocsr()

    def rates(self, capacity: np.ndarray, rates: np.ndarray, active: np.ndarray) -> np.ndarray:
        """`rates` (bits/s) with every saturated port that a shared ingress feeds shared by
        group weight (`group_weight`): a shared ingress's flows slow to their group's share and
        every flow of that ingress to their pace (paused together); the port's other groups
        take what that frees, as far as the rest of their paths lets them. One correction per
        call, no new filling: a filling at every event cost perm1024's RoCE run 0.05 -> 8 CPU s."""
        g = self.groups
        act = active.astype(float)
        j = g.incidence @ act
        m = self.on_ingress @ act
        use = np.where(active & np.isfinite(rates), rates, 0.0)
        sat = self.inc.link_load(use) >= capacity * (1 - 1e-6)
        live = (j > 0) & sat[g.egress]
        shared = live & (m > j)
        if not shared.any():
            return rates
        ports = np.zeros(self.inc.n_links, bool)
        ports[g.egress[shared]] = True
        sel = np.flatnonzero(live & ports[g.egress])
        w = group_weight(m[sel], j[sel], capacity[g.egress[sel]] / 1e9)
        egress = g.egress[sel]
        total = np.bincount(egress, weights=w, minlength=self.inc.n_links)
        per_flow = capacity[egress] * w / total[egress] / j[sel]  # each group's flows' share
        grp = g.incidence[sel].tocoo()
        target = np.full(len(use), np.inf)
        np.minimum.at(target, grp.col, per_flow[grp.row])
        # the shared ingresses' flows slow down, their ingress neighbours with them
        weighted = shared[sel]
        slow = np.zeros(len(use), bool)
        slow[grp.col[weighted[grp.row]]] = True
        out = use.copy()
        out[slow] = np.minimum(out[slow], target[slow])
        pace_g = np.full(len(sel), np.inf)
        # a flow at rate 0 (held elsewhere, not yet filled) sets no pace: it would stall its
        # ingress for good
        np.minimum.at(pace_g, grp.row, np.where(out[grp.col] > 0, out[grp.col], np.inf))
        ing = self.on_ingress[sel[weighted]].tocoo()
        np.minimum.at(out, ing.col, pace_g[weighted][ing.row])
        # the others at those ports grow into what is freed, shared per link among the growers
        grow = active & ~slow & (target > out * (1 + 1e-9))
        grow[ing.col] = False
        if grow.any():
            residual = np.maximum(capacity - self.inc.link_load(out), 0.0)
            n_grow = self.inc.link_load(grow.astype(float))
            room = np.full(len(residual), np.inf)
            np.divide(residual, n_grow, out=room, where=n_grow > 0)
            cols = np.flatnonzero(grow)
            idx, _, lens = _gather(self.csc, cols)
            head = np.minimum.reduceat(room[idx], np.r_[0, np.cumsum(lens)[:-1]])
            out[cols] = np.minimum(target[cols], out[cols] + head)
        return np.where(active, out, rates)


class LosslessSharing:
    """How lossless switches share their congested ports, for `twin.engine` (one per routing):
    round robin among ingress ports at the host ports (`twin.maxmin.port_fair_rates`), at the
    paused tiers above them (`paused_port_fair`, `Transport.paused_fair`), then by shared
    ingress weight at every switch port (`IngressShare`, `Transport.ingress_share`)."""

    def __init__(self) -> None:
        self.groups: IngressGroups | None = None
        self.tier_groups: list[IngressGroups] | None = None
        self.share: IngressShare | None = None

    def rates(self, inc: Incidence, link_pos: np.ndarray, capacity: np.ndarray,
              fair: np.ndarray, active: np.ndarray, coupled: np.ndarray | None,
              transport: object) -> np.ndarray:
        """Rates (bits/s) from the per-flow max-min `fair` (bits/s) over `capacity`."""
        top = link_pos == link_pos.max()
        if self.groups is None:
            # at the ports towards hosts, where an incast converges: in the fabric's upper
            # tiers the per-event cost (a second filling at most events of an ECMP run)
            # outweighed what it changed
            self.groups = IngressGroups.of(inc, link_pos, top)
        rates = port_fair_rates(inc, capacity, self.groups, active, fair=fair, coupled=coupled)
        if getattr(transport, "paused_fair", False):  # and the tiers above
            self.tier_groups = self.tier_groups or down_tiers(inc, link_pos)
            rates = paused_port_fair(inc, capacity, rates, self.groups, self.tier_groups,
                                     active, top, coupled)
        if getattr(transport, "ingress_share", False):
            self.share = self.share or IngressShare(inc, link_pos)
            rates = self.share.rates(capacity, rates, active)
        return rates

"""Links chosen by the fabric's structure: what a `links = {...}` table of a fault selects
(`twin.schema.LinkSelector`, the syntax and its meaning).

Cables are returned in cable order (a fraction: in the order drawn), so the same scenario and
seed always pick the same links.
"""

from __future__ import annotations

import numpy as np

from twin.schema import LinkSelector
from twin.topology import Fabric


def select_links(fabric: Fabric, sel: LinkSelector, rng: np.random.Generator) -> list[int]:
    """The cables `sel` picks on `fabric`; ValueError (one line) when it cannot pick any.
    `rng` draws a fraction unless the selector has its own seed."""
    given = [k for k in ("leaf_uplinks_to_first_spines", "fraction") if getattr(sel, k) is not None]
    if len(given) != 1:
        raise ValueError("say one of leaf_uplinks_to_first_spines = K or fraction = F")
    if sel.fraction is None and (sel.per_tier or sel.seed is not None):
        raise ValueError("per_tier and seed go with fraction")
    if sel.plane is not None and sel.plane >= fabric.spec.planes:
        raise ValueError(f"plane {sel.plane} is not one of the fabric's {fabric.spec.planes}")
    in_plane = (np.ones(fabric.n_cables, dtype=bool) if sel.plane is None
                else fabric.cable_plane == sel.plane)
    if sel.leaf_uplinks_to_first_spines is not None:
        return _first_spines(fabric, sel.leaf_uplinks_to_first_spines, in_plane)
    if sel.seed is not None:
        rng = np.random.default_rng(sel.seed)
    tiers = sorted(set(fabric.cable_tier[fabric.cable_tier > 0].tolist())) if sel.per_tier else [None]
    cables: list[int] = []
    for tier in tiers:
        pool = np.flatnonzero(in_plane & (fabric.cable_tier > 0 if tier is None else fabric.cable_tier == tier))
        picked = rng.choice(pool, size=int(round(sel.fraction * len(pool))), replace=False)
        cables += [int(c) for c in picked]
    if not cables:
        raise ValueError(f"fraction = {sel.fraction} of this fabric's links is no link")
    return cables


def _first_spines(fabric: Fabric, k: int, in_plane: np.ndarray) -> list[int]:
    """At every leaf, the cables to the first `k` switches above it (by switch index)."""
    out: list[int] = []
    for leaf in sorted(fabric.leaf_up_cables):
        ups = np.asarray(fabric.leaf_up_cables[leaf])
        ups = ups[(ups >= 0) & in_plane[np.maximum(ups, 0)]]
        if not ups.size:  # a leaf of another plane
            continue
        above = np.unique(fabric.cable_b[ups])  # sorted switch indices
        if len(above) < k:
            raise ValueError(f"{fabric.node_name[leaf]} has uplinks to {len(above)} switches, "
                             f"fewer than {k}")
        out += [int(c) for c in ups[np.isin(fabric.cable_b[ups], above[:k])]]
    return sorted(out)

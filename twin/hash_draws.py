"""ECMP's hash draw as a distribution rather than one draw (issue 18).

Under per-flow ECMP every flow takes one hashed path, so which flows collide is one random
draw of the switches' hash salts (htsim draws them from its `-seed`; a real switch from its
vendor's seed). The twin cannot know that draw: its `FabricState.seed` is another one. On a
fabric of a few hundred flows one draw decides the tail: the p99 of 128 flows (numpy's
"lower" method) is the second slowest flow, one collision group on a slowed link. Measured
on perm128_2MB_2tier_failed2 roce_ecmp (htsim's reference, seed 13, p99 740 us): htsim over
`-seed 1..10` gives p99 510-914 us (median 713); the twin on htsim's own seed-13 paths
(each flow's spine read from an instrumented htsim) gives 659 us (-11%), the twin's own draw
at seed 0 496 us (-33%). The miss was the draw, not the model.

`pooled_fct` runs the same flows over several hash draws (fabric seeds) and pools the
completion times: the quantiles of the pool estimate those of a typical draw. The number
of draws is a statistical choice, not a fitted one: enough that the pool holds
`POOL_FLOWS` flows, so that its p99 rests on about ten flows above it rather than on one
(a fabric of 1,000 flows or more keeps its single draw, and its speed).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from twin.engine import Flows, Result, simulate
from twin.routing import FabricState

# flows the pooled sample should hold: its p99 then has ~10 flows above it
POOL_FLOWS = 1000


def draws_for(n_flows: int, pool_flows: int = POOL_FLOWS) -> int:
    """Hash draws to pool for a run of `n_flows` flows (at least one)."""
    return max(1, math.ceil(pool_flows / max(n_flows, 1)))


def pooled_fct(state_at: Callable[[int], FabricState], flows: Flows, draws: int,
               first_seed: int = 0, **simulate_kwargs) -> np.ndarray:
    """Completion times (s) of `flows` under `draws` hash draws, pooled: draw k simulates on
    `state_at(first_seed + k)` (the fabric with seed first_seed + k, which salts ECMP's hash);
    the result is draws x len(flows) long, draw by draw in the flows' order."""
    out = []
    for k in range(draws):  # a loop over draws, not flows: each draw is one vectorized run
        res: Result = simulate(state_at(first_seed + k), flows, **simulate_kwargs)
        out.append(res.fct)
    return np.concatenate(out) if out else np.empty(0)

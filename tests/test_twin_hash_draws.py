"""ECMP's hash draw pooled over several draws (`twin.hash_draws`)."""

from __future__ import annotations

import numpy as np

from twin.engine import Flows
from twin.hash_draws import POOL_FLOWS, draws_for, pooled_fct
from twin.routing import FabricState
from twin.topology import FabricSpec, build

# htsim's 2-tier fabric of the reference: 16 ToRs of 8 hosts, 8 spines, 400G
SPEC = FabricSpec(hosts=128, tiers=2, leaf_radix=16, spine_radix=16, host_speed_gbps=400,
                  fabric_speed_gbps=400)


def test_draws_fill_the_pool_and_a_large_run_keeps_one():
    assert draws_for(128) == 8  # the 2-tier permutation: 8 draws, 1,024 flows pooled
    assert draws_for(8) == 125
    assert draws_for(POOL_FLOWS) == 1 and draws_for(1024) == 1 and draws_for(0) == POOL_FLOWS


def test_pooled_draws_give_the_balls_into_bins_share_of_lone_flows():
    # 8 flows leave ToR 0 for 8 different ToRs, so they can collide only on ToR 0's 8 uplinks:
    # a flow is alone on its uplink with probability (7/8)^7 = 0.393 (balls into bins), and
    # only then runs at line rate (2 MB in 40 us; a shared uplink halves it at least)
    fabric = build(SPEC)
    src = np.arange(8)
    dst = 8 * (src + 1)
    flows = Flows(src, dst, np.full(8, 2e6), np.zeros(8))
    draws = draws_for(len(flows))
    fct = pooled_fct(lambda seed: FabricState(fabric, mode=["ecmp"], seed=seed), flows, draws)
    assert fct.shape == (draws * 8,)
    lone = fct < 1.5 * 2e6 * 8 / 400e9
    expected = (7 / 8) ** 7
    sd = np.sqrt(expected * (1 - expected) / fct.size)
    assert abs(lone.mean() - expected) < 4 * sd
    # and the draws differ: each is its own hash salt, not one draw repeated
    per_draw = lone.reshape(draws, 8).sum(axis=1)
    assert len(np.unique(per_draw)) > 2

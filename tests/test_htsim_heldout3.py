"""The third held-out htsim set (benchmarks/htsim_heldout3): its fabrics are the ones htsim
sizes from `-nodes` (what every blind set must hold: tests/test_htsim_blind_sets.py)."""

from __future__ import annotations

import re

from benchmarks.htsim_heldout3 import REFERENCE, SCENARIOS
from twin.topology import build


def test_the_twins_fabrics_are_htsims():
    # FatTreeTopologyCfg: K-port switches; 2 tiers K ToRs of K/2 hosts and K/2 spines (K^2/2
    # hosts), 3 tiers K pods of K/2 ToRs of K/2 hosts, K/2 aggs a pod, K^2/4 cores (K^3/4)
    for sc in SCENARIOS.values():
        spec = sc.spec
        f = build(spec)
        k = round((2 * spec.hosts) ** 0.5) if spec.tiers == 2 else round((4 * spec.hosts) ** (1 / 3))
        kinds = [int((f.node_kind == i).sum()) for i in (1, 2, 3)]
        want = [k, k // 2, 0] if spec.tiers == 2 else [k * k // 2, k * k // 2, k * k // 4]
        assert kinds == want and f.hosts_per_leaf == k // 2, sc.name
        text = (REFERENCE / sc.cm).read_text()
        assert re.match(rf"Nodes {spec.hosts}\n", text), sc.name

"""Shared-ingress shares of a congested lossless port (`twin.ingress_share`): the table is
htsim's queue logic stepped, a hand-built port gets its known answer, and on a real
permutation the twin follows the stepping flow by flow."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import HTSIM_DATA

from benchmarks.htsim_calibration import (
    HOP_LATENCY_S,
    SCENARIOS,
    fabric_state,
    twin_inputs,
)
from benchmarks.htsim_pfc_steps import PAYLOAD, _paths, step
from twin.engine import simulate
from twin.ingress_share import SHARE, IngressShare, group_weight
from twin.maxmin import Incidence, max_min_rates
from twin.queueing import ROCE


def _stepped_share(m: int, j: int, gbps: float, packets: int = 600) -> float:
    """The j flows of an ingress carrying m (j to the port) against one flow on an ingress of
    its own at the same port, as `SHARE` was stepped."""
    links, paths = [gbps, gbps], []
    for q in range(m):
        links.append(gbps)
        paths.append([len(links) - 1, 0, 1] if q < j else [len(links) - 1, 0, len(links)])
        if q >= j:
            links.append(gbps)
    links += [gbps, gbps]
    paths.append([len(links) - 2, len(links) - 1, 1])
    done = step(links, paths, [packets] * len(paths), [0.0] * len(paths), t_end=1.0)
    return j * done[-1] / done[0]


@pytest.mark.parametrize(("m", "j", "speed"), [(2, 1, 2), (1, 1, 2), (3, 2, 0)])
def test_the_table_is_the_stepped_queue_logic(m: int, j: int, speed: int) -> None:
    gbps = [100.0, 200.0, 400.0, 800.0][speed]
    assert _stepped_share(m, j, gbps) == pytest.approx(SHARE[speed, m - 1, j - 1], abs=2e-3)


def test_a_shared_ingress_gets_its_weight_and_its_neighbour_its_pace() -> None:
    """a and b share the leaf uplink U (2 flows, 1 to the congested D); c reaches D on an
    ingress of its own; b leaves by E alone. Max-min (and round robin: two groups, one flow
    each) give everyone C/2; htsim's FIFO with PFC gives a 0.711 of c's rate at 400G, and b,
    paused with a at U, a's pace."""
    c_bps = 400e9
    # links: NICs 0-2, U 3, V 4 (c's ingress), D 5, E 6; paths a, b, c
    paths = [[0, 3, 5], [1, 3, 6], [2, 4, 5]]
    pos = np.array([0, 0, 0, 1, 1, 2, 2])
    rows = [link for p in paths for link in p]
    cols = [f for f, p in enumerate(paths) for _ in p]
    inc = Incidence(sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(7, 3)))
    cap = np.full(7, c_bps)
    active = np.ones(3, bool)
    fair = max_min_rates(inc, cap)
    assert fair == pytest.approx([c_bps / 2] * 3)
    s = SHARE[2, 1, 0] / SHARE[2, 0, 0]
    assert group_weight(np.array([2]), np.array([1]), np.array([400.0])) == pytest.approx([s])
    rates = IngressShare(inc, pos).rates(cap, fair, active)
    a = c_bps * s / (1 + s)
    assert rates == pytest.approx([a, a, c_bps - a])


def test_the_twin_follows_the_stepped_queues_on_a_permutation() -> None:
    """perm128_2MB_2tier on the twin's seed-0 ECMP paths: htsim's queue logic stepped on the
    same paths is the answer. Without the shares the twin's flows behind a shared ingress sit
    at the 2-way level: mean |error| against the stepping 8.4% per flow (measured); with them
    2.4%."""
    sc = SCENARIOS["perm128_2MB_2tier"]
    flows, _ = twin_inputs(sc, "roce_ecmp", HTSIM_DATA)  # the .cm, copied into the repo
    state = fabric_state(sc, "ecmp", 0)
    gbps, paths = _paths(flows, state)
    start = np.asarray(flows.start, float)
    packets = np.ceil(np.asarray(flows.size) / PAYLOAD).astype(int).tolist()
    stepped = np.array(step(gbps, paths, packets, start.tolist()), float) - start
    stepped += np.array([len(p) for p in paths]) * HOP_LATENCY_S  # the last ACK's way back

    def err(transport) -> float:  # noqa: ANN001
        fct = simulate(state, flows, hop_latency_s=HOP_LATENCY_S, idle_tail=False,
                       transport=transport).fct
        return float(np.mean(np.abs(fct / stepped - 1)))

    # the stepping's completion has the ACK's hops but not its waits (`twin.ack_wait`): off
    base = dataclasses.replace(ROCE, ack_wait=False)
    without, with_share = err(base), err(dataclasses.replace(base, ingress_share=True))
    assert without > 0.06
    assert with_share < 0.04


def test_a_flow_at_rate_zero_stalls_no_ingress() -> None:
    """A flow of the shared ingress held at 0 elsewhere (c fills D alone) sets no pace: b,
    its neighbour on U, keeps its rate (a pace of 0 stalled a staggered run for good)."""
    c_bps = 400e9
    paths = [[0, 3, 5], [1, 3, 6], [2, 4, 5]]
    rows = [link for p in paths for link in p]
    cols = [f for f, p in enumerate(paths) for _ in p]
    inc = Incidence(sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(7, 3)))
    rates = IngressShare(inc, np.array([0, 0, 0, 1, 1, 2, 2])).rates(
        np.full(7, c_bps), np.array([0.0, c_bps / 2, c_bps]), np.ones(3, bool))
    assert rates[1] == pytest.approx(c_bps / 2)
    assert rates[0] == 0.0

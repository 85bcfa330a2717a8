"""htsim's lossless queues stepped packet by packet (`benchmarks/htsim_pfc_steps.py`): known
answers of the physics, and the stepping against the pause loop the twin already steps."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from benchmarks.htsim_pfc_steps import WIRE, step
from twin.hol import HolBlocking
from twin.maxmin import Incidence, max_min_rates
from twin.pfc_loop import egress_efficiency

N = 1000  # packets per flow


def test_two_greedy_ports_into_one_lose_what_the_pause_loop_gives():
    """Two greedy senders into one port: at 100G the 12 packets below XON outlast the pause
    loop (nothing lost), at 400G the port idles 2.4%: what `twin.pfc_loop`'s own stepping of
    the same queues gives (two codes, one logic)."""
    for gbps in (100.0, 400.0):
        done = step([gbps] * 3, [[0, 2], [1, 2]], [N, N], [0.0, 0.0])
        ideal = 2 * N * WIRE * 8 / (gbps * 1e9)
        eff = ideal / (max(done) - 2e-6)  # less the two wires' latency of the last packet
        assert eff == pytest.approx(egress_efficiency(2, gbps, gbps), abs=0.005)


def _twin_rates(paths: list[list[int]], pos: np.ndarray) -> np.ndarray:
    rows = [link for p in paths for link in p]
    cols = [f for f, p in enumerate(paths) for _ in p]
    inc = Incidence(sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(pos), len(paths))))
    return max_min_rates(inc, np.ones(len(pos)), hol=HolBlocking(inc.explicit(), pos))


def test_a_paused_link_holds_its_flows_only_where_a_queue_builds():
    """a, b, c share an uplink (0) and meet again on a downlink (4); a crosses link 1 with v.
    They reach 4 at the pace 0 gave them, so nothing pauses 1: v finishes in about half a's
    time. With b and c on links of their own, a queues at 4 and pauses 1: v goes at a's pace.
    The twin's head-of-line blocking (links 7-10: the NICs) gives both answers."""
    gbps = [100.0] * 11
    pos = np.array([1, 2, 2, 2, 3, 1, 3, 0, 0, 0, 0])
    mirror = [[7, 0, 1, 4], [8, 0, 2, 4], [9, 0, 3, 4], [10, 5, 1, 6]]
    done = step(gbps, mirror, [N] * 4, [0.0] * 4)
    assert done[3] < 0.5 * min(done[:3])
    assert _twin_rates(mirror, pos) == pytest.approx([1 / 3] * 3 + [2 / 3])
    behind = [[7, 0, 1, 4], [8, 2, 4], [9, 3, 4], [10, 5, 1, 6]]
    done = step(gbps, behind, [N] * 4, [0.0] * 4)
    assert done[3] == pytest.approx(done[0], rel=0.02)
    assert _twin_rates(behind, pos) == pytest.approx([1 / 3] * 4)


def test_a_paused_nic_holds_every_flow_of_its_host():
    """Host A sends to R and to S, host B to R (one switch). Alone, A's two flows share its NIC
    and finish together at twice one's time. With B congesting R, the switch's ingress from A
    fills with A's packets for R and pauses A's NIC, whose one queue holds the flow to S too:
    both of A's flows finish together (the twin's NIC coupling), after B's, whose ingress
    carries nothing else (46.1 / 46.1 / 54.7 Gb/s at 100G)."""
    gbps = [100.0] * 4  # links: 0 A's NIC, 1 B's NIC, 2 to R, 3 to S
    alone = step(gbps, [[0, 2], [0, 3]], [N, N], [0.0, 0.0])
    assert max(alone) == pytest.approx(2 * N * WIRE * 8 / 100e9 + 2e-6, rel=0.01)
    done = step(gbps, [[0, 2], [0, 3], [1, 2]], [N] * 3, [0.0] * 3)
    assert done[1] == pytest.approx(done[0], rel=0.01)
    assert done[2] < 0.9 * done[0]

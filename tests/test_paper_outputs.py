"""The paper's figures (benchmarks/paper) are outputs of mechanisms: change a mechanism's input
and the figure moves by what the mechanism says; DCQCN's fixed point is checked against its
own fluid model integrated in time (tests/test_dcqcn.py)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from conftest import REPO

sys.path.insert(0, str(REPO))
from benchmarks.paper import experiments as paper  # noqa: E402
from twin.dcqcn import DcqcnParams  # noqa: E402
from twin.dcqcn_equilibrium import marking_probability, standing_queue_bytes  # noqa: E402
from twin.latency import HopLatency  # noqa: E402
from twin.planes import PlaneBalancing, QpRetry  # noqa: E402
from twin.queueing import QueueConfig  # noqa: E402

PKT = 4178  # RoCEv2 at MTU 4096, on the wire


def test_dcqcn_fixed_point_stands_just_above_kmin():
    # 2 flows sharing a 400G port (DcqcnFluid settles there: tests/test_dcqcn.py)
    held = standing_queue_bytes(np.array([2]), np.array([400e9]), PKT)[0]
    p = marking_probability(np.array([200e9]), PKT)[0]
    assert 1e-4 < p < 1e-3  # measured 2.1e-4 << pmax = 0.2 ...
    assert held == pytest.approx(150e3 + 1.35e6 * p / 0.2)  # ... so the queue is RED's inverse,
    assert held - 150e3 < 2e3  # just above Kmin


def test_dcqcn_marking_grows_with_the_flows_and_the_additive_increase():
    p = marking_probability(400e9 / np.array([1, 2, 4, 16]), PKT)
    assert np.all(np.diff(p) > 0)  # more flows at a port: smaller shares, more marks needed
    # without a hyper stage (R_HAI = R_AI, Zhu et al.'s fluid model) p* goes as about R_AI^(1/3)
    plain = [marking_probability(np.array([200e9]), PKT, DcqcnParams(rai_bps=r, rhai_bps=r))[0]
             for r in (40e6, 400e6)]
    assert 1.5 < plain[1] / plain[0] < 3.5  # 10^(1/3) = 2.15
    # with it, R_HAI (unchanged) carries much of the recovery: x10 R_AI moves p* less
    p10 = marking_probability(np.array([200e9]), PKT, DcqcnParams(rai_bps=400e6))[0]
    assert 1.2 < p10 / p[1] < plain[1] / plain[0]
    # RED's inverse: the queue moves with Kmin one for one
    q100 = standing_queue_bytes(np.array([2]), np.array([400e9]), PKT, QueueConfig(kmin_bytes=100e3))[0]
    q150 = standing_queue_bytes(np.array([2]), np.array([400e9]), PKT)[0]
    assert q150 - q100 == pytest.approx(50e3, rel=0.01)


def test_ecmp_tail_moves_with_kmin_and_ar_tail_does_not():
    f = paper.fabric64()
    p99 = {k: paper.latency_of(f, mode, 0.75, 0, cfg=QueueConfig(kmin_bytes=k)).percentile(99) * 1e6
           for mode in ("ecmp",) for k in (75e3, 150e3)}
    # two saturated hops on the tail's paths, each 75 KB (1.5 us at 400G) longer
    assert p99[150e3] - p99[75e3] == pytest.approx(2 * 75e3 * 8 / 400e9 * 1e6, abs=0.3)
    ar = [paper.latency_of(f, "ar", 0.75, 0, cfg=QueueConfig(kmin_bytes=k)).percentile(99) for k in (75e3, 150e3)]
    assert ar[0] == ar[1]  # adaptive routing saturates no port at 75%: no DCQCN queue anywhere


def test_ar_tail_moves_with_the_load_and_the_hop_latency():
    f = paper.fabric64()
    base = paper.latency_of(f, "ar", 0.75, 0).percentile(99)
    slower = paper.latency_of(f, "ar", 0.75, 0, hop=HopLatency(switch_s=1.1e-6)).percentile(99)
    assert (slower - base) * 1e6 == pytest.approx(4 * 0.5, abs=0.02)  # 4 hops, 0.5 us more each
    busier = paper.latency_of(f, "ar", 0.85, 0).percentile(99)
    # M/D/1: one hop's p99 wait grows from 8.0 to 14.2 packet times between 75% and 85%; the
    # path's p99 (3 queueing hops after the NIC, convolved) by more than one hop's, less than 3
    assert paper.md1_p99_wait_packets(0.75) == pytest.approx(8.0, abs=0.1)
    one_hop = (paper.md1_p99_wait_packets(0.85) - paper.md1_p99_wait_packets(0.75)) * PKT * 8 / 400e9
    assert one_hop < busier - base < 3 * one_hop


def test_software_plane_recovery_moves_with_the_retry_count():
    for retries in (1, 3):
        planes = PlaneBalancing(qp=QpRetry(12, retries))
        t, frac = paper.plane_failure_timeline("sw", planes, until=0.12, step=1e-4, hosts=16)
        ms = paper.recovery_ms(t, frac)
        assert ms == pytest.approx(4.096e-3 * 2**12 * (retries + 1), rel=1e-3)  # 33.6 / 67.1 ms

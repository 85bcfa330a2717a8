"""A reduced run of the Spectrum-X experiments (benchmarks/paper): the relationships that must
hold whatever the scale."""

from __future__ import annotations

import sys

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO))
from benchmarks.paper import experiments as paper  # noqa: E402

SCALE = 0.1


def test_adaptive_routing_reaches_line_rate_and_ecmp_does_not():
    r = paper.e1_bandwidth(SCALE)["twin"]
    assert r["ar"] >= 0.95 * 400
    assert r["ecmp"] < 0.8 * 400


def test_ecmp_all_to_all_is_clearly_below_adaptive_routing():
    r = paper.e3_alltoall(SCALE)["twin"]
    assert r["ar"] == pytest.approx(50.0, rel=0.01)  # 400 Gb/s
    assert r["ecmp"] < 0.95 * r["ar"]


def test_ecmp_victims_suffer_beside_noisy_neighbours_and_ar_victims_do_not():
    r = paper.e4_isolation(SCALE)["twin"]
    assert r["ar"] == pytest.approx(0.0, abs=1.0)
    assert r["ecmp"] < -30.0


def test_bandwidth_under_link_failures_is_capacity_proportional_within_3_percent():
    r = paper.e5_links_down(SCALE)["twin"]
    assert r["bandwidth"] == pytest.approx(-10.0, abs=3.0)


def test_hardware_plane_balancing_recovers_orders_of_magnitude_faster_than_software():
    r = paper.e6_plane_failure(SCALE)["twin"]
    assert r["hw"] < 3.0
    assert r["sw"] / r["hw"] >= 100

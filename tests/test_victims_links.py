"""A link fault's victims (issue 17: victims are not roots).

A slower link's victims reach beyond its own switch.
In a 3-tier plane the cores above one aggregation switch reach the far pods only through the
aggregation switches they are cabled to: a cable at half speed from a1 down to leaf l1 draws
less traffic on every path that descends through it, so the leaf of the OTHER pod, l2, sends
less up its uplink towards a3 (whose cores c1, c2 lead down to a1) than towards a4 (cores c3,
c4, which reach only a2 and a4). writer3 seed 600 w3_020 ranked that 2:1 split at l2 first,
above the slow cable. A real imbalance at l2 (its crossing uplink the heavier one, or uneven
from before the slow link) stays a root. The rule reads the replay's cabling
(`expected_ports`), set here for the plane: hosts h1 under l1, h2 under l2.

A flap loses what was in flight on its cable while it was down: a deficit with no error counter
there (a silent loss) in the windows the outage touches is the flap's victim; a loss on the
same cable that outlasts it is a fault of its own."""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb

from replay.results import ensure_results
from replay.stored import Incident
from replay.victims import _crossing, _ports, fold_victims

T0 = datetime(2026, 11, 30, 3)
MIN = timedelta(minutes=1)
CABLES = [("h1:eth0", "l1:p1", 0), ("h2:eth0", "l2:p1", 0),
          ("l1:u1", "a1:d1", 1), ("l1:u2", "a2:d1", 1), ("l2:u1", "a3:d1", 1), ("l2:u2", "a4:d1", 1),
          ("a1:u1", "c1:d1", 2), ("a1:u2", "c2:d1", 2), ("a3:u1", "c1:d2", 2), ("a3:u2", "c2:d2", 2),
          ("a2:u1", "c3:d1", 2), ("a2:u2", "c4:d1", 2), ("a4:u1", "c3:d2", 2), ("a4:u2", "c4:d2", 2)]
SLOW = "a1:d1--l1:u1"


def _con(tx: dict[str, float]) -> duckdb.DuckDBPyConnection:
    """Three windows of a minute; every port sends 30 GB/s but those in `tx`."""
    con = duckdb.connect()
    ensure_results(con)
    con.execute("INSERT INTO replay_runs VALUES (?, ?, ?, 60, 3, 1, 3, 0, 'ar', 'ok', NULL)",
                [T0, T0, T0 + 3 * MIN])
    rows = []
    for w in range(3):
        for lo, up, tier in CABLES:
            link = "--".join(sorted((lo, up)))
            for port, peer, uplink in ((lo, up, True), (up, lo, False)):
                cap = 50e9 if link != SLOW else 25e9
                rows.append((T0 + w * MIN, T0 + (w + 1) * MIN, port, port.split(":")[0],
                             port.split(":")[1], link, peer, "plane-0", tier, cap, 1.0, 30e9,
                             tx.get(port, 30e9), 30e9, 30e9, uplink))
    con.executemany("INSERT INTO expected_ports VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows)
    return con


def _slow() -> Incident:
    return Incident("link_degraded", "link", SLOW, T0 + timedelta(seconds=66), None, 0.8,
                    f"link {SLOW} runs at 200 Gb/s where its peers run at 400 Gb/s",
                    [{"link": SLOW, "speed_bps": 200e9}])


def _uneven(device: str, start: datetime = T0) -> Incident:
    return Incident("load_imbalance", "device", device, start, T0 + 3 * MIN, 0.83,
                    f"{device}'s equal-cost uplinks are uneven", [{"device": device}])


def test_the_uplinks_whose_paths_descend_through_the_slow_cable_are_found():
    crossing = _crossing(_ports(_con({})), SLOW.split("--"), {"l1", "l2", "a1", "a3", "h1"})
    # l1: the cable itself; l2: towards a3, whose cores reach a1; a3: both its uplinks do (an
    # even split), a1: its paths down to l1 pass through itself; h1: one uplink
    assert crossing == {"l1": {"l1:u1"}, "l2": {"l2:u1"}}


def test_the_far_pods_leaf_splitting_away_from_the_slow_cable_is_its_victim():
    slow, far, own = _slow(), _uneven("l2"), _uneven("l1")
    con = _con({"l1:u1": 20e9, "l1:u2": 40e9, "l2:u1": 20e9, "l2:u2": 40e9})
    assert fold_victims(con, [far, own, slow]) == [slow]
    assert slow.impact["victim_incidents"] == [{"kind": "load_imbalance", "id": "l2"},
                                               {"kind": "load_imbalance", "id": "l1"}]


def test_a_far_leaf_piling_onto_the_crossing_uplink_stays_a_root():
    # the slow cable can only draw load away from the paths through it: more is a fault there
    slow, far = _slow(), _uneven("l2")
    con = _con({"l1:u1": 20e9, "l1:u2": 40e9, "l2:u1": 40e9, "l2:u2": 20e9})
    assert fold_victims(con, [far, slow]) == [far, slow]


def test_a_far_leaf_uneven_long_before_the_slow_link_stays_a_root():
    slow, far = _slow(), _uneven("l2", start=T0 - 10 * MIN)
    con = _con({"l2:u1": 20e9, "l2:u2": 40e9})
    assert fold_victims(con, [far, slow]) == [far, slow]


def _flap() -> Incident:
    return Incident("link_flap", "link", SLOW, T0 + 61 * timedelta(seconds=1),
                    T0 + 70 * timedelta(seconds=1), 0.85, f"link {SLOW} flapped 1 time(s)")


def _loss(link: str, windows: int, first: int = 1) -> Incident:
    start = T0 + first * MIN
    return Incident("link_degraded", "link", link, start, start + windows * MIN, 0.6,
                    f"link {link} loses up to 0.40%",
                    [{"link": link, "direction": "l1:u1 -> a1:d1", "windows": windows}])


def test_a_loss_on_the_flapping_cable_in_the_flaps_window_is_its_victim():
    flap, loss = _flap(), _loss(SLOW, 1)
    assert fold_victims(_con({}), [loss, flap]) == [flap]
    assert flap.impact["victim_incidents"] == [{"kind": "link_degraded", "id": SLOW}]


def test_a_loss_outlasting_the_flap_or_on_another_cable_stays_a_root():
    flap, lasting, other = _flap(), _loss(SLOW, 3), _loss("l2:u1--a3:d1", 1)
    assert fold_victims(_con({}), [lasting, other, flap]) == [lasting, other, flap]

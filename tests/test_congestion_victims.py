"""A congestion's drops are its victims (issue 17: victims are not roots): the switch above an
overloaded leaf port, paused, fills its buffers and drops some of what the cores send it while
the overload lasts, with no counter saying so. The project's seed 7021 (an incast of 23 s and a
link down elsewhere) ranked such a one-window deficit of 0.002% into the aggregation switch
above the congested leaf second, the congestion third. A loss outlasting the congestion, or
into a switch nowhere near it, stays a root. The rule reads the replay's cabling
(`expected_ports`), set here for one pod: hosts h1, h2 under leaf l1, l1 under aggs a1 and a2,
each up to core c1, and a far agg a9 under c1."""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb

from replay.results import ensure_results
from replay.stored import Incident
from replay.victims import fold_victims

T0 = datetime(2026, 11, 30, 3)
CABLES = [("h1:eth0", "l1:p1", 0), ("h2:eth0", "l1:p2", 0), ("l1:u1", "a1:d1", 1),
          ("l1:u2", "a2:d1", 1), ("a1:u1", "c1:d1", 2), ("a2:u1", "c1:d2", 2), ("a9:u1", "c1:d9", 2)]


def _con(extra: tuple = ()) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    ensure_results(con)
    con.execute("INSERT INTO replay_runs VALUES (?, ?, ?, 60, 5, 1, 3, 0, 'ar', 'ok', NULL)",
                [T0, T0, T0 + timedelta(minutes=5)])
    rows = []
    for lo, up, tier in [*CABLES, *extra]:
        link = "--".join(sorted((lo, up)))
        for port, peer, uplink in ((lo, up, True), (up, lo, False)):
            rows.append((T0, T0 + timedelta(minutes=1), port, port.split(":")[0], port.split(":")[1],
                         link, peer, "plane-0", tier, 50e9, 1.0, 1e9, 1e9, 1e9, 1e9, uplink))
    con.executemany("INSERT INTO expected_ports VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows)
    return con


def _congestion() -> Incident:
    return Incident("congestion", "port", "l1:p1", T0 + timedelta(seconds=59),
                    T0 + timedelta(seconds=100), 0.75, "l1:p1 is congested")


def _loss(into: str, windows: int, first: int = 1) -> Incident:
    """A silent loss, as find_silent_loss reports it, from c1 into `into` over `windows`
    windows of a minute from 03:0`first`."""
    tx = {"a1:u1": "c1:d1", "a9:u1": "c1:d9"}[into]
    link = "--".join(sorted((tx, into)))
    start = T0 + timedelta(minutes=first)
    return Incident("link_degraded", "link", link, start, start + timedelta(minutes=windows), 0.84,
                    f"link {link} loses up to 0.00%",
                    [{"link": link, "direction": f"{tx} -> {into}", "windows": windows}])


def test_a_loss_into_the_switch_above_the_congestion_while_it_lasts_is_its_victim():
    cong, loss = _congestion(), _loss("a1:u1", 1)
    out = fold_victims(_con(), [loss, cong])
    assert out == [cong]
    assert cong.impact["victim_incidents"] == [{"kind": "link_degraded", "id": loss.root_id}]


def test_a_loss_that_outlasts_the_congestion_or_lies_elsewhere_stays_a_root():
    cong, lasting, far = _congestion(), _loss("a1:u1", 4), _loss("a9:u1", 1)
    assert fold_victims(_con(), [lasting, far, cong]) == [lasting, far, cong]


def test_a_loss_starting_well_into_a_congestion_that_lasts_to_the_end_stays_a_root():
    cong = _congestion()
    cong.end = None  # still congested at the end of the bundle
    later = _loss("a1:u1", 2, first=3)  # from 03:03, two minutes after the overload began
    assert fold_victims(_con(), [later, cong]) == [later, cong]


def _down(link: str, at_s: int) -> Incident:
    return Incident("link_down", "link", link, T0 + timedelta(seconds=at_s), None, 0.95,
                    f"link {link} went down")


def test_an_outage_explains_congestion_where_its_reroute_goes_not_at_a_port_facing_a_host():
    """An uplink of l1 down: its load moves to l1's other uplink, which may run full (a victim);
    what l1 sends its host h1 is what h1 receives, wherever it was routed: an incast at l1:p1
    at the same time is a fault of its own. A host's own cable down moves its traffic to its
    other planes: congestion at a port facing that host is the outage's."""
    up = _down("a1:d1--l1:u1", 50)
    incast = _congestion()
    sibling = Incident("congestion", "port", "l1:u2", incast.start, incast.end, 0.75, "l1:u2")
    out = fold_victims(_con(), [up, incast, sibling])
    assert out == [up, incast]
    assert up.impact["victim_incidents"] == [{"kind": "congestion", "id": "l1:u2"}]
    host_down = _down("h1:eth0--l1:p1", 50)  # h1's plane-1 NIC port under leaf m1
    facing = Incident("congestion", "port", "m1:p1", incast.start, incast.end, 0.75, "m1:p1")
    assert fold_victims(_con((("h1:eth1", "m1:p1", 0),)), [host_down, facing]) == [host_down]

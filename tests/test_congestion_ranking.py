"""Congestion rules of issue 17 on small real-looking inputs.

- The pause floor is what a port shows in a typical sample, not its worst one: in a small
  fabric one incast's PFC tree reaches most ports for a few samples (the project's seed 12030,
  16 hosts on 2 planes: 70 of 128 ports paused, the median port's worst sample 450/s), and a
  floor of three times the median worst sample hid the very tree that makes the congested
  leaf port a root, while a link went down elsewhere at the same time.
- Of two concurrent congestions the one the twin explains more of ranks first (the project's
  seed 12038: an ECMP-hashed uplink the incast's flows collide on, hot a sample longer than the
  receiver's port, ranked first on the number of samples).
"""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb

from replay.explain import order_concurrent
from replay.roots import find_congestion
from replay.stored import Incident

T0 = datetime(2026, 11, 30, 3)
LINE = 400e9  # b/s
SAMPLES = 30  # of 10 s
INCAST = range(12, 15)  # the samples the incast lasts


def _ports() -> list[tuple[str, str]]:
    """Two leaves of four hosts each, two spines: every cable as (lower port, upper port)."""
    cables = [(f"h{h}:eth0", f"l{1 + (h - 1) // 4}:p{1 + (h - 1) % 4}") for h in range(1, 9)]
    cables += [(f"l{leaf}:u{s}", f"s{s}:d{leaf}") for leaf in (1, 2) for s in (1, 2)]
    return cables


def _pauses() -> dict[str, float]:
    """Pause frames/s each port sends during the incast at l1:p4: l1 pauses its feeders (three
    of its hosts and both uplinks), the spines, paused, relay to l2, l2 to its hosts."""
    tree = {"l1:p1": 1800.0, "l1:p2": 1800.0, "l1:p3": 1800.0, "l1:u1": 1800.0, "l1:u2": 1800.0,
            "s1:d2": 900.0, "s2:d2": 900.0}
    tree.update({f"l2:p{i}": 700.0 for i in range(1, 5)})
    return tree


def _store() -> duckdb.DuckDBPyConnection:
    """The views find_congestion reads, as tables: links, speeds, the hosts, port_rates."""
    con = duckdb.connect()
    cables = _ports()
    peer = {a: b for a, b in cables} | {b: a for a, b in cables}
    con.execute("CREATE TABLE links (port_a VARCHAR, port_b VARCHAR)")
    con.executemany("INSERT INTO links VALUES (?, ?)", cables)
    con.execute("CREATE TABLE files (file_id INTEGER, family VARCHAR)")
    con.execute("CREATE TABLE ifmap (host VARCHAR)")
    con.execute("CREATE TABLE job_hosts (host VARCHAR)")
    con.executemany("INSERT INTO job_hosts VALUES (?)", [(f"h{h}",) for h in range(1, 9)])
    con.execute("""CREATE TABLE samples (ts TIMESTAMP, device VARCHAR, ifname VARCHAR,
                   counter VARCHAR, value DOUBLE, file_id INTEGER)""")
    con.executemany("INSERT INTO samples VALUES (?, ?, ?, 'port_speed_bps', ?, 1)",
                    [(T0, *p.split(":"), LINE) for p in peer])
    con.execute("""CREATE TABLE port_rates (device VARCHAR, ifname VARCHAR, ts TIMESTAMP,
                   interval_s DOUBLE, tx_bytes_per_s DOUBLE, rx_bytes_per_s DOUBLE,
                   ecn_marked_per_s DOUBLE, rx_pause_per_s DOUBLE, tx_pause_per_s DOUBLE)""")
    sends = _pauses()
    rows = []
    for i in range(1, SAMPLES):
        on = i in INCAST
        for port in peer:
            tx = sends.get(port, 0.0) if on else 0.0
            rx = sends.get(peer[port], 0.0) if on else 0.0
            ecn = 1.5e6 if on and port == "l1:p4" else 0.0
            rows.append((*port.split(":"), T0 + timedelta(seconds=10 * i), 10.0, LINE / 8,
                         LINE / 8, ecn, rx, tx))
    con.executemany("INSERT INTO port_rates VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    return con


def test_an_incast_whose_pause_tree_reaches_most_ports_is_still_found():
    con = _store()
    # the tree reaches 22 of the 24 ports: their worst sample is the tree itself
    paused = con.execute("""SELECT count(DISTINCT device || ifname) FROM port_rates
                            WHERE rx_pause_per_s > 0 OR tx_pause_per_s > 0""").fetchone()[0]
    assert paused == 22
    found = find_congestion(con)
    assert [i.root_id for i in found] == ["l1:p4"]
    evidence = {e["port"] for e in found[0].evidence if "paused" in e["role"]}
    assert {"h1:eth0", "s1:d1", "s2:d1"} <= evidence


def _cong(port: str, score: float, start_s: int, end_s: int) -> Incident:
    return Incident("congestion", "port", port, T0 + timedelta(seconds=start_s),
                    T0 + timedelta(seconds=end_s), score, f"{port} is congested",
                    explanation={"basis": "twin"})


def test_of_two_concurrent_congestions_the_one_the_twin_explains_more_of_ranks_first():
    uplink, receiver = _cong("l1:u1", 0.775, 150, 210), _cong("l2:p1", 0.75, 160, 200)
    later = _cong("l1:u2", 0.9, 400, 450)  # another time: the twin's gains do not order it
    net = {("congestion", "l1:u1"): 10_600.0, ("congestion", "l2:p1"): 438_000.0,
           ("congestion", "l1:u2"): 5_000.0}
    order_concurrent([uplink, receiver, later], net)
    assert receiver.score == 0.75 and uplink.score < receiver.score and later.score == 0.9
    assert "41x" in uplink.explanation["note"]
    # already below it: unchanged
    low = _cong("l1:u1", 0.6, 150, 210)
    order_concurrent([low, receiver], net)
    assert low.score == 0.6 and "note" not in low.explanation

"""replay.fabric and replay.outages: the fabric and the outages the replay, the report and the TUI share."""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb
import pytest

from collectors.store.writer import Store
from replay.expected import _up_fraction
from replay.fabric import fabric_from_store
from replay.outages import merge_outages
from twin.topology import FabricSpec, TopologyError, build

T0 = datetime(2026, 11, 30, 3, 0, 0)


def at(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


def test_merge_outages_folds_overlapping_and_touching_spans_in_time_order():
    spans = [(at(40), at(50)), (at(15), at(30)), (at(10), at(20)), (at(30), at(35)), (at(60), at(61))]
    assert merge_outages(spans) == [(at(10), at(35)), (at(40), at(50)), (at(60), at(61))]
    assert merge_outages([]) == []


def _intervals(rows: list[tuple[str, float, float | None]]) -> duckdb.DuckDBPyConnection:
    """A connection whose link_state_intervals holds these down intervals (port, start, end)."""
    con = duckdb.connect()
    con.execute('CREATE TABLE link_state_intervals (port_id VARCHAR, state VARCHAR, start TIMESTAMP, "end" TIMESTAMP)')
    for port, s, e in rows:
        con.execute("INSERT INTO link_state_intervals VALUES (?, 'down', ?, ?)",
                    [port, at(s), None if e is None else at(e)])
    return con


def test_a_cable_is_down_while_either_end_says_so():
    f = build(FabricSpec(hosts=16, leaf_radix=8, spine_radix=8, hosts_per_leaf=4))
    c = int(f.leaf_up_cables[int(f.ep_leaf[0])][0])
    a, b = f.cable_port_a[c], f.cable_port_b[c]
    # the two ends disagree: a says 10-20 s, b says 15-30 s: down 20 s of the first minute
    # (the larger end alone would say 15 s), and b's outage from 70 s on runs to the end
    con = _intervals([(a, 10, 20), (b, 15, 30), (b, 70, None)])
    up = _up_fraction(con, f, at(0), at(90), 60.0, 2)
    assert up[c].tolist() == pytest.approx([1 - 20 / 60, 1 - 20 / 30])
    others = [i for i in range(f.n_cables) if i != c]
    assert (up[others] == 1.0).all()


def test_fabric_from_store_reads_cabling_and_speeds(tmp_path):
    built = build(FabricSpec(hosts=16, leaf_radix=8, spine_radix=8, hosts_per_leaf=4))
    rows = [(*a.split(":", 1), *b.split(":", 1), None, None, None)
            for a, b in zip(built.cable_port_a, built.cable_port_b, strict=True)]
    with Store.open(str(tmp_path / "s.duckdb")) as store:
        with pytest.raises(TopologyError, match="no cabling"):
            fabric_from_store(store.con)
        store.con.executemany("INSERT INTO neighbors VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        slow = built.cable_port_b[int(built.leaf_up_cables[int(built.ep_leaf[0])][0])]
        device, ifname = slow.split(":", 1)
        store.con.execute("INSERT INTO samples (ts, device, ifname, counter, metric, qualifier, value) "
                          "VALUES (?, ?, ?, 'port_speed_bps', 'speed', '', 200e9)", [T0, device, ifname])
        f = fabric_from_store(store.con)
        plain = fabric_from_store(store.con, speeds=False)
    assert f.n_cables == built.n_cables and f.spec.tiers == 2
    port_speed = dict(zip(f.cable_port_a + f.cable_port_b, list(f.cable_gbps) * 2, strict=True))
    assert port_speed[slow] == 200.0
    assert sorted(port_speed.values()).count(200.0) == 2  # the one cable, both ends
    assert set(plain.cable_gbps) == {400.0}

"""The fabric screen's per-port arrays of one replay window from the replay's rows
(fabric_windows.replayed_window), and the cells' capacities from them."""

from __future__ import annotations

from datetime import datetime

import duckdb
import numpy as np

from fabtwin.tui.fabric_windows import Cells, Layout, replayed_window

T0, T1 = datetime(2026, 11, 30, 3, 0), datetime(2026, 11, 30, 3, 1)
NAN = np.nan


def _store(rows: list[tuple]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("""CREATE TABLE expected_ports (window_start TIMESTAMP, port_id VARCHAR,
        observed_tx_bytes_per_s DOUBLE, observed_rx_bytes_per_s DOUBLE, up_fraction DOUBLE,
        capacity_bytes_per_s DOUBLE)""")
    con.executemany("INSERT INTO expected_ports VALUES (?, ?, ?, ?, ?, ?)", rows)
    return con


def test_a_windows_ports_and_repeated_rows_land_in_their_cells():
    con = _store([
        (T1, "b:1", 5.0, 7.0, 1.0, 50.0),  # another window: not read
        (T0, "a:1", 1.0, None, 1.0, 10.0),
        (T0, "a:1", 3.0, 2.0, 0.5, 20.0),  # a second row of the window and port: max load
        # and capacity, least up
        (T0, "b:1", None, None, None, None),  # no load, no up fraction: not down
        (T0, "x:9", 9.0, 9.0, 0.0, 9.0),  # a port the cabling does not know
    ])
    ports = ["a:1", "b:1", "c:1"]
    layout = Layout(ports, {p: i for i, p in enumerate(ports)})
    got = replayed_window(con.cursor(), layout, T0)
    assert np.array_equal(got.util, [3.0, 0.0, NAN], equal_nan=True)
    assert got.down.tolist() == [True, False, False]
    assert np.array_equal(got.cap, [20.0, NAN, NAN], equal_nan=True)
    other = replayed_window(con.cursor(), layout, T1)
    assert np.array_equal(other.util, [NAN, 7.0, NAN], equal_nan=True)
    assert other.down.tolist() == [False, False, False]
    none = replayed_window(con.cursor(), layout, datetime(2026, 11, 30, 4))  # no rows
    assert np.isnan(none.util).all() and not none.down.any()


def test_a_cables_capacity_is_its_lower_ports_else_its_upper_ports_else_its_line_rate():
    # cable 0: a:1-b:1, cable 1: c:1-b:1, cable 2: c:1-d:1 (no capacity known either end)
    cells = Cells(1, 3, np.arange(3), np.array([0, 2, 2]), np.array([1, 1, 3]),
                  np.array([100.0, 100.0, 100.0]), [["l0", "l1", "l2"]])
    port_cap = np.array([40.0, 80.0, NAN, 0.0])
    assert cells.capacity(port_cap).tolist() == [40.0, 80.0, 100.0]
    assert cells.capacity(None).tolist() == [100.0, 100.0, 100.0]
    util = np.array([20.0, 40.0, 10.0, 50.0])
    best, state = cells.arrays(util, np.zeros(4, bool), np.zeros(4, bool), port_cap)
    assert best.tolist() == [1.0, 0.5, 0.5] and state.tolist() == [0, 0, 0]

"""The fabric screen's per-window port arrays from the replay's rows (fabric_windows.replayed_windows)."""

from __future__ import annotations

from datetime import datetime

import duckdb
import numpy as np

from fabtwin.tui.fabric_windows import Layout, replayed_windows

T0, T1 = datetime(2026, 11, 30, 3, 0), datetime(2026, 11, 30, 3, 1)


def test_windows_ports_and_repeated_rows_land_in_their_cells():
    con = duckdb.connect()
    con.execute("""CREATE TABLE expected_ports (window_start TIMESTAMP, port_id VARCHAR,
        observed_tx_bytes_per_s DOUBLE, observed_rx_bytes_per_s DOUBLE, up_fraction DOUBLE)""")
    con.executemany("INSERT INTO expected_ports VALUES (?, ?, ?, ?, ?)", [
        (T1, "b:1", 5.0, 7.0, 1.0),
        (T0, "a:1", 1.0, None, 1.0),
        (T0, "a:1", 3.0, 2.0, 0.5),  # a second row of the window and port: max load, least up
        (T0, "b:1", None, None, None),  # no load, no up fraction: not down
        (T0, "x:9", 9.0, 9.0, 0.0),  # a port the cabling does not know
        (T1, "x:9", 9.0, 9.0, 0.0),
    ])
    got = replayed_windows(con.cursor(), Layout(["a:1", "b:1", "c:1"], {}))
    assert got.starts == {T0: 0, T1: 1} and got.covered.tolist() == [True, True]
    assert np.array_equal(got.util, [[3.0, 0.0, np.nan], [np.nan, 7.0, np.nan]], equal_nan=True)
    assert got.down.tolist() == [[True, False, False], [False, False, False]]


def test_no_replay_rows_is_no_arrays():
    con = duckdb.connect()
    con.execute("CREATE TABLE expected_ports (window_start TIMESTAMP, port_id VARCHAR, "
                "observed_tx_bytes_per_s DOUBLE, observed_rx_bytes_per_s DOUBLE, "
                "up_fraction DOUBLE)")
    assert replayed_windows(con.cursor(), Layout(["a:1"], {})) is None

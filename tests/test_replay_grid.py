"""The replay's observed arrays and grid, shared by its consumers without being read twice: the
window means of every port_rates column from one read, and the explanation's grid taken from
the replay that just stored it, equal to what the store reads back."""

from __future__ import annotations

from dataclasses import fields
from datetime import timedelta

import duckdb
import numpy as np
import pytest

import replay.counters as rc
from replay.expected import replay
from replay.fabric import fabric_from_store
from replay.investigate import views_once


@pytest.fixture(scope="module")
def db(tmp_path_factory, sample_stores) -> str:
    """sample_traces/two_faults ingested: a copy of the session's (the tests replay into it)."""
    return str(sample_stores.copy(sample_stores.ingested("two_faults"),
                                  tmp_path_factory.mktemp("grid") / "s.duckdb"))


def test_observed_rates_are_each_windows_mean_in_time_order(db):
    con = duckdb.connect(db)
    try:
        with views_once(con):
            replay(con)
            t_from, t_to, window_s, n_win = con.execute(
                "SELECT t_from, t_to, window_s, windows FROM replay_runs").fetchall()[0]
            fabric = fabric_from_store(con)
            got = rc.observed_rates(con, fabric, t_from, t_to, window_s, n_win)
            ports = fabric.cable_port_a + fabric.cable_port_b
            # DuckDB's own ordered mean, per column, port and window
            want = np.full(got.shape, np.nan)
            cols = ", ".join(f"avg({c} ORDER BY ts)" for c in rc.RATE_COLUMN.values())
            for port, w, *means in con.execute(f"""
                    SELECT device || ':' || ifname, {rc.window_index_sql(t_from, window_s)} AS w,
                           {cols} FROM port_rates WHERE ts > ? AND ts <= ? GROUP BY ALL""",
                    [t_from, t_to]).fetchall():
                if port in ports and 0 <= w < n_win:
                    want[:, ports.index(port), w] = [np.nan if m is None else m for m in means]
    finally:
        con.close()
    assert np.isfinite(got).sum() > 1000
    assert np.array_equal(got, want, equal_nan=True)


def test_the_explanation_takes_the_replays_grid_as_the_store_reads_it_back(db, monkeypatch):
    con = duckdb.connect(db)
    try:
        with views_once(con):
            replay(con)
        fabric = fabric_from_store(con)
        window_s = con.execute("SELECT window_s FROM replay_runs").fetchall()[0][0]
        stored = rc._read_grid(con, fabric, window_s)
        with monkeypatch.context() as m:  # the kept grid: the store is not read again
            m.setattr(rc, "_read_grid", lambda *a: pytest.fail("expected_counters read back"))
            kept = rc.load_grid(con, fabric)
        for f in fields(stored):
            a, b = getattr(kept, f.name), getattr(stored, f.name)
            if isinstance(a, np.ndarray):
                assert np.array_equal(a, b, equal_nan=True), f.name
            elif f.name != "fabric":
                assert a == b, f.name
        assert np.isnan(kept.observed).any()
        assert kept.bounds[1] - kept.bounds[0] == timedelta(seconds=window_s)
        # cells the store holds as NULL: expected and healthy 0, noise 1, observed NaN
        g = rc._read_grid(con, fabric, window_s)
        g.expected[0, 0, 0] = g.healthy[1, 2, 0] = g.noise[3, 1] = np.nan
        rc.store_counters(con, g)
        rc.remember_grid(con, g)
        with monkeypatch.context() as m:
            m.setattr(rc, "_read_grid", lambda *a: pytest.fail("expected_counters read back"))
            kept = rc.load_grid(con, fabric)
        back = rc._read_grid(con, fabric, window_s)
        for name in ("observed", "expected", "healthy", "noise"):
            assert np.array_equal(getattr(kept, name), getattr(back, name), equal_nan=True), name
        assert kept.expected[0, 0, 0] == 0.0 and kept.noise[3, 1] == 1.0
        # the store changed after the replay: the kept grid is not the store's any more
        con.execute("DELETE FROM expected_counters WHERE window_start = ?", [kept.bounds[0]])
        reread = rc.load_grid(con, fabric)
        assert reread.observed.shape[2] == kept.observed.shape[2] - 1
    finally:
        con.close()

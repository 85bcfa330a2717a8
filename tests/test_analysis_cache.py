"""The analysis tables kept in the store (replay.analysis_cache): a second investigate of the same
store reads them back and says the same; a bundle that gained files is analysed afresh; a
read-only connection writes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

import replay.investigate as inv
from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store
from replay.analysis_cache import keyed
from replay.investigate import investigate, views_once

BUNDLE = Path(__file__).resolve().parent.parent / "sample_traces" / "two_faults"


def _ranked(result: dict) -> list[tuple]:
    return [(i["kind"], i["root_cause"]["id"], i["score"], i["start"], i["end"])
            for i in result["incidents"]]


def _key(db: Path) -> str | None:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT key FROM analysis_cache").fetchone()[0]
    except duckdb.CatalogException:
        return None
    finally:
        con.close()


def _no_compute(*_a, **_k):
    raise AssertionError("port_rates computed again: the store's copy was not read")


def test_a_second_investigate_reads_the_stored_analysis(tmp_path, monkeypatch):
    db = tmp_path / "s.duckdb"
    first = investigate(BUNDLE, db)
    key = _key(db)
    assert key
    monkeypatch.setattr(inv, "_materialize_rates", _no_compute)
    again = investigate(BUNDLE, db)
    assert _ranked(again) == _ranked(first) and again["incidents"] == first["incidents"]
    assert _key(db) == key


def test_a_second_investigate_reads_no_rate_into_arrays(tmp_path, monkeypatch):
    """The observed rates, the residuals' port sums and the sample interval are kept beside the
    copies (replay.analysis_cache.save_arrays): a second diagnosis never reads port_rates into
    arrays, and says the same, down to every residual row."""
    import replay.counters as counters
    import replay.port_sums as port_sums

    db = tmp_path / "s.duckdb"
    first = investigate(BUNDLE, db)
    con = duckdb.connect(str(db), read_only=True)
    residuals = con.execute("SELECT * FROM link_residuals ORDER BY ALL").fetchall()
    sets = {r[0] for r in con.execute("SELECT name FROM analysis_derived").fetchall()}
    con.close()
    assert sets == {"observed_rates", "sample_interval", "port_windows", "port_edges",
                    "port_codes", "replay_tables", "down_events", "counter_flaps", "low_speed"}
    monkeypatch.setattr(inv, "_materialize_rates", _no_compute)
    for module in (counters, port_sums):
        monkeypatch.setattr(module, "rate_arrays", _no_compute)
    again = investigate(BUNDLE, db)
    assert again["incidents"] == first["incidents"]
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT * FROM link_residuals ORDER BY ALL").fetchall() == residuals
    con.close()


def _tables(db: Path) -> dict[str, list]:
    from replay.analysis_cache import REPLAY_TABLES

    con = duckdb.connect(str(db), read_only=True)
    try:
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall()
                for t in REPLAY_TABLES}
    finally:
        con.close()


def _note(db: Path) -> str:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT note FROM replay_runs").fetchall()[0][0]
    finally:
        con.close()


def test_a_second_investigate_writes_no_replay_table_again(tmp_path, monkeypatch):
    """The replay's tables of the same inputs are there: neither the expected counters nor the
    residuals are written again, and the diagnosis reads the same rows."""
    import replay.expected as expected
    from replay.expected import KEPT_NOTE

    db = tmp_path / "s.duckdb"
    first = investigate(BUNDLE, db)
    tables = _tables(db)
    assert _note(db) == "" and all(tables.values())
    monkeypatch.setattr(expected, "store_counters", _no_compute)
    monkeypatch.setattr(inv, "compute_residuals", _no_compute)
    again = investigate(BUNDLE, db)
    assert again["incidents"] == first["incidents"]
    assert _tables(db) == tables and _note(db) == KEPT_NOTE


def test_replay_tables_of_other_inputs_are_written_again(tmp_path):
    """Another window, the residuals written by another caller, a row deleted by hand: the
    next investigate writes the tables again, and they are those of a store built afresh."""
    from replay.investigate import replay_and_diagnose
    from replay.residuals import compute_residuals

    db = tmp_path / "s.duckdb"
    first = investigate(BUNDLE, db)
    tables = _tables(db)
    con = duckdb.connect(str(db))
    with views_once(con):
        summary, _ = replay_and_diagnose(con, window_s=30.0)
    assert not summary.kept
    assert con.execute("SELECT window_s, note FROM replay_runs").fetchall() == [(30.0, "")]
    con.close()
    assert investigate(BUNDLE, db)["incidents"] == first["incidents"] and _note(db) == ""
    assert _tables(db) == tables
    for damage in ("residuals", "delete"):
        con = duckdb.connect(str(db))
        if damage == "residuals":
            compute_residuals(con)  # outside a keyed block: the tables' key goes
            assert not con.execute("SELECT count(*) FROM analysis_derived "
                                   "WHERE name = 'replay_tables'").fetchone()[0]
        else:
            investigate(BUNDLE, db)  # kept again
            con.execute("DELETE FROM link_residuals "
                        "WHERE rowid = (SELECT min(rowid) FROM link_residuals)")
            assert con.execute("SELECT count(*) FROM link_residuals").fetchone()[0] == \
                len(tables["link_residuals"]) - 1
        con.close()
        assert investigate(BUNDLE, db)["incidents"] == first["incidents"] and _note(db) == ""
        assert _tables(db) == tables


def test_kept_statements_are_run_again_for_another_key_or_statement(tmp_path):
    """A kept statement's rows come back in its order; another key (the copies recomputed) or
    another statement runs it again; outside a keyed block it is only run."""
    from replay.analysis_cache import kept_rows

    con = duckdb.connect(str(tmp_path / "s.duckdb"))
    con.execute("CREATE TABLE t AS SELECT range AS x FROM range(5)")
    sql = "SELECT x FROM t WHERE x >= ? ORDER BY x DESC"
    with keyed(con, "main", "k1"):
        assert [r["x"] for r in kept_rows(con, "low_speed", sql, [2])] == [4, 3, 2]
        con.execute("DELETE FROM t WHERE x = 4")  # the key says nothing changed: the copy
        assert [r["x"] for r in kept_rows(con, "low_speed", sql, [2])] == [4, 3, 2]
        assert [r["x"] for r in kept_rows(con, "low_speed", sql, [3])] == [3]
    with keyed(con, "main", "k2"):
        assert [r["x"] for r in kept_rows(con, "low_speed", sql, [2])] == [3, 2]
    con.execute("INSERT INTO t VALUES (9)")
    assert [r["x"] for r in kept_rows(con, "low_speed", sql, [2])] == [9, 3, 2]
    con.close()


def test_derived_arrays_of_other_windows_are_computed_again(tmp_path):
    """A replay of other windows (another --window) finds no arrays of its own and computes
    them; the key the copies were computed for is part of every set's."""
    import numpy as np

    from replay.analysis_cache import load_arrays, save_arrays

    con = duckdb.connect(str(tmp_path / "s.duckdb"))
    with keyed(con, "main", "k1"):
        save_arrays(con, "observed_rates", [60.0], {"rates": np.arange(6.0).reshape(2, 3)})
        got = load_arrays(con, "observed_rates", [60.0])
        assert got is not None and got["rates"].shape == (2, 3) and got["rates"][1, 2] == 5.0
        assert load_arrays(con, "observed_rates", [30.0]) is None
    with keyed(con, "main", "k2"):  # the copies recomputed: nothing derived from the old ones
        assert load_arrays(con, "observed_rates", [60.0]) is None
    assert load_arrays(con, "observed_rates", [60.0]) is None  # outside a keyed block
    with keyed(con, "main", None):  # no key (read-only, a lake): nothing saved
        save_arrays(con, "port_codes", [], {"ports": np.array(["a"], dtype=object)})
    assert not con.execute("SELECT count(*) FROM duckdb_tables() "
                           "WHERE table_name = 'analysis_port_codes'").fetchone()[0]
    con.close()


def test_a_bundle_that_gained_files_is_analysed_afresh(tmp_path, monkeypatch):
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    held = tmp_path / "held"
    nic = sorted(p for p in bundle.rglob("*") if p.is_file() and "/nic/" in p.as_posix())
    for p in nic[::2]:
        dest = held / p.relative_to(bundle)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(p, dest)
    db = tmp_path / "s.duckdb"
    investigate(bundle, db)
    key = _key(db)
    shutil.copytree(held, bundle, dirs_exist_ok=True)  # the rest of the bundle arrives
    computed = []
    real = inv._materialize_rates
    monkeypatch.setattr(inv, "_materialize_rates", lambda *a: computed.append(1) or real(*a))
    whole = investigate(bundle, db)
    assert computed and _key(db) not in (None, key)
    fresh = investigate(bundle, tmp_path / "fresh.duckdb")  # a store built from nothing
    assert _ranked(whole) == _ranked(fresh)


def test_a_read_only_connection_writes_no_analysis_table(tmp_path):
    db = tmp_path / "s.duckdb"
    with Store.open(db) as store:
        ingest_bundle(store, BUNDLE)
    before = db.stat().st_mtime_ns, db.read_bytes()
    con = duckdb.connect(str(db), read_only=True)
    try:
        with views_once(con):
            assert con.execute("SELECT count(*) FROM port_rates").fetchone()[0] > 0
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() "
                                            "WHERE NOT temporary").fetchall()}
    finally:
        con.close()
    assert not tables & {"analysis_cache", "analysis_port_rates", "analysis_link_state_intervals"}
    assert (db.stat().st_mtime_ns, db.read_bytes()) == before


@pytest.mark.parametrize("table", ["analysis_cache", "analysis_port_rates"])
def test_a_store_whose_copy_is_damaged_is_analysed_afresh(tmp_path, table):
    db = tmp_path / "s.duckdb"
    first = investigate(BUNDLE, db)
    con = duckdb.connect(str(db))
    con.execute(f"DROP TABLE {table}")  # a copy gone (or never finished): no stale read
    con.close()
    assert _ranked(investigate(BUNDLE, db)) == _ranked(first)
    assert _key(db)

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

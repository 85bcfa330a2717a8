"""A bundle partly in the store already: the files it has are hashed on threads and never reach a
worker; the others are loaded as a fresh ingest would load them."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import collectors.store.ingest as ingest_mod
import collectors.store.writer as store_mod
from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store

BUNDLE = Path(__file__).resolve().parent.parent / "sample_traces" / "two_faults"


def _digest(db: Path) -> tuple:
    """Per table, rows and an order-free hash of every column but file ids and times of ingest."""
    with Store.open(db) as store:
        con = store.con
        out = []
        for table in ("samples", "events", "neighbors", "ifmap", "jobs"):
            cols = [r[0] for r in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                "AND column_name <> 'file_id' ORDER BY ordinal_position", [table]).fetchall()]
            quoted = ", ".join(f'"{c}"' for c in cols)
            out.append(con.execute(f"SELECT count(*), sum(hash({quoted})) FROM {table}").fetchone())
        return tuple(out)


def test_a_bundle_partly_loaded_loads_only_its_new_files(sample_stores, tmp_path, monkeypatch):
    monkeypatch.setattr(ingest_mod, "POOL_MIN_FILES", 8)
    monkeypatch.setattr(ingest_mod, "POOL_MIN_BYTES", 0)
    full = tmp_path / "full"
    shutil.copytree(BUNDLE, full)
    nic = sorted(p for p in full.rglob("*") if p.is_file() and "/nic/" in p.as_posix())
    half = tmp_path / "half"
    shutil.copytree(BUNDLE, half)
    for p in nic[::2]:  # the first ingest sees every other NIC file
        (half / p.relative_to(full)).unlink()
    assert len(nic) // 2 >= ingest_mod.POOL_MIN_FILES  # the new files go to the workers

    db = tmp_path / "s.duckdb"
    with Store.open(db) as store:
        ingest_bundle(store, half, workers=2)
    with Store.open(db) as store:
        again = ingest_bundle(store, full, workers=2)
    status = {f.path: f.status for f in again.files}
    new = {p.relative_to(full).as_posix() for p in nic[::2]}
    assert {r for r, s in status.items() if s == "loaded"} == new
    assert {s for r, s in status.items() if r not in new} <= {"unchanged", "skipped"}

    # a fresh ingest of the whole bundle: the session's (the digest leaves file ids out)
    fresh = sample_stores.copy(sample_stores.ingested("two_faults"), tmp_path / "fresh.duckdb")
    assert _digest(db) == _digest(fresh)


def test_a_big_file_hashed_beside_its_parse_is_listed_with_its_sha256(tmp_path, monkeypatch):
    # a store with no files hashes a big file on a thread while parsing it: the `files` row
    # still gets the right sha256, and the same bundle again is found unchanged
    monkeypatch.setattr(ingest_mod, "HASH_ASIDE_BYTES", 1000)
    monkeypatch.setattr(store_mod, "COMMIT_ROWS", 50)  # a chunk commit lists it `loading` first
    bundle = tmp_path / "b"
    bundle.mkdir()
    lines = [f'if_in_octets{{instance="leaf-1",interface="swp{p}"}} {t * 100} {1767225600000 + t * 10000}'
             for t in range(40) for p in range(1, 5)]
    path = bundle / "m.prom"
    path.write_text("\n".join(lines) + "\n")
    with Store.open(tmp_path / "s.duckdb") as store:
        result = ingest_bundle(store, bundle)
        assert [f.status for f in result.files] == ["loaded"]
        assert store.con.execute("SELECT sha256, status, loaded FROM files").fetchall() == [
            (hashlib.sha256(path.read_bytes()).hexdigest(), "loaded", 160)]
        again = ingest_bundle(store, bundle)
        assert [f.status for f in again.files] == ["unchanged"]
        assert store.con.execute("SELECT count(*) FROM samples").fetchone() == (160,)

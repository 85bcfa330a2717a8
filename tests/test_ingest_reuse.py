"""A bundle partly in the store already: the files it has are hashed on threads and never reach a
worker; the others are loaded as a fresh ingest would load them."""

from __future__ import annotations

import shutil
from pathlib import Path

import collectors.ingest as ingest_mod
from collectors.ingest import ingest_bundle
from collectors.store import Store

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


def test_a_bundle_partly_loaded_loads_only_its_new_files(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest_mod, "POOL_MIN_FILES", 8)
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

    fresh = tmp_path / "fresh.duckdb"
    with Store.open(fresh) as store:
        ingest_bundle(store, full, workers=1)
    assert _digest(db) == _digest(fresh)

"""Parsing in worker processes gives the store a serial ingest gives, file ids included."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from collectors.ingest import ingest_bundle
from collectors.parse_pool import POOL_MIN_FILES
from collectors.store import Store

BUNDLE = Path(__file__).resolve().parent.parent / "sample_traces" / "two_faults"


def table_digest(con, table: str) -> tuple:
    """Row count and an order-free hash of every column but the ingest time."""
    cols = [r[0] for r in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
        "AND column_name <> 'ingested_at' ORDER BY ordinal_position", [table]).fetchall()]
    quoted = ", ".join(f'"{c}"' for c in cols)
    return con.execute(f"SELECT count(*), sum(hash({quoted})) FROM {table}").fetchone()


TABLES = ("files", "samples", "text_samples", "events", "logs", "neighbors", "addresses",
          "ifmap", "jobs", "job_hosts", "rejects")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """two_faults plus a truncated gzip file and a file no parser reads."""
    root = tmp_path_factory.mktemp("pool") / "b"
    shutil.copytree(BUNDLE, root)
    good = (root / "nic" / "gpu-node-0001" / "eth0.ethtool.gz").read_bytes()
    (root / "nic" / "gpu-node-0001" / "eth9.ethtool.gz").write_bytes(good[: len(good) // 2])
    (root / "nic" / "gpu-node-0001" / "notes.bin").write_bytes(b"\x00\x01 not telemetry")
    assert sum(1 for p in root.rglob("*") if p.is_file()) >= POOL_MIN_FILES
    return root


def ingest(bundle: Path, db: Path, workers: int):
    with Store.open(db) as store:
        summary = ingest_bundle(store, bundle, workers=workers)
        digests = {t: table_digest(store.con, t) for t in TABLES}
    return summary, digests


def test_workers_load_the_same_rows_as_one_process(bundle, tmp_path):
    serial, serial_rows = ingest(bundle, tmp_path / "one.duckdb", workers=1)
    pooled, pooled_rows = ingest(bundle, tmp_path / "two.duckdb", workers=2)
    assert pooled_rows == serial_rows
    assert pooled.as_json()["files"] == serial.as_json()["files"]
    assert pooled.as_json()["skipped"] == serial.as_json()["skipped"] == [
        {"path": "nic/gpu-node-0001/notes.bin", "reason": "format not recognized by any parser"}]
    # the RDMA counters were named through ibdev2netdev, parsed by other workers before them
    with Store.open(tmp_path / "two.duckdb") as store:
        rdma = store.con.execute(
            "SELECT DISTINCT s.ifname FROM samples s JOIN files f USING (file_id) "
            "WHERE f.path LIKE '%mlx5_0.rdma.gz'").fetchall()
    assert rdma == [("eth0",)]
    # the truncated file: its complete records are loaded, the cut line and the end rejected
    cut = next(f for f in pooled.files if f.path.endswith("eth9.ethtool.gz"))
    assert cut.status == "loaded" and cut.loaded > 0 and cut.rejected >= 1
    assert cut.records_read == cut.loaded + cut.rejected
    assert cut.first_reject.startswith("nic/gpu-node-0001/eth9.ethtool.gz:")


def test_a_second_pooled_ingest_adds_nothing(bundle, tmp_path):
    db = tmp_path / "s.duckdb"
    _, first = ingest(bundle, db, workers=2)
    again, second = ingest(bundle, db, workers=2)
    assert second == first
    statuses = {f.status for f in again.files}
    assert statuses == {"unchanged", "skipped"}


def test_gzip_garbage_fails_the_file_not_the_ingest(bundle, tmp_path):
    root = tmp_path / "b"
    shutil.copytree(bundle, root)
    (root / "nic" / "gpu-node-0002" / "eth7.ethtool.gz").write_bytes(
        gzip.compress(b"x")[:10] + b"\xff" * 64)
    serial, serial_rows = ingest(root, tmp_path / "one.duckdb", workers=1)
    pooled, pooled_rows = ingest(root, tmp_path / "two.duckdb", workers=2)
    assert pooled_rows == serial_rows
    assert [f.as_json() for f in pooled.files] == [f.as_json() for f in serial.files]

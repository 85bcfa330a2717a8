"""Parsing in worker processes gives the store a serial ingest gives, file ids included."""

from __future__ import annotations

import gzip
import json
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import collectors.store.ingest as ingest_mod
from collectors.store.ingest import ingest_bundle, wants_pool
from collectors.store.pool import (
    IPC_MIN_ROWS,
    POOL_MAX_BYTES,
    POOL_MIN_FILES,
    Packed,
    ParsedFile,
    pack,
    unpack,
)
from collectors.store.writer import Store, open_readonly

BUNDLE = Path(__file__).resolve().parent.parent / "sample_traces" / "two_faults"
pytestmark = pytest.mark.usefixtures("pool_any_size")  # the pool on these small bundles


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
    """two_faults plus a truncated gzip file, a gzip file of garbage, a file no parser reads and
    a gnmic file big enough for its samples to travel as Arrow IPC."""
    root = tmp_path_factory.mktemp("pool") / "b"
    shutil.copytree(BUNDLE, root)
    big = root / "gnmi" / "leaf-99.event.jsonl"
    big.parent.mkdir(exist_ok=True)
    big.write_text(_gnmic_events(IPC_MIN_ROWS // 8 + 10))
    assert big.stat().st_size < POOL_MAX_BYTES
    good = (root / "nic" / "gpu-node-0001" / "eth0.ethtool.gz").read_bytes()
    (root / "nic" / "gpu-node-0001" / "eth9.ethtool.gz").write_bytes(good[: len(good) // 2])
    (root / "nic" / "gpu-node-0001" / "notes.bin").write_bytes(b"\x00\x01 not telemetry")
    (root / "nic" / "gpu-node-0002" / "eth7.ethtool.gz").write_bytes(GZIP_GARBAGE)
    assert sum(1 for p in root.rglob("*") if p.is_file()) >= POOL_MIN_FILES
    return root


GZIP_GARBAGE = gzip.compress(b"x")[:10] + b"\xff" * 64  # a gzip header, then no valid stream


def _gnmic_events(n: int) -> str:
    """`n` gnmic events of 8 counters each (one of them without a usable value)."""
    out = []
    for i in range(n):
        values = {f"/interfaces/interface/state/counters/c{j}": str(i * 8 + j) for j in range(8)}
        if i == 5:
            values["/interfaces/interface/state/counters/c3"] = "n/a"
        out.append(json.dumps({"name": "s", "timestamp": 1_700_000_000_000_000_000 + i * 10**9,
                               "tags": {"interface_name": f"swp{i % 32}", "source": "leaf-99"},
                               "values": values}))
    return "\n".join(out) + "\n"


def ingest(bundle: Path, db: Path, workers: int):
    with Store.open(db) as store:
        summary = ingest_bundle(store, bundle, workers=workers)
        digests = {t: table_digest(store.con, t) for t in TABLES}
    return summary, digests


@pytest.fixture(scope="module")
def ingested(bundle, tmp_path_factory) -> dict[int, tuple]:
    """`ingest` of the module's bundle (the pool at any size) once per worker count, 1 and 2:
    workers -> (summary, digests, store, the worker counts of the ParsePools it started). The
    tests compare them, or copy the store to write."""
    root = tmp_path_factory.mktemp("ingested")
    out = {}
    real = ingest_mod.ParsePool
    with pytest.MonkeyPatch.context() as env:
        env.setattr(ingest_mod, "POOL_MIN_BYTES", 0)  # as pool_any_size, for the module
        for workers in (1, 2):
            started: list[int] = []

            def spy(n: int, started=started):
                started.append(n)
                return real(n)

            env.setattr(ingest_mod, "ParsePool", spy)
            db = root / f"workers{workers}.duckdb"
            out[workers] = (*ingest(bundle, db, workers=workers), db, started)
    return out


def test_workers_load_the_same_rows_as_one_process(ingested):
    serial, serial_rows, _, _ = ingested[1]
    pooled, pooled_rows, pooled_db, _ = ingested[2]
    assert pooled_rows == serial_rows
    assert pooled.as_json()["files"] == serial.as_json()["files"]
    assert pooled.as_json()["skipped"] == serial.as_json()["skipped"] == [
        {"path": "nic/gpu-node-0001/notes.bin", "reason": "format not recognized by any parser"},
        {"path": "nic/gpu-node-0002/eth7.ethtool.gz",
         "reason": "empty file (nothing but blank space): nothing to load"}]
    # the RDMA counters were named through ibdev2netdev, parsed by other workers before them
    con = open_readonly(pooled_db)
    rdma = con.execute("SELECT DISTINCT s.ifname FROM samples s JOIN files f USING (file_id) "
                       "WHERE f.path LIKE '%mlx5_0.rdma.gz'").fetchall()
    con.close()
    assert rdma == [("eth0",)]
    # the truncated file: its complete records are loaded, the cut line and the end rejected
    cut = next(f for f in pooled.files if f.path.endswith("eth9.ethtool.gz"))
    assert cut.status == "loaded" and cut.loaded > 0 and cut.rejected >= 1
    assert cut.records_read == cut.loaded + cut.rejected
    assert cut.first_reject.startswith("nic/gpu-node-0001/eth9.ethtool.gz:")


def test_a_second_pooled_ingest_adds_nothing(bundle, ingested, tmp_path):
    _, first, pooled_db, _ = ingested[2]
    db = tmp_path / "s.duckdb"
    shutil.copy(pooled_db, db)  # the first pooled ingest's store
    again, second = ingest(bundle, db, workers=2)
    assert second == first
    statuses = {f.status for f in again.files}
    assert statuses == {"unchanged", "skipped"}


def test_gzip_garbage_fails_the_file_not_the_ingest(ingested):
    # the module's bundle holds the garbage: both ingests finished, and treat it alike
    serial, serial_rows, _, _ = ingested[1]
    pooled, pooled_rows, _, _ = ingested[2]
    assert pooled_rows == serial_rows and serial_rows["samples"][0] > 0
    assert [f.as_json() for f in pooled.files] == [f.as_json() for f in serial.files]
    garbage = [f for f in pooled.files if f.path == "nic/gpu-node-0002/eth7.ethtool.gz"]
    assert [(f.status, f.loaded) for f in garbage] == [("skipped", 0)]


def test_big_frames_travel_as_ipc_and_come_back_equal():
    big = pl.DataFrame({"ts": list(range(IPC_MIN_ROWS)), "device": ["leaf-01", None] * (
        IPC_MIN_ROWS // 2), "value": [0.5, float("nan")] * (IPC_MIN_ROWS // 2),
        "is_tail": [True, None] * (IPC_MIN_ROWS // 2)})
    small = big.head(IPC_MIN_ROWS - 1)
    rejects = {"line": [3], "reason": ["bad"], "raw": ["x"]}
    parsed = ParsedFile("a", "sha", "parsed", batches=[("samples", big), ("samples", small),
                                                       ("rejects", rejects)])
    sent = pickle.loads(pickle.dumps(pack(parsed)))
    assert [type(b) for _, b in sent.batches] == [Packed, pl.DataFrame, dict]
    back = unpack(sent).batches
    assert [t for t, _ in back] == ["samples", "samples", "rejects"]
    assert_frame_equal(back[0][1], big)
    assert_frame_equal(back[1][1], small)
    assert back[2][1] == rejects


@pytest.mark.parametrize("ids", [False, True])
def test_files_converted_together_keep_their_own_runs(ids):
    # two files of the same series, in one worker job: each file's samples come out as
    # `frame_of` gives them for that file alone (a run never crosses into the other file)
    from collectors.store.pool import convert_samples
    from collectors.store.writer import frame_of

    def batch(times, values, line0):
        cols = {"ts": [t * 10**9 for t in times], "device": ["leaf-1"] * len(times),
                "ifname": ["swp1"] * len(times), "metric": ["rx_bytes"] * len(times),
                "qualifier": [""] * len(times), "value": values,
                "line": list(range(line0, line0 + len(times)))}
        frame = pl.DataFrame(cols)
        return frame.with_columns(sid=pl.lit(7, pl.Int64)) if ids else cols

    a = [batch([0, 20, 40], [1.0, 3.0, 5.0], 1), batch([60], [7.0], 4)]
    b = [batch([10, 30], [20.0, 40.0], 1)]  # above the end of a: a run would go on
    parsed = [ParsedFile("a", "", "parsed", batches=[("samples", x) for x in a]),
              ParsedFile("x", "", "failed"),
              ParsedFile("b", "", "parsed", batches=[("samples", x) for x in b])]
    convert_samples(parsed, ["normalized", "normalized", "normalized"])
    for p, batches in ((parsed[0], a), (parsed[2], b)):
        [(table, got)] = p.batches
        alone = frame_of("samples", pl.concat([pl.DataFrame(x) for x in batches],
                                              how="vertical_relaxed"), "normalized")
        assert table == "samples"
        assert_frame_equal(got, alone)
    assert parsed[0].batches[0][1]["prev_gap_us"].to_list() == [None, 20_000_000, 20_000_000,
                                                                  20_000_000]


KILL_WITH_WORKERS = """
import multiprocessing, os, sys
import collectors.store.ingest as ingest_mod
import collectors.store.pool as pp
from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store

run = pp.ParsePool.run
def run_and_die(self, tasks, ahead=None):
    for parsed in run(self, tasks, ahead):  # the workers are up, with jobs in flight
        print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)
        os._exit(3)  # killed (not Ctrl-C): no pool shutdown
        yield parsed
pp.ParsePool.run = run_and_die
ingest_mod.POOL_MIN_BYTES = 0  # the pool on this small bundle
if __name__ == "__main__":
    ingest_bundle(Store.open(sys.argv[1]), sys.argv[2], workers=2)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\\nState:\\tZ" not in state  # a zombie has exited (its parent is gone too)


def test_workers_exit_when_the_ingesting_process_is_killed(bundle, tmp_path):
    script = tmp_path / "kill.py"
    script.write_text(KILL_WITH_WORKERS)
    out = tmp_path / "out.txt"
    with open(out, "w") as fh:  # a file, not a pipe: orphaned workers would hold a pipe open
        run = subprocess.run([sys.executable, str(script), str(tmp_path / "s.duckdb"),
                              str(bundle)], stdout=fh, stderr=subprocess.STDOUT, timeout=120,
                             cwd=Path(__file__).resolve().parent.parent)
    assert run.returncode == 3, out.read_text()
    pids = [int(p) for p in out.read_text().split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if _alive(p)]


def test_the_pool_starts_only_for_enough_bytes(bundle, monkeypatch):
    new = [(p, p.relative_to(bundle).as_posix(), "") for p in sorted(bundle.rglob("*"))
           if p.is_file()]
    small = sum(n for p, _, _ in new if (n := p.stat().st_size) < POOL_MAX_BYTES)
    monkeypatch.setattr(ingest_mod, "POOL_MIN_BYTES", small)
    assert wants_pool(2, new)
    assert not wants_pool(1, new)
    assert not wants_pool(2, new[: POOL_MIN_FILES - 1])
    monkeypatch.setattr(ingest_mod, "POOL_MIN_BYTES", small + 1)
    assert not wants_pool(2, new)


def test_a_small_bundle_on_two_workers_is_parsed_here(bundle, ingested, tmp_path, monkeypatch):
    monkeypatch.undo()  # the default threshold: this bundle is far below it
    assert sum(p.stat().st_size for p in bundle.rglob("*")) < ingest_mod.POOL_MIN_BYTES
    started = []
    real = ingest_mod.ParsePool

    def spy(workers: int):
        started.append(workers)
        return real(workers)

    monkeypatch.setattr(ingest_mod, "ParsePool", spy)
    here, here_rows = ingest(bundle, tmp_path / "here.duckdb", workers=2)
    assert started == []
    # the module's ingest on two workers with the pool at any size: it started one
    assert ingested[1][3] == [] and ingested[2][3] == [2]
    pooled, pooled_rows, _, _ = ingested[2]
    assert here_rows == pooled_rows
    assert here.as_json()["files"] == pooled.as_json()["files"]


def test_chunks_parsed_here_load_the_rows_of_a_file_by_file_ingest(bundle, ingested, tmp_path,
                                                                   monkeypatch):
    # one process both times: small files in chunks (`LocalPool`), or each streamed alone
    chunked, chunked_rows, _, _ = ingested[1]
    monkeypatch.setattr(ingest_mod, "POOL_MAX_BYTES", 0)  # no file for the chunks
    alone, alone_rows = ingest(bundle, tmp_path / "alone.duckdb", workers=1)
    assert chunked_rows == alone_rows
    assert chunked.as_json()["files"] == alone.as_json()["files"]
    assert alone_rows["samples"][0] > 0 and alone_rows["rejects"][0] > 0


def test_real_samples_load_the_same_rows_chunked_alone_and_pooled(real_samples, tmp_path,
                                                                  monkeypatch):
    # the conformance corpus as one bundle: chunks here, each file alone, worker processes
    chunked, chunked_rows = ingest(real_samples, tmp_path / "chunks.duckdb", workers=1)
    pooled, pooled_rows = ingest(real_samples, tmp_path / "pooled.duckdb", workers=2)
    monkeypatch.setattr(ingest_mod, "POOL_MAX_BYTES", 0)
    alone, alone_rows = ingest(real_samples, tmp_path / "alone.duckdb", workers=1)
    assert chunked_rows == alone_rows == pooled_rows
    assert chunked.as_json()["files"] == alone.as_json()["files"] == pooled.as_json()["files"]
    assert sum(f.status == "loaded" for f in alone.files) >= POOL_MIN_FILES

"""A big Python-bound file parsed in a child process loads what a parser thread loads, and a
child that fails or is killed fails its file cleanly (no rows, the error named)."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from test_parse_pool import TABLES, table_digest

import collectors.store.child as pc
import collectors.store.ingest as ingest_module
from collectors.core.source import SourceFile
from collectors.registry import parsers
from collectors.store.child import parse_in_child, wants_child
from collectors.store.ingest import ingest_bundle
from collectors.store.pool import POOL_MIN_FILES
from collectors.store.writer import Store

GNMIC_EVENT = next(p for p in parsers() if p.name == "gnmic_event")
TWO_FAULTS = Path(__file__).resolve().parent.parent / "sample_traces" / "two_faults"
T0 = 1_700_000_000_000_000_000


def _events(n: int) -> list[str]:
    """`n` gnmic events of 8 counters of one leaf's 16 ports."""
    return [json.dumps({"name": "s", "timestamp": T0 + (i // 16) * 10**10,
                        "tags": {"interface_name": f"swp{i % 16}", "source": "leaf-07:9339"},
                        "values": {f"/interfaces/interface/state/counters/c{j}": str(i * 8 + j)
                                   for j in range(8)}})
            for i in range(n)]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """One gnmic file with everything the one-by-one reader handles among plain events: a
    reject, text and enum values, a nested JSON string, a pretty-printed document, a blank
    line, json-format notifications."""
    root = tmp_path_factory.mktemp("child") / "b"
    (root / "gnmi").mkdir(parents=True)
    lines = _events(60_000)
    lines[10] = "{not json"
    lines[20] = json.dumps({"name": "s", "timestamp": T0, "tags": {
        "interface_name": "swp1", "source": "leaf-07"}, "values": {
        "/interfaces/interface/state/oper-status": "UP",
        "/interfaces/interface/state/description": "to spine-01",
        "/interfaces/interface/state/counters/in-octets": "n/a",
        "/system/state/blob": "{\"a\": {\"b\": 3}}"}})
    lines[30] = json.dumps({"name": "s", "timestamp": T0, "tags": {"source": "leaf-07"},
                            "values": {"/interfaces/interface/state/counters/c0": "1"}},
                           indent=2)
    lines[40] = ""
    lines[50] = json.dumps({"source": "leaf-07", "timestamp": T0, "prefix":
                            "interfaces/interface[name=swp3]", "updates": [
                                {"Path": "state/counters/in-octets",
                                 "values": {"state/counters/in-octets": "42"}}]})
    (root / "gnmi" / "leaf-07.event.jsonl").write_text("\n".join(lines) + "\n")
    return root


def _ingest(bundle: Path, db: Path, workers: int) -> tuple[list, dict]:
    with Store.open(db) as store:
        summary = ingest_bundle(store, bundle, workers=workers, totals=False)
        files = [(f.as_json(), f.first_reject) for f in summary.files]
        return files, {t: table_digest(store.con, t) for t in TABLES}


@pytest.fixture
def children(monkeypatch) -> list[str]:
    """The files ingest parses in a child, as it starts them."""
    started: list[str] = []

    @contextmanager
    def counted(*args):
        with parse_in_child(*args) as parsed:
            started.append(args[1].rel)
            yield parsed

    monkeypatch.setattr(ingest_module, "parse_in_child", counted)
    return started


def test_a_file_parsed_in_a_child_loads_what_a_thread_loads(bundle, tmp_path, monkeypatch,
                                                              children):
    monkeypatch.setattr(pc, "CHILD_MIN_BYTES", 0)
    path = bundle / "gnmi" / "leaf-07.event.jsonl"
    assert wants_child(GNMIC_EVENT, path.stat().st_size, workers=2)
    assert not wants_child(GNMIC_EVENT, path.stat().st_size, workers=1)
    assert not wants_child(next(p for p in parsers() if p.name == "prom_text"), 1 << 30, 2)
    thread, thread_rows = _ingest(bundle, tmp_path / "thread.duckdb", workers=1)
    assert children == []
    child, child_rows = _ingest(bundle, tmp_path / "child.duckdb", workers=2)
    assert children == ["gnmi/leaf-07.event.jsonl"]
    assert child_rows == thread_rows
    assert child == thread
    [(f, first_reject)] = child
    assert f["rejected"] >= 1 and f["records_read"] == f["loaded"] + f["rejected"]
    assert first_reject.startswith("gnmi/leaf-07.event.jsonl:11:")
    with Store.open(tmp_path / "child.duckdb") as store:
        con = store.con
        assert con.execute("SELECT count(*) FROM text_samples WHERE metric = 'description'"
                           ).fetchone() == (1,)
        assert con.execute("SELECT value FROM samples WHERE metric = 'oper-status'"
                           ).fetchall() == [(1.0,)]
        # the rows of the file's last batches are there, with their lines (the indented
        # document took 10 lines)
        assert con.execute("SELECT max(line) FROM samples").fetchone() == (60_009,)


def _child_pids() -> set[int]:
    return {p.pid for p in multiprocessing.active_children() if p.name.startswith("fabtwin-parse")}


def test_a_killed_child_fails_the_file_and_leaves_no_rows(bundle, tmp_path):
    src = SourceFile(bundle / "gnmi" / "leaf-07.event.jsonl", "gnmi/leaf-07.event.jsonl")
    died = "gnmi/leaf-07.event.jsonl: the parsing process ended without finishing the file"
    with Store.open(tmp_path / "s.duckdb") as store:
        with (pytest.raises(RuntimeError, match=died),
              parse_in_child(GNMIC_EVENT, src, "", {}, {}) as parsed):
            batches = parsed.batches

            def killed_after_one():
                first = next(batches)
                for pid in _child_pids():
                    os.kill(pid, signal.SIGKILL)
                yield first
                yield from batches

            parsed.batches = killed_after_one()
            store.ingest_file(GNMIC_EVENT, src, "sha", parsed=parsed)
        assert store.con.execute("SELECT count(*) FROM samples").fetchone() == (0,)
        assert store.con.execute("SELECT count(*) FROM files").fetchone() == (0,)
    assert not _child_pids()


def test_the_childs_exception_is_raised_here_with_its_type(tmp_path):
    src = SourceFile(tmp_path / "gone.event.jsonl", "gnmi/gone.event.jsonl")
    with (parse_in_child(GNMIC_EVENT, src, "", {}, {}) as parsed,
          pytest.raises(FileNotFoundError, match="gone.event.jsonl")):
        list(parsed.batches)


def test_leaving_early_stops_the_child(bundle):
    src = SourceFile(bundle / "gnmi" / "leaf-07.event.jsonl", "gnmi/leaf-07.event.jsonl")
    with parse_in_child(GNMIC_EVENT, src, "", {}, {}) as parsed:
        next(parsed.batches)
        assert _child_pids()
    deadline = time.monotonic() + 5
    while _child_pids() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _child_pids()


def test_a_child_beside_the_pool_keeps_the_serial_store(bundle, tmp_path, monkeypatch,
                                                        children):
    # a bundle big enough for the pool, whose gnmic file goes to a child: file ids and every
    # table as one process would write them
    root = tmp_path / "b"
    shutil.copytree(TWO_FAULTS, root)
    shutil.copy(bundle / "gnmi" / "leaf-07.event.jsonl", root / "gnmi" / "leaf-07.event.jsonl")
    size = (root / "gnmi" / "leaf-07.event.jsonl").stat().st_size
    monkeypatch.setattr(ingest_module, "POOL_MAX_BYTES", size)  # the pool leaves it here
    monkeypatch.setattr(ingest_module, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(pc, "CHILD_MIN_BYTES", size)
    serial, serial_rows = _ingest(root, tmp_path / "one.duckdb", workers=1)
    assert children == []
    pooled, pooled_rows = _ingest(root, tmp_path / "two.duckdb", workers=2)
    assert children == ["gnmi/leaf-07.event.jsonl"]
    assert sum(1 for p in root.rglob("*") if p.is_file()) >= POOL_MIN_FILES
    assert pooled_rows == serial_rows
    assert pooled == serial

"""Bundle-level reading under hostile or damaged input (issue 19): symbolic links out of the
bundle, damaged gzip streams, files that grew between two collections, records and documents
too big to hold, a full disk, Ctrl-C and a killed worker, and a fuzz of whole bundles."""

from __future__ import annotations

import errno
import gzip
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import zlib
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import collectors.core.streams as streams
from collectors.core.source import Sink, SourceFile, run_parser
from collectors.formats.clab import ClabParser
from collectors.store.ingest import BundleError, ingest_bundle
from collectors.store.pool import ParsePool
from collectors.store.writer import Store
from fabtwin.cli import main

REPO = Path(__file__).resolve().parents[1]


def syslog(start: int, n: int, host: str = "leaf-1") -> str:
    """`n` SONiC oper-status lines (RFC 5424), one event each, from second `start`."""
    return "".join(
        f"<13>1 2026-11-30T03:{(start + i) // 60:02d}:{(start + i) % 60:02d}.000000+00:00 {host} "
        f"orchagent - - -  :- setHostIntfsOperStatus: Set operation status "
        f"{'DOWN' if i % 2 else 'UP'} to host interface Ethernet{i % 8}\n" for i in range(n))


def prom(start: int, n: int) -> str:
    """`n` Prometheus samples with timestamps, one record a line."""
    return "".join(f'nvswitch_interface_if_in_octets{{instance="leaf-1:9100",interface="swp{i % 4}"}} '
                   f"{1000 * (start + i)} {1_764_500_000_000 + 1000 * (start + i)}\n"
                   for i in range(n))


def consistent(con) -> None:
    """The store's invariants: no half-loaded file, per-file accounting, rows only of files
    listed as loaded, as many as each file's `rows_written`."""
    def one(query: str) -> tuple:
        (row,) = con.execute(query).fetchall()  # fetched to the end: the connection is free
        return row

    assert one("SELECT count(*) FROM files WHERE status = 'loading'") == (0,)
    assert one("SELECT count(*) FROM files WHERE status = 'loaded' "
               "AND records_read <> loaded + rejected") == (0,)
    tables = ("samples", "text_samples", "events", "logs", "neighbors", "addresses", "ifmap",
              "jobs", "job_hosts")
    rows = " + ".join(f"(SELECT count(*) FROM {t} x WHERE x.file_id = f.file_id)" for t in tables)
    bad = con.execute(f"SELECT path, rows_written, {rows} FROM files f WHERE status = 'loaded' "
                      f"AND rows_written <> {rows}").fetchall()
    assert bad == []
    for t in (*tables, "rejects"):
        assert one(f"SELECT count(*) FROM {t} WHERE file_id NOT IN "
                   "(SELECT file_id FROM files WHERE status = 'loaded')") == (0,), t
    assert one("SELECT count(*) FROM files f WHERE status = 'loaded' AND rejected <> "
               "(SELECT count(*) FROM rejects r WHERE r.file_id = f.file_id)") == (0,)


# -- 1. symbolic links -------------------------------------------------------------------------

@pytest.fixture
def linked(tmp_path: Path) -> tuple[Path, Path]:
    """A bundle whose links point out of it (a file, a folder), inside it, nowhere; a FIFO."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.log").write_text(syslog(0, 5, "outsider"))
    b = tmp_path / "b"
    (b / "syslog").mkdir(parents=True)
    (b / "syslog" / "leaf-1.log").write_text(syslog(0, 2))
    (b / "syslog" / "out.log").symlink_to(outside / "secret.log")
    (b / "syslog" / "same.log").symlink_to("leaf-1.log")
    (b / "etc").symlink_to(outside)
    (b / "broken").symlink_to(tmp_path / "nowhere")
    os.mkfifo(b / "fifo")  # reading it would block for ever
    return b, outside


def test_links_out_of_the_bundle_are_listed_and_never_read(linked, tmp_path):
    b, outside = linked
    with Store.open(tmp_path / "s.duckdb") as store:
        summary = ingest_bundle(store, b, workers=1)
        skipped = {f.path: f.reason for f in summary.skipped}
        assert set(skipped) == {"syslog/out.log", "syslog/same.log", "etc", "broken", "fifo"}
        assert skipped["syslog/out.log"] == (
            f"a symbolic link to the file {outside / 'secret.log'}, outside the bundle: not read "
            "(--follow-symlinks reads it)")
        assert "read under its own name" in skipped["syslog/same.log"]  # not loaded twice
        assert "outside the bundle" in skipped["etc"] and "broken" in skipped["broken"]
        assert "FIFO" in skipped["fifo"]
        con = store.con
        assert con.execute("SELECT count(*) FROM logs").fetchone() == (2,)
        assert con.execute("SELECT count(*) FROM logs WHERE message LIKE '%outsider%' "
                           "OR device = 'outsider'").fetchone() == (0,)
        # users see them in `files`, with no content hash: the targets were never opened
        listed = con.execute("SELECT path, sha256, status FROM files WHERE status = 'skipped' "
                             "ORDER BY path").fetchall()
        assert listed == [(p, "", "skipped") for p in sorted(skipped)]
        again = ingest_bundle(store, b, workers=1)  # listed once, not once per ingest
        assert len(again.skipped) == 5
        assert con.execute("SELECT count(*) FROM files WHERE status = 'skipped'").fetchone() == (5,)
        consistent(con)


def test_follow_symlinks_reads_outside_targets_once(linked, tmp_path):
    b, _ = linked
    with Store.open(tmp_path / "s.duckdb") as store:
        summary = ingest_bundle(store, b, workers=1, follow_symlinks=True)
        loaded = sorted(f.path for f in summary.files if f.status == "loaded")
        # etc/ is followed; out.log names a file read there already
        assert loaded == ["etc/secret.log", "syslog/leaf-1.log"]
        assert store.con.execute("SELECT count(*) FROM logs WHERE device = 'outsider'"
                                 ).fetchone() == (5,)


def test_cli_lists_the_skipped_links(linked, tmp_path):
    b, _ = linked
    out = CliRunner().invoke(main, ["ingest", str(b), "--db", str(tmp_path / "s.duckdb"), "-q"])
    assert out.exit_code == 0, out.output
    assert "skipped  syslog/out.log: a symbolic link to the file" in out.output


def test_a_manifest_linked_from_outside_is_refused(tmp_path):
    (tmp_path / "m.json").write_text('{"year": 2026}')
    b = tmp_path / "b"
    b.mkdir()
    (b / "manifest.json").symlink_to(tmp_path / "m.json")
    with Store.open(":memory:") as store, pytest.raises(BundleError, match="outside the bundle"):
        ingest_bundle(store, b, workers=1)


# -- 2. damaged gzip ----------------------------------------------------------------------------

def test_truncated_gzip_loads_every_complete_line_and_counts_the_break(tmp_path):
    data = gzip.compress(prom(0, 4000).encode(), compresslevel=1)
    cut = data[: len(data) // 2]
    complete = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(cut).count(b"\n")
    (tmp_path / "b" / "prom").mkdir(parents=True)
    (tmp_path / "b" / "prom" / "x.prom.gz").write_bytes(cut)
    db = tmp_path / "s.duckdb"
    out = CliRunner().invoke(main, ["ingest", str(tmp_path / "b"), "--db", str(db), "-q"])
    assert out.exit_code == 0, out.output  # a counted reject, as any other
    assert f"partial  prom/x.prom.gz:{complete + 1}: compressed stream is truncated" in out.output
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT records_read, loaded, rejected FROM files").fetchone() == (
        complete + 1, complete, 1)
    assert con.execute("SELECT count(*) FROM samples").fetchone() == (complete,)
    line, reason = con.execute("SELECT line, reason FROM rejects").fetchone()
    assert line == complete + 1
    assert reason == (f"compressed stream is truncated (it ends before its end marker); the "
                      f"{complete} complete lines before it were read")
    con.close()
    strict = CliRunner().invoke(main, ["ingest", str(tmp_path / "b"), "--db",
                                       str(tmp_path / "t.duckdb"), "-q", "--strict"])
    assert strict.exit_code == 4


def test_corrupt_gzip_keeps_what_came_before_the_damage(tmp_path):
    data = bytearray(gzip.compress(prom(0, 4000).encode(), compresslevel=1))
    mid = len(data) // 2
    data[mid:mid + 64] = bytes(range(64))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.prom.gz").write_bytes(bytes(data))
    with Store.open(":memory:") as store:
        (f,) = ingest_bundle(store, tmp_path / "b", workers=1).files
        assert f.status == "loaded" and f.loaded > 1000 and f.broken
        assert "compressed stream is corrupt" in f.broken
        assert f.records_read == f.loaded + f.rejected
        consistent(store.con)


def test_concatenated_members_and_zero_padding_are_read_whole(tmp_path):
    (tmp_path / "b").mkdir()
    data = gzip.compress(prom(0, 300).encode()) + gzip.compress(prom(300, 200).encode())
    (tmp_path / "b" / "x.prom.gz").write_bytes(data + b"\0" * 100)
    with Store.open(":memory:") as store:
        (f,) = ingest_bundle(store, tmp_path / "b", workers=1).files
        assert (f.loaded, f.rejected, f.broken) == (500, 0, None)


# -- 3. a file that grew -----------------------------------------------------------------------

def _rows(con) -> dict[str, list]:
    return {
        "events": con.execute("SELECT ts, device, ifname, kind, message FROM events ORDER BY ALL").fetchall(),
        "logs": con.execute("SELECT ts, device, program, message FROM logs ORDER BY ALL").fetchall(),
        "samples": con.execute("SELECT ts, device, ifname, counter, value FROM samples ORDER BY ALL").fetchall(),
        "rejects": con.execute("SELECT path, line, reason FROM rejects ORDER BY ALL").fetchall(),
    }


def test_a_grown_file_supersedes_its_earlier_version(tmp_path):
    b = tmp_path / "b"
    (b / "syslog").mkdir(parents=True)
    (b / "prom").mkdir()
    (b / "syslog" / "leaf-1.log").write_text(syslog(0, 7))
    (b / "prom" / "c.prom").write_text(prom(0, 5))
    with Store.open(tmp_path / "s.duckdb") as store:
        ingest_bundle(store, b, workers=1)
        with open(b / "syslog" / "leaf-1.log", "a") as fh:
            fh.write(syslog(7, 6) + "not a syslog line\n")
        with open(b / "prom" / "c.prom", "a") as fh:
            fh.write(prom(5, 4))
        summary = ingest_bundle(store, b, workers=1)
        assert sorted(f.path for f in summary.files if f.superseded) == ["prom/c.prom",
                                                                          "syslog/leaf-1.log"]
        grown = _rows(store.con)
        assert store.con.execute("SELECT status, count(*) FROM files GROUP BY 1 ORDER BY 1"
                                 ).fetchall() == [("loaded", 2), ("superseded", 2)]
        consistent(store.con)
    with Store.open(tmp_path / "once.duckdb") as once:  # one ingest of the grown files
        ingest_bundle(once, b, workers=1)
        assert grown == _rows(once.con)
    assert len(grown["events"]) == 13 and len(grown["logs"]) == 13 and len(grown["samples"]) == 9


def test_the_same_path_in_another_bundle_is_not_a_new_version(tmp_path):
    for name, start in (("hour3", 0), ("hour4", 100)):
        (tmp_path / name / "syslog").mkdir(parents=True)
        (tmp_path / name / "syslog" / "leaf-1.log").write_text(syslog(start, 4))
    with Store.open(":memory:") as store:
        ingest_bundle(store, tmp_path / "hour3", workers=1)
        summary = ingest_bundle(store, tmp_path / "hour4", workers=1)
        assert [f.superseded for f in summary.files] == [[]]
        assert store.con.execute("SELECT count(*) FROM logs").fetchone() == (8,)


def test_a_grown_copy_elsewhere_supersedes_the_version_it_starts_with(tmp_path):
    (tmp_path / "day1" / "syslog").mkdir(parents=True)
    (tmp_path / "day1" / "syslog" / "leaf-1.log").write_text(syslog(0, 4))
    with Store.open(":memory:") as store:
        ingest_bundle(store, tmp_path / "day1", workers=1)
        shutil.copytree(tmp_path / "day1", tmp_path / "day2")
        with open(tmp_path / "day2" / "syslog" / "leaf-1.log", "a") as fh:
            fh.write(syslog(4, 3))
        (f,) = ingest_bundle(store, tmp_path / "day2", workers=1).files
        assert f.superseded == [1]
        assert store.con.execute("SELECT count(*) FROM logs").fetchone() == (7,)


def test_a_grown_file_supersedes_its_earlier_version_in_a_lake_too(tmp_path):
    from collectors.store.lakeread import open_lake

    b = tmp_path / "b"
    (b / "syslog").mkdir(parents=True)
    (b / "syslog" / "leaf-1.log").write_text(syslog(0, 4))
    (b / "syslog" / "spine-1.log").write_text(syslog(50, 2))  # unchanged: its rows stay
    lake = tmp_path / "lake"
    lake.mkdir()
    assert CliRunner().invoke(main, ["ingest", str(b), "--db", str(lake), "-q"]).exit_code == 0
    with open(b / "syslog" / "leaf-1.log", "a") as fh:
        fh.write(syslog(4, 3))
    out = CliRunner().invoke(main, ["ingest", str(b), "--db", str(lake), "-q"])
    assert out.exit_code == 0, out.output
    once = tmp_path / "once"  # one ingest of the grown bundle, into a new lake
    once.mkdir()
    assert CliRunner().invoke(main, ["ingest", str(b), "--db", str(once), "-q"]).exit_code == 0
    con, ref = open_lake(lake), open_lake(once)
    try:
        assert _rows(con) == _rows(ref)
        assert len(_rows(con)["logs"]) == 9  # 7 lines of the grown file, 2 of the other
        assert con.execute("SELECT path, status FROM files ORDER BY file_id").fetchall() == [
            ("syslog/leaf-1.log", "superseded"), ("syslog/spine-1.log", "loaded"),
            ("syslog/leaf-1.log", "loaded")]
    finally:
        con.close()
        ref.close()
    # the rewritten Parquet files replaced the old ones: nothing unlisted is left behind
    listed = {f for t in json.loads((lake / "lake.json").read_text())["tables"].values()
              for f in t["files"]}
    assert {p.relative_to(lake).as_posix() for p in lake.rglob("*.parquet")} == listed


# -- 4. bounded reading --------------------------------------------------------------------------

def _capped_ingest(bundle: Path, db: Path) -> tuple[int, str, int]:
    """`fabtwin ingest` in a child whose address space is capped at 3 GB (a regression fails
    with MemoryError instead of taking the machine): exit code, output, peak RSS in MB."""
    code = ("import resource, sys\n"
            "cap = 3 << 30\n"
            "resource.setrlimit(resource.RLIMIT_AS, (cap, cap))\n"
            "from fabtwin.cli import main\n"
            "try:\n"
            "    main(sys.argv[1:])\n"
            "except SystemExit as exc:\n"
            "    rc = exc.code or 0\n"
            # VmHWM, not ru_maxrss: that one keeps the forked test process's size across exec
            "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
            "print('MAXRSS', hwm.split()[1], file=sys.stderr)\n"
            "sys.exit(rc)\n")
    # few malloc arenas and polars threads: each reserves address space it never touches
    env = {**os.environ, "PYTHONPATH": str(REPO), "POLARS_MAX_THREADS": "1",
           "MALLOC_ARENA_MAX": "2"}
    r = subprocess.run([sys.executable, "-c", code, "ingest", str(bundle), "--db", str(db), "-q",
                        "--workers", "1"], capture_output=True, text=True, env=env, timeout=120)
    rss = int(r.stderr.rsplit("MAXRSS", 1)[1].split()[0]) if "MAXRSS" in r.stderr else 0
    return r.returncode, r.stdout + r.stderr, rss // 1024


BOMB = """topology:
  nodes:
    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
    b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
    c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
    d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
    e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
    f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
    g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
    h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
    i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
    leaf1: {mgmt-ipv4: *i}
  links: []
"""


def test_a_yaml_alias_bomb_is_one_reject_in_bounded_memory(tmp_path):
    (tmp_path / "b" / "topology").mkdir(parents=True)
    (tmp_path / "b" / "topology" / "lab.clab.yml").write_text(BOMB)
    rc, out, rss = _capped_ingest(tmp_path / "b", tmp_path / "s.duckdb")
    assert rc == 0, out
    assert "rejected 1 of 1 records in topology/lab.clab.yml" in out
    assert "YAML aliases expand to 926,177,123 nodes" in out
    assert rss < 500, rss


def test_huge_lines_are_one_reject_each_and_never_held(tmp_path):
    b = tmp_path / "b"
    (b / "syslog").mkdir(parents=True)
    line = syslog(0, 1)
    (b / "syslog" / "leaf-1.log").write_text(line + "x" * (50 << 20) + "\n" + syslog(1, 1))
    z = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # 256 MiB in one line, 256 KB
    with open(b / "p.prom.gz", "wb") as fh:
        fh.write(z.compress(prom(0, 2).encode()))
        for _ in range(16):
            fh.write(z.compress(b"a" * (16 << 20)))
        fh.write(z.compress(b"\n" + prom(2, 1).encode()) + z.flush())
    assert (b / "p.prom.gz").stat().st_size < 1 << 20
    rc, out, rss = _capped_ingest(b, tmp_path / "s.duckdb")
    assert rc == 0, out
    assert ("syslog/leaf-1.log:2: line longer than 8 MiB (the maximum record size): skipped "
            "unread") in out
    assert "p.prom.gz:3: line longer than 8 MiB" in out
    assert "records  7 read = 5 loaded + 2 rejected" in out
    assert rss < 500, rss


@pytest.fixture
def small_limits(monkeypatch):
    # the streams read the limits (collectors.core.streams); source re-exports them
    monkeypatch.setattr(streams, "MAX_RECORD_BYTES", 64)
    monkeypatch.setattr(streams, "_READ_CHUNK", 16)
    monkeypatch.setattr(streams, "MAX_DOCUMENT_CHARS", 300)


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(0, 150), min_size=0, max_size=12), end=st.booleans(),
       gz=st.booleans())
def test_lines_over_the_maximum_read_as_empty_ones_numbers_kept(lengths, end, gz):
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
        mp.setattr(streams, "MAX_RECORD_BYTES", 64)
        mp.setattr(streams, "_READ_CHUNK", 16)
        lines = [(str(i) * 200)[:n] for i, n in enumerate(lengths)]
        data = ("\n".join(lines) + ("\n" if end and lines else "")).encode()
        path = Path(tmp) / "f"
        path.write_bytes(gzip.compress(data) if gz else data)
        src = SourceFile(path, "f")
        got = [text for _, text in src.lines()]
        lines = data.decode().split("\n")
        if lines[-1] == "":  # after the last line's terminator, or an empty file
            lines.pop()
        assert got == [t if len(t) <= 64 else "" for t in lines]
        assert src.long_lines == [i + 1 for i, t in enumerate(lines) if len(t) > 64]
        assert src.read_error is None


def test_a_document_over_the_maximum_is_cut_and_counted(small_limits, tmp_path):
    text = "topology:\n  nodes:\n" + "".join(f"    n{i}: {{}}\n" for i in range(40))
    (tmp_path / "lab.clab.yml").write_text(text)
    src = SourceFile(tmp_path / "lab.clab.yml", "lab.clab.yml")
    sink = Sink()
    run_parser(ClabParser(), src, sink)
    assert sink.loaded + sink.rejected >= 1
    cut = [r for r in sink.rejects if "the rest was not read" in r[1]]
    assert len(cut) == 1 and sink.ended_early and cut[0][0] == text[:300].count("\n") + 1


# -- 5. errors a person can act on --------------------------------------------------------------

def _bundle(tmp_path: Path, files: int = 3) -> Path:
    b = tmp_path / "b"
    (b / "syslog").mkdir(parents=True)
    for i in range(files):
        (b / "syslog" / f"leaf-{i}.log").write_text(syslog(10 * i, 5, f"leaf-{i}"))
    return b


@pytest.mark.parametrize("error", [
    duckdb.IOException("IO Error: Could not write file \"s.duckdb.wal\": No space left on device"),
    OSError(errno.ENOSPC, "No space left on device"),
])
def test_a_full_disk_is_one_line_and_exit_2(tmp_path, monkeypatch, error):
    b = _bundle(tmp_path)
    calls = []

    def full(self, *args):
        calls.append(1)
        raise error

    monkeypatch.setattr(Store, "_insert_frame", full)
    db = tmp_path / "s.duckdb"
    out = CliRunner().invoke(main, ["ingest", str(b), "--db", str(db), "-q", "--workers", "1"])
    assert calls and out.exit_code == 2, out.output
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("fabtwin: error: ") and "Traceback" not in out.output
    assert str(db) in line and ("out of disk" in line or "no space left" in line)
    monkeypatch.undo()
    with duckdb.connect(str(db), read_only=True) as con:
        consistent(con)


def test_ctrl_c_is_one_line_exit_130_and_keeps_the_files_that_finished(tmp_path, monkeypatch):
    import collectors.store.writer as store_mod

    b = _bundle(tmp_path, 4)
    monkeypatch.setattr(store_mod, "GROUP_FILES", 1)  # each file commits alone
    real = Store._insert_frame
    calls = []

    def interrupted(self, table, family, frame):
        calls.append(table)
        if len(calls) == 5:  # inside the third file's insert
            raise KeyboardInterrupt
        return real(self, table, family, frame)

    monkeypatch.setattr(Store, "_insert_frame", interrupted)
    db = tmp_path / "s.duckdb"
    out = CliRunner().invoke(main, ["ingest", str(b), "--db", str(db), "-q", "--workers", "1"])
    assert out.exit_code == 130, out.output
    assert out.stderr.strip() == ("fabtwin: error: interrupted; the store keeps the files loaded "
                                  "before it; the same ingest again loads the rest")
    monkeypatch.undo()
    with duckdb.connect(str(db), read_only=True) as con:
        consistent(con)
        assert con.execute("SELECT count(*) FROM files WHERE status = 'loaded'").fetchone() == (2,)
    again = CliRunner().invoke(main, ["ingest", str(b), "--db", str(db), "-q", "--json"])
    summary = json.loads(again.output)
    assert (summary["files_unchanged"], summary["files_loaded"]) == (2, 2)
    assert summary["store"]["logs"] == 20


def test_a_worker_killed_from_outside_is_one_line(tmp_path, monkeypatch, pool_any_size):
    b = _bundle(tmp_path, 40)  # enough files for the pool
    real = ParsePool.run

    def run_after_a_kill(self, tasks, ahead=None):
        for proc in list(self._pool._processes.values())[:1]:
            os.kill(proc.pid, signal.SIGKILL)
            proc.join()
        yield from real(self, tasks, ahead)

    monkeypatch.setattr(ParsePool, "run", run_after_a_kill)
    _ingest_with_a_death(b, tmp_path / "s.duckdb", monkeypatch).close()


def _ingest_with_a_death(b: Path, db: Path, monkeypatch) -> duckdb.DuckDBPyConnection:
    """`fabtwin ingest` on two workers while one process dies: one line, exit 1, the store
    consistent (returned, read-only, for more checks)."""
    out = CliRunner().invoke(main, ["ingest", str(b), "--db", str(db), "-q", "--workers", "2"])
    assert out.exit_code == 1, out.output
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("fabtwin: error: a parsing worker process died")
    monkeypatch.undo()
    con = duckdb.connect(str(db), read_only=True)
    consistent(con)
    return con


def test_the_child_parsing_a_big_file_killed_is_one_line(tmp_path, monkeypatch):
    import collectors.store.child as child_mod
    import collectors.store.ingest as ingest_mod

    b = _bundle(tmp_path, 2)
    (b / "gnmi").mkdir()
    (b / "gnmi" / "leaf-1.json").write_text("".join(
        json.dumps({"name": "sub", "timestamp": 1_764_500_000_000_000_000 + i,
                    "tags": {"source": "leaf-1", "interface_name": "swp1"},
                    "values": {"/interfaces/interface/state/counters/in-octets": str(i)}}) + "\n"
        for i in range(2000)))
    monkeypatch.setattr(child_mod, "CHILD_MIN_BYTES", 0)  # this small file goes to a child
    monkeypatch.setattr(ingest_mod, "POOL_MAX_BYTES", 0)  # (not to the chunks of small files)
    real = child_mod.parse_in_child

    @contextmanager
    def killed(*args, **kwargs):
        with real(*args, **kwargs) as parsed:  # the child is still importing: not done yet
            for proc in multiprocessing.active_children():
                if proc.name.startswith("fabtwin-parse"):
                    os.kill(proc.pid, signal.SIGKILL)
            yield parsed

    monkeypatch.setattr(ingest_mod, "parse_in_child", killed)
    with _ingest_with_a_death(b, tmp_path / "s.duckdb", monkeypatch) as con:
        assert con.execute("SELECT count(*) FROM files WHERE path LIKE 'gnmi/%'").fetchall() == [
            (0,)]


# -- 6. fuzz of whole bundles --------------------------------------------------------------------

GOOD = [syslog(0, 3).encode(), prom(0, 5).encode(), b"ts,device,ifname,counter,value\n"
        b"1767225600,leaf-1,swp1,rx_bytes,1\n", BOMB.encode(), b"NIC statistics:\n     rx_bytes: 1\n"]


@st.composite
def entries(draw):
    body = draw(st.sampled_from(GOOD))
    kind = draw(st.sampled_from(["plain", "gzip", "cut-gzip", "junk", "empty", "flip"]))
    if kind == "gzip":
        body = gzip.compress(body)
    elif kind == "cut-gzip":
        data = gzip.compress(body)
        body = data[: draw(st.integers(0, len(data) - 1))]
    elif kind == "junk":
        body = draw(st.binary(max_size=200))
    elif kind == "empty":
        body = b""
    elif kind == "flip":
        at = draw(st.integers(0, max(len(body) - 1, 0)))
        body = body[:at] + bytes([draw(st.integers(0, 255))]) + body[at + 1:]
    depth = draw(st.integers(0, 4))
    folder = "/".join(draw(st.sampled_from(["syslog", "prom", "nic", "a", "deep"]))
                      for _ in range(depth))
    link = draw(st.sampled_from([None, None, "inside", "outside", "broken"]))
    return folder, body, link


@pytest.fixture(scope="module")
def fuzz_store():
    """One store for every example (opening one costs 0.5 s): later bundles meet earlier
    versions of their paths, so superseding is fuzzed too."""
    with Store.open(":memory:") as store:
        yield store


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.lists(entries(), min_size=1, max_size=6))
def test_fuzzed_bundles_never_crash_and_keep_the_store_consistent(fuzz_store, files):
    store = fuzz_store
    with tempfile.TemporaryDirectory() as tmp:
        root, outside = Path(tmp) / "b", Path(tmp) / "outside.log"
        outside.write_text(syslog(0, 3, "outsider"))
        for i, (folder, body, link) in enumerate(files):
            where = root / folder if folder else root
            where.mkdir(parents=True, exist_ok=True)
            (where / f"f{i}.log").write_bytes(body)
            if link == "inside":
                (where / f"l{i}.log").symlink_to(f"f{i}.log")
            elif link == "outside":
                (where / f"l{i}.log").symlink_to(outside)
            elif link == "broken":
                (where / f"l{i}.log").symlink_to(Path(tmp) / "none")
        summary = ingest_bundle(store, root, workers=1)
        links = sum(link is not None for _, _, link in files)
        assert len(summary.files) == len(files) + links
        assert all(f.records_read == f.loaded + f.rejected for f in summary.files)
        assert not [f for f in summary.files if f.status == "failed"]
        assert store.con.execute("SELECT count(*) FROM logs WHERE device = 'outsider'"
                                 ).fetchone() == (0,)
        consistent(store.con)

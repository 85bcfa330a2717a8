"""The `fabtwin ingest` and `fabtwin sql` commands as scripts use them."""

from __future__ import annotations

import json
import subprocess
import sys

import duckdb
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from fabtwin.cli import main

T0 = 1_767_225_600


@pytest.fixture
def db(tmp_path, write):
    rows = "\n".join(f"{T0 + 10 * i},leaf-{i % 2},swp1,rx_bytes,{1000 * i}" for i in range(20))
    write("b/c.csv", "ts,device,ifname,counter,value\n" + rows + "\nbroken line\n")
    path = tmp_path / "s.duckdb"
    out = CliRunner().invoke(main, ["ingest", str(tmp_path / "b"), "--db", str(path), "--json"])
    assert out.exit_code == 0, out.output
    return path, json.loads(out.output)


def test_ingest_json_summary_has_per_file_accounting(db):
    _, summary = db
    (f,) = summary["files"]
    assert (f["path"], f["records_read"], f["loaded"], f["rejected"]) == ("c.csv", 21, 20, 1)
    assert summary["store"]["samples"] == 20
    assert summary["store"]["start"] == "2026-01-01T00:00:00Z"
    assert summary["skipped"] == []


def test_ingest_strict_exits_4_on_rejects(tmp_path, write):
    write("b/c.csv", f"ts,device,ifname,counter,value\n{T0},leaf-1,swp1,rx_bytes,x\n")
    out = CliRunner().invoke(main, ["ingest", str(tmp_path / "b"), "--db", str(tmp_path / "s.db"),
                                    "--strict"])
    assert out.exit_code == 4
    assert "c.csv:2: bad samples row" in out.output


def test_ingest_missing_bundle_is_one_line_exit_2(tmp_path):
    out = CliRunner().invoke(main, ["ingest", str(tmp_path / "nope"), "--db", str(tmp_path / "s.db")])
    assert out.exit_code == 2
    assert out.output.strip().count("\n") == 0 and "no such bundle" in out.output


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_sql_formats(db, fmt):
    path, _ = db
    out = CliRunner().invoke(main, ["sql", "SELECT device, count(*) AS n FROM samples GROUP BY 1 "
                                    "ORDER BY 1", "--db", str(path), "--format", fmt])
    assert out.exit_code == 0, out.output
    if fmt == "json":
        assert json.loads(out.output) == [{"device": "leaf-0", "n": 10}, {"device": "leaf-1", "n": 10}]
    else:
        assert out.output.splitlines() == ['"device","n"', '"leaf-0",10', '"leaf-1",10']


def test_sql_parquet_to_file(db, tmp_path):
    path, _ = db
    target = tmp_path / "r.parquet"
    out = CliRunner().invoke(main, ["sql", "SELECT * FROM counter_rates", "--db", str(path),
                                    "--format", "parquet", "--output", str(target)])
    assert out.exit_code == 0, out.output
    assert pq.read_table(target).num_rows == 18  # 10 samples per device -> 9 intervals each


def test_sql_table_shows_row_count(db):
    path, _ = db
    out = CliRunner().invoke(main, ["sql", "SELECT * FROM range(1000)", "--db", str(path)])
    assert out.exit_code == 0
    assert "1000 rows (50 shown" in out.output


@pytest.mark.parametrize("query", [
    "DELETE FROM samples",
    "INSERT INTO samples SELECT * FROM samples",
    "DROP TABLE samples",
    "CREATE TABLE x AS SELECT 1",
    "ATTACH 'other.duckdb'",
    "COPY samples TO 'out.csv'",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT 1; DELETE FROM samples",
])
def test_sql_refuses_anything_but_reads(db, query):
    path, _ = db
    out = CliRunner().invoke(main, ["sql", query, "--db", str(path)])
    assert out.exit_code == 2, out.output
    assert out.output.startswith("fabtwin: error: refused")
    assert "Traceback" not in out.output
    check = CliRunner().invoke(main, ["sql", "SELECT count(*) FROM samples", "--db", str(path),
                                      "--format", "csv"])
    assert check.output.splitlines()[1] == "20"


def test_sql_error_is_one_line(db):
    path, _ = db
    out = CliRunner().invoke(main, ["sql", "SELECT nope FROM samples", "--db", str(path)])
    assert out.exit_code == 2
    assert out.output.startswith("fabtwin: error: SQL error:") and out.output.count("\n") == 1


def test_sql_on_missing_store_says_how_to_make_one(tmp_path):
    out = CliRunner().invoke(main, ["sql", "SELECT 1", "--db", str(tmp_path / "none.duckdb")])
    assert out.exit_code == 2 and "fabtwin ingest" in out.output


HOLD_LOCK = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("held", flush=True)
time.sleep(60)
"""


@pytest.fixture
def locked(db):
    """The store, held open for writing by another process (as a second ingest would be)."""
    path, _ = db
    proc = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(path)], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        yield path, proc.pid
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("args", [["ingest", "BUNDLE"], ["sql", "SELECT 1"], ["replay"],
                                  ["investigate", "BUNDLE"]])
def test_a_store_in_use_is_one_line_naming_the_process(locked, tmp_path, args):
    path, pid = locked
    args = [str(tmp_path / "b") if a == "BUNDLE" else a for a in args]
    out = CliRunner().invoke(main, [*args, "--db", str(path)])
    assert out.exit_code == 2, out.output
    assert out.output.count("\n") == 1, out.output
    assert out.output.startswith(f"fabtwin: error: {path}: in use by another process (PID {pid}")


@pytest.mark.parametrize("command", ["ingest", "sql"])
def test_a_file_that_is_not_a_store_is_one_line(tmp_path, write, command):
    notes = write("notes.txt", "not a database\n")
    args = ["ingest", str(tmp_path / "b")] if command == "ingest" else ["sql", "SELECT 1"]
    write("b/c.csv", f"ts,device,ifname,counter,value\n{T0},leaf-1,swp1,rx_bytes,1\n")
    out = CliRunner().invoke(main, [*args, "--db", str(notes)])
    assert out.exit_code == 2, out.output
    assert out.output.count("\n") == 1
    assert "not a valid DuckDB database file" in out.output


@pytest.mark.parametrize(("error", "says"), [
    (duckdb.IOException('IO Error: Could not write file "s.duckdb.tmp/duckdb_temp_1.tmp": No '
                        "space left on device"), "ran out of disk"),
    (duckdb.OutOfMemoryException("Out of Memory Error: could not allocate block of size 256.0 "
                                 "KiB (4.0 GiB/4.0 GiB used)"), "FABTWIN_ANALYSIS_MEMORY")])
def test_running_out_of_disk_or_memory_is_one_line_saying_what_to_change(db, monkeypatch, error,
                                                                        says):
    import replay.investigate

    def out_of_room(*args, **kwargs):
        raise error

    monkeypatch.setattr(replay.investigate, "investigate", out_of_room)
    path, _ = db
    out = CliRunner().invoke(main, ["investigate", str(path.parent / "b"), "--db", str(path)])
    assert out.exit_code == 2, out.output
    assert out.output.count("\n") == 1
    assert out.output.startswith(f"fabtwin: error: {path}: DuckDB ran out of") and says in out.output


# -- the other commands' one-line errors -------------------------------------------------------

@pytest.fixture
def unwritable(tmp_path, monkeypatch):
    """A folder nobody may create anything in: mode 555, or (root writes anywhere) a mkdir that
    is refused below it, as the kernel refuses it to everyone else."""
    import errno
    import os
    from pathlib import Path

    ro = tmp_path / "ro"
    ro.mkdir()
    if os.geteuid() != 0:
        ro.chmod(0o555)
    else:
        real = Path.mkdir

        def mkdir(self, *args, **kwargs):
            if self.resolve().is_relative_to(ro.resolve()) and self.resolve() != ro.resolve():
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
            return real(self, *args, **kwargs)

        monkeypatch.setattr(Path, "mkdir", mkdir)
    yield ro
    ro.chmod(0o755)


@pytest.mark.parametrize("command", ["export", "report"])
def test_export_and_report_into_an_unwritable_folder_are_one_line(db, unwritable, command):
    path, _ = db
    target = unwritable / "out"
    out = CliRunner().invoke(main, [command, "--db", str(path), "--out", str(target), "-q"])
    assert out.exit_code == 2, out.output
    assert out.stderr == f"fabtwin: error: {target}: Permission denied\n"
    assert not target.exists()


@pytest.mark.parametrize("command", ["simulate", "sweep"])
def test_a_binary_scenario_is_one_line(tmp_path, command):
    bad = tmp_path / "s.toml"
    bad.write_bytes(b"\x00\x01\xff\xfe")
    out = CliRunner().invoke(main, [command, str(bad), "-q"])
    assert out.exit_code == 2, out.output
    assert out.stderr == f"fabtwin: error: {bad}: not UTF-8 text (byte 2: a binary file?) (line 1)\n"


def test_every_long_command_takes_quiet(tmp_path):
    for command in ("replay", "investigate", "generate", "simulate", "sweep", "export", "report"):
        out = CliRunner().invoke(main, [command, "--help"])
        assert out.exit_code == 0 and "-q, --quiet" in out.output, command


def test_simulate_progress_is_on_stderr_only_and_quiet_silences_it():
    from conftest import REPO

    scenario = str(REPO / "scenarios" / "gen" / "healthy.toml")
    shown = CliRunner().invoke(main, ["simulate", scenario, "--json"], env={"FORCE_COLOR": "1"})
    assert shown.exit_code == 0 and f"simulate {scenario}" in shown.stderr
    json.loads(shown.stdout)  # stdout is the JSON alone
    quiet = CliRunner().invoke(main, ["simulate", scenario, "--json", "-q"],
                               env={"FORCE_COLOR": "1"})
    assert quiet.exit_code == 0 and quiet.stderr == ""

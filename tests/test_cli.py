"""The `fabtwin ingest` and `fabtwin sql` commands as scripts use them."""

from __future__ import annotations

import json

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

"""Replay owns its result tables (issue 20): their DDL lives in replay, the store only runs the
DDL registered with it, and a store that was only ingested still answers queries on them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from collectors.store.readonly import open_readonly
from fabtwin.cli import main
from replay.results import RESULT_DDL, RESULT_TABLES, ensure_results

REPO = Path(__file__).resolve().parents[1]
T0 = 1_767_225_600


def _tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}


def test_collectors_sql_and_code_do_not_declare_the_result_tables():
    sql = "\n".join(p.read_text() for p in sorted((REPO / "collectors").rglob("*.sql")))
    for table in RESULT_TABLES:
        assert table not in sql, table
    # the only mention left in collectors' code: the lake's generic list of table names
    for p in sorted((REPO / "collectors").rglob("*.py")):
        if p.name != "lakeread.py":
            assert not any(t in p.read_text() for t in RESULT_TABLES), p
    declared = duckdb.connect(":memory:")
    declared.execute(RESULT_DDL)
    assert _tables(declared) == set(RESULT_TABLES)


def test_the_store_alone_has_no_result_tables_and_replay_registers_them(tmp_path):
    # a fresh interpreter: collectors without replay creates none; importing replay adds all four
    code = ("import json, sys\n"
            "from collectors.store.writer import Store\n"
            "def tables(p):\n"
            "    with Store.open(p) as s:\n"
            "        return [r[0] for r in s.con.execute("
            "'SELECT table_name FROM duckdb_tables()').fetchall()]\n"
            "before = tables(sys.argv[1])\n"
            "import replay\n"
            "print(json.dumps([before, tables(sys.argv[2])]))\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "a.duckdb"),
                          str(tmp_path / "b.duckdb")], capture_output=True, text=True,
                         check=True, cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin"})
    before, after = (set(t) for t in json.loads(out.stdout))
    assert not before & set(RESULT_TABLES)
    assert set(RESULT_TABLES) <= after and before <= after


@pytest.fixture
def ingested(tmp_path) -> Path:
    """A store that `fabtwin ingest` built and nothing replayed."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    rows = "\n".join(f"{T0 + 10 * i},leaf-{i % 2},swp1,rx_bytes,{1000 * i}" for i in range(20))
    (bundle / "c.csv").write_text("ts,device,ifname,counter,value\n" + rows + "\n")
    db = tmp_path / "s.duckdb"
    res = CliRunner().invoke(main, ["ingest", str(bundle), "--db", str(db)])
    assert res.exit_code == 0, res.output
    return db


def test_an_only_ingested_store_answers_the_result_tables_empty(ingested):
    con = open_readonly(ingested)
    try:
        assert set(RESULT_TABLES) <= _tables(con)
        for table in RESULT_TABLES:
            assert con.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)
        assert [c[0] for c in con.execute("DESCRIBE incidents").fetchall()] == [
            "rank", "kind", "root_type", "root_id", "start", "end", "score", "summary", "impact"]
    finally:
        con.close()
    res = CliRunner().invoke(main, ["sql", "--db", str(ingested), "--format", "json",
                                    "SELECT count(*) AS n FROM incidents"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == [{"n": 0}]


def test_replay_creates_its_tables_on_a_connection_that_lacks_them():
    con = duckdb.connect(":memory:")
    ensure_results(con)
    ensure_results(con)  # IF NOT EXISTS: a second time changes nothing
    assert _tables(con) == set(RESULT_TABLES)

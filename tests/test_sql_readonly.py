"""`fabtwin sql` and the TUI's SQL stay read-only, and no output file replaces its input.

Every statement class DuckDB's parser knows, alone and inside every wrapper DuckDB accepts
(EXPLAIN, EXPLAIN ANALYZE, EXPLAIN (options), a statement list, PREPARE, a CTE), on a DuckDB
store and on a Parquet lake: refused with one line, and no file changed anywhere (the store, its
`.wal` and `.tmp`, the lake, the working directory, the spill directory), checked by hashing.
The same statements run straight on the fenced connections, past the statement check, change
nothing either.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from types import SimpleNamespace

import duckdb
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from collectors.store.ingest import ingest_bundle
from collectors.store.lake import export
from collectors.store.query import QueryRefused, _check, check_readonly, run_query
from collectors.store.readonly import OutputError, open_readonly
from collectors.store.writer import Store
from fabtwin.cli import main
from fabtwin.tui import sqlrun

REPO = Path(__file__).resolve().parents[1]
ST = duckdb.StatementType
T0 = 1_767_225_600

# one or more statements of each class; {dir} is a folder of the store (the lake, the store's
# .tmp spill folder), {file} one of its files (a lake's rejects Parquet, the store itself)
EXAMPLES: dict[ST, list[str]] = {
    ST.INSERT: ["INSERT INTO rejects SELECT * FROM rejects",
                "WITH r AS (SELECT * FROM rejects) INSERT INTO rejects SELECT * FROM r"],
    ST.UPDATE: ["UPDATE samples SET value = 0"],
    ST.CREATE: ["CREATE TEMP TABLE t AS SELECT 1", "CREATE TABLE t AS SELECT 1",
                "CREATE OR REPLACE TEMP VIEW samples AS SELECT 1", "CREATE MACRO m() AS 1",
                "CREATE FUNCTION f() AS 1", "CREATE SECRET s (TYPE s3)",
                "CREATE PERSISTENT SECRET s (TYPE s3)", "CREATE SEQUENCE q"],
    ST.DELETE: ["DELETE FROM rejects", "TRUNCATE rejects"],
    ST.PREPARE: ["PREPARE p AS COPY rejects TO '{dir}/x.csv'", "PREPARE p AS SELECT 1"],
    ST.EXECUTE: ["EXECUTE p"],
    ST.ALTER: ["ALTER TABLE rejects RENAME TO r2", "COMMENT ON TABLE rejects IS 'x'"],
    ST.TRANSACTION: ["BEGIN", "COMMIT", "ROLLBACK"],
    ST.COPY: ["COPY rejects TO '{dir}/x.csv'", "COPY (SELECT 1 AS x) TO '{file}' (FORMAT parquet)",
              "COPY (SELECT 1 AS x) TO '{dir}/lake.json' (FORMAT csv)",
              "COPY rejects FROM '{file}'"],
    ST.DROP: ["DROP TABLE rejects", "DROP VIEW port_rates", "DEALLOCATE p", "DROP SECRET s"],
    ST.EXPORT: ["EXPORT DATABASE '{dir}/exported'"],
    ST.PRAGMA: ["PRAGMA enable_profiling", "IMPORT DATABASE '{dir}'",
                "COPY FROM DATABASE memory TO other"],
    ST.VACUUM: ["VACUUM", "ANALYZE", "ANALYZE samples"],
    ST.CALL: ["CALL checkpoint()", "CHECKPOINT", "FORCE CHECKPOINT", "CALL truncate_duckdb_logs()",
              "CALL enable_logging(storage = 'file', storage_path = '{dir}/log')"],
    ST.SET: ["SET enable_external_access = true", "SET temp_directory = '{dir}'",
             "SET allowed_directories = ['/']", "RESET lock_configuration", "SET VARIABLE x = 1",
             "USE memory", "PRAGMA threads = 1", "PRAGMA profiling_output = '{dir}/p.json'"],
    ST.LOAD: ["LOAD httpfs", "INSTALL httpfs", "FORCE INSTALL json"],
    ST.ATTACH: ["ATTACH '{dir}/other.duckdb' AS o", "ATTACH ':memory:' AS m"],
    ST.DETACH: ["DETACH memory"],
    ST.MULTI: ["PIVOT samples ON device USING sum(value)"],
    ST.MERGE_INTO: ["MERGE INTO rejects USING (SELECT 1 AS line) s ON rejects.line = s.line "
                    "WHEN MATCHED THEN DELETE"],
    # SELECTs that hold a write in a CTE, at any depth
    ST.SELECT: ["WITH x AS (COPY rejects TO '{dir}/x.csv') SELECT * FROM x",
                "WITH d AS (DELETE FROM rejects RETURNING *) SELECT * FROM d",
                "SELECT * FROM (WITH i AS (INSERT INTO rejects SELECT * FROM rejects RETURNING *) "
                "SELECT * FROM i)",
                "SELECT 1 WHERE EXISTS (WITH u AS (UPDATE samples SET value = 0 RETURNING 1) "
                "SELECT 1 FROM u)"],
}
# a statement DuckDB's parser knows but its Python enum does not (type 29)
UNNAMED = ["UPDATE EXTENSIONS"]
# classes no SQL text yields in DuckDB 2.0 (checked below), refused by the allowlist all the same
NOT_FROM_TEXT = {
    ST.INVALID: "never a parsed statement",
    ST.RELATION: "made by the Python relation API, not by SQL",
    ST.LOGICAL_PLAN: "an internal plan",
    ST.EXTENSION: "from a parser extension (none is loaded)",
    ST.ANALYZE: "`ANALYZE` parses as VACUUM",
    ST.VARIABLE_SET: "`SET VARIABLE` parses as SET",
    ST.CREATE_FUNC: "`CREATE FUNCTION` parses as CREATE",
    ST.COPY_DATABASE: "`COPY FROM DATABASE` parses as PRAGMA",
}
READS = {ST.SELECT, ST.EXPLAIN, ST.PRAGMA}  # PRAGMA: only the named ones that read
WRAPPERS = ["{}", "EXPLAIN {}", "EXPLAIN ANALYZE {}", "EXPLAIN (ANALYZE) {}",
            "EXPLAIN (ANALYZE, FORMAT json) {}", "explain /* é */ analyze -- why\n{}",
            "SELECT 1; {}", "{}; SELECT 1", "PREPARE p AS {}"]
CASES = [(t.name, q) for t, qs in EXAMPLES.items() for q in qs] + [("UNNAMED", q) for q in UNNAMED]


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    """A small store (counters and a rejected line) and its export as a lake, with room for a
    working directory and a spill directory, all under one root that the tests hash."""
    root = tmp_path_factory.mktemp("ro")
    bundle = root / "bundle"
    bundle.mkdir()
    rows = "\n".join(f"{T0 + 10 * i},leaf-{i % 2},swp1,rx_bytes,{1000 * i}" for i in range(20))
    (bundle / "c.csv").write_text("ts,device,ifname,counter,value\n" + rows + "\nbroken line\n")
    with Store.open(root / "s.duckdb") as s:
        ingest_bundle(s, bundle)
    export(root / "s.duckdb", root / "lake")
    (root / "cwd").mkdir()
    (root / "tmp").mkdir()
    return {"root": root, "store": root / "s.duckdb", "lake": root / "lake"}


@pytest.fixture
def env(stores, monkeypatch):
    """Run in the hashed root: working directory, TMPDIR (spill files) and all."""
    monkeypatch.chdir(stores["root"] / "cwd")
    monkeypatch.setattr(tempfile, "tempdir", str(stores["root"] / "tmp"))
    return stores


_HASHES: dict[tuple, str] = {}


def snapshot(root: Path) -> dict[str, str]:
    """Every file and folder under `root`, with the sha256 of each file's bytes (hashed again
    whenever its inode, size or modification time differs from the last time)."""
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs:
            out[os.path.relpath(os.path.join(d, name), root) + "/"] = "dir"
        for name in files:
            p = os.path.join(d, name)
            st = os.stat(p)
            key = (p, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            if key not in _HASHES:
                _HASHES[key] = hashlib.sha256(Path(p).read_bytes()).hexdigest()
            out[os.path.relpath(p, root)] = _HASHES[key]
    return out


def _targets(stores: dict[str, Path], kind: str) -> dict[str, str]:
    if kind == "lake":
        return {"dir": str(stores["lake"]), "file": str(stores["lake"] / "rejects" / "export.parquet")}
    return {"dir": str(stores["store"]) + ".tmp", "file": str(stores["store"])}


def sql(*args: str, **kw):
    return CliRunner().invoke(main, ["sql", *args], **kw)


# -- the table of examples is honest ---------------------------------------------------------

def test_every_statement_class_is_covered():
    covered = set(EXAMPLES) | set(NOT_FROM_TEXT) | READS
    assert covered == set(ST.__members__.values())


@pytest.mark.parametrize(("kind", "query"), CASES)
def test_each_example_parses_as_its_class(kind, query):
    (st,) = duckdb.extract_statements(query.format(dir="/d", file="/f"))
    if kind == "UNNAMED":
        with pytest.raises(ValueError):
            _ = st.type
    else:
        assert st.type.name == kind


@pytest.mark.parametrize("kind", list(NOT_FROM_TEXT))
def test_classes_without_sql_text_are_refused_by_the_allowlist(kind):
    with pytest.raises(QueryRefused, match=f"refused: {kind.name} statement"):
        _check(SimpleNamespace(type=kind, query="x"))


def test_unreachable_classes_parse_as_named():
    got = {q: duckdb.extract_statements(q)[0].type for q in
           ("ANALYZE samples", "SET VARIABLE x = 1", "CREATE FUNCTION f() AS 1",
            "COPY FROM DATABASE a TO b")}
    assert list(got.values()) == [ST.VACUUM, ST.SET, ST.CREATE, ST.PRAGMA]


# -- refused on the command line, and nothing changed --------------------------------------

def _parses(text: str) -> bool:
    try:
        duckdb.extract_statements(text)
    except duckdb.Error:
        return False
    return True


CLASSES = {**{t.name: qs for t, qs in EXAMPLES.items()}, "UNNAMED": UNNAMED}


@pytest.mark.parametrize("store_kind", ["store", "lake"])
@pytest.mark.parametrize("wrapper", WRAPPERS)
@pytest.mark.parametrize("kind", list(CLASSES))
def test_sql_refuses_every_write_wrapped_or_not(env, store_kind, wrapper, kind):
    before = snapshot(env["root"])
    for query in CLASSES[kind]:
        text = wrapper.format(query.format(**_targets(env, store_kind)))
        out = sql(text, "--db", str(env[store_kind]), "--format", "csv")
        assert out.exit_code == 2, (text, out.output)
        expect = "fabtwin: error: refused" if _parses(text) else "fabtwin: error: SQL error"
        assert out.output.startswith(expect), (text, out.output)
        assert out.output.count("\n") == 1 and "Traceback" not in out.output
    assert snapshot(env["root"]) == before


@pytest.mark.parametrize("store_kind", ["store", "lake"])
@pytest.mark.parametrize("kind", list(CLASSES))
def test_fenced_connection_writes_nothing_even_past_the_check(env, store_kind, kind):
    """The second fence alone: the statements run on open_readonly's connection unchecked."""
    before = snapshot(env["root"])
    con = open_readonly(env[store_kind])
    try:
        for q in ("PREPARE p AS COPY rejects TO '{dir}/x.csv'", *CLASSES[kind]):
            with contextlib.suppress(duckdb.Error):  # refused by DuckDB: what the fence is for
                con.execute(q.format(**_targets(env, store_kind))).fetchall()
    finally:
        con.close()
    assert snapshot(env["root"]) == before


def test_the_reported_explain_analyze_copy_is_refused_on_a_lake(env):
    lake = env["lake"]
    before = snapshot(env["root"])
    for text in (f"EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO '{lake}/rejects/export.parquet'",
                 f"EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO '{lake}/lake.json' (FORMAT csv)",
                 f"EXPLAIN ANALYZE COPY (SELECT 1) TO '{env['store']}.tmp/x.csv'",
                 "EXPLAIN ANALYZE CREATE TEMP TABLE t AS SELECT 1"):
        out = sql(text, "--db", str(lake))
        assert out.exit_code == 2 and out.output.startswith("fabtwin: error: refused"), out.output
    assert snapshot(env["root"]) == before
    assert sql("SELECT count(*) FROM rejects", "--db", str(lake), "--format", "csv").output == '"count_star()"\n1\n'


def test_tui_console_refuses_the_same(env):
    con = open_readonly(env["lake"])
    before = snapshot(env["root"])
    try:
        for text in (f"EXPLAIN ANALYZE COPY rejects TO '{env['lake']}/x.csv'",
                     "EXPLAIN (ANALYZE) CREATE TEMP TABLE t AS SELECT 1",
                     "WITH d AS (DELETE FROM rejects RETURNING *) SELECT * FROM d"):
            with pytest.raises(QueryRefused, match="^refused"):
                sqlrun.start_query(con, text)
        with pytest.raises(OutputError, match="inside the input store"):
            sqlrun.export(con, "SELECT 1 AS x", str(env["lake"] / "rejects" / "export.parquet"),
                          str(env["lake"]))
    finally:
        con.close()
    assert snapshot(env["root"]) == before


# -- what still runs --------------------------------------------------------------------------

def _readme_queries() -> list[str]:
    text = (REPO / "README.md").read_text()
    return [q for block in re.findall(r"```sql\n(.*?)```", text, re.S)
            for q in (s.query for s in duckdb.extract_statements(block))]


READ_QUERIES = [
    "SELECT device, count(*) AS n FROM samples GROUP BY 1 ORDER BY 1",
    "FROM samples LIMIT 1", "DESCRIBE samples", "SHOW TABLES", "SHOW ALL TABLES",
    "SUMMARIZE samples", "EXPLAIN SELECT * FROM port_rates", "EXPLAIN ANALYZE SELECT count(*) FROM samples",
    "EXPLAIN (ANALYZE, FORMAT json) SELECT 1", "PRAGMA show_tables", "PRAGMA table_info('samples')",
    "PRAGMA version", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
    "SELECT * FROM r", "PIVOT samples ON device IN ('leaf-0', 'leaf-1') USING sum(value)",
    "VALUES (1), (2)", "SELECT 1 UNION ALL SELECT 2", "SELECT 'é' AS ok; SELECT 2 AS last",
]


@pytest.mark.parametrize("query", _readme_queries())
def test_the_readme_queries_pass_the_check(query):
    assert check_readonly(query) == [query]


@pytest.mark.parametrize("store_kind", ["store", "lake"])
@pytest.mark.parametrize("query", READ_QUERIES)
def test_reads_run_and_change_nothing(env, store_kind, query):
    before = snapshot(env["root"])
    out = sql(query, "--db", str(env[store_kind]), "--format", "json")
    assert out.exit_code == 0, out.output
    assert snapshot(env["root"]) == before


@pytest.mark.parametrize("store_kind", ["store", "lake"])
def test_only_the_last_statements_result_is_returned(env, store_kind):
    out = sql("SELECT 1 AS a; SELECT 2 AS b", "--db", str(env[store_kind]), "--format", "csv")
    assert out.exit_code == 0 and out.output == '"b"\n2\n', out.output
    bad = sql("SELECT nope FROM samples; SELECT 2", "--db", str(env[store_kind]))
    assert bad.exit_code == 2 and bad.output.startswith("fabtwin: error: SQL error")
    assert "nope" in bad.output and bad.output.count("\n") == 1


def test_query_from_stdin(env):
    out = sql("-", "--db", str(env["store"]), "--format", "csv",
              input="SELECT count(*) AS n FROM samples\n")
    assert out.exit_code == 0 and out.output == '"n"\n20\n', out.output


def test_a_query_that_spills_writes_only_in_a_private_folder_removed_on_close(env, monkeypatch):
    monkeypatch.setenv("FABTWIN_DUCKDB_MEMORY", "64MB")
    before = snapshot(env["root"])
    spill = Path(tempfile.gettempdir())
    with run_query(env["store"], "SELECT range AS n, md5(range::VARCHAR) AS m FROM range(2000000) "
                                 "ORDER BY m", batch_rows=1000) as res:
        assert res.reader.read_next_batch().num_rows == 1000
        spilled = list(spill.glob("fabtwin-spill-*/*"))
        assert spilled, "the sort should have spilled at 64MB"
        assert not Path(str(env["store"]) + ".tmp").exists()
    assert snapshot(env["root"]) == before  # DuckDB removed its spill folder


# -- output files -----------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["table", "csv", "json", "parquet"])
def test_output_never_replaces_the_store(env, fmt):
    store, lake = env["store"], env["lake"]
    (env["root"] / "cwd" / "link.duckdb").unlink(missing_ok=True)
    os.link(store, env["root"] / "cwd" / "link.duckdb")
    (env["root"] / "cwd" / "sym.csv").unlink(missing_ok=True)
    os.symlink(store, env["root"] / "cwd" / "sym.csv")
    before = snapshot(env["root"])
    targets = [(store, str(store)), (store, "link.duckdb"), (store, "sym.csv"),
               (store, str(store) + ".wal"), (store, str(store) + ".tmp/x.csv"),
               (lake, str(lake / "lake.json")), (lake, str(lake / "rejects" / "export.parquet")),
               (lake, str(lake / "new.csv"))]
    for db, target in targets:
        out = sql("SELECT 1 AS x", "--db", str(db), "--format", fmt, "--output", target)
        assert out.exit_code == 2, (target, out.output)
        assert out.output.startswith(f"fabtwin: error: {target}: is"), out.output
        assert "input store" in out.output and out.output.count("\n") == 1
    assert snapshot(env["root"]) == before


def test_output_replaces_a_named_file_only_when_the_query_succeeds(env):
    target = env["root"] / "cwd" / "mine.csv"
    target.write_text("old\n")
    target.chmod(0o640)
    out = sql("SELECT 1 AS x", "--db", str(env["store"]), "--format", "csv", "-o", str(target))
    assert out.exit_code == 0 and target.read_text() == '"x"\n1\n'
    assert target.stat().st_mode & 0o777 == 0o640
    target.write_text("old\n")
    failed = sql("SELECT error('boom') AS x FROM range(3)", "--db", str(env["store"]),
                 "--format", "csv", "-o", str(target))
    assert failed.exit_code == 2 and "boom" in failed.output and failed.output.count("\n") == 1
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in target.parent.iterdir() if p.name.endswith(".part")) == []


def test_output_into_a_missing_folder_names_it(env):
    out = sql("SELECT 1", "--db", str(env["store"]), "--format", "csv", "-o", "no/such/r.csv")
    assert out.exit_code == 2
    assert out.output == (f"fabtwin: error: {env['root'] / 'cwd' / 'no' / 'such'}: no such folder "
                          "for no/such/r.csv (create it first)\n")


def _unwritable(root: Path) -> Path:
    """A folder this process cannot write: /sys when root (permissions do not stop root)."""
    if os.geteuid() == 0:
        return Path("/sys")
    folder = root / "locked"
    folder.mkdir(exist_ok=True)
    folder.chmod(0o555)
    return folder


@pytest.mark.parametrize("command", ["sql", "export", "report"])
def test_unwritable_folder_is_one_line_exit_2(env, command):
    folder = _unwritable(env["root"] / "cwd")
    target = folder / ("r.csv" if command == "sql" else "out")
    args = {"sql": ["sql", "SELECT 1", "--format", "csv", "-o", str(target)],
            "export": ["export", "--out", str(target)], "report": ["report", "--out", str(target)]}
    out = CliRunner().invoke(main, [*args[command], "--db", str(env["store"])])
    assert out.exit_code == 2, out.output
    assert out.output.startswith("fabtwin: error: ") and out.output.count("\n") == 1
    assert str(folder) in out.output and "Traceback" not in out.output
    assert not target.exists()


@pytest.mark.parametrize(("command", "out_of"), [
    ("export", lambda s: str(s["store"]) + ".tmp"), ("export", lambda s: str(s["store"]) + ".wal"),
    ("report", lambda s: str(s["lake"])), ("report", lambda s: str(s["lake"] / "samples")),
])
def test_export_and_report_never_write_into_their_input(env, command, out_of):
    db = env["lake"] if command == "report" else env["store"]
    before = snapshot(env["root"])
    out = CliRunner().invoke(main, [command, "--db", str(db), "--out", out_of(env)])
    assert out.exit_code == 2 and "input store" in out.output, out.output
    assert snapshot(env["root"]) == before


# -- column types every format writes ------------------------------------------------------

ODD = ("SELECT [1, 2] AS l, {'a': 1} AS s, map([1], [2]) AS m, INTERVAL 1 DAY AS i, "
       "'\\xAA'::BLOB AS b, union_value(k := 1) AS u, [1, 2]::INT[2] AS arr, '101'::BIT AS bits, "
       "1 AS dup, 2 AS dup")


@pytest.mark.parametrize("store_kind", ["store", "lake"])
def test_csv_renders_nested_and_binary_columns_as_duckdb_text(env, store_kind):
    out = sql(ODD, "--db", str(env[store_kind]), "--format", "csv")
    assert out.exit_code == 0, out.output
    assert out.output.splitlines() == [
        '"l","s","m","i","b","u","arr","bits","dup","dup"',
        '"[1, 2]","{\'a\': 1}","{1=2}","1 day","\\xAA","1","[1, 2]","101",1,2']


@pytest.mark.parametrize("fmt", ["table", "json", "parquet"])
def test_other_formats_write_the_same_columns(env, fmt):
    target = env["root"] / "cwd" / f"odd.{fmt}"
    out = sql(ODD, "--db", str(env["store"]), "--format", fmt, "-o", str(target))
    assert out.exit_code == 0, out.output
    if fmt == "parquet":
        t = pq.read_table(target)
        assert t.column("l").to_pylist() == [[1, 2]] and t.column("i").to_pylist() == ["1 day"]
        assert t.column_names[-2:] == ["dup", "dup_1"]
    elif fmt == "json":
        row = json.loads(target.read_text())[0]
        assert (row["l"], row["s"], row["i"], row["b"]) == ([1, 2], {"a": 1}, "1 day", "\\xAA")
        assert (row["dup"], row["dup_1"]) == (1, 2)
    else:
        text = target.read_text()
        assert "1 day" in text and "dup_1" in text and "1 rows" in text

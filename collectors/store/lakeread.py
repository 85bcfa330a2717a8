"""A Parquet lake read: its manifest, and a DuckDB connection whose tables are views over the
lake's files (fenced like a read-only store). Writing the lake is `collectors.store.lake`."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from collectors.store.connect import StoreError, fence
from collectors.store.schema import schema_ddl, sql_text

VERSION = 1
MANIFEST = "lake.json"
PARTITIONED = ("samples", "text_samples", "events", "logs")
TABLES = ("files", "rejects", "counters", "counter_map", "samples", "text_samples", "events", "logs",
          "neighbors", "addresses", "ifmap", "jobs", "job_hosts",
          "replay_runs", "expected_ports", "expected_counters", "incidents", "incident_evidence",
          "incident_explanations", "check_findings",
          "link_residuals", "switch_residuals")
_HIVE_TYPES = "{'day': DATE, 'device': VARCHAR}"


class LakeError(StoreError):
    """A lake directory that cannot be used as it is."""


def is_lake(path: str | Path) -> bool:
    """A directory given as --db is a lake (an empty one becomes a new lake on ingest)."""
    return Path(path).is_dir()


def read_manifest(root: str | Path) -> dict:
    """The lake's manifest; LakeError names the file when it is missing or unreadable."""
    p = Path(root) / MANIFEST
    try:
        doc = json.loads(p.read_text())
    except FileNotFoundError as exc:
        raise LakeError(f"{p}: no lake manifest (write one with `fabtwin export` or "
                        "`fabtwin ingest BUNDLE --db DIR`)") from exc
    except (OSError, ValueError) as exc:
        raise LakeError(f"{p}: unreadable lake manifest: {exc}") from exc
    if doc.get("version") != VERSION:
        raise LakeError(f"{p}: lake version {doc.get('version')!r}, this fabtwin reads {VERSION}")
    return doc




def empty_manifest() -> dict:
    return {"version": VERSION, "format": "fabtwin-lake", "partition_by": ["day", "device"],
            "tables": {t: {"partitioned": t in PARTITIONED, "rows": 0, "files": []} for t in TABLES}}


def quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"




def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    """(name, type) of a table's columns, in order."""
    return con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? "
                       "ORDER BY column_index", [table]).fetchall()


def parquet_reader(root: Path, table: str, files: list[str]) -> str:
    paths = "[" + ", ".join(quote(str(root / f)) for f in files) + "]"
    if table in PARTITIONED:
        return f"read_parquet({paths}, hive_partitioning = true, hive_types = {_HIVE_TYPES})"
    # by name: the Parquet files of a lake appended to since a column was added
    # (files.time_source) have it, the older ones do not (NULL there)
    return f"read_parquet({paths}, hive_partitioning = false, union_by_name = true)"


_SCHEMAS: dict[str, dict[str, list[tuple[str, str]]]] = {}


def _schema_columns(ddl: str, con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str]]]:
    """(name, type) of every table's columns, in order, on `con` that has just run `ddl`: the
    same for every connection of one DDL, so asked of DuckDB's catalog once per process and
    DDL (a duckdb_columns() query costs ~20 ms of CPU)."""
    if ddl in _SCHEMAS:
        return _SCHEMAS[ddl]
    schema: dict[str, list[tuple[str, str]]] = {}
    for table, name, dtype in con.execute(
            "SELECT table_name, column_name, data_type FROM duckdb_columns() "
            "WHERE database_name = current_database() AND table_name IN (SELECT unnest(?)) "
            "ORDER BY table_name, column_index", [list(TABLES)]).fetchall():
        schema.setdefault(table, []).append((name, dtype))
    _SCHEMAS[ddl] = schema
    return schema


def _lake_views(con: duckdb.DuckDBPyConnection, ddl: str, readers: dict[str, str]) -> str:
    """The statements that replace each schema table in `readers` by a view over its Parquet
    files with the schema's columns in order (one the files lack reads as NULL: a column the
    schema gained after the export). One DESCRIBE for all tables, not one per table: an
    open's CPU is mostly DuckDB's per-statement cost."""
    schema = _schema_columns(ddl, con)
    present: dict[str, set[str]] = {t: set() for t in readers}
    union = " UNION ALL ".join(f"SELECT {quote(t)}, column_name FROM (DESCRIBE SELECT * FROM {r})"
                               for t, r in readers.items())
    for table, name in con.execute(union).fetchall():
        present[table].add(name)
    statements = []
    for table, reader in readers.items():
        cols = ", ".join(f'"{c}"' if c in present[table] else f'CAST(NULL AS {t}) AS "{c}"'
                         for c, t in schema.get(table, []))
        statements.append(f"DROP TABLE {table}; CREATE VIEW {table} AS SELECT {cols} FROM {reader};")
    return "\n".join(statements)


def lake_connection(root: str | Path, doc: dict | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB whose tables are views over the lake's Parquet files, plus the
    store's views (sql/views.sql). Tables without files stay empty tables of the right schema.
    `doc`: the lake's manifest when the caller has read it already."""
    root = Path(root).resolve()
    doc = read_manifest(root) if doc is None else doc
    con = duckdb.connect(":memory:")
    ddl = schema_ddl()
    # the store's views are created over the empty tables, before the tables become views
    # over Parquet: binding them there would read every file's footer again (~20 ms), and a
    # DuckDB view is bound again, by name, at each query (test_lake_views_rebind)
    con.execute("SET enable_progress_bar = false;\n" + ddl + "\n" + sql_text("views.sql"))
    readers = {t: parquet_reader(root, t, files) for t in TABLES
               if (files := doc["tables"].get(t, {}).get("files", []))}
    if readers:
        con.execute(_lake_views(con, ddl, readers))
    return con


def open_lake(root: str | Path) -> duckdb.DuckDBPyConnection:
    """`lake_connection` fenced like `readonly.open_readonly` (`connect.fence`): exactly the
    Parquet files the manifest lists can be read, no file written (not lake.json, not a new file
    in the lake: DuckDB would let a connection write where it may read a whole directory), the
    configuration locked."""
    root = Path(root).resolve()
    doc = read_manifest(root)
    con = lake_connection(root, doc)
    fence(con, sorted({str(root / f) for t in doc["tables"].values() for f in t.get("files", [])}))
    return con




def table_rows(root: str | Path) -> dict[str, int]:
    """Rows per table, from the manifest."""
    return {t: e["rows"] for t, e in read_manifest(root)["tables"].items()}

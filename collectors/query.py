"""Read-only SQL over a store, for the CLI, the TUI and scripts.

Two fences: a statement-type check with a clear refusal (only queries), and a DuckDB connection
opened read-only with file system access disabled and its configuration locked, so that
`read_csv('/etc/passwd')`, `COPY ... TO`, `ATTACH`, `INSTALL`/`LOAD` fail inside DuckDB too.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from collectors.readonly import open_readonly

ALLOWED = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}
ALLOWED_PRAGMAS = ("table_info", "show_tables", "show_tables_expanded", "version",
                   "database_size", "storage_info", "show")


class QueryRefused(ValueError):
    """A statement fabtwin's read-only SQL does not run."""


def check_readonly(sql: str) -> None:
    """Raise QueryRefused unless every statement of `sql` only reads the store."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryRefused(f"SQL error: {_one_line(exc)}") from exc
    if not statements:
        raise QueryRefused("empty query")
    for st in statements:
        if st.type in ALLOWED:
            continue
        text = st.query.strip().lower()
        if st.type == duckdb.StatementType.PRAGMA and text.removeprefix("pragma").strip().startswith(
                ALLOWED_PRAGMAS):
            continue
        kind = st.type.name.replace("_STATEMENT", "")
        raise QueryRefused(
            f"refused: the store is read-only here and {kind} statements are not run "
            "(writes, ATTACH, COPY, INSTALL/LOAD, SET); query it with SELECT")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


class QueryResult:
    """A running query: `.reader` streams Arrow record batches; close() releases the store."""

    def __init__(self, con: duckdb.DuckDBPyConnection, reader: pa.RecordBatchReader) -> None:
        self.con = con
        self.reader = reader

    @property
    def schema(self) -> pa.Schema:
        return self.reader.schema

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> QueryResult:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_query(db: str | Path, sql: str, batch_rows: int = 65_536) -> QueryResult:
    """Run read-only `sql` on the store `db` and stream its result as Arrow record batches.

    Only the last statement's result is returned. QueryRefused for anything that is not a read,
    including DuckDB's own refusals (file access) and SQL errors, with a one-line message.
    """
    check_readonly(sql)
    con = open_readonly(db)
    try:
        statements = duckdb.extract_statements(sql)
        for st in statements[:-1]:
            con.execute(st)
        relation = con.sql(statements[-1].query)
        if relation is None:  # a PRAGMA without a result
            relation = con.sql("SELECT 'ok' AS result")
        return QueryResult(con, relation.to_arrow_reader(batch_rows))
    except duckdb.PermissionException as exc:
        con.close()
        raise QueryRefused(
            "refused: reading or writing files, ATTACH and extensions are disabled in fabtwin sql "
            f"({_one_line(exc)})") from exc
    except duckdb.Error as exc:
        con.close()
        raise QueryRefused(f"SQL error: {_one_line(exc)}") from exc

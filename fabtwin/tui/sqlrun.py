"""Read-only SQL for the console: collectors.query's refusal of writes on the UI's connection.

`collectors.query.run_query` opens a store connection of its own; a process holds only one
locked read-only connection per store, so the console runs on a cursor of the UI's (same
fences: read-only, no file access, configuration locked) after the same statement check.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from collectors.query import QueryRefused, check_readonly


def start_query(con: duckdb.DuckDBPyConnection, sql: str, batch_rows: int = 500,
                on_cursor=None) -> tuple[duckdb.DuckDBPyConnection, pa.RecordBatchReader]:
    """A cursor and a lazy Arrow reader over the last statement's result (close the cursor
    when done). QueryRefused with a one-line message for writes and SQL errors.
    `on_cursor(cursor)` is called before the query runs (to interrupt it from elsewhere)."""
    check_readonly(sql)
    cur = con.cursor()
    if on_cursor is not None:
        on_cursor(cur)
    try:
        statements = duckdb.extract_statements(sql)
        for st in statements[:-1]:
            cur.execute(st)
        relation = cur.sql(statements[-1].query)
        if relation is None:
            relation = cur.sql("SELECT 'ok' AS result")
        return cur, relation.to_arrow_reader(batch_rows)
    except duckdb.PermissionException as exc:
        cur.close()
        raise QueryRefused("refused: reading or writing files, ATTACH and extensions are "
                           f"disabled here ({_one_line(exc)})") from exc
    except duckdb.Error as exc:
        cur.close()
        raise QueryRefused(f"SQL error: {_one_line(exc)}") from exc


def export(con: duckdb.DuckDBPyConnection, sql: str, path: str) -> int:
    """Run `sql` again and stream its whole result to `path` (.csv or .parquet); rows written."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    if not path.endswith((".csv", ".parquet")):
        raise ValueError(f"{path}: export to a .csv or .parquet file")
    cur, reader = start_query(con, sql, batch_rows=65_536)
    rows = 0
    try:
        writer = (pq.ParquetWriter(path, reader.schema) if path.endswith(".parquet")
                  else pacsv.CSVWriter(path, reader.schema))
        with writer:
            for batch in reader:
                writer.write_batch(batch)
                rows += batch.num_rows
    finally:
        cur.close()
    return rows


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())

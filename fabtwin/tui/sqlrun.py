"""Read-only SQL for the console: collectors.store.query's refusal of writes on the UI's connection.

`collectors.store.query.run_query` opens a store connection of its own; a process holds only one
locked read-only connection per store, so the console runs on a cursor of the UI's (same
fences: read-only, no file access, configuration locked) after the same statement check.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from collectors.store.query import check_readonly, stream
from collectors.store.readonly import check_output, check_output_folder, replacing


def start_query(con: duckdb.DuckDBPyConnection, sql: str, batch_rows: int = 500,
                on_cursor=None, fmt: str | None = None,
                ) -> tuple[duckdb.DuckDBPyConnection, pa.RecordBatchReader]:
    """A cursor and a lazy Arrow reader over the last statement's result (close the cursor
    when done). QueryRefused with a one-line message for writes and SQL errors.
    `on_cursor(cursor)` is called before the query runs (to interrupt it from elsewhere);
    `fmt` (csv, parquet) renders as text the columns that format cannot carry."""
    check_readonly(sql)
    cur = con.cursor()
    if on_cursor is not None:
        on_cursor(cur)
    try:
        return cur, stream(cur, sql, batch_rows, fmt)
    except BaseException:
        cur.close()
        raise


def export(con: duckdb.DuckDBPyConnection, sql: str, path: str, store: str | None = None) -> int:
    """Run `sql` again and stream its whole result to `path` (.csv or .parquet); rows written.
    `path` is replaced only once complete, and never when it is the store `store` or inside it
    (OutputError, a ValueError)."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    if not path.endswith((".csv", ".parquet")):
        raise ValueError(f"{path}: export to a .csv or .parquet file")
    if store is not None:
        check_output(path, store)
    check_output_folder(path)
    parquet = path.endswith(".parquet")
    cur, reader = start_query(con, sql, batch_rows=65_536, fmt="parquet" if parquet else "csv")
    rows = 0
    try:
        with replacing(path) as tmp:
            writer = pq.ParquetWriter(tmp, reader.schema) if parquet else pacsv.CSVWriter(tmp, reader.schema)
            with writer:
                for batch in reader:
                    writer.write_batch(batch)
                    rows += batch.num_rows
    finally:
        cur.close()
    return rows

"""`fabtwin sql`: a read-only query on the store, as a table, CSV, JSON or Parquet."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from fabtwin.commands.common import DEFAULT_DB, command, fail, resource_errors, store_failure

if TYPE_CHECKING:  # the command imports what it uses: `fabtwin --help` stays quick
    import pyarrow as pa


@command()
@click.argument("query")
@click.option("--db", default=DEFAULT_DB, show_default=True, help="DuckDB store file.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json", "parquet"]),
              default="table", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the result to this file, replaced when the query succeeds (required "
                   "for parquet; never the store or a file inside it).")
@click.option("--max-rows", default=50, show_default=True,
              help="Rows shown by the table format (the others write every row).")
def sql(query: str, db: str, fmt: str, output: Path | None, max_rows: int) -> None:
    """Run a read-only SQL QUERY on the store (tables and views: see the README); `-` reads
    the query from stdin."""
    from collectors.store.query import QueryRefused, run_query
    from collectors.store.readonly import OutputError, check_output, check_output_folder
    from collectors.store.writer import StoreError

    if query == "-":
        query = sys.stdin.read()
    if fmt == "parquet" and output is None:
        fail("--format parquet needs --output FILE")
    try:
        if output is not None:
            check_output(output, db)
            check_output_folder(output)
        result = run_query(db, query, fmt=fmt)
    except (FileNotFoundError, StoreError, OutputError, QueryRefused) as exc:
        fail(str(exc))
    except resource_errors() as exc:
        store_failure(db, exc)
    with result:
        try:
            _write_result(result.reader, fmt, output, max_rows)
        except OSError as exc:  # the output's folder refused the file: name the output
            fail(f"{output or 'stdout'}: {exc.strerror or exc}")
        except Exception as exc:  # noqa: BLE001 - DuckDB or Arrow failing mid-stream: one line
            import duckdb
            import pyarrow as pa

            if not isinstance(exc, duckdb.Error | pa.ArrowException):
                raise
            fail(f"{'SQL error' if isinstance(exc, duckdb.Error) else 'cannot write the result'}: "
                 f"{' '.join(str(exc).split())}")


def _write_result(reader: pa.RecordBatchReader, fmt: str, output: Path | None, max_rows: int) -> None:
    """Stream `reader` as `fmt` to stdout, or to `output` (replaced only once complete)."""
    if output is None:
        _write_stream(reader, fmt, sys.stdout.buffer, max_rows)
        sys.stdout.buffer.flush()
        return
    from collectors.store.readonly import replacing

    with replacing(output) as tmp:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            with pq.ParquetWriter(tmp, reader.schema, compression="zstd") as w:
                for batch in reader:
                    w.write_batch(batch)
        else:
            with open(tmp, "xb") as fh:
                _write_stream(reader, fmt, fh, max_rows)


def _write_stream(reader: pa.RecordBatchReader, fmt: str, fh, max_rows: int) -> None:
    import orjson

    if fmt == "csv":
        import pyarrow.csv as pacsv

        with pacsv.CSVWriter(fh, reader.schema) as w:
            for batch in reader:
                w.write_batch(batch)
    elif fmt == "json":
        fh.write(b"[")
        first = True
        for batch in reader:
            for row in batch.to_pylist():
                fh.write((b"" if first else b",\n") + orjson.dumps(
                    row, default=str, option=orjson.OPT_NAIVE_UTC | orjson.OPT_UTC_Z))
                first = False
        fh.write(b"]\n")
    else:
        _print_table(reader, fh, max_rows)


def _print_table(reader: pa.RecordBatchReader, fh, max_rows: int) -> None:
    import polars as pl
    import pyarrow as pa

    batches, shown, total = [], 0, 0
    for batch in reader:
        total += batch.num_rows
        if shown < max_rows:
            batches.append(batch.slice(0, max_rows - shown))
            shown += batches[-1].num_rows
    table = pa.Table.from_batches(batches, schema=reader.schema)
    df = pl.from_arrow(table)
    with pl.Config(tbl_rows=max_rows, tbl_cols=-1, tbl_width_chars=200, fmt_str_lengths=60,
                   tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=False):
        fh.write((str(df) + "\n").encode())
    note = f"{total} rows" + (f" ({shown} shown; --max-rows or --format csv for all)" if total > shown else "")
    fh.write((note + "\n").encode())


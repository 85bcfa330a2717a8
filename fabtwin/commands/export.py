"""`fabtwin export`: a DuckDB store as a Parquet lake (format: collectors/store/lake.py)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from fabtwin.commands.common import command, fail, os_failure, progress, quiet_option


@command()
@click.option("--db", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="DuckDB store file to export.")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="New (or empty) directory for the lake.")
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as one JSON object.")
@quiet_option
def export(db: Path, out: Path, as_json: bool, quiet: bool) -> None:
    """Write the store's tables as hive-partitioned Parquet (by day and device, zstd).

    `fabtwin sql`, `fabtwin ingest` and the TUI take the directory as --db, as they take a
    DuckDB file; Spark and Trino read it as a plain hive layout.
    """
    import duckdb

    from collectors.store.lake import LakeError
    from collectors.store.lake import export as export_lake
    from collectors.store.readonly import OutputError, check_output, check_output_dir
    from collectors.store.writer import StoreError

    try:
        check_output(out, db)  # never into the store, its WAL or its spill directory
        check_output_dir(out)
        with progress(quiet, f"export {db} to {out}"):
            doc = export_lake(db, out)
    except (FileNotFoundError, StoreError, LakeError, OutputError, duckdb.Error) as exc:
        fail(" ".join(str(exc).split()))  # DuckDB's errors span lines
    except OSError as exc:  # an unwritable --out (PermissionError), a full disk: the path
        os_failure(exc, out)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    tables = doc["tables"]
    files = sum(len(t["files"]) for t in tables.values())
    size = sum(p.stat().st_size for p in out.rglob("*.parquet"))
    click.echo(f"wrote {out}: {len(tables)} tables, {files} Parquet files, {size / 2**20:.1f} MiB")
    for name, t in tables.items():
        if t["rows"]:
            part = "  (day, device)" if t["partitioned"] else ""
            click.echo(f"  {name:<18}{t['rows']:>12,} rows {len(t['files']):>6} files{part}")

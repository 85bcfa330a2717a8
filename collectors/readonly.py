"""Read-only access to a store: what `sql`, the TUI and the report open (no polars here, so
the TUI starts without importing it)."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb


class StoreError(RuntimeError):
    """A store that cannot be used as it is."""


def open_readonly(path: str | Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection with file system access disabled and the configuration locked.

    Writes, ATTACH, COPY ... TO, INSTALL/LOAD and reads of arbitrary files all fail inside DuckDB.
    A store an interrupted ingest left with a half-loaded file is refused (StoreError).
    A directory is read as a Parquet lake (collectors.lake), with the same tables and views.
    """
    if not Path(path).exists():
        raise FileNotFoundError(f"{path}: no such store (run `fabtwin ingest BUNDLE --db {path}` first)")
    if Path(path).is_dir():
        from collectors.lake import open_lake  # the lake builds on this module

        return open_lake(path)
    con = duckdb.connect(str(path), read_only=True)
    # fences first, then the lock, so no query can lift them; a memory limit makes a big query
    # spill to disk rather than take the machine (FABTWIN_DUCKDB_MEMORY, default 2GB for reads)
    con.execute("SET memory_limit = ?", [os.environ.get("FABTWIN_DUCKDB_MEMORY", "2GB")])
    con.execute("SET enable_progress_bar = false")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    try:
        half = con.execute("SELECT path FROM files WHERE status = 'loading' LIMIT 1").fetchone()
    except duckdb.CatalogException:
        half = None  # not a fabtwin store: plain SQL still works
    if half:
        con.close()
        raise StoreError(f"{path}: an interrupted ingest left {half[0]} half-loaded; run "
                         "`fabtwin ingest` again on its bundle, which removes it first")
    return con

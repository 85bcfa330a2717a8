"""Read-only access to a store: what `sql`, the TUI and the report open (no polars here, so
the TUI starts without importing it)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb


class StoreError(RuntimeError):
    """A store that cannot be used as it is."""


_LOCKED = re.compile(r"Conflicting lock is held in (.*?) \(PID (\d+)\)")


def connect(path: str | Path, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """`duckdb.connect` of a store file; one DuckDB cannot open (held by another process, not a
    DuckDB file, unreadable) is a StoreError of one line instead of a traceback."""
    try:
        return duckdb.connect(str(path), read_only=read_only)
    except duckdb.Error as exc:
        raise StoreError(describe_store_error(path, exc)) from exc


def describe_store_error(path: str | Path, exc: BaseException) -> str:
    """DuckDB's error about the store at `path` as one line that says what to do."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = text.removeprefix("IO Error: ")
    locked = _LOCKED.search(text)
    if locked:
        return (f"{path}: in use by another process (PID {locked.group(2)}, "
                f"{Path(locked.group(1)).name}); close it (a `fabtwin tui`, another ingest or "
                "replay) and try again")
    if "No space left on device" in text:
        return (f"{path}: DuckDB ran out of disk ({text}); free space where it writes: the "
                "store's directory and its `.tmp` spill directory")
    if isinstance(exc, duckdb.OutOfMemoryException):
        return (f"{path}: DuckDB ran out of memory ({text}); raise FABTWIN_ANALYSIS_MEMORY "
                "(replay, investigate) or FABTWIN_DUCKDB_MEMORY (ingest, sql)")
    return text if str(path) in text else f"{path}: {text}"


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
    con = connect(path, read_only=True)
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

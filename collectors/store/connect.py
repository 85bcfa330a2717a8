"""Connections to a store: opening one (one-line errors for locks and bad files) and the
read-only fence; no polars here, so the TUI starts without importing it."""

from __future__ import annotations

import os
import re
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path

import duckdb

from collectors.settings import duckdb_memory


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
                "store's directory and its `.tmp` spill directory (TMPDIR for sql, report and the TUI)")
    if isinstance(exc, duckdb.OutOfMemoryException):
        return (f"{path}: DuckDB ran out of memory ({text}); raise FABTWIN_ANALYSIS_MEMORY "
                "(replay, investigate) or FABTWIN_DUCKDB_MEMORY (ingest, sql)")
    return text if str(path) in text else f"{path}: {text}"


def private_spill_dir() -> str:
    """A path, not yet created, for one connection's spill files: DuckDB creates it on the first
    spill and removes it when the connection closes. Under TMPDIR, not beside the store, because
    DuckDB lets a connection write files in its temp directory even with file access disabled."""
    return os.path.join(tempfile.gettempdir(), f"fabtwin-spill-{uuid.uuid4().hex}")


def fence(con: duckdb.DuckDBPyConnection, readable: Sequence[str] = ()) -> None:
    """Fence `con` so that no statement can write a file or lift the fence: spill files go to a
    private directory, only the files in `readable` can be read, external access is off and the
    configuration locked (SET, RESET, PRAGMA settings, enable_logging all fail afterwards)."""
    # a memory limit makes a big query spill rather than take the machine
    # (collectors.settings: FABTWIN_DUCKDB_MEMORY, default 2GB for reads)
    con.execute("SET memory_limit = ?", [duckdb_memory("read")])
    con.execute("SET enable_progress_bar = false")
    con.execute("SET temp_directory = ?", [private_spill_dir()])
    if readable:  # exact files, not directories: a directory would be writable too
        con.execute("SET allowed_paths = ?", [list(readable)])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")  # last, so no query can lift the fences

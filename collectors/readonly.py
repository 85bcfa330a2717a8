"""Read-only access to a store: what `sql`, the TUI and the report open (no polars here, so
the TUI starts without importing it), and the checks on the files those commands write."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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


def open_readonly(path: str | Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection with file system access disabled and the configuration locked
    (`fence`).

    Writes, ATTACH, COPY ... TO, INSTALL/LOAD and reads of arbitrary files all fail inside DuckDB;
    spills go to a private directory that DuckDB removes on close, never beside the store.
    A store an interrupted ingest left with a half-loaded file is refused (StoreError).
    A directory is read as a Parquet lake (collectors.lake), with the same tables and views.
    """
    if not Path(path).exists():
        raise FileNotFoundError(f"{path}: no such store (run `fabtwin ingest BUNDLE --db {path}` first)")
    if Path(path).is_dir():
        from collectors.lake import open_lake  # the lake builds on this module

        return open_lake(path)
    con = connect(path, read_only=True)
    fence(con)
    try:
        half = con.execute("SELECT path FROM files WHERE status = 'loading' LIMIT 1").fetchone()
    except duckdb.CatalogException:
        half = None  # not a fabtwin store: plain SQL still works
    if half:
        con.close()
        raise StoreError(f"{path}: an interrupted ingest left {half[0]} half-loaded; run "
                         "`fabtwin ingest` again on its bundle, which removes it first")
    return con


# -- the output files of read-only commands ---------------------------------------------------

class OutputError(ValueError):
    """An output path a read-only command refuses to write."""


def store_parts(store: str | Path) -> tuple[Path, ...]:
    """The paths that belong to the store at `store`: a lake directory; a DuckDB file with its
    write-ahead log and spill directory."""
    p = Path(store).resolve()
    return (p,) if p.is_dir() else (p, p.with_name(p.name + ".wal"), p.with_name(p.name + ".tmp"))


def check_output(output: str | Path, store: str | Path) -> None:
    """OutputError unless writing `output` (a file or a directory) leaves the store at `store`
    as it is: not the store, not inside it (a lake, the `.tmp` spill directory), not the same
    file under another name (a link)."""
    out = Path(output).expanduser().resolve()
    for i, part in enumerate(store_parts(store)):
        if out == part:
            what = "the input store" if i == 0 else f"{part.name[len(Path(store).name):]} of the input store"
            raise OutputError(f"{output}: is {what} {store}; write elsewhere")
        if part in out.parents:
            raise OutputError(f"{output}: is inside the input store {store}; write elsewhere")
    if not Path(output).is_file():
        return
    mine = os.stat(output)
    files = ([Path(d) / f for d, _, fs in os.walk(store) for f in fs] if Path(store).is_dir()
             else [p for p in store_parts(store)[:2] if p.is_file()])
    for f in files:  # a hard link to one of the store's files has another name
        st = f.stat()
        if (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino):
            raise OutputError(f"{output}: is {f} of the input store {store} (a link); write elsewhere")


def check_output_folder(output: str | Path) -> None:
    """OutputError naming the folder of the file `output` when it is missing or not writable."""
    folder = Path(output).expanduser().resolve().parent
    if not folder.is_dir():
        raise OutputError(f"{folder}: no such folder for {output} (create it first)")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{folder}: folder not writable, cannot write {output}")
    if Path(output).is_dir():
        raise OutputError(f"{output}: is a folder; name a file")


def check_output_dir(output: str | Path) -> None:
    """OutputError when the directory `output` cannot be written: it is a file, or it (or, when
    it is to be created, its nearest existing parent) is not writable."""
    out = Path(output).expanduser().resolve()
    if out.exists() and not out.is_dir():
        raise OutputError(f"{output}: is a file, not a folder")
    here = next(p for p in (out, *out.parents) if p.exists())
    if not here.is_dir() or not os.access(here, os.W_OK | os.X_OK):
        raise OutputError(f"{here}: folder not writable, cannot write {output}")


@contextmanager
def replacing(output: str | Path) -> Iterator[Path]:
    """A path beside `output` to write (not created yet); it replaces `output` only when the
    block ends without an error, so a failing query leaves an existing file as it was."""
    target = Path(output).expanduser().resolve()  # through a symlink: replace what it points at
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.part")
    try:
        yield tmp
        if target.exists():
            shutil.copymode(target, tmp)  # the user's permissions stay
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise

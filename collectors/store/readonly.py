"""Read-only access to a store: what `sql`, the TUI and the report open (no polars here, so
the TUI starts without importing it), and the checks on the files those commands write."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from collectors.store.connect import (  # noqa: F401 - StoreError and describe_store_error re-exported
    StoreError,
    connect,
    describe_store_error,
    fence,
)
from collectors.store.lakeread import open_lake
from collectors.store.outputs import (  # noqa: F401 - re-exported: the output checks live there
    OutputError,
    check_output_dir,
    check_output_folder,
    replacing,
)


def open_readonly(path: str | Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection with file system access disabled and the configuration locked
    (`fence`).

    Writes, ATTACH, COPY ... TO, INSTALL/LOAD and reads of arbitrary files all fail inside DuckDB;
    spills go to a private directory that DuckDB removes on close, never beside the store.
    A store an interrupted ingest left with a half-loaded file is refused (StoreError).
    A directory is read as a Parquet lake (collectors.store.lake), with the same tables and views.
    """
    if not Path(path).exists():
        raise FileNotFoundError(f"{path}: no such store (run `fabtwin ingest BUNDLE --db {path}` first)")
    if Path(path).is_dir():
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

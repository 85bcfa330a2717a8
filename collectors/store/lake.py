"""The Parquet lake: a store's tables as plain hive-partitioned Parquet that DuckDB, Spark or
Trino read alike.

Layout of a lake directory (zstd Parquet; partition columns live in the paths only, as Hive,
Spark and Trino expect):

    lake.json                                   manifest: version, tables, rows, files
    samples/day=2026-11-30/device=leaf-p0-01/export-0.parquet
    text_samples/, events/, logs/               same: PARTITION_BY (day, device), day = ts's UTC date
    files/export.parquet, neighbors/..., ...    the other tables, one file per write

The manifest is the commit log: readers (`open_lake`) see exactly the files it lists, and a
writer replaces it atomically after its files are complete, so a crashed ingest leaves only
unlisted files, which the next ingest deletes. Spark or Trino pointed at the directories see
the same rows except for such leftovers of a crash.

Ingest into a lake (`open_for_ingest`): the bundle goes into a temporary DuckDB store seeded with
the lake's `files` (so the same content twice adds nothing: idempotence by path and sha256),
`addresses` and `ifmap` (lookups parsers need), with file ids continuing the lake's; the new
rows are then appended as new Parquet files named after the ingest, and `counters` and
`counter_map` are replaced by the current ones. A file that grew supersedes its earlier version
as in a store: the Parquet files holding that version's rows are rewritten without them (the
manifest swaps them in the same commit) and `files` is rewritten with the version marked
`superseded`. Unlike a DuckDB store, samples already in the
lake keep their `counter` when the counter map later learns their vendor name (Parquet files
are immutable): re-export from a store to remap them. One writer at a time (a lock file).

Replay into a lake (`open_for_replay`): the data tables are read where they lie; the results
(tables whose names and DDL the caller gives: replay's own) are computed in memory and replace
the lake's result files whole, as a replay replaces them in a store.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from collectors.settings import duckdb_memory
from collectors.store.connect import StoreError
from collectors.store.ingest import store_totals
from collectors.store.lakeread import (
    MANIFEST,
    PARTITIONED,
    TABLES,
    LakeError,
    empty_manifest,
    is_lake,
    lake_connection,
    parquet_reader,
    quote,
    read_manifest,
    table_columns,
)
from collectors.store.schema import DATA_TABLES
from collectors.store.writer import Store

_REPLACED_ON_INGEST = ("counters", "counter_map")


def _write_manifest(root: Path, doc: dict) -> None:
    doc["updated"] = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    tmp = root / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, root / MANIFEST)  # atomic: readers see the old or the new lake




def _write_table(con: duckdb.DuckDBPyConnection, table: str, query: str, root: Path,
                 tag: str) -> tuple[int, list[str]]:
    """COPY `query` (rows of `table`) into the lake under `tag`; (rows, lake-relative files)."""
    target = root / table
    target.mkdir(parents=True, exist_ok=True)
    if table in PARTITIONED:
        sql = (f"COPY (SELECT *, CAST(ts AS DATE) AS day FROM ({query})) TO {quote(str(target))} "
               f"(FORMAT parquet, COMPRESSION zstd, PARTITION_BY (day, device), "
               f"FILENAME_PATTERN {quote(tag + '-{i}')}, OVERWRITE_OR_IGNORE, RETURN_FILES true)")
    else:
        sql = (f"COPY ({query}) TO {quote(str(target / (tag + '.parquet')))} "
               "(FORMAT parquet, COMPRESSION zstd, RETURN_FILES true)")
    rows, files = con.execute(sql).fetchone()
    return int(rows), [Path(f).resolve().relative_to(root.resolve()).as_posix() for f in files]


def _fresh_dir(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise LakeError(f"{out}: exists and is not an empty directory")
    out.mkdir(parents=True, exist_ok=True)


def export(db: str | Path, out: str | Path) -> dict:
    """Write every table of the DuckDB store `db` into a new lake at `out`; returns the manifest."""
    db, root = Path(db), Path(out)
    if not db.is_file():
        raise FileNotFoundError(f"{db}: no such store")
    _fresh_dir(root)
    try:
        con = duckdb.connect(str(db), read_only=True)
    except duckdb.Error:
        root.rmdir()
        raise
    try:
        con.execute("SET enable_progress_bar = false")
        # partitioned COPY streams when row order need not be kept; bounded like ingest
        con.execute("SET preserve_insertion_order = false")
        con.execute(f"SET memory_limit = {quote(duckdb_memory('write'))}")
        half = con.execute("SELECT path FROM files WHERE status = 'loading' LIMIT 1").fetchone()
        if half:
            raise StoreError(f"{db}: an interrupted ingest left {half[0]} half-loaded; run "
                             "`fabtwin ingest` again on its bundle first")
        doc = empty_manifest()
        present = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        for table in (t for t in TABLES if t in present):  # an older store may lack some
            rows, files = _write_table(con, table, f"SELECT * FROM {table}", root, "export")
            doc["tables"][table].update(rows=rows, files=files)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)  # no half lake: the directory was empty
        raise
    finally:
        con.close()
    doc["created"] = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    _write_manifest(root, doc)
    return doc


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    with open(root / ".lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise LakeError(f"{root}: another ingest is writing this lake") from exc
        yield


def _remove_unlisted(root: Path, doc: dict) -> list[str]:
    """Delete Parquet files a crashed writer left behind (not in the manifest)."""
    listed = {f for t in doc["tables"].values() for f in t["files"]}
    gone = []
    for table in TABLES:
        for p in sorted((root / table).rglob("*.parquet")) if (root / table).is_dir() else []:
            rel = p.relative_to(root).as_posix()
            if rel not in listed:
                p.unlink()
                gone.append(rel)
    return gone


@contextmanager
def open_for_ingest(db: str | Path) -> Iterator[Store]:
    """The store to ingest into: `Store.open(db)` for a DuckDB file; for a lake directory a
    temporary store seeded from the lake, whose new rows are appended to the lake when the
    block ends without an error. An empty directory becomes a new lake."""
    if not is_lake(db):
        with Store.open(db) as store:
            yield store
        return
    root = Path(db)
    # checked before the lock file is made, so that a refused folder gets nothing written;
    # a new lake's own lock and scratch folder (another ingest under way) are not the user's
    if not (root / MANIFEST).exists() and any(
            p.name != ".lock" and not p.name.startswith(".ingest-") for p in root.iterdir()):
        raise LakeError(f"{root}: a folder that is neither empty nor a fabtwin lake (no {MANIFEST});"
                        " nothing was written: give a DuckDB file, an empty or new folder, or a lake")
    with _locked(root):
        doc = read_manifest(root) if (root / MANIFEST).exists() else empty_manifest()
        _remove_unlisted(root, doc)
        tag = "ingest-" + datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
        scratch = root / f".{tag}"
        scratch.mkdir()
        try:
            with Store.open(scratch / "ingest.duckdb") as store:
                base = _seed(store, root, doc)
                before = _superseded(store.con)
                store.path = str(root)
                yield store
                _drop_superseded(store.con, root, doc, tag, base,
                                 sorted(_superseded(store.con) - before))
                _append(store.con, root, doc, tag, base)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        _write_manifest(root, doc)
        _remove_unlisted(root, doc)


@contextmanager
def open_for_replay(db: str | Path, tables: Sequence[str],
                    ddl: str) -> Iterator[duckdb.DuckDBPyConnection]:
    """A writable connection for replay and diagnosis: a DuckDB store's own; for a lake, an
    in-memory DuckDB over the lake whose result `tables` (created by `ddl`, the caller's: replay
    owns them) are real, empty tables. When the block ends without an error they replace the
    lake's result files (the manifest, replaced atomically, commits them)."""
    if not is_lake(db):
        with Store.open(db) as store:
            store.con.execute(ddl)
            yield store.con
        return
    root = Path(db)
    with _locked(root):
        doc = read_manifest(root)
        _remove_unlisted(root, doc)
        con = lake_connection(root)
        try:
            con.execute(f"SET memory_limit = {quote(duckdb_memory('read'))}")
            blank = duckdb.connect(":memory:")
            blank.execute(ddl)
            for table in tables:
                cols = ", ".join(f'"{c}" {t}' for c, t in table_columns(blank, table))
                # a view over earlier results, or an empty table where there were none yet
                kind = "VIEW" if con.execute("SELECT count(*) FROM duckdb_views() WHERE view_name = ?",
                                             [table]).fetchone()[0] else "TABLE"
                con.execute(f"DROP {kind} IF EXISTS {table}")
                con.execute(f"CREATE TABLE {table} ({cols})")
            blank.close()
            yield con
            tag = "replay-" + datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
            for table in tables:
                rows, files = _write_table(con, table, f"SELECT * FROM {table}", root, tag)
                entry = doc["tables"].setdefault(table, {"partitioned": False, "rows": 0, "files": []})
                entry.update(rows=rows, files=files)  # the old files go after the commit
        finally:
            con.close()
        _write_manifest(root, doc)
        _remove_unlisted(root, doc)


def lake_totals(root: str | Path) -> dict:
    """`collectors.store.ingest.store_totals` over the lake."""
    con = lake_connection(root)
    try:
        return store_totals(Store(con, str(root)))
    finally:
        con.close()


def _seed(store: Store, root: Path, doc: dict) -> int:
    """Copy the lake's files, addresses and ifmap into `store`; returns the lake's last file id."""
    con = store.con
    for table in ("files", "addresses", "ifmap"):
        files = doc["tables"][table]["files"]
        if files:
            reader = parquet_reader(root, table, files)
            # a lake written before a column was added (files.time_source) lacks it: NULL
            have = {d[0] for d in con.execute(f"SELECT * FROM {reader} LIMIT 0").description}
            cols = ", ".join(f'"{c}"' for c, _ in table_columns(con, table) if c in have)
            con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {reader}")
    base = con.execute("SELECT coalesce(max(file_id), 0) FROM files").fetchone()[0]
    con.execute("DROP SEQUENCE file_id_seq")
    con.execute(f"CREATE SEQUENCE file_id_seq START {base + 1}")
    return int(base)


def _superseded(con: duckdb.DuckDBPyConnection) -> set[int]:
    return {r[0] for r in con.execute("SELECT file_id FROM files WHERE status = 'superseded'").fetchall()}


def _drop_superseded(con: duckdb.DuckDBPyConnection, root: Path, doc: dict, tag: str,
                     base: int, gone: list[int]) -> None:
    """The lake's rows of the files this ingest superseded (`gone`) leave it: each listed Parquet
    file holding some is rewritten without them, under `tag`, and the lake's `files` rows are
    rewritten with those versions marked superseded. The old Parquet files go after the
    manifest commits (`_remove_unlisted`)."""
    if not gone:
        return
    ids = ", ".join(str(int(i)) for i in gone)
    for table in DATA_TABLES:
        entry = doc["tables"][table]
        if not entry["files"]:
            continue
        # one scan of the table's file_id column says which files hold such rows (a lake has a
        # file per day and device: not a query per file)
        listed = "[" + ", ".join(quote(str(root / rel)) for rel in entry["files"]) + "]"
        hits = dict(con.execute(
            f"SELECT filename, count(*) FROM read_parquet({listed}, hive_partitioning = false, "
            f"union_by_name = true, filename = true) WHERE file_id IN ({ids}) GROUP BY filename"
        ).fetchall())
        kept: list[str] = []
        for n, rel in enumerate(entry["files"]):
            hit = hits.get(str(root / rel), 0)
            if not hit:
                kept.append(rel)
                continue
            # the file alone: a partitioned file's day and device stay in its path
            one = f"read_parquet({quote(str(root / rel))}, hive_partitioning = false)"
            new = (root / rel).with_name(f"{tag}-rewrite-{n}.parquet")
            rows = con.execute(f"COPY (SELECT * FROM {one} WHERE file_id NOT IN ({ids})) TO "
                               f"{quote(str(new))} (FORMAT parquet, COMPRESSION zstd)").fetchone()[0]
            entry["rows"] -= int(hit)
            if rows:
                kept.append(new.relative_to(root).as_posix())
            else:
                new.unlink()
        entry["files"] = kept
    # the lake's own files rows (ids up to `base`), with the superseded ones marked; _append
    # then adds this ingest's new rows as usual. The old files of `files` go after the commit.
    rows, files = _write_table(con, "files", f"SELECT * FROM files WHERE file_id <= {base}",
                               root, tag + "-files")
    doc["tables"]["files"].update(rows=rows, files=files)


def _append(con: duckdb.DuckDBPyConnection, root: Path, doc: dict, tag: str, base: int) -> None:
    """Write the rows of files newer than `base` as new Parquet files and list them in `doc`."""
    appended = 0
    for table in ("files", *DATA_TABLES):
        rows, files = _write_table(con, table, f"SELECT * FROM {table} WHERE file_id > {base}", root, tag)
        if rows:
            entry = doc["tables"][table]
            entry["rows"] += rows
            entry["files"] += files
            appended += rows
        else:
            for f in files:  # an empty small-table file adds nothing
                (root / f).unlink()
    for table in _REPLACED_ON_INGEST if appended else ():
        rows, files = _write_table(con, table, f"SELECT * FROM {table}", root, tag)
        doc["tables"][table].update(rows=rows, files=files)  # the old files go after the commit

"""The DuckDB store: one file any DuckDB client can read (design section 5).

`Store.open(path)` creates the tables of `sql/schema.sql` (and those registered by the layers above,
`schema.register_tables`) if needed, refreshes `counter_map`
from the CSV data files and (re)creates the views of `sql/views.sql`. `ingest_file` loads one
file in one transaction: a crash leaves either the whole file or nothing. Small files may share
one transaction (`group=True`, then `commit()`), which saves a commit per file.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import polars as pl

from collectors.core.schema import canonical_counters, counter_map
from collectors.core.source import Parser, Sink, SourceFile, run_parser
from collectors.settings import DUCKDB_MEMORY, duckdb_memory, is_size
from collectors.store.connect import StoreError, connect  # noqa: F401 - StoreError re-exported
from collectors.store.frames import batch_height, frame_of
from collectors.store.readonly import open_readonly  # noqa: F401 - re-exported
from collectors.store.schema import DATA_TABLES, schema_ddl, sql_text

if TYPE_CHECKING:  # the pool imports every format family; the store needs only the type
    from collectors.store.pool import ParsedFile

_TS_COLUMNS = {"ts", "start", "end"}

@dataclass
class FileResult:
    """What happened to one file of a bundle."""

    path: str
    status: str  # loaded | skipped | unchanged | failed
    parser: str | None = None
    records_read: int = 0
    loaded: int = 0
    rejected: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    reason: str | None = None
    first_reject: str | None = None  # "file:line: reason" for the one-line error
    superseded: list[int] = field(default_factory=list)  # earlier versions' file ids it replaced
    broken: str | None = None  # "file:line: reason" where its text ended early (damaged gzip)
    time_source: str | None = None  # where its rows' times came from (SourceFile.time_source)

    def as_json(self) -> dict:
        return {
            "path": self.path, "status": self.status, "parser": self.parser,
            "records_read": self.records_read, "loaded": self.loaded, "rejected": self.rejected,
            "rows": {k: v for k, v in self.rows.items() if v}, "reason": self.reason,
            "superseded": self.superseded, "ended_early": self.broken,
            "time_source": self.time_source,
        }


COMMIT_ROWS = 1_000_000
# a file smaller than this may share its transaction with the files before it, up to GROUP_FILES
GROUP_BYTES = 4 << 20
GROUP_FILES = 1000
# rows are buffered and inserted this many at a time (one statement per table, at a commit or
# when the buffer is full): DuckDB wrote 2M samples as 2 INSERTs of 1M rows in 0.70 s and 17 MB,
# as 8 of 250K in 1.4 s (with the checkpoint at close) and 30 MB. 500K: 5.1M Prometheus samples
# ingest at a peak of 770 MB, against 890 MB with 1M rows, and no slower
PENDING_ROWS = 500_000
_LOOKUP_TABLES = ("addresses", "ifmap")  # read back by the next file: never deferred


class Store:
    """A fabtwin DuckDB store opened for writing (ingest, replay)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: str) -> None:
        self.con = con
        self.path = path
        self.interrupted: list[str] = []  # half-loaded files removed when this store opened
        # the open transaction's files, as the calls that would load them again alone
        self._group: list[Callable[[], object]] = []
        self._group_rows = 0
        self._pending: dict[tuple[str, str], list[tuple[pl.DataFrame, int]]] = {}
        self._pending_rows = 0
        self._pending_files: list[tuple] = []  # small files' `files` rows, inserted with their rows
        self._last_id: int | None = None  # the last file id handed out (read on first use)
        self._unmarked: tuple | None = None  # the file being loaded, while it has no `files` row
        self._in_txn = False
        self._maps: tuple[dict, dict] | None = None  # address and ifmap maps, until they change
        self.memory_chosen = False  # opened with a memory limit of the caller's (or the env's)

    @classmethod
    def open(cls, path: str | Path, memory_limit: str | None = None) -> Store:
        """Open or create the store at `path` (":memory:" for a throwaway one).

        DuckDB keeps written pages cached up to its memory limit (80% of RAM by default); the
        limit here (`FABTWIN_DUCKDB_MEMORY`, default 512MB) keeps ingest's memory flat whatever
        the bundle's size. Bigger queries spill to disk.
        """
        con = connect(path)
        con.execute("SET enable_progress_bar = false")  # it would print into our stdout
        limit = memory_limit or duckdb_memory("write")
        if not is_size(limit):
            raise ValueError(f"memory limit {limit!r} is not like 512MB or 2GiB")
        if str(path) != ":memory:":
            con.execute(f"SET memory_limit = '{limit}'")
        store = cls(con, str(path))
        store.memory_chosen = memory_limit is not None or DUCKDB_MEMORY.is_set()
        # one transaction: each DDL statement committing on its own (a WAL write and sync each)
        # was a third of the CPU and most of the wall time of creating a store
        con.execute("BEGIN")
        try:
            con.execute(schema_ddl())
            store._load_counter_map()
            store._create_views()
            con.execute("COMMIT")
        except BaseException:
            with suppress(duckdb.Error):
                con.execute("ROLLBACK")
            raise
        store.interrupted = store._remove_interrupted()
        return store

    def close(self) -> None:
        self.commit()
        self.con.close()

    def rollback(self) -> None:
        """Undo the open group of files, if any (an ingest stopped between two of them)."""
        if self._in_txn:
            self.con.execute("ROLLBACK")
            self._in_txn = False
        self._pending, self._pending_rows, self._pending_files = {}, 0, []
        self._group, self._group_rows, self._unmarked, self._maps = [], 0, None, None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is None:
            self.close()
            return
        # an ingest stopped (Ctrl-C, a worker killed, a full disk): what the open transaction
        # holds may be part of a file (an insert cut short), so it goes; committed files stay,
        # and a big file's committed chunks (`loading`) are removed by the next write-open
        try:
            with suppress(duckdb.Error):  # DuckDB drops what was not committed at the close
                self.rollback()
        finally:
            self.con.close()

    def _load_counter_map(self) -> None:
        """The `counters` and `counter_map` tables from the package's CSVs; when they changed
        (a new store, a new release), samples loaded before the map knew their name get their
        canonical name now. An unchanged map costs one read (rewriting it was half the cost
        of opening a store)."""
        canon = canonical_counters()
        counters = sorted((c.name, c.kind, c.unit, c.description) for c in canon.values())
        rows = sorted((m.family, m.vendor_name, m.canonical, canon[m.canonical].kind,
                       float(m.scale), m.source) for m in counter_map().values())
        have = self.con.execute("SELECT * FROM counters ORDER BY ALL").fetchall()
        have_map = self.con.execute("SELECT * FROM counter_map ORDER BY ALL").fetchall()
        if have == counters and have_map == rows:
            return
        # (within `open`'s transaction)
        self.con.execute("DELETE FROM counters")
        _insert_rows(self.con, "counters", ["counter", "kind", "unit", "description"], counters)
        self.con.execute("DELETE FROM counter_map")
        _insert_rows(self.con, "counter_map",
                     ["family", "vendor_name", "canonical", "kind", "scale", "source"], rows)
        self.con.execute(
            "UPDATE samples SET counter = m.canonical, value = samples.value * m.scale "
            "FROM files f, counter_map m WHERE samples.counter IS NULL "
            "AND f.file_id = samples.file_id AND m.family = f.family AND m.vendor_name = samples.metric")

    def _create_views(self) -> None:
        """(Re)create the views and macros of `sql/views.sql` unless the store has this very
        text already (its hash is the comment of the `port_rates` view)."""
        text = sql_text("views.sql")
        mark = f"fabtwin views.sql sha256 {hashlib.sha256(text.encode()).hexdigest()}"
        row = self.con.execute(
            "SELECT comment FROM duckdb_views() WHERE view_name = 'port_rates' "
            "AND schema_name = 'main' AND database_name = current_database()").fetchone()
        if row and row[0] == mark:
            return
        self.con.execute(text)
        self.con.execute(f"COMMENT ON VIEW port_rates IS '{mark}'")

    # -- lookups parsers need ----------------------------------------------------------------
    def lookup_maps(self) -> tuple[dict[str, str], dict[tuple[str, str, int], str]]:
        """Copies of `address_map()` and `ifmap_map()`, read again only after they changed."""
        if self._maps is None:
            self._maps = (self.address_map(), self.ifmap_map())
        return dict(self._maps[0]), dict(self._maps[1])

    def address_map(self) -> dict[str, str]:
        return dict(self.con.execute("SELECT address, any_value(device) FROM addresses GROUP BY 1").fetchall())

    def ifmap_map(self) -> dict[tuple[str, str, int], str]:
        rows = self.con.execute(
            "SELECT host, ibdev, coalesce(port, 1), any_value(netdev) FROM ifmap GROUP BY ALL").fetchall()
        return {(h, i, p): n for h, i, p, n in rows}

    def known_devices(self) -> set[str]:
        """The devices the store's topology, jobs, RDMA maps and events name (not the samples:
        a scan of the biggest table for each level of an ingest would cost seconds)."""
        self._flush_pending()  # the rows of files loaded just now, in the open transaction
        return {r[0] for r in self.con.execute(
            "SELECT device FROM neighbors UNION SELECT peer_device FROM neighbors "
            "UNION SELECT host FROM job_hosts UNION SELECT host FROM ifmap "
            "UNION SELECT device FROM addresses UNION SELECT device FROM events").fetchall()
            if r[0]}

    def known_file(self, rel: str, sha: str) -> str | None:
        """Status of a file already seen with this bundle path and content, else None.

        The path is part of the key: the same bytes under another name can mean another device
        (two hosts' identical `ibdev2netdev` output).
        """
        row = self.con.execute(
            "SELECT status FROM files WHERE sha256 = ? AND path = ? LIMIT 1", [sha, rel]).fetchone()
        return row[0] if row else None

    def loaded_versions(self) -> dict[str, list[tuple[int, str, str, int]]]:
        """Per bundle-relative path, its loaded versions: (file_id, bundle, sha256, size)."""
        out: dict[str, list[tuple[int, str, str, int]]] = {}
        for file_id, path, bundle, sha, size in self.con.execute(
                "SELECT file_id, path, bundle, sha256, size_bytes FROM files "
                "WHERE status = 'loaded' ORDER BY file_id").fetchall():
            out.setdefault(path, []).append((file_id, bundle, sha, size))
        return out

    def seen_files(self) -> dict[tuple[str, str], tuple[str, str | None]]:
        """`known_file` for every file in the store at once: (path, sha256) -> (status, parser);
        a loaded file's status wins over a skipped one's."""
        return {(p, h): (st, parser) for p, h, st, parser in self.con.execute(
            "SELECT path, sha256, arg_max(status, status = 'loaded'), "
            "arg_max(parser, status = 'loaded') FROM files GROUP BY ALL").fetchall()}

    # -- ingest -------------------------------------------------------------------------------
    def _insert(self, table: str, file_id: int, family: str, rel: str,
                buf: dict[str, list] | pl.DataFrame) -> None:
        """Insert one batch of a file's rows: kept for one INSERT with the next batches, of
        this file or of the next small files (`_flush_pending`, before any commit); the lookup
        tables at once (the next file reads them)."""
        if table == "rejects":
            frame = pl.DataFrame({"path": [rel] * len(buf["line"]), "line": buf["line"],
                                  "reason": buf["reason"], "raw": buf["raw"]},
                                 schema={"path": pl.String, "line": pl.Int64, "reason": pl.String,
                                         "raw": pl.String})
        else:
            frame = frame_of(table, buf, family)
        if table not in _LOOKUP_TABLES:
            # the file id is added at the flush, for all the frames at once: a `with_columns`
            # per batch cost 0.5 ms, 6 s of the 12,288 NIC files of the large bundle
            self._pending.setdefault((table, family), []).append((frame, file_id))
            self._pending_rows += frame.height
            if self._pending_rows >= PENDING_ROWS:
                self._flush_pending()
        else:
            self._insert_frame(table, family,
                               frame.with_columns(pl.lit(file_id, pl.Int32).alias("file_id")))

    def _next_file_id(self) -> int:
        """One more than the store's highest file id (one query per store session, counted on
        here): a store reopened for another bundle numbers its files on from the last, as a lake
        does (lake._seed). Blocks of file_id_seq numbered that bundle from 1001, the unused rest
        of the block lost at the close; a store they numbered so goes on after its highest id.
        Read on first use, not at the open: a lake's ingest seeds its `files` rows first."""
        if self._last_id is None:
            # fetchall: a result left half-fetched would hold the connection (DuckDB 2)
            self._last_id = int(self.con.execute(
                "SELECT coalesce(max(file_id), 0) FROM files").fetchall()[0][0])
        self._last_id += 1
        return self._last_id

    def _flush_pending(self) -> None:
        """Insert the deferred batches, one statement per table, and their files' rows."""
        pending, self._pending, self._pending_rows = self._pending, {}, 0
        for key in list(pending):
            table, family = key
            parts = pending.pop(key)
            # one chunk: DuckDB writes it as full row groups (122,880 rows). Chunks scanned in
            # parallel each leave a part-filled row group, which the checkpoint at close merges
            # again (0.8 s of a 5M-sample file)
            ids = np.repeat(np.array([i for _, i in parts], dtype=np.int32),
                            [f.height for f, _ in parts])
            frame = pl.concat([f for f, _ in parts], how="vertical_relaxed", rechunk=True)
            del parts  # only the one chunk is held while it is inserted
            self._insert_frame(table, family, frame.with_columns(
                pl.Series("file_id", ids, dtype=pl.Int32)))
        files, self._pending_files = self._pending_files, []
        if files:
            cols = ["file_id", "path", "bundle", "sha256", "size_bytes", "parser", "family",
                    "records_read", "loaded", "rejected", "rows_written", "time_source"]
            frame = pl.DataFrame(files, schema=cols, orient="row")
            self.con.register("_files", frame)
            try:
                self.con.execute(
                    f"INSERT INTO files ({', '.join(cols)}, status, ingested_at) "
                    f"SELECT {', '.join(cols)}, 'loaded', current_timestamp FROM _files")
            finally:
                self.con.unregister("_files")

    def _insert_frame(self, table: str, family: str, frame: pl.DataFrame) -> None:
        # polars' own string views: DuckDB reads them without the copy to large strings that
        # `to_arrow()`'s default makes (2M samples inserted in 0.63 against 0.69 s)
        self.con.register("_batch", frame.to_arrow(compat_level=pl.CompatLevel.newest()))
        try:
            self._insert_batch(table, family, [c for c in frame.columns if c != "file_id"])
        finally:
            self.con.unregister("_batch")

    def _insert_batch(self, table: str, family: str, cols: list[str]) -> None:
        if table == "samples":  # frame_of has named the counters (counter_map's rows)
            self.con.execute(
                "INSERT INTO samples (ts, device, ifname, counter, metric, qualifier, value, "
                "file_id, line, prev_gap_us, prev_delta, is_tail) "
                "SELECT make_timestamp(ts // 1000), device, ifname, counter, metric, qualifier, "
                "value, file_id, line, prev_gap_us, prev_delta, is_tail "
                "FROM _batch")
            return
        quoted = ", ".join(f'"{c}"' for c in cols)
        select = ", ".join(f'make_timestamp("{c}" // 1000)' if c in _TS_COLUMNS else f'"{c}"' for c in cols)
        self.con.execute(f"INSERT INTO {table} ({quoted}, file_id) SELECT {select}, file_id FROM _batch")

    def ingest_file(self, parser: Parser, src: SourceFile, sha: str | Future[str],
                    bundle: str = "", group: bool = False,
                    parsed: ParsedFile | None = None,
                    supersedes: list[int] | None = None) -> FileResult:
        """Parse and load one file (or load what a worker `parsed`); returns its accounting.

        All or nothing per file: the file is listed as `loaded` in the same transaction as its
        rows. A big file's rows are committed in chunks of `COMMIT_ROWS` (so memory stays
        bounded whatever the file's size: DuckDB holds uncommitted rows in memory), listed as
        `loading` with the first chunk. If parsing fails the rows are removed at once; if the
        process dies, the next write-open removes them (`_remove_interrupted`) and read-only
        opens refuse the store until then. `sha` may still be computing (a future): it is
        needed only when the file's row is written.

        `group=True` leaves the transaction open for the next small files (call `commit()`
        after the last): a crash then loses the whole group, never part of a file. Should a file
        of the group fail, the transaction is rolled back and the files before it are loaded
        again, each in its own transaction.

        `supersedes`: file ids of this file's earlier versions (it grew, or changed): their rows
        are deleted and their `files` rows marked `superseded`, in the transaction that loads
        this file (for a file of more than COMMIT_ROWS rows, the one of its first chunk).
        """
        size = src.path.stat().st_size
        if not self._in_txn:
            self.con.execute("BEGIN")
            self._in_txn = True
        file_id = self._next_file_id()
        if supersedes:
            self._supersede(supersedes, file_id)
        # the file's `files` row is written with its rows, already `loaded`, or as `loading`
        # before the first chunk of a big file commits
        self._unmarked = (file_id, src.rel, bundle, sha, size, parser.name, parser.family)
        def insert(table: str, buf) -> None:
            self._insert(table, file_id, parser.family, src.rel, buf)

        try:
            sink: Sink | ParsedFile
            if parsed is not None:  # a worker parsed it: nothing to overlap, inserted here
                sink, since_commit = parsed, 0
                for table, buf in parsed.batches:
                    insert(table, buf)
                    since_commit += batch_height(buf)
                    if since_commit >= COMMIT_ROWS:
                        self._commit_chunk()
                        since_commit = 0
            else:
                addresses, ifmaps = self.lookup_maps()
                loader = _Loader(insert, commit=self._commit_chunk)
                sink = Sink(flush=loader.put, addresses=addresses, ifmaps=ifmaps)
                try:
                    run_parser(parser, src, sink)
                finally:
                    loader.finish()
            counts = [sink.loaded + sink.rejected, sink.loaded, sink.rejected,
                      sum(sink.rows.values()), sink.time_source]
            if self._unmarked is not None:  # no chunk commit came: the row goes with the rows
                self._pending_files.append((*_resolved(self._unmarked), *counts))
                self._unmarked = None
            else:
                self.con.execute(
                    "UPDATE files SET status = 'loaded', records_read = ?, loaded = ?, rejected = ?, "
                    "rows_written = ?, time_source = ?, ingested_at = current_timestamp "
                    "WHERE file_id = ?",
                    [*counts, file_id])
        except BaseException as exc:
            self.con.execute("ROLLBACK")
            self._pending, self._pending_rows, self._pending_files = {}, 0, []
            self._unmarked = None
            self._in_txn = False
            self._maps = None
            self._remove_files([file_id])
            lost, self._group, self._group_rows = self._group, [], 0
            if isinstance(exc, Exception):
                for again in lost:
                    again()
            raise
        if sink.rows["addresses"] or sink.rows["ifmap"]:
            self._maps = None
        self._group.append(lambda: self.ingest_file(parser, src, sha, bundle,
                                                    supersedes=supersedes))
        self._group_rows += sum(sink.rows.values())
        if (not group or size >= GROUP_BYTES or len(self._group) >= GROUP_FILES
                or self._group_rows >= COMMIT_ROWS):
            self.commit()
        first = None
        if sink.first_reject:
            line, reason, _ = sink.first_reject
            first = f"{src.rel}:{line}: {reason}"
        return FileResult(src.rel, "loaded", parser.name, sink.loaded + sink.rejected, sink.loaded,
                          sink.rejected, dict(sink.rows), first_reject=first,
                          superseded=list(supersedes or []), broken=sink.ended_early,
                          time_source=sink.time_source)

    def commit(self) -> None:
        """Commit the open group of files, if any; should that fail, the group is rolled back
        (a file's `files` row never commits without its rows)."""
        if self._in_txn:
            try:
                self._flush_pending()
                self.con.execute("COMMIT")
            except BaseException:
                with suppress(duckdb.Error):
                    self.rollback()
                self._in_txn = False
                raise
            self._in_txn = False
        self._group, self._group_rows = [], 0

    def _mark_loading(self) -> None:
        """Write the `loading` row of the file being loaded (before any of its rows commit)."""
        if self._unmarked is not None:
            self.con.execute(
                "INSERT INTO files (file_id, path, bundle, sha256, size_bytes, parser, family, "
                "status) VALUES (?, ?, ?, ?, ?, ?, ?, 'loading')", _resolved(self._unmarked))
            self._unmarked = None

    def _commit_chunk(self) -> None:
        # a crash after this commit must find the file being loaded listed as `loading`, and
        # a file listed as loaded never commits without its rows
        self._mark_loading()
        self._flush_pending()
        self.con.execute("COMMIT")
        self.con.execute("BEGIN")
        self._group, self._group_rows = [], 0  # durable now: a failure must not load them twice

    def _supersede(self, file_ids: list[int], by: int) -> None:
        """Within the open transaction: the rows of these files go, their `files` rows stay
        as `superseded` (by the file `by`)."""
        marks = ", ".join("?" * len(file_ids))
        self._flush_pending()  # deferred rows of these files (none unless loaded just now)
        for table in DATA_TABLES:
            self.con.execute(f"DELETE FROM {table} WHERE file_id IN ({marks})", file_ids)
        self.con.execute(
            f"UPDATE files SET status = 'superseded', reason = ? WHERE file_id IN ({marks})",
            [f"superseded by a newer version of the file (file_id {by})", *file_ids])
        self._maps = None  # an earlier address or ifmap may be gone

    def _remove_files(self, file_ids: list[int]) -> None:
        """Delete every row of these files, and the files, in one transaction."""
        if not file_ids:
            return
        marks = ", ".join("?" * len(file_ids))
        self.con.execute("BEGIN")
        for table in DATA_TABLES:
            self.con.execute(f"DELETE FROM {table} WHERE file_id IN ({marks})", file_ids)
        self.con.execute(f"DELETE FROM files WHERE file_id IN ({marks})", file_ids)
        self.con.execute("COMMIT")

    def _remove_interrupted(self) -> list[str]:
        """Remove files an interrupted ingest left half-loaded; returns their paths."""
        rows = self.con.execute("SELECT file_id, path FROM files WHERE status = 'loading'").fetchall()
        self._remove_files([r[0] for r in rows])
        return [r[1] for r in rows]

    def record_not_read(self, rel: str, reason: str, bundle: str = "") -> None:
        """List an entry of the bundle that was not opened (a symbolic link out of it, a FIFO):
        no content, so no sha256 (''); once per path and reason."""
        if self.con.execute("SELECT 1 FROM files WHERE path = ? AND sha256 = '' AND reason = ?",
                            [rel, reason]).fetchall():
            return
        self.con.execute(
            "INSERT INTO files (file_id, path, bundle, sha256, status, reason) "
            "VALUES (?, ?, ?, '', 'skipped', ?)", [self._next_file_id(), rel, bundle, reason])
        if self._in_txn:
            self._group.append(lambda: self.record_not_read(rel, reason, bundle))

    def record_skipped(self, src: SourceFile, sha: str, reason: str, bundle: str = "",
                       known: str | None = None) -> None:
        """List a file no parser recognized (once per content); `known` is its `known_file`
        status when the caller has it. Joins the open group of files, if any."""
        if known or (known is None and self.known_file(src.rel, sha)):
            return
        self.con.execute(
            "INSERT INTO files (file_id, path, bundle, sha256, size_bytes, status, reason) "
            "VALUES (?, ?, ?, ?, ?, 'skipped', ?)",
            [self._next_file_id(), src.rel, bundle, sha, src.path.stat().st_size, reason])
        if self._in_txn:
            self._group.append(lambda: self.record_skipped(src, sha, reason, bundle))


class _Loader:
    """Inserts batches on a background thread while the parser produces the next ones.

    DuckDB and polars release the GIL while they work, so parsing (Python) and loading overlap
    on two cores. The queue holds at most two batches: memory stays bounded. An error in the
    loader is raised again in the parsing thread, at the next batch or at `finish`.
    """

    def __init__(self, insert, commit=None) -> None:
        self.insert = insert
        self.commit = commit  # called after every COMMIT_ROWS rows, on the loader thread
        self.since_commit = 0
        self.queue: queue.Queue = queue.Queue(maxsize=2)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="fabtwin-loader", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            if self.error is None:
                try:
                    self.insert(*item)
                    self.since_commit += batch_height(item[1])
                    if self.commit is not None and self.since_commit >= COMMIT_ROWS:
                        self.commit()
                        self.since_commit = 0
                except BaseException as exc:  # noqa: BLE001 - handed to the parsing thread
                    self.error = exc

    def put(self, table: str, buf) -> None:
        if self.error is not None:
            raise self.error
        self.queue.put((table, buf))

    def finish(self) -> None:
        self.queue.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error


def _resolved(row: tuple) -> list:
    """A `files` row with its sha256 computed (it may have been a future)."""
    return [v.result() if isinstance(v, Future) else v for v in row]


@contextmanager
def duckdb_setting(con: duckdb.DuckDBPyConnection, name: str, value: str) -> Iterator[None]:
    """A DuckDB option set to `value` within the block, then back to what it was; left alone
    when the connection's configuration is locked."""
    before = con.execute("SELECT current_setting(?)", [name]).fetchone()[0]  # type: ignore[index]
    try:
        con.execute(f"SET {name} = ?", [value])
    except duckdb.InvalidInputException:
        yield
        return
    try:
        yield
    finally:
        con.execute(f"SET {name} = ?", [str(before).lower() if isinstance(before, bool)
                                        else before])


# Below these sizes a store's statements run on one DuckDB thread: on the 20-minute bundles
# (about 90K samples in 1 MB of files) a second thread bought no wall time and cost CPU in
# every investigate (a parallel scan of two row groups coordinates more than it computes);
# results identical (investigate --json and ingest's tables compared on 9 bundles)
SMALL_STORE_SAMPLES = 1_000_000
SMALL_BUNDLE_BYTES = 16 << 20


def one_thread_if(con: duckdb.DuckDBPyConnection, small: bool) -> AbstractContextManager:
    """One DuckDB thread on `con` within the block when `small` (see SMALL_STORE_SAMPLES),
    else the connection's threads as they are."""
    return duckdb_setting(con, "threads", "1") if small else nullcontext()


def _insert_rows(con: duckdb.DuckDBPyConnection, table: str, columns: list[str],
                 rows: list[tuple]) -> None:
    """Insert `rows` into `table` in one statement (executemany costs a statement per row)."""
    if not rows:
        return
    frame = pl.DataFrame(rows, schema=columns, orient="row", infer_schema_length=None)
    con.register("_fabtwin_rows", frame.to_arrow())
    try:
        con.execute(f"INSERT INTO {table} ({', '.join(columns)}) "
                    f"SELECT {', '.join(columns)} FROM _fabtwin_rows")
    finally:
        con.unregister("_fabtwin_rows")

"""Parse a bundle's files on several cores; the store inserts what the workers parsed.

Parsing is Python (one core per process), inserting is DuckDB in the one process that holds the
store. So `ingest_bundle` hands the files to a pool of worker processes (`parse_task`), which
hash each file, skip the ones the store already holds, run the file's parser into a Sink that
keeps its batches as polars frames, and send them back; the store then loads each file's batches
in the same transactions, and the same order, as a serial ingest would (`Store.ingest_file` with
`parsed=`). Results come back in submission order, so file ids, and so every table, are the same
as a serial ingest's; at most a few files are in flight, so memory stays bounded.

A worker sends its big frames back as Arrow IPC with lz4 (`Packed`), not pickled: a tenth of the
bytes through the pipe and about half the CPU of pickling (write and read); small frames stay
pickled (an IPC stream costs a few ms whatever its size).

The lookups parsers need from earlier files (management addresses, ibdev2netdev maps) reach the
workers through a pickle file written once per version of the maps: the files of one priority
level all see the maps as they were after the levels before (see `collectors.registry`).
"""

from __future__ import annotations

import gzip
import io
import os
import pickle
import signal
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from multiprocessing import get_context
from pathlib import Path

import polars as pl

from collectors.core.source import Sink, SourceFile, concat_samples, run_parser
from collectors.registry import parsers, recognize
from collectors.settings import ingest_workers
from collectors.store.frames import frame_of, head_of, raw_frame, sha256_of

# files at or above this size are parsed in the store's own process, streamed in batches (their
# rows would not fit in one message); the pool takes the rest
POOL_MAX_BYTES = 8 << 20
POOL_MIN_FILES = 32  # fewer files than this: a pool would cost more to start than it saves
# fewer bytes than this (on disk, of the files the pool would take): parsed here, in the same
# chunks (`LocalPool`). Each spawned worker imports polars and the parsers again (about 0.7 s of
# CPU) and sends its frames through a pipe: a 20-minute gallery bundle (0.5 MB, 83 files) took
# 4.3-4.7 s of CPU to investigate on two workers, 2.3-2.6 s here; the 1,669 files (25 MB) of a
# 20-minute 256-host bundle 18.6 s of CPU (99 s wall) to ingest on two workers, 16.7 s (72 s)
# here, on a shared, loaded 2-core machine
POOL_MIN_BYTES = 32 << 20
IPC_MIN_ROWS = 20_000  # frames at least this tall travel as Arrow IPC (lz4), smaller ones pickled
# small files go to a worker this many bytes (or CHUNK_FILES files) at a time, and their samples
# are converted (`frames.frame_of`) together: polars costs about 5 ms per call of it whatever the
# rows, which was a quarter of the CPU of a 10 KB NIC snapshot file
CHUNK_BYTES = 1 << 20
CHUNK_FILES = 64


def default_workers() -> int:
    """Worker processes for parsing: `FABTWIN_INGEST_WORKERS`, else the machine's cores (at most 8)."""
    return ingest_workers()


@dataclass
class ParsedFile:
    """One file as a worker parsed it: its batches and its accounting (Sink's fields)."""

    rel: str
    sha: str
    status: str  # parsed | failed
    reason: str | None = None
    batches: list[tuple[str, object]] = field(default_factory=list)
    loaded: int = 0
    rejected: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    first_reject: tuple[int, str, str] | None = None
    ended_early: str | None = None
    time_source: str = "sample"  # SourceFile.time_source of the parse


@dataclass(frozen=True)
class Packed:
    """A frame on its way from a worker: Arrow IPC bytes, lz4-compressed."""

    ipc: bytes

    @classmethod
    def of(cls, frame: pl.DataFrame) -> Packed:
        buf = io.BytesIO()
        frame.write_ipc(buf, compression="lz4")
        return cls(buf.getvalue())

    def frame(self) -> pl.DataFrame:
        return pl.read_ipc(io.BytesIO(self.ipc))


def packed(buf: object) -> object:
    """A batch as it travels: a big frame `Packed`, anything else as it is."""
    return Packed.of(buf) if isinstance(buf, pl.DataFrame) and buf.height >= IPC_MIN_ROWS else buf


def unpack_batch(buf: object) -> object:
    """A batch as it arrived, its frame read back if it was `Packed`."""
    return buf.frame() if isinstance(buf, Packed) else buf


def pack(parsed: ParsedFile) -> ParsedFile:
    """`parsed` with its big frames as `Packed` (in the worker, before it is sent)."""
    parsed.batches = [(t, packed(b)) for t, b in parsed.batches]
    return parsed


def unpack(parsed: ParsedFile) -> ParsedFile:
    """`parsed` with its `Packed` frames read back (in the store's process)."""
    parsed.batches = [(t, unpack_batch(b)) for t, b in parsed.batches]
    return parsed


@dataclass(frozen=True)
class Task:
    """What a worker needs to parse one file."""

    src: SourceFile
    parser: str
    sha: str
    maps_version: int
    size: int = 0  # bytes, for the chunks of small files


@dataclass(frozen=True)
class Found:
    """A file's sha256 and parser (None: no parser reads it); `unchanged`: the store has it."""

    sha: str
    parser: object | None
    unchanged: bool


# worker-process state, set by _init and the first task of each maps version
_MAPS_PATH = ""
_MAPS: tuple[int, dict, dict] | None = None
_PARSERS: dict[str, object] = {}


def _init(maps_path: str, parent: int) -> None:
    global _MAPS_PATH, _PARSERS
    ignore_interrupts()
    _MAPS_PATH = maps_path
    _PARSERS = {p.name: p for p in parsers()}
    threading.Thread(target=watch_parent, args=(parent,), daemon=True).start()


def ignore_interrupts() -> None:
    """Ctrl-C reaches every process of the terminal's group: a worker leaves it to the
    ingesting process, which stops the pool and prints one line (a worker's own traceback
    would only add noise)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def watch_parent(parent: int) -> None:
    """Exit when the ingesting process is gone (killed, so it could not shut the pool down): a
    worker would otherwise wait for jobs for ever, holding the files it inherited."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def _maps(version: int) -> tuple[dict, dict]:
    global _MAPS
    if _MAPS is None or _MAPS[0] != version:
        with open(f"{_MAPS_PATH}.{version}", "rb") as fh:
            addresses, ifmaps = pickle.load(fh)
        _MAPS = (version, addresses, ifmaps)
    return dict(_MAPS[1]), dict(_MAPS[2])


def parse_file(parser, src: SourceFile, sha: str, addresses: dict, ifmaps: dict,
               convert: bool = True) -> ParsedFile:
    """Run `parser` over `src` into frames, with the accounting `Store.ingest_file` records.
    `convert=False` leaves the samples as the parser gave them (`convert_samples` does them)."""
    out = ParsedFile(src.rel, sha, "parsed")
    sink = Sink(flush=_keeper(out, parser.family, convert), addresses=addresses, ifmaps=ifmaps)
    try:
        run_parser(parser, src, sink)
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        return ParsedFile(src.rel, sha, "failed", reason=f"{src.rel}: {exc}")
    return _accounted(out, sink)


def _accounted(out: ParsedFile, sink: Sink) -> ParsedFile:
    """`out` with the accounting of the (closed) sink its batches came from."""
    out.loaded, out.rejected, out.rows = sink.loaded, sink.rejected, dict(sink.rows)
    out.first_reject, out.ended_early = sink.first_reject, sink.ended_early
    out.time_source = sink.time_source
    return out


def recognize_file(item: tuple[Path, str, str]) -> tuple[str, str | None]:
    """A worker's first job: (sha256, parser name or None) of a (path, name, sha256 or "")."""
    path, rel, sha = item
    parser = recognize(head_of(path), rel)
    return sha or sha256_of(path), parser.name if parser else None


def parse_task(task: Task) -> ParsedFile:
    """A worker's job: parse one file (its big frames packed for the trip back)."""
    addresses, ifmaps = _maps(task.maps_version)
    return pack(parse_file(_PARSERS[task.parser], task.src, task.sha, addresses, ifmaps))


def parse_tasks(tasks: list[Task]) -> list[ParsedFile]:
    """A worker's job for small files: `parse_chunk`, big frames packed for the trip back."""
    return [pack(p) for p in parse_chunk(tasks, _PARSERS, _maps)]


Maps = Callable[[int], tuple[dict, dict]]  # a maps version -> (addresses, ifmaps), copies


def parse_chunk(tasks: list[Task], by_name: dict[str, object], maps: Maps) -> list[ParsedFile]:
    """Parse small files (the ones a parser reads together first, `parse_common`), and convert
    their samples together (`convert_samples`): one polars pass per family, not per file."""
    out: list[ParsedFile | None] = [None] * len(tasks)
    by_parser: dict[str, list[int]] = {}
    for k, task in enumerate(tasks):
        if hasattr(by_name[task.parser], "parse_common"):
            by_parser.setdefault(task.parser, []).append(k)
    for name, ks in by_parser.items():
        if len(ks) > 1:
            for k, parsed in zip(ks, parse_common(by_name[name], [tasks[k] for k in ks], maps),
                                 strict=True):
                out[k] = parsed
    for k, task in enumerate(tasks):
        if out[k] is None:
            addresses, ifmaps = maps(task.maps_version)
            out[k] = parse_file(by_name[task.parser], task.src, task.sha, addresses, ifmaps,
                                convert=False)
    done: list[ParsedFile] = out  # type: ignore[assignment]
    convert_samples(done, [by_name[t.parser].family for t in tasks])  # type: ignore[attr-defined]
    return done


def _keeper(out: ParsedFile, family: str, convert: bool) -> Callable[[str, object], None]:
    """A Sink's flush that keeps the batches in `out`, converted as the store would."""
    as_kept = keep_as(family, convert)

    def keep(table: str, buf) -> None:
        out.batches.append((table, as_kept(table, buf)))

    return keep


def keep_as(family: str, convert: bool) -> Callable[[str, object], object]:
    """A Sink batch as a worker keeps it: converted as the store would (`frame_of`), except
    rejects, and samples when `convert` is False (`convert_samples` does them later)."""

    def as_kept(table: str, buf) -> object:
        if table == "rejects" or (table == "samples" and not convert):
            return buf
        return frame_of(table, buf, family)

    return as_kept


def parse_common(parser, tasks: list[Task], maps: Maps) -> list[ParsedFile | None]:
    """The files `parser.parse_common` reads together, as `parse_file(convert=False)` would
    give them; None for the others (and for all, should that pass fail: each is then parsed
    alone, and fails alone)."""
    out, files = [], []
    for task in tasks:
        addresses, ifmaps = maps(task.maps_version)
        parsed = ParsedFile(task.src.rel, task.sha, "parsed")
        out.append(parsed)
        files.append((task.src, Sink(flush=_keeper(parsed, parser.family, convert=False),
                                     addresses=addresses, ifmaps=ifmaps)))
    try:
        taken = parser.parse_common(files)
        for (_, sink), parsed, took in zip(files, out, taken, strict=True):
            if took:
                sink.close()
                _accounted(parsed, sink)
    except Exception:  # noqa: BLE001 - every file read alone instead, each error its own
        return [None] * len(tasks)
    return [parsed if took else None for parsed, took in zip(out, taken, strict=True)]


def convert_samples(parsed: list[ParsedFile], families: list[str]) -> None:
    """Convert the samples of several files with one `frame_of` per family: each file's
    batches become one frame, in the file's order, its runs the file's own (`_part`)."""
    parts: dict[str, list[pl.DataFrame]] = {}
    for k, (p, family) in enumerate(zip(parsed, families, strict=True)):
        if p.status != "parsed":
            continue
        frames = [raw_frame("samples", b).with_columns(_part=pl.lit(k, pl.Int32))
                  for t, b in p.batches if t == "samples"]
        if frames:
            parts.setdefault(family, []).extend(frames)
            p.batches = [(t, b) for t, b in p.batches if t != "samples"]
    for family, frames in parts.items():
        done = frame_of("samples", concat_samples(frames), family)
        for (k,), frame in done.partition_by("_part", as_dict=True, maintain_order=True,
                                             include_key=False).items():
            parsed[k].batches.insert(0, ("samples", frame))


def _chunks(tasks: Iterable[Task]) -> Iterator[list[Task]]:
    """Consecutive tasks in lists of at most CHUNK_FILES files and about CHUNK_BYTES."""
    chunk: list[Task] = []
    size = 0
    for task in tasks:
        n = task.size
        if chunk and (size + n > CHUNK_BYTES or len(chunk) >= CHUNK_FILES):
            yield chunk
            chunk, size = [], 0
        chunk.append(task)
        size += n
    if chunk:
        yield chunk


class ParsePool:
    """Worker processes parsing files in order; `run(tasks)` yields their results in order."""

    def __init__(self, workers: int) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="fabtwin-maps-")
        self._maps_path = str(Path(self._dir.name) / "maps")
        self.version = -1
        self.workers = workers
        # one polars thread per worker: the workers already fill the cores. Workers are spawned
        # as tasks come and take this environment (this process's polars has started already).
        self._threads = os.environ.get("POLARS_MAX_THREADS")
        os.environ["POLARS_MAX_THREADS"] = "1"
        # spawn, not fork: the parent holds DuckDB and polars thread pools, which fork would copy
        self._pool = ProcessPoolExecutor(
            workers, mp_context=get_context("spawn"), initializer=_init,
            initargs=(self._maps_path, os.getpid()))

    def set_maps(self, addresses: dict, ifmaps: dict) -> int:
        """Publish the lookups the next tasks parse with; returns their version."""
        self.version += 1
        with open(f"{self._maps_path}.{self.version}", "wb") as fh:
            pickle.dump((addresses, ifmaps), fh, protocol=pickle.HIGHEST_PROTOCOL)
        return self.version

    def recognize(self, files: list[tuple[Path, str, str]]) -> list[Found]:
        """Each (path, bundle-relative name, sha256 or "")'s hash and parser, found by the
        workers (hashed there when the sha256 is not given)."""
        found = self._pool.map(recognize_file, files, chunksize=max(1, min(256, len(files) // 16)))
        by_name = {p.name: p for p in parsers()}
        return [Found(sha, by_name.get(name) if name else None, False) for sha, name in found]

    def run(self, tasks: Iterable[Task], ahead: int | None = None) -> Iterator[ParsedFile]:
        """Parse `tasks`, at most `ahead` jobs in flight, yielding results in the tasks' order;
        small files go in chunks (`CHUNK_BYTES`), one job each."""
        ahead = ahead or 2 * self.workers
        pending: list[Future] = []
        it = _chunks(tasks)
        for chunk in it:
            pending.append(self._submit(chunk))
            if len(pending) >= ahead:
                break
        while pending:
            result = pending.pop(0).result()
            chunk = next(it, None)
            if chunk is not None:
                pending.append(self._submit(chunk))
            for parsed in result if isinstance(result, list) else [result]:
                yield unpack(parsed)

    def _submit(self, chunk: list[Task]) -> Future:
        if len(chunk) == 1:
            return self._pool.submit(parse_task, chunk[0])
        return self._pool.submit(parse_tasks, chunk)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._dir.cleanup()
        if self._threads is None:
            os.environ.pop("POLARS_MAX_THREADS", None)
        else:
            os.environ["POLARS_MAX_THREADS"] = self._threads

    def __enter__(self) -> ParsePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()



class LocalPool:
    """`ParsePool`'s interface in this process: the same chunks of small files parsed and
    converted together (`parse_chunk`), for a bundle too small to pay for worker processes.
    Parsing file by file instead cost a polars pass per file: 27.7 s of CPU for the 1,669 files
    (25 MB) of a 20-minute 256-host bundle, against 18.6 s on two workers."""

    def __init__(self) -> None:
        self.version = -1
        self._maps: tuple[dict, dict] = ({}, {})
        self._parsers: dict[str, object] = {p.name: p for p in parsers()}

    def set_maps(self, addresses: dict, ifmaps: dict) -> int:
        """Publish the lookups the next tasks parse with; returns their version."""
        self.version += 1
        self._maps = (dict(addresses), dict(ifmaps))
        return self.version

    def _maps_of(self, version: int) -> tuple[dict, dict]:
        assert version == self.version  # tasks are parsed as they are run, maps unchanged
        return dict(self._maps[0]), dict(self._maps[1])

    def recognize(self, files: list[tuple[Path, str, str]]) -> list[Found]:
        """Each file's parser (`ParsePool.recognize`), its sha256 as given: `run` hashes the
        files it parses, `ingest_bundle` the others (a big one while it is parsed)."""
        return [Found(sha, recognize(head_of(path), rel), False) for path, rel, sha in files]

    def run(self, tasks: Iterable[Task], ahead: int | None = None) -> Iterator[ParsedFile]:
        """Parse `tasks` a chunk (`CHUNK_BYTES`) at a time, as they are asked for, in order
        (`ahead`: `ParsePool.run`'s, unused)."""
        hashed = (t if t.sha else replace(t, sha=sha256_of(t.src.path)) for t in tasks)
        for chunk in _chunks(hashed):
            if len(chunk) == 1:
                task = chunk[0]
                yield parse_file(self._parsers[task.parser], task.src, task.sha,
                                 *self._maps_of(task.maps_version))
            else:
                yield from parse_chunk(chunk, self._parsers, self._maps_of)

    def close(self) -> None:
        """Nothing to stop (`ParsePool`'s interface)."""

    def __enter__(self) -> LocalPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

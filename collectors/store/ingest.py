"""Ingest a trace bundle (a directory, or a single file) into a store.

Files are recognized by content; a file no parser recognizes is listed as skipped with a reason.
Files whose sha256 is already in the store are `unchanged`: ingesting twice adds nothing.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import zlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from datetime import tzinfo
from functools import cache
from itertools import groupby
from pathlib import Path

from collectors.core.source import CONTEXT_KEYS, Manifest, Parser, SourceFile, known_host_of
from collectors.core.timeparse import TimeError, parse_any, tz_from_name
from collectors.formats.syslog import boot_ns, uptime_line
from collectors.registry import describe_unrecognized, parsers
from collectors.settings import duckdb_memory
from collectors.store.child import parse_in_child, wants_child
from collectors.store.frames import head_of, sha256_of
from collectors.store.pool import (
    POOL_MAX_BYTES,
    POOL_MIN_BYTES,
    POOL_MIN_FILES,
    Found,
    LocalPool,
    ParsedFile,
    ParsePool,
    Task,
    default_workers,
)
from collectors.store.writer import (
    SMALL_BUNDLE_BYTES,
    FileResult,
    Store,
    duckdb_setting,
    one_thread_if,
)

IGNORED_NAMES = {"manifest.json", "labels.json", "README.md", "README"}


class BundleError(ValueError):
    """A bundle that cannot be read at all (missing, bad manifest)."""


def read_manifest(root: Path, follow_symlinks: bool = False) -> Manifest:
    """The bundle's `manifest.json`, or an empty manifest. BundleError names the file if invalid,
    or if it is a symbolic link out of the bundle (read only with `follow_symlinks`)."""
    path = root / "manifest.json"
    if not path.is_file():
        return Manifest()
    if not follow_symlinks and path.is_symlink() and \
            not path.resolve().is_relative_to(root.resolve()):
        raise BundleError(f"{path}: a symbolic link to {path.resolve()}, outside the bundle: not "
                          "read (--follow-symlinks reads it)")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise BundleError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise BundleError(f"{path}:1: expected a JSON object")
    text = path.read_text()
    top = _context(data, data.get("timezone"), path, text, "")
    # "context" ("files" is generate's list of the files it wrote)
    rules = data.get("context", {})
    if isinstance(rules, dict):  # {"pattern": {...}}, or [{"path": "pattern", ...}]
        rules = [{"path": k, **v} if isinstance(v, dict) else None for k, v in rules.items()]
    if not isinstance(rules, list):
        raise BundleError(f"{path}:{_line_of(text, 'context')}: 'context' must map patterns to "
                          "objects (or be a list of objects with a 'path')")
    files = []
    for rule in rules:
        pattern = rule.get("path") if isinstance(rule, dict) else None
        if not isinstance(pattern, str) or not pattern:
            raise BundleError(f"{path}:{_line_of(text, 'context')}: each entry of 'context' needs "
                              "a 'path' pattern and an object of context")
        body = {k: v for k, v in rule.items() if k != "path"}
        ctx = _context(body, body.get("timezone", top.get("timezone")), path, text, pattern)
        files.append((pattern, tuple(ctx.items())))
    return Manifest(str(data.get("name", "")), str(data.get("description", "")),
                    files=tuple(files), **top)  # type: ignore[arg-type]


def _context(data: dict, tz: object, path: Path, text: str, where: str) -> dict[str, object]:
    """The context keys (`CONTEXT_KEYS`) of the manifest or of one of its `files` entries,
    checked and converted (times to ns); BundleError names the file, line and key."""
    def bad(key: str, why: str) -> BundleError:
        entry = f" (context entry {where!r})" if where else ""
        return BundleError(f"{path}:{_line_of(text, key, where)}: '{key}'{entry} {why}")

    unknown = [k for k in data if k not in CONTEXT_KEYS] if where else []
    if unknown:
        raise bad(unknown[0], f"is not a context key (known: {', '.join(CONTEXT_KEYS)})")
    out: dict[str, object] = {}
    try:
        zone = tz_from_name(tz) if tz is None or isinstance(tz, str) else None
    except TimeError as exc:
        raise bad("timezone", str(exc)) from exc
    if "timezone" in data:
        if not isinstance(data["timezone"], str | None):
            raise bad("timezone", "must be a zone name such as 'UTC' or '+02:00'")
        out["timezone"] = data["timezone"]
    if "year" in data:
        if data["year"] is not None and not isinstance(data["year"], int):
            raise bad("year", "must be an integer")
        out["year"] = data["year"]
    for key in ("host", "interface"):
        if key in data:
            if not isinstance(data[key], str) or not data[key].strip():
                raise bad(key, "must be a non-empty string")
            out[key] = data[key].strip()
    for key in ("collected_at", "boot_time"):
        if key in data:
            try:
                out[key] = parse_time(data[key], zone)
            except TimeError as exc:
                raise bad(key, f"is not a time: {exc}") from exc
    return out


def parse_time(value: object, zone: tzinfo | None = None) -> int:
    """A time as a person writes it in a manifest or on the command line: ISO-8601 (one without
    an offset is in `zone`, refused if None) or seconds since the epoch; ns."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TimeError(f"{value!r}: expected ISO-8601 text or seconds since the epoch")
    if isinstance(value, int | float):
        value = repr(value)
    return parse_any(value.strip(), zone)


def _line_of(text: str, key: str, near: str = "") -> int:
    """The line of `"key"` in the manifest's text (after `near`, when given), for errors."""
    start = text.find(f'"{near}"') if near else 0
    at = text.find(f'"{key}"', max(start, 0))
    return text.count("\n", 0, at) + 1 if at >= 0 else 1



def bundle_files(root: Path, follow_symlinks: bool = False
                 ) -> tuple[list[Path], list[tuple[Path, str]]]:
    """Every regular file of a bundle, sorted (hidden files and manifest/labels excluded), and
    the entries not read, each with why.

    Nothing outside the bundle is read unless `follow_symlinks`: a symbolic link to a file or
    folder outside it is listed, not followed. A link to a file or folder inside it is not read
    when its target is read anyway (under its own name), nor are broken links, links in a loop,
    FIFOs, sockets and devices (reading them could block).
    """
    if root.is_file():
        return [root], []
    files: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    top = root.resolve()
    seen_dirs = {top}

    def walk(folder: Path) -> None:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            if entry.is_symlink():
                _link(path)
            elif entry.is_dir(follow_symlinks=False):
                walk(path)
            elif entry.is_file(follow_symlinks=False):
                if entry.name not in IGNORED_NAMES:
                    files.append(path)
            else:
                skipped.append((path, NOT_REGULAR))

    def _link(path: Path) -> None:
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):  # RuntimeError: a loop of links (Python 3.11)
            skipped.append((path, "a broken symbolic link (its target does not exist)"))
            return
        if not target.is_relative_to(top) and not follow_symlinks:
            kind = "folder" if target.is_dir() else "file"
            skipped.append((path, f"a symbolic link to the {kind} {target}, outside the bundle: "
                                  "not read (--follow-symlinks reads it)"))
        elif target.is_dir():
            if any(target.is_relative_to(d) or d.is_relative_to(target) for d in seen_dirs):
                skipped.append((path, f"a symbolic link to the folder {target}, which is read "
                                      "where it is (or already was): not read twice"))
            else:
                seen_dirs.add(target)
                walk(path)
        elif target.is_file():
            if path.name not in IGNORED_NAMES:
                links.append((path, target))
        else:
            skipped.append((path, NOT_REGULAR))

    links: list[tuple[Path, Path]] = []
    walk(root)
    # resolved only when a link to a file may name one of them: resolving the 18,950 files of
    # the 256-switch hour cost 1.5-4 s of CPU in every investigate of it (store present)
    real = {p.resolve() for p in files} if links else set()
    for path, target in links:
        if target in real:  # read under its own name already: its rows would be there twice
            name = target.relative_to(top).as_posix() if target.is_relative_to(top) else target
            skipped.append((path, f"a symbolic link to {name}, which is read under its own "
                                  "name: not read twice"))
        else:
            real.add(target)
            files.append(path)
    return sorted(files), skipped


NOT_REGULAR = "not a regular file (a FIFO, socket or device): not read"


@dataclass
class IngestSummary:
    """What one `ingest` did: per-file results and the store-wide totals."""

    bundle: str
    db: str
    files: list[FileResult] = field(default_factory=list)
    totals: dict = field(default_factory=dict)

    @property
    def skipped(self) -> list[FileResult]:
        return [f for f in self.files if f.status == "skipped"]

    def as_json(self) -> dict:
        loaded = [f for f in self.files if f.status == "loaded"]
        return {
            "bundle": self.bundle,
            "db": self.db,
            "files_loaded": len(loaded),
            "files_unchanged": sum(f.status == "unchanged" for f in self.files),
            "files_skipped": len(self.skipped),
            "records_read": sum(f.records_read for f in loaded),
            "loaded": sum(f.loaded for f in loaded),
            "rejected": sum(f.rejected for f in loaded),
            "files": [f.as_json() for f in self.files if f.status != "skipped"],
            "skipped": [{"path": f.path, "reason": f.reason} for f in self.skipped],
            # times guessed from the files' modification times: never to pass for measured ones
            "timed_by_mtime": [f.path for f in loaded if f.time_source == "mtime"],
            "store": self.totals,
        }


def ingest_bundle(
    store: Store,
    bundle: str | Path,
    progress: Callable[[str, int, int], None] | None = None,
    workers: int | None = None,
    totals: bool = True,
    follow_symlinks: bool = False,
    host: str | None = None,
    collected_at: int | None = None,
    interface: str | None = None,
) -> IngestSummary:
    """Ingest every file of `bundle` into `store`; `progress(path, done_bytes, total_bytes)`.
    `totals=False` leaves `summary.totals` empty (they scan the whole store: seconds on a big
    one). Symbolic links out of the bundle are listed as skipped, not read, unless
    `follow_symlinks` (`bundle_files`).

    `host`, `collected_at` (ns) and `interface` are the command line's context (`--host`,
    `--time`, `--interface`): they override the manifest's for every file (`Manifest.for_file`); rows timed by them are
    `time_source = 'cli'` in `files`.

    A file with a path the store holds from this bundle directory, or whose earlier version is
    its beginning (it grew), supersedes that version (`superseded_versions`): the earlier rows
    go in the transaction that loads the new ones.

    Small files are parsed a chunk at a time by `workers` processes (default:
    `pool.default_workers()`, the machine's cores) when the bundle's new files are enough of
    them and bytes to pay for the workers' start (`wants_pool`), else in this process
    (`pool.LocalPool`), and a big
    gnmic file by a child process (`collectors.store.child`) when `workers` > 1; the result, file ids
    included, is the same either way. Processes are spawned: a script calling this needs the
    `if __name__ == "__main__":` guard, or `workers=1`.
    """
    root = Path(bundle)
    if not root.exists():
        raise BundleError(f"{root}: no such bundle")
    base = root if root.is_dir() else root.parent
    manifest = with_cli_context(read_manifest(base, follow_symlinks), host, collected_at,
                                interface)
    summary = IngestSummary(str(root), store.path)
    paths, not_read = bundle_files(root, follow_symlinks)
    files = [(path, path.relative_to(base).as_posix()) for path in paths]
    seen = store.seen_files()
    known = {key: status for key, (status, _) in seen.items()}
    workers = default_workers() if workers is None else max(1, workers)
    # a store that has files: hash every file here first (threads), so that a bundle it has
    # already needs no worker process at all; a new store: the workers hash
    shas = _hashes(files) if seen else [""] * len(files)
    found = _already_loaded(files, shas, seen)
    new = [(path, rel, sha) for (path, rel), sha, f in zip(files, shas, found, strict=True)
           if f is None]
    # small files are parsed a chunk at a time, by worker processes or here (`LocalPool`)
    pool: ParsePool | LocalPool = ParsePool(workers) if wants_pool(workers, new) else LocalPool()
    # DuckDB's memory while ingesting, unless the store was opened with a limit (or the env's):
    # collectors.settings says why 256MB
    limit = nullcontext() if store.memory_chosen or store.path == ":memory:" else \
        duckdb_setting(store.con, "memory_limit", duckdb_memory("ingest"))
    small = sum(path.stat().st_size for path, _, _ in new) < SMALL_BUNDLE_BYTES
    with limit, one_thread_if(store.con, small):
        try:
            # the rest: sniffed (and hashed if need be) by the workers, or sniffed here
            rest = iter(pool.recognize(new))
            found = [f if f is not None else next(rest) for f in found]
            plan = _plan(files, found, manifest, store, root)
            total = sum(p.size for p in plan) or 1
            done = 0
            named = _named_hosts(plan)
            for _, level_items in groupby(plan, key=lambda t: t.priority):
                level = list(level_items)
                _name_known_hosts(level, store, named)
                version = pool.set_maps(*store.lookup_maps())
                parsed = pool.run(Task(p.src, p.parser.name, p.sha, version, p.size)  # type: ignore[union-attr]
                                  for p in level if p.poolable)
                for p in level:
                    if progress:
                        progress(p.rel, done, total)
                    if p.unchanged:
                        summary.files.append(FileResult(p.rel, "unchanged", p.parser.name,  # type: ignore[union-attr]
                                                        reason=UNCHANGED))
                    elif p.poolable:
                        summary.files.append(_load_parsed(store, p, next(parsed), str(root)))
                    else:
                        summary.files.append(_ingest_here(store, p, known, str(root), workers))
                    if p.note and summary.files[-1].status == "loaded":
                        summary.files[-1].reason = p.note
                    done += p.size
            for path, reason in not_read:
                rel = path.relative_to(base).as_posix()
                store.record_not_read(rel, reason, str(root))
                summary.files.append(FileResult(rel, "skipped", reason=reason))
        finally:
            pool.close()
        store.commit()
    if progress:
        progress("", total, total)
    if totals:
        summary.totals = store_totals(store)
    return summary


def _plan(files: list[tuple[Path, str]], found: list[Found], manifest: Manifest, store: Store,
          root: Path) -> list[_Planned]:
    """What to do with each file, in load order (priority, then path): its parser, context and
    boot time, and which earlier versions it supersedes."""
    plan = [_Planned(f.parser.priority if f.parser else 99, rel,  # type: ignore[attr-defined]
                     SourceFile(path, rel, manifest.for_file(rel)),
                     f.parser,  # type: ignore[arg-type]
                     path.stat().st_size, f.sha, f.unchanged)
            for (path, rel), f in zip(files, found, strict=True)]
    plan.sort(key=lambda t: (t.priority, t.rel))
    _boot_times_beside(plan)
    _mark_superseded(plan, store, root)
    return plan


def wants_pool(workers: int, new: list[tuple[Path, str, str]]) -> bool:
    """Whether the `new` files (path, name, sha256) are worth a pool of `workers` processes:
    enough of them, and enough bytes among those a worker would take (`POOL_MIN_BYTES`)."""
    if workers <= 1 or len(new) < POOL_MIN_FILES:
        return False
    sizes = (path.stat().st_size for path, _, _ in new)
    return sum(n for n in sizes if n < POOL_MAX_BYTES) >= POOL_MIN_BYTES


def _boot_times_beside(plan: list[_Planned]) -> None:
    """Give the syslog files of a folder holding an `uptime -s` file (`uptime -s > uptime.txt`
    beside `dmesg > dmesg.log`) that boot time, unless their manifest gives one; the file's
    own `uptime -s` line still wins (the syslog parser). A bad line is refused naming it."""
    boots: dict[str, tuple[str, str]] = {}  # folder -> (the uptime file, its line)
    for p in plan:
        if p.parser is None and p.size < 256:
            line = uptime_line(head_of(p.src.path))
            if line:
                boots[p.rel.rpartition("/")[0]] = (p.rel, line)
    for p in plan:
        folder = p.rel.rpartition("/")[0]
        if (folder in boots and p.parser is not None and p.parser.family == "syslog"
                and p.src.manifest.boot_time is None):
            rel, line = boots[folder]
            try:
                boot = boot_ns(line, p.src.manifest.timezone)
            except TimeError as exc:
                raise BundleError(f"{rel}:1: not a boot time: {exc}") from exc
            p.src.manifest = replace(p.src.manifest, boot_time=boot)


def _needs_host(src: SourceFile) -> bool:
    """No host from the manifest or the command line, nor from the conventional names."""
    if src.manifest.host:
        return False
    parts = src.rel.split("/")
    return "__" not in parts[-1] and not (len(parts) >= 3 and
                                          parts[-3] in ("nic", "topology", "syslog"))


def _named_hosts(plan: list[_Planned]) -> set[str]:
    """The hosts the bundle's manifest and conventional file names give (`<host>__<dev>`,
    `nic/<host>/...`): devices other files may be named after."""
    return {h for p in plan if p.parser is not None and not _needs_host(p.src)
            and (h := p.src.host_hint)}


def _name_known_hosts(level: list[_Planned], store: Store, named: set[str]) -> None:
    """Give each file of a level that names no host the one its path names among the devices
    the bundle knows by now (`known_host_of`)."""
    todo = [p for p in level if p.parser is not None and not p.unchanged and _needs_host(p.src)]
    if not todo:
        return
    devices = store.known_devices() | named
    for p in todo:
        p.src.known_host = known_host_of(p.rel, devices)


def with_cli_context(manifest: Manifest, host: str | None, collected_at: int | None,
                     interface: str | None = None) -> Manifest:
    """`manifest` with the command line's host, collection time and interface as its last
    `files` rule (so they win over the manifest's for every file)."""
    ctx: dict[str, object] = {}
    if host:
        ctx["host"] = host
    if interface:
        ctx["interface"] = interface
    if collected_at is not None:
        ctx.update(collected_at=collected_at, time_from="cli")
    if not ctx:
        return manifest
    return replace(manifest, files=(*manifest.files, ("*", tuple(ctx.items()))))


def _mark_superseded(plan: list[_Planned], store: Store, root: Path) -> None:
    """Set each planned file's `supersedes`: the earlier versions it replaces (in a store or a
    lake alike)."""
    versions = store.loaded_versions()
    for p in plan:
        if p.rel in versions and not p.unchanged and p.parser is not None:
            p.supersedes = superseded_versions(p.src.path, root, versions[p.rel])


def superseded_versions(path: Path, bundle: Path,
                        versions: list[tuple[int, str, str, int]]) -> list[int]:
    """The file ids, among the loaded `versions` (file_id, bundle, sha256, size) of a path,
    that the file at `path` replaces: those ingested from the same bundle directory, and
    those whose content is the beginning of this file's (it grew since), from any bundle."""
    here = bundle.resolve()
    out = []
    size = path.stat().st_size
    for file_id, where, sha, old_size in versions:
        same_bundle = bool(where) and Path(where).resolve() == here
        if same_bundle or (old_size is not None and 0 < old_size < size
                           and sha256_of(path, old_size) == sha):
            out.append(file_id)
    return out


def _hashes(files: list[tuple[Path, str]]) -> list[str]:
    """sha256 of every file, on threads: hashlib releases the GIL."""
    with ThreadPoolExecutor(HASH_THREADS) as ex:
        return list(ex.map(sha256_of, (path for path, _ in files)))


def _already_loaded(files: list[tuple[Path, str]], shas: list[str],
                    seen: dict[tuple[str, str], tuple[str, str | None]]) -> list[Found | None]:
    """Per file, `Found` when the store has loaded it already (same path and sha256), else None."""
    by_name = {p.name: p for p in parsers()}
    out: list[Found | None] = []
    for (_, rel), sha in zip(files, shas, strict=True):
        status, name = seen.get((rel, sha), ("", None))
        parser = by_name.get(name or "") if status == "loaded" else None  # None if renamed
        out.append(Found(sha, parser, True) if parser is not None else None)
    return out


HASH_THREADS = 4


@dataclass
class _Planned:
    priority: int
    rel: str
    src: SourceFile
    parser: Parser | None
    size: int
    sha: str = ""  # when hashed before the parse (by a worker, or here for a store with files)
    unchanged: bool = False  # the store has this file already
    supersedes: list[int] = field(default_factory=list)  # earlier versions' file ids
    note: str | None = None  # said in the summary of a loaded file

    @property
    def poolable(self) -> bool:
        """Parsed by a worker: new, recognized, not `ordered`, small enough to send back whole."""
        return (self.parser is not None and not self.unchanged
                and not getattr(self.parser, "ordered", False) and self.size < POOL_MAX_BYTES)


UNCHANGED = "this file with the same content is already in the store"


def _ingest_here(store: Store, p: _Planned, known: dict, bundle: str,
                 workers: int = 1) -> FileResult:
    """Hash (unless hashed already), then parse and load a file here (or list it as
    skipped/unchanged): on a thread, or streamed from a child process (`child.py`) when
    its parser is Python-bound and `workers` allow. A big file of a store that had no files is
    hashed on a thread while it is parsed: nothing to compare the sha256 with, only the
    `files` row needs it."""
    if not p.sha and not known and p.parser is not None and p.size >= HASH_ASIDE_BYTES:
        sha: str | Future[str] = _hasher().submit(sha256_of, p.src.path)
        return _ingest_parsed_here(store, p, sha, bundle, workers)
    sha = p.sha or sha256_of(p.src.path)
    status = known.get((p.rel, sha))
    if p.parser is None:
        reason = describe_unrecognized(head_of(p.src.path))
        store.record_skipped(p.src, sha, reason, bundle, known=status or "")
        return FileResult(p.rel, "skipped", reason=reason)
    if status == "loaded":
        return FileResult(p.rel, "unchanged", p.parser.name, reason=UNCHANGED)
    return _ingest_parsed_here(store, p, sha, bundle, workers)


def _ingest_parsed_here(store: Store, p: _Planned, sha: str | Future[str],
                        bundle: str, workers: int) -> FileResult:
    assert p.parser is not None
    try:
        if wants_child(p.parser, p.size, workers):
            # one DuckDB thread meanwhile: the child needs the other core (4.96-5.21 s against
            # 5.40-5.63 with two, three alternations on a 5.1M-sample gnmic file), and one
            # writer fills whole row groups (its 5.1M rows inserted alone: 42 MB of store, not 68)
            with duckdb_setting(store.con, "threads", "1"), \
                    parse_in_child(p.parser, p.src, "", *store.lookup_maps()) as parsed:
                return store.ingest_file(p.parser, p.src, sha, bundle, group=True,
                                         parsed=parsed, supersedes=p.supersedes)
        return store.ingest_file(p.parser, p.src, sha, bundle, group=True,
                                 supersedes=p.supersedes)
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        if isinstance(exc, OSError) and exc.errno in DISK_FULL:
            raise  # the store's disk, not this file: nothing after it would load either
        return FileResult(p.rel, "failed", p.parser.name, reason=f"{p.rel}: {exc}")


HASH_ASIDE_BYTES = 1 << 20
DISK_FULL = {errno.ENOSPC, errno.EDQUOT}


@cache
def _hasher() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(1, thread_name_prefix="fabtwin-sha256")


def _load_parsed(store: Store, p: _Planned, parsed: ParsedFile, bundle: str) -> FileResult:
    """Load what a worker parsed (or list the file as failed when it could not be read)."""
    assert p.parser is not None and parsed.rel == p.rel
    if parsed.status == "failed":
        return FileResult(p.rel, "failed", p.parser.name, reason=parsed.reason)
    return store.ingest_file(p.parser, p.src, parsed.sha, bundle, group=True, parsed=parsed,
                             supersedes=p.supersedes)


def store_totals(store: Store) -> dict:
    """Counts and time range of the whole store, for summaries."""
    con = store.con
    one = lambda q: con.execute(q).fetchone()  # noqa: E731
    samples, devices, t0, t1 = one("SELECT count(*), count(DISTINCT device), min(ts), max(ts) FROM samples")
    return {
        "files": one("SELECT count(*) FROM files WHERE status = 'loaded'")[0],
        "samples": samples,
        "events": one("SELECT count(*) FROM events")[0],
        "logs": one("SELECT count(*) FROM logs")[0],
        "links": one("SELECT count(*) FROM links")[0],
        # jobs, not listings: sacct and squeue naming one job are one job (job_spans merges them)
        **dict(zip(("jobs", "job_rows", "jobs_merged"), one(
            "SELECT count(*), coalesce(sum(n), 0)::BIGINT, count(*) FILTER (WHERE n > 1) "
            "FROM (SELECT count(*) AS n FROM jobs GROUP BY job_id)"), strict=True)),
        "rejects": one("SELECT count(*) FROM rejects")[0],
        "devices": one("SELECT count(*) FROM devices")[0],
        "sample_devices": devices,
        "start": t0.isoformat() + "Z" if t0 else None,
        "end": t1.isoformat() + "Z" if t1 else None,
    }

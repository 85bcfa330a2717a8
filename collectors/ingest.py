"""Ingest a trace bundle (a directory, or a single file) into a store.

Files are recognized by content; a file no parser recognizes is listed as skipped with a reason.
Files whose sha256 is already in the store are `unchanged`: ingesting twice adds nothing.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from collectors.registry import recognize
from collectors.source import GZIP_MAGIC, SNIFF_BYTES, Manifest, SourceFile
from collectors.store import FileResult, Store, sha256_of
from collectors.timeparse import TimeError, tz_from_name

IGNORED_NAMES = {"manifest.json", "labels.json", "README.md", "README"}


class BundleError(ValueError):
    """A bundle that cannot be read at all (missing, bad manifest)."""


def read_manifest(root: Path) -> Manifest:
    """The bundle's `manifest.json`, or an empty manifest. BundleError names the file if invalid."""
    path = root / "manifest.json"
    if not path.is_file():
        return Manifest()
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise BundleError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise BundleError(f"{path}:1: expected a JSON object")
    tz = data.get("timezone")
    try:
        tz_from_name(tz)
    except TimeError as exc:
        raise BundleError(f"{path}:1: {exc}") from exc
    year = data.get("year")
    if year is not None and not isinstance(year, int):
        raise BundleError(f"{path}:1: 'year' must be an integer")
    return Manifest(str(data.get("name", "")), str(data.get("description", "")), tz, year)


def head_of(path: Path) -> str:
    """The first bytes of a file's text, gunzipped if needed ('' if unreadable)."""
    with open(path, "rb") as fh:
        raw = fh.read(SNIFF_BYTES)
    if raw[:2] == GZIP_MAGIC:
        try:
            raw = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw, SNIFF_BYTES)
        except zlib.error:
            return ""
    return raw.decode("utf-8", errors="replace")


def bundle_files(root: Path) -> list[Path]:
    """Every regular file of a bundle, sorted, hidden files and manifest/labels excluded."""
    if root.is_file():
        return [root]
    out = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts) \
                and p.name not in IGNORED_NAMES:
            out.append(p)
    return out


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
            "store": self.totals,
        }


def ingest_bundle(
    store: Store,
    bundle: str | Path,
    progress: Callable[[str, int, int], None] | None = None,
) -> IngestSummary:
    """Ingest every file of `bundle` into `store`; `progress(path, done_bytes, total_bytes)`."""
    root = Path(bundle)
    if not root.exists():
        raise BundleError(f"{root}: no such bundle")
    manifest = read_manifest(root if root.is_dir() else root.parent)
    base = root if root.is_dir() else root.parent
    summary = IngestSummary(str(root), store.path)
    plan = []
    for path in bundle_files(root):
        rel = path.relative_to(base).as_posix()
        src = SourceFile(path, rel, manifest)
        parser = recognize(head_of(path), rel)
        plan.append((parser.priority if parser else 99, rel, src, parser))
    plan.sort(key=lambda t: (t[0], t[1]))
    total = sum(src.path.stat().st_size for _, _, src, _ in plan) or 1
    done = 0
    known = store.known_files()
    for _, rel, src, parser in plan:
        if progress:
            progress(rel, done, total)
        sha = sha256_of(src.path)
        status = known.get((rel, sha))
        if parser is None:
            reason = "format not recognized by any parser"
            store.record_skipped(src, sha, reason, str(root), known=status or "")
            summary.files.append(FileResult(rel, "skipped", reason=reason))
        elif status == "loaded":
            summary.files.append(FileResult(rel, "unchanged", parser.name,
                                            reason="this file with the same content is already in the store"))
        else:
            try:
                summary.files.append(store.ingest_file(parser, src, sha, str(root), group=True))
            except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
                summary.files.append(FileResult(rel, "failed", parser.name, reason=f"{rel}: {exc}"))
        done += src.path.stat().st_size
    store.commit()
    if progress:
        progress("", total, total)
    summary.totals = store_totals(store)
    return summary


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
        "jobs": one("SELECT count(*) FROM jobs")[0],
        "rejects": one("SELECT count(*) FROM rejects")[0],
        "devices": one("SELECT count(*) FROM devices")[0],
        "sample_devices": devices,
        "start": t0.isoformat() + "Z" if t0 else None,
        "end": t1.isoformat() + "Z" if t1 else None,
    }

"""The fabric screen's cells (fabric_windows.cell_layout of the store's cabling), kept on disk
so that a later `fabtwin tui` on the same cabling loads them instead of discovering the fabric
again (256 switches, 22.7M-sample store, load 10-12: the discovery 171-187 ms of CPU, 409-454
ms wall, before the cells are laid out; loading them 24-27 ms of CPU).

The TUI opens the store read-only, so nothing is written beside it: the cache lives in
$XDG_CACHE_HOME/fabtwin/fabric (~/.cache without it), one file per cabling, named by a key of
the store's `neighbors` rows (their count and two order-free hashes, computed by DuckDB without
reading them out), the DuckDB version (whose hash it is) and the source of the code that
derives the cells; a file whose key differs, or that cannot be read whole, is not used. Only
files of its own naming in its own folder are ever replaced or pruned (the newest KEPT stay).
A folder that cannot be written just means no cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np

from fabtwin.tui.fabric_windows import Cells, Layout, PlaneLayout

KEPT = 16  # cabling files kept (about 0.5 MB each at 256 switches)
FORMAT = 1  # of the file; a change of it, or of the code below, is a new key
# the code whose output is cached: a change to any of it makes every older file stale
_SOURCES = ("twin/discover.py", "twin/topology.py", "replay/fabric.py",
            "fabtwin/tui/fabric_windows.py", "fabtwin/tui/layout_cache.py")
_ROOT = Path(__file__).resolve().parents[2]


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "fabtwin" / "fabric"


def _code_digest() -> str | None:
    """A hash of _SOURCES (None when one cannot be read: then nothing is cached, as a change
    to it would go unseen)."""
    h = hashlib.sha256(str(FORMAT).encode())
    try:
        for rel in _SOURCES:
            h.update((_ROOT / rel).read_bytes())
    except OSError:
        return None
    return h.hexdigest()


def cabling_key(cur: duckdb.DuckDBPyConnection) -> str | None:
    """The key of the store's cabling (None: no `neighbors` table, nothing to key)."""
    try:
        n, total, mixed = cur.execute("""
            SELECT count(*), sum(hash(device, ifname, peer_device, peer_ifname)::HUGEINT),
                bit_xor(hash(peer_device, peer_ifname, device, ifname))
            FROM neighbors""").fetchone()
    except duckdb.CatalogException:
        return None
    code = _code_digest()
    if code is None:
        return None
    text = f"{n}|{total}|{mixed}|{duckdb.__version__}|{code}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _path(key: str) -> Path:
    return cache_dir() / f"cells-{key}.npz"


def holds_any() -> bool:
    """Whether the cache holds a file of cells at all (a folder scan, no store read: an
    empty cache needs no cabling key)."""
    try:
        return any(cache_dir().glob("cells-*.npz"))
    except OSError:
        return False


def kept_or(key: str | None, discover: Callable[[], Layout | str], later: list | None = None
            ) -> Layout | str:
    """The cells (or the cabling's error) kept for `key`, else discover()'s, then kept
    (`key` None: never kept); with `later`, the save is appended to it as a callable for the
    caller to run when it can (after drawing them, say) instead of now."""
    found = load(key) if key else None
    if found is None:
        found = discover()
        if key:
            (later.append if later is not None else _run)(lambda: save(key, found))
    return found


def _run(job: Callable[[], None]) -> None:
    job()


def load(key: str) -> Layout | str | None:
    """The cells kept for `key`, or the error the cabling gave (a str); None: not kept (or
    unreadable, or another key's)."""
    try:
        with np.load(_path(key), allow_pickle=False) as z:
            meta = json.loads(bytes(z["meta"]).decode())
            if meta.get("key") != key:
                return None
            if meta.get("error") is not None:
                return str(meta["error"])
            return _layout(meta, z)
    except (OSError, ValueError, KeyError, TypeError, IndexError, zipfile.BadZipFile):
        return None


def _layout(meta: dict, z) -> Layout:
    ports = meta["ports"]
    layout = Layout(ports, {p: i for i, p in enumerate(ports)})
    for k, pl in enumerate(meta["planes"]):
        grids = []
        for side in ("spine", "host"):
            rows, cols = pl[f"{side}_shape"]
            flat = pl[f"{side}_links"]
            cell, a, b, line = (z[f"{k}_{side}_{x}"] for x in ("cell", "a", "b", "line"))
            if max(a.max(initial=0), b.max(initial=0)) >= max(len(ports), 1) \
                    or len(flat) != rows * cols or not len(cell) == len(a) == len(b) == len(line):
                raise ValueError("inconsistent cells")
            grids.append(Cells(rows, cols, cell, a, b, line,
                               [flat[r * cols:(r + 1) * cols] for r in range(rows)]))
        layout.planes.append(PlaneLayout(pl["plane"], pl["leaves"], pl["spines"], *grids))
    return layout


def save(key: str, found: Layout | str) -> None:
    """Keep `found` (the cells, or the cabling's error) for `key`; silently not when the cache
    folder cannot be written."""
    meta: dict = {"key": key, "error": found if isinstance(found, str) else None}
    arrays: dict[str, np.ndarray] = {}
    if not isinstance(found, str):
        meta["ports"] = found.ports
        meta["planes"] = []
        for k, pl in enumerate(found.planes):
            entry = {"plane": pl.plane, "leaves": pl.leaves, "spines": pl.spines}
            for side, cells in (("spine", pl.spine_cells), ("host", pl.host_cells)):
                entry[f"{side}_shape"] = [cells.rows, cells.cols]
                entry[f"{side}_links"] = [x for row in cells.links for x in row]
                for x, arr in (("cell", cells.cell), ("a", cells.a), ("b", cells.b),
                               ("line", cells.cap)):
                    arrays[f"{k}_{side}_{x}"] = arr
            meta["planes"].append(entry)
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".cells-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as out:
                np.savez(out, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
                         **arrays)
            os.replace(tmp, _path(key))  # whole or not at all
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        _prune(folder)
    except OSError:
        return


def _prune(folder: Path) -> None:
    """Only the newest KEPT of this cache's own files stay."""
    files = sorted(folder.glob("cells-*.npz"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
    for old in files[KEPT:]:
        with contextlib.suppress(OSError):
            old.unlink()

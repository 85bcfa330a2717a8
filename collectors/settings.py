"""Every environment variable fabtwin reads, with its default, its type and what it does.

The one place they are read: every floor (collectors, twin, replay, the app) asks this module,
which imports nothing of the project, so the imports still run app -> replay -> twin ->
collectors. A variable that is unset or empty takes its default; a value that is set but
malformed is a `SettingError`, one line naming the variable (the CLI prints it, exit 2), never
a silent fallback. The README's table of variables is `markdown_table()`, checked by a test.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Literal

# DuckDB's memory limit for each use of a connection, deliberately different (measured):
# - ingest: only caches blocks already written; the 12,288 NIC files of the large bundle peaked
#   at 973 MB of RSS with 512MB (466 MB of it cached table blocks), at 704 MB with 256MB
# - write: a store opened to write outside an ingest (replay's results, an export to a lake)
# - read: read-only queries (sql, report, the TUI, a replay of a lake): their aggregates and
#   sorts spill beyond it, 2GB keeps the common ones in memory
MemoryUse = Literal["ingest", "write", "read"]
DUCKDB_MEMORY_DEFAULTS: dict[str, str] = {"ingest": "256MB", "write": "512MB", "read": "2GB"}
MAX_DEFAULT_WORKERS = 8  # more parsing processes than this only contend for the store's writer
MIN_RAY_TIMEOUT_S = 0.1
_MEMORY = re.compile(r"\d+(\.\d+)?\s*[KMGT]i?B")


class SettingError(Exception):
    """An environment variable set to a value fabtwin cannot use (the message names it)."""


@dataclass(frozen=True)
class Setting:
    """One environment variable: its name, documented default, type and one-line doc."""

    name: str
    default: str
    type: str
    doc: str

    def raw(self) -> str | None:
        """The variable's value, stripped; None when unset or empty (the default applies)."""
        value = os.environ.get(self.name, "").strip()
        return value or None

    def is_set(self) -> bool:
        """Whether the user set the variable (to something non-empty)."""
        return self.raw() is not None

    def bad(self, value: str, wanted: str) -> SettingError:
        """The one-line error for `value`, which is not `wanted`."""
        return SettingError(f"{self.name}={value!r} is not {wanted} (unset it for the default: "
                            f"{self.default})")


DB = Setting("FABTWIN_DB", "fabtwin.duckdb", "path",
             "The store (DuckDB file or Parquet lake) of every `--db` not given "
             "(`investigate`: BUNDLE-NAME.fabtwin.duckdb, one per bundle).")
DUCKDB_MEMORY = Setting(
    "FABTWIN_DUCKDB_MEMORY",
    ", ".join(f"{v} ({k})" for k, v in DUCKDB_MEMORY_DEFAULTS.items()),
    "size", "DuckDB's memory limit for ingest, for a store opened to write (replay's results, "
            "export) and for read-only queries (sql, report, TUI); bigger queries spill to disk.")
ANALYSIS_MEMORY = Setting("FABTWIN_ANALYSIS_MEMORY", "4GB", "size",
                          "DuckDB's memory limit while replay and investigate compute the rates.")
INGEST_WORKERS = Setting("FABTWIN_INGEST_WORKERS",
                         f"the cores, at most {MAX_DEFAULT_WORKERS}", "integer >= 1",
                         "Processes parsing files in an ingest without `--workers`.")
RAY_TIMEOUT_S = Setting("FABTWIN_RAY_TIMEOUT_S", "30", "seconds > 0",
                        f"How long a Ray cluster address has to answer (at least "
                        f"{MIN_RAY_TIMEOUT_S:g}) before replay and sweep give up, exit 2.")

SETTINGS: tuple[Setting, ...] = (DB, DUCKDB_MEMORY, ANALYSIS_MEMORY, INGEST_WORKERS, RAY_TIMEOUT_S)


def db() -> str:
    """The store of a command without `--db`: `FABTWIN_DB`, else fabtwin.duckdb."""
    return DB.raw() or DB.default


def db_override() -> str | None:
    """`FABTWIN_DB` when set: `investigate` otherwise derives a store from its bundle."""
    return DB.raw()


def is_size(value: str) -> bool:
    """Whether `value` is a DuckDB memory size like 512MB or 2GiB."""
    return _MEMORY.fullmatch(value) is not None


def _size(setting: Setting, default: str) -> str:
    value = setting.raw()
    if value is None:
        return default
    if not is_size(value):
        raise setting.bad(value, "a size like 512MB or 2GiB")
    return value


def duckdb_memory(use: MemoryUse) -> str:
    """DuckDB's memory limit for `use` (ingest 256MB, write 512MB, read 2GB): the
    `FABTWIN_DUCKDB_MEMORY` the user set, else the default for that use."""
    return _size(DUCKDB_MEMORY, DUCKDB_MEMORY_DEFAULTS[use])


def analysis_memory() -> str:
    """DuckDB's memory limit while the rates are computed (`FABTWIN_ANALYSIS_MEMORY`, 4GB)."""
    return _size(ANALYSIS_MEMORY, ANALYSIS_MEMORY.default)


def ingest_workers() -> int:
    """Parsing processes: `FABTWIN_INGEST_WORKERS`, else the machine's cores (at most 8)."""
    value = INGEST_WORKERS.raw()
    if value is None:
        return max(1, min(os.cpu_count() or 1, MAX_DEFAULT_WORKERS))
    try:
        workers = int(value)
    except ValueError:
        workers = 0
    if workers < 1:
        raise INGEST_WORKERS.bad(value, "a whole number of at least 1")
    return workers


def ray_timeout_s() -> float:
    """Seconds a Ray cluster address has to answer (`FABTWIN_RAY_TIMEOUT_S`, 30; at least 0.1)."""
    value = RAY_TIMEOUT_S.raw()
    if value is None:
        return float(RAY_TIMEOUT_S.default)
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):  # NaN and inf fail too
        raise RAY_TIMEOUT_S.bad(value, "a number of seconds above 0")
    return max(MIN_RAY_TIMEOUT_S, seconds)


def check_all() -> None:
    """Raise the `SettingError` of the first malformed variable (before a long-running UI)."""
    db()
    for use in DUCKDB_MEMORY_DEFAULTS:
        duckdb_memory(use)  # type: ignore[arg-type]
    analysis_memory()
    ingest_workers()
    ray_timeout_s()


def markdown_table() -> str:
    """The README's table of the environment variables (a test keeps the two equal)."""
    rows = ["| Variable | Default | Type | What it sets |", "|---|---|---|---|"]
    rows += [f"| `{s.name}` | {s.default} | {s.type} | {s.doc} |" for s in SETTINGS]
    return "\n".join(rows) + "\n"


if __name__ == "__main__":  # `python -m collectors.settings` prints the README's table
    print(markdown_table(), end="")

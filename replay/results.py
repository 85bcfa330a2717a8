"""Replay's result tables: replay_runs, expected_ports, expected_counters, incidents,
incident_evidence and incident_explanations.

Their DDL (`replay/sql/results.sql`, package data) is replay's own; the store knows them only as
extra DDL registered here (`collectors.store.schema.register_tables`), so that every store and
lake opened in a process that imported replay still holds them, empty until a replay: readers
(the TUI, the report, `fabtwin sql`) query them on a store that was only ingested, as before.
Replay also creates them on the connection it writes to (`ensure_results`), whatever opened it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from collectors.store.schema import register_tables

if TYPE_CHECKING:
    import duckdb

RESULT_TABLES = ("replay_runs", "expected_ports", "expected_counters", "incidents",
                 "incident_evidence", "incident_explanations", "link_residuals", "switch_residuals")
RESULT_DDL = (resources.files("replay") / "sql" / "results.sql").read_text()

register_tables("replay", RESULT_DDL)
# `fabtwin check`'s findings (replay.checks), registered here so that every store and lake has
# them without importing the checks (networkx) in every command
CHECK_TABLES = ("check_findings",)
CHECK_DDL = (resources.files("replay") / "sql" / "checks.sql").read_text()
register_tables("replay-checks", CHECK_DDL)


def ensure_results(con: duckdb.DuckDBPyConnection) -> None:
    """Create the result tables on `con` where they are missing (CREATE TABLE IF NOT EXISTS)."""
    con.execute(RESULT_DDL)


@contextmanager
def open_results(db: str | Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """`collectors.store.lake.open_for_replay` with replay's result tables: the connection
    replay and diagnosis write to, for a DuckDB store or a Parquet lake."""
    # imported here: importing this module (as `fabtwin` does for every command) stays light
    from collectors.store.lake import open_for_replay

    with open_for_replay(db, RESULT_TABLES, RESULT_DDL) as con:
        ensure_results(con)
        yield con

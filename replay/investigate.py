"""Investigate a bundle: ingest (or reuse the store), replay through the twin, run the detectors,
rank the incidents and store them.

The result is the JSON object of design section 8:
`{"bundle", "window": {"start", "end"}, "incidents": [{"rank", "kind",
"root_cause", "start", "end", "score", "summary", "evidence", "impact"}, ...]}`, ranked best first.
The same incidents land in the store's `incidents` and `incident_evidence` tables.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import duckdb
import orjson

from collectors.store.ingest import ingest_bundle
from collectors.store.lake import open_for_ingest, open_for_replay
from collectors.store.writer import duckdb_setting
from replay.detectors import DETECTORS, Incident, _iso
from replay.expected import ReplaySummary, replay
from replay.impact import add_impact


def diagnose(con: duckdb.DuckDBPyConnection, t_from: datetime | None = None,
             t_to: datetime | None = None) -> list[Incident]:
    """Every detector's incidents overlapping [t_from, t_to], ranked by score (then start)."""
    with views_once(con):
        incidents: list[Incident] = []
        for detector in DETECTORS:
            incidents.extend(detector(con))
    if t_from is not None:
        incidents = [i for i in incidents if i.end is None or i.end >= t_from]
    if t_to is not None:
        incidents = [i for i in incidents if i.start is None or i.start <= t_to]
    incidents.sort(key=lambda i: (-i.score, str(i.start), i.root_id))
    for rank, inc in enumerate(incidents, 1):
        inc.rank = rank
    add_impact(con, incidents)
    return incidents


# views every replay and detector reads, each a scan of every sample: computed once per analysis
SHADOWED_VIEWS = ("port_rates", "link_state_intervals")


@contextmanager
def views_once(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Within this block `port_rates` and `link_state_intervals` are computed once: temp tables
    of the same names shadow the views (replay and every detector read them; a view computes
    again each time). Memory: FABTWIN_ANALYSIS_MEMORY (default 4GB) while it lasts."""
    if con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary "
                   "AND table_name = 'port_rates'").fetchone()[0]:
        yield  # an enclosing block made them
        return
    main = f'"{con.execute("SELECT current_database()").fetchone()[0]}".main'
    # the rates' aggregate over every sample needs more room than ingest's flat 512MB (it spills
    # beyond it); a read-only connection's configuration is locked: it keeps the limit it has
    memory = os.environ.get("FABTWIN_ANALYSIS_MEMORY", "4GB")
    with duckdb_setting(con, "memory_limit", memory):
        try:
            _materialize_rates(con, main)
            con.execute(f"CREATE TEMP TABLE link_state_intervals AS "
                        f"SELECT * FROM {main}.link_state_intervals")
            yield
        finally:
            for view in SHADOWED_VIEWS:
                con.execute(f"DROP TABLE IF EXISTS temp.{view}")


# one part computes the rates of 92M samples in about 1 GB (a hash aggregate, no window over
# every sample since ingest stores predecessors); parts bound the memory of far bigger stores
SAMPLES_PER_PART = 250_000_000


def _materialize_rates(con: duckdb.DuckDBPyConnection, main: str) -> None:
    """temp.port_rates from the store's port_rates, a share of the ports at a time on a very big
    store (`port_rates_part`). Rows in no particular order: keeping the query's would cost a
    third more time (preserve_insertion_order), and nobody reads the table unordered."""
    samples = con.execute(f"SELECT count(*) FROM {main}.samples").fetchone()[0]
    parts = max(1, -(-samples // SAMPLES_PER_PART))
    with duckdb_setting(con, "preserve_insertion_order", "false"):
        con.execute(f"CREATE TEMP TABLE port_rates AS "
                    f"SELECT * FROM {main}.port_rates_part(0, {parts})")
        for part in range(1, parts):
            con.execute(f"INSERT INTO temp.port_rates "
                        f"SELECT * FROM {main}.port_rates_part({part}, {parts})")


def store_incidents(con: duckdb.DuckDBPyConnection, incidents: list[Incident]) -> None:
    """Replace the store's incidents and incident_evidence with these, rank 1 first."""
    con.execute("DELETE FROM incidents")
    con.execute("DELETE FROM incident_evidence")
    if not incidents:
        return
    con.executemany("INSERT INTO incidents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", [
        [rank, i.kind, i.root_type, i.root_id, i.start, i.end, round(i.score, 3), i.summary,
         orjson.dumps(i.impact, default=str).decode()] for rank, i in enumerate(incidents, 1)])
    evidence = [[rank, seq, orjson.dumps(e, default=str).decode()]
                for rank, i in enumerate(incidents, 1) for seq, e in enumerate(i.evidence, 1)]
    if evidence:
        con.executemany("INSERT INTO incident_evidence VALUES (?, ?, ?)", evidence)


def replay_and_diagnose(con: duckdb.DuckDBPyConnection, t_from: datetime | None = None,
                        t_to: datetime | None = None, window_s: float | None = None,
                        routing: str = "ar", **parallel) -> tuple[ReplaySummary, list[Incident]]:
    """Replay the store through the twin, diagnose, and store the incidents (`parallel`:
    executor, workers, address, chunk_windows of `replay.expected.replay`)."""
    with views_once(con):
        summary = replay(con, t_from, t_to, window_s, routing, **parallel)
        incidents = diagnose(con, t_from, t_to)
    store_incidents(con, incidents)
    return summary, incidents


def investigate(bundle: str | Path, db: str | Path, t_from: datetime | None = None,
                t_to: datetime | None = None, window_s: float | None = None) -> dict:
    """Ingest `bundle` into `db` (files already there are reused), replay and diagnose it.
    `db` is a DuckDB file or a Parquet lake directory (collectors.store.lake)."""
    with open_for_ingest(db) as store:
        ingest_bundle(store, bundle, totals=False)
    with open_for_replay(db) as con:
        summary, incidents = replay_and_diagnose(con, t_from, t_to, window_s)
        t0, t1 = con.execute("SELECT min(ts), max(ts) FROM samples").fetchone()
    del summary  # in the store's replay_runs; the JSON keeps design section 8's shape exactly
    return {"bundle": str(bundle),
            "window": {"start": _iso(t_from or t0), "end": _iso(t_to or t1)},
            "incidents": [inc.as_json(rank) for rank, inc in enumerate(incidents, 1)]}

"""Investigate a bundle: ingest (or reuse the store), replay through the twin, run the detectors,
rank the incidents and store them.

The result is the JSON object of design section 8:
`{"bundle", "window": {"start", "end"}, "incidents": [{"rank", "kind",
"root_cause", "start", "end", "score", "summary", "evidence", "impact"}, ...]}`, ranked best first.
The same incidents land in the store's `incidents` and `incident_evidence` tables; a `"store"`
key names the store used. A store holds the bundle it diagnoses and no other one
(`OtherBundles` otherwise): the detectors read everything a store holds. Times of the window may
be relative to the end of the data (`timedelta`, see `resolve_window`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import orjson

from collectors.settings import analysis_memory
from collectors.store.ingest import ingest_bundle
from collectors.store.lake import open_for_ingest
from collectors.store.lakeread import is_lake
from collectors.store.writer import SMALL_STORE_SAMPLES, duckdb_setting, one_thread_if
from replay import analysis_cache
from replay.detectors import DETECTORS, Incident, _iso
from replay.expected import ReplaySummary, replay
from replay.explain import explain
from replay.impact import add_impact
from replay.port_sums import forget_sums
from replay.rate_arrays import forget as forget_rates
from replay.residuals import compute_residuals
from replay.results import ensure_results, open_results
from replay.victims import fold_victims
from replay.wjh import add_wjh

# a window bound: a time (naive UTC), a span back from the end of the data, or open
When = datetime | timedelta | None


class NoTelemetry(ValueError):
    """Nothing to diagnose: no counter sample and no event in the bundle or the window."""


class OtherBundles(ValueError):
    """The store holds another bundle than the one to investigate."""


class WindowError(ValueError):
    """A window whose start is not before its end."""


def resolve_window(con: duckdb.DuckDBPyConnection, t_from: When, t_to: When,
                   what: str = "the store") -> tuple[datetime | None, datetime | None]:
    """Bounds as times: a `timedelta` counts from the latest sample of the store (`-1h`: the
    last hour of the trace), so a relative window means the same on a trace of last week."""
    if isinstance(t_from, timedelta) or isinstance(t_to, timedelta):
        end = con.execute("SELECT max(ts) FROM samples").fetchone()[0]
        if end is None:
            raise NoTelemetry(f"{what}: no counter samples, and a relative --from/--to counts "
                              "from the end of the data")
        t_from, t_to = (end + t if isinstance(t, timedelta) else t for t in (t_from, t_to))
    if t_from is not None and t_to is not None and t_from >= t_to:
        raise WindowError(f"--from {_iso(t_from)} is not before --to {_iso(t_to)}")
    return t_from, t_to


def check_telemetry(con: duckdb.DuckDBPyConnection, t_from: datetime | None,
                    t_to: datetime | None, what: str) -> None:
    """NoTelemetry unless the store has a counter sample or an event in [t_from, t_to]."""
    where, params = [], []
    if t_from is not None:
        where.append("ts >= ?")
        params.append(t_from)
    if t_to is not None:
        where.append("ts <= ?")
        params.append(t_to)
    cond = f"WHERE {' AND '.join(where)}" if where else ""
    found = con.execute(f"SELECT EXISTS (SELECT 1 FROM samples {cond}) "
                        f"OR EXISTS (SELECT 1 FROM events {cond})", params * 2).fetchone()[0]
    if found:
        return
    span = (f" between {_iso(t_from) if t_from else 'the start'} and "
            f"{_iso(t_to) if t_to else 'the end'}") if where else ""
    data = con.execute("SELECT min(ts), max(ts) FROM samples").fetchone()
    has = f" (its samples run {_iso(data[0])} .. {_iso(data[1])})" if data[0] else ""
    raise NoTelemetry(f"{what}: no telemetry{span}{has}: nothing to diagnose")


def diagnose(con: duckdb.DuckDBPyConnection, t_from: datetime | None = None,
             t_to: datetime | None = None) -> list[Incident]:
    """Every detector's incidents, tested on the twin (`replay.explain`: scored by how much of
    the residual each explains, victims folded into their roots, each with its explanation),
    those overlapping [t_from, t_to], ranked by score (then start). Reads only."""
    with views_once(con):
        incidents: list[Incident] = []
        for detector in DETECTORS:
            incidents.extend(detector(con))
        incidents = explain(con, fold_victims(con, incidents))
    if t_from is not None:
        incidents = [i for i in incidents if i.end is None or i.end >= t_from]
    if t_to is not None:
        incidents = [i for i in incidents if i.start is None or i.start <= t_to]
    incidents.sort(key=lambda i: (-i.score, str(i.start), i.root_id))
    for rank, inc in enumerate(incidents, 1):
        inc.rank = rank
    add_impact(con, incidents)
    add_wjh(con, incidents)  # What Just Happened drops on the incidents' ports, as evidence
    return incidents


@contextmanager
def views_once(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Within this block `port_rates` and `link_state_intervals` are computed once: temp tables
    of the same names shadow the views (replay and every detector read them; a view computes
    again each time). In a DuckDB file open for writing they are kept between runs
    (`replay.analysis_cache`): read back, through temp views of the same names, while the
    store's files are unchanged. Memory: FABTWIN_ANALYSIS_MEMORY (default 4GB) while it lasts."""
    if analysis_cache.shadow(con, "port_rates"):
        yield  # an enclosing block made them
        return
    main = f'"{con.execute("SELECT current_database()").fetchone()[0]}".main'
    # the rates' aggregate over every sample needs more room than ingest's flat 512MB (it spills
    # beyond it); a read-only connection's configuration is locked: it keeps the limit it has
    memory = analysis_memory()
    key = analysis_cache.cache_key(con, main) if analysis_cache.writable_file(con) else None
    with duckdb_setting(con, "memory_limit", memory):
        try:
            if key is None or not analysis_cache.load(con, main, key):
                _materialize_rates(con, main)
                con.execute(f"CREATE TEMP TABLE link_state_intervals AS "
                            f"SELECT * FROM {main}.link_state_intervals")
                if key is not None:
                    analysis_cache.save(con, main, key)
            with analysis_cache.keyed(con, main, key):
                yield
        finally:
            forget_rates(con)  # the arrays of temp.port_rates go with it
            forget_sums(con)
            for view in analysis_cache.SHADOWED_VIEWS:
                made = analysis_cache.shadow(con, view)
                if made:
                    con.execute(f"DROP {made[0]} temp.{view}")


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
            # a part's port codes count from 0: shifted past the codes before it (one code a
            # port across the parts: replay.rate_arrays keys on it)
            after = con.execute("SELECT coalesce(max(pc) + 1, 0) FROM temp.port_rates"
                                ).fetchone()[0]
            con.execute(f"INSERT INTO temp.port_rates SELECT * REPLACE (pc + {after} AS pc) "
                        f"FROM {main}.port_rates_part({part}, {parts})")


def store_incidents(con: duckdb.DuckDBPyConnection, incidents: list[Incident]) -> None:
    """Replace the store's incidents, incident_evidence and incident_explanations with these,
    rank 1 first."""
    ensure_results(con)
    for table in ("incidents", "incident_evidence", "incident_explanations"):
        con.execute(f"DELETE FROM {table}")
    if not incidents:
        return
    con.executemany("INSERT INTO incident_explanations VALUES (?, ?)", [
        [rank, orjson.dumps(i.explanation, default=str).decode()]
        for rank, i in enumerate(incidents, 1)])
    con.executemany("INSERT INTO incidents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", [
        [rank, i.kind, i.root_type, i.root_id, i.start, i.end, round(i.score, 3), i.summary,
         orjson.dumps(i.impact, default=str).decode()] for rank, i in enumerate(incidents, 1)])
    evidence = [[rank, seq, orjson.dumps(e, default=str).decode()]
                for rank, i in enumerate(incidents, 1) for seq, e in enumerate(i.evidence, 1)]
    if evidence:
        con.executemany("INSERT INTO incident_evidence VALUES (?, ?, ?)", evidence)


def replay_and_diagnose(con: duckdb.DuckDBPyConnection, t_from: When = None,
                        t_to: When = None, window_s: float | None = None,
                        routing: str = "ar", what: str = "the store",
                        **parallel) -> tuple[ReplaySummary, list[Incident]]:
    """Replay the store through the twin, diagnose, and store the incidents (`parallel`:
    executor, workers, address, chunk_windows of `replay.expected.replay`). NoTelemetry, before
    anything is written, when the window holds no telemetry: the stored diagnosis stays."""
    t_from, t_to = resolve_window(con, t_from, t_to, what)
    check_telemetry(con, t_from, t_to, what)
    small = con.execute("SELECT count(*) FROM samples").fetchone()[0] < SMALL_STORE_SAMPLES
    with one_thread_if(con, small):
        with views_once(con):
            summary = replay(con, t_from, t_to, window_s, routing, **parallel)
            if not summary.kept:  # else those of the same inputs are there
                compute_residuals(con)  # link_residuals, switch_residuals: the replay's windows
                analysis_cache.keep_tables(con)
            forget_rates(con)  # their last reader: the arrays and the port sums go now
            forget_sums(con)
            incidents = diagnose(con, t_from, t_to)
        store_incidents(con, incidents)
    return summary, incidents


def default_store(bundle: str | Path) -> Path:
    """The store `investigate` uses for a bundle when none is named: `<name>.fabtwin.duckdb` in
    the working directory, one per bundle, so that two bundles never mix in one store."""
    name = Path(os.path.abspath(bundle)).name or "bundle"
    return Path(f"{name}.fabtwin.duckdb")


def other_bundles(con: duckdb.DuckDBPyConnection, bundle: str | Path) -> list[str]:
    """The bundles the store's `files` name other than `bundle` (same path as given, or the same
    absolute path)."""
    mine = {str(bundle), os.path.abspath(bundle)}
    return [b for (b,) in con.execute("SELECT DISTINCT bundle FROM files ORDER BY 1").fetchall()
            if b is not None and b not in mine and os.path.abspath(b) not in mine]


def _refuse_other_bundles(store, bundle: str | Path, db: str | Path) -> None:
    """OtherBundles, before anything is written, when the store holds another bundle."""
    others = other_bundles(store.con, bundle)
    if others:
        more = f" and {len(others) - 1} more" if len(others) > 1 else ""
        raise OtherBundles(
            f"{db}: holds bundle {others[0]}{more}, not only {bundle}: the diagnosis would "
            f"mix them; investigate it with another --db (without --db: "
            f"{default_store(bundle)}), or diagnose everything the store holds with "
            f"`fabtwin replay --db {db}`")


def ingest_alone(bundle: str | Path, db: str | Path,
                 progress: Callable[[str, int, int], None] | None = None):
    """Ingest `bundle` into `db` (files already there are reused), a store that holds no other
    bundle (OtherBundles, before anything is written); the ingest summary."""
    with open_for_ingest(db) as store:
        _refuse_other_bundles(store, bundle, db)
        return ingest_bundle(store, bundle, progress=progress, totals=False)


def investigate(bundle: str | Path, db: str | Path, t_from: When = None, t_to: When = None,
                window_s: float | None = None,
                ingest_progress: Callable[[str, int, int], None] | None = None,
                step: Callable[[str], None] | None = None) -> dict:
    """Ingest `bundle` into `db` (files already there are reused), replay and diagnose it.
    `db` is a DuckDB file or a Parquet lake directory (collectors.store.lake) that holds no other
    bundle (OtherBundles, before anything is written); NoTelemetry when the bundle (or the
    window) has none. `ingest_progress` and `step(name)` report progress."""
    with open_for_ingest(db) as store:
        _refuse_other_bundles(store, bundle, db)
        ingested = ingest_bundle(store, bundle, progress=ingest_progress, totals=False)
        if not is_lake(db):
            # the store ingest wrote to, committed: opening it again cost a connection, the
            # schema and views checks and a checkpoint at each close (0.2-0.4 s of CPU)
            ensure_results(store.con)
            return _diagnosed(store.con, bundle, db, t_from, t_to, window_s, ingested, step)
    with open_results(db) as con:  # a lake: replay writes through its own connection
        return _diagnosed(con, bundle, db, t_from, t_to, window_s, ingested, step)


def _diagnosed(con: duckdb.DuckDBPyConnection, bundle: str | Path, db: str | Path,
               t_from: When, t_to: When, window_s: float | None, ingested,
               step: Callable[[str], None] | None) -> dict:
    """Replay and diagnose the ingested store on `con`; investigate's JSON object."""
    if step:
        step("replay and diagnose")
    try:
        t_from, t_to = resolve_window(con, t_from, t_to, f"{bundle} (store {db})")
        summary, incidents = replay_and_diagnose(con, t_from, t_to, window_s,
                                                 what=f"{bundle} (store {db})")
    except NoTelemetry as exc:
        raise NoTelemetry(f"{exc} ({_files_note(ingested)})") from None
    t0, t1 = con.execute("SELECT min(ts), max(ts) FROM samples").fetchone()
    del summary  # in the store's replay_runs; the JSON keeps design section 8's shape
    return {"bundle": str(bundle), "store": str(db),
            "window": {"start": _iso(t_from or t0), "end": _iso(t_to or t1)},
            "incidents": [inc.as_json(rank) for rank, inc in enumerate(incidents, 1)]}


def _files_note(summary) -> str:
    """What ingest made of the bundle's files, for a bundle without telemetry."""
    files, skipped = summary.files, summary.skipped
    if not files:
        return "the bundle has no file"
    note = f"{len(files)} file(s), {len(skipped)} not recognized"
    return note + (f": {skipped[0].path}: {skipped[0].reason}" if skipped else "")

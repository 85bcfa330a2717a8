"""Investigate a bundle: ingest (or reuse the store), run the detectors, rank the incidents.

The result is the JSON object of design section 8:
`{"bundle", "window": {"start", "end"}, "incidents": [{"rank", "kind", "root_cause", "start",
"end", "score", "summary", "evidence", "impact"}, ...]}`, ranked best first.
"""

from __future__ import annotations

from pathlib import Path

from collectors.ingest import ingest_bundle
from collectors.store import Store
from replay.detectors import DETECTORS, Incident


def diagnose(store: Store) -> list[Incident]:
    """Every detector's incidents, ranked by score (then start time)."""
    incidents: list[Incident] = []
    for detector in DETECTORS:
        incidents.extend(detector(store.con))
    incidents.sort(key=lambda i: (-i.score, str(i.start), i.root_id))
    return incidents


def investigate(bundle: str | Path, db: str | Path) -> dict:
    """Ingest `bundle` into `db` (files already there are reused) and diagnose it."""
    with Store.open(db) as store:
        ingest_bundle(store, bundle)
        t0, t1 = store.con.execute("SELECT min(ts), max(ts) FROM samples").fetchone()
        incidents = diagnose(store)
    iso = lambda t: None if t is None else t.isoformat(timespec="milliseconds") + "Z"  # noqa: E731
    return {"bundle": str(bundle), "window": {"start": iso(t0), "end": iso(t1)},
            "incidents": [inc.as_json(rank) for rank, inc in enumerate(incidents, 1)]}

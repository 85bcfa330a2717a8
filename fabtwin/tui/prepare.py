"""`fabtwin tui BUNDLE`: ingest the bundle, diagnose it, make sure the store holds the incidents."""

from __future__ import annotations

import json
from pathlib import Path

from collectors.store import Store


def prepare_bundle(bundle: str | Path, db: str | Path) -> int:
    """Ingest and investigate `bundle` into `db`; returns the number of incidents found.

    `replay.investigate.investigate` is the pipeline; if it did not write the `incidents`
    tables itself (older versions only returned them), they are written here from its result.
    """
    from replay.investigate import investigate

    result = investigate(bundle, db)
    incidents = result["incidents"]
    with Store.open(db) as store:
        if incidents and not store.con.execute("SELECT count(*) FROM incidents").fetchone()[0]:
            write_incidents(store, incidents)
    return len(incidents)


def write_incidents(store: Store, incidents: list[dict]) -> None:
    """Replace the store's incidents and evidence with `incidents` (investigate's JSON form)."""
    con = store.con
    con.execute("BEGIN")
    con.execute("DELETE FROM incidents")
    con.execute("DELETE FROM incident_evidence")
    con.executemany(
        "INSERT INTO incidents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(i["rank"], i["kind"], i["root_cause"]["type"], i["root_cause"]["id"],
          _ts(i["start"]), _ts(i["end"]), i["score"], i["summary"], json.dumps(i["impact"]))
         for i in incidents])
    rows = [(i["rank"], seq, json.dumps(ev, default=str))
            for i in incidents for seq, ev in enumerate(i["evidence"], 1)]
    if rows:
        con.executemany("INSERT INTO incident_evidence VALUES (?, ?, ?)", rows)
    con.execute("COMMIT")


def _ts(iso: str | None) -> str | None:
    return None if iso is None else iso.rstrip("Z").replace("T", " ")

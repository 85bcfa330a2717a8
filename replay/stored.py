"""The diagnosis as the store keeps it: `incidents` and `incident_evidence`, read back.

`replay.investigate.store_incidents` writes them; the report and the TUI read them here, with
no import heavier than duckdb (the TUI starts on this path).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

import duckdb


@dataclass
class StoredIncident:
    """One ranked incident (design section 8's fields); `evidence` when it was read too."""

    rank: int
    kind: str
    root_type: str
    root_id: str
    start: datetime | None
    end: datetime | None
    score: float
    summary: str
    evidence: list[dict] = field(default_factory=list)
    impact: dict = field(default_factory=dict)

    def ports(self) -> list[str]:
        """The port ids the root cause names (both ends of a link, the port itself)."""
        if self.root_type == "link" and "--" in self.root_id:
            return self.root_id.split("--", 1)
        if self.root_type == "port":
            return [self.root_id]
        return []


def load_incidents(con: duckdb.DuckDBPyConnection, evidence: bool = True) -> list[StoredIncident]:
    """The stored incidents, rank 1 first, with their evidence unless `evidence=False`."""
    rows = con.execute(f"""
        SELECT i.rank, kind, root_type, root_id, start, "end", score, summary, impact,
               {"list(e.evidence ORDER BY e.seq) FILTER (WHERE e.evidence IS NOT NULL)"
                if evidence else "NULL"}
        FROM incidents i {"LEFT JOIN incident_evidence e USING (rank)" if evidence else ""}
        GROUP BY ALL ORDER BY i.rank""").fetchall()
    return [StoredIncident(r[0], r[1], r[2], r[3], r[4], r[5], r[6] or 0.0, r[7] or "",
                           [parse_json(e) for e in r[9] or []], parse_json(r[8]) or {})
            for r in rows]


def load_evidence(con: duckdb.DuckDBPyConnection, rank: int) -> list[dict]:
    """The evidence rows of the incident ranked `rank`, in order."""
    rows = con.execute("SELECT evidence FROM incident_evidence WHERE rank = ? ORDER BY seq",
                       [rank]).fetchall()
    return [parse_json(r[0]) for r in rows]


def parse_json(text: str | None):
    """A stored JSON text; text that is not JSON (written by hand) as {"text": ...}."""
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return {"text": text}

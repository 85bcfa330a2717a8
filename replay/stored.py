"""The diagnosis as the store keeps it: `incidents`, `incident_evidence` and
`incident_explanations`, read back.

`replay.investigate.store_incidents` writes them; the report and the TUI read them here, with
no import heavier than duckdb (the TUI starts on this path).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

import duckdb


def rows_of(con: duckdb.DuckDBPyConnection, sql: str, params: list | dict | None = None) -> list[dict]:
    """A statement's rows as dicts keyed by column name."""
    cur = con.execute(sql, params or [])
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


@dataclass
class Incident:
    """One incident (design section 7's fields): what a detector finds, what the store keeps.
    `rank` is its place once ranked (0 before); `evidence` is empty when it was not read;
    `explanation` is what the twin made of it (`replay.explain`; README, Investigate)."""

    kind: str
    root_type: str
    root_id: str
    start: datetime | None
    end: datetime | None
    score: float
    summary: str
    evidence: list[dict] = field(default_factory=list)
    impact: dict = field(default_factory=dict)
    rank: int = 0
    explanation: dict = field(default_factory=dict)

    def as_json(self, rank: int | None = None) -> dict:
        """The incident as `investigate --json` prints it (design section 8)."""
        return {"rank": self.rank if rank is None else rank, "kind": self.kind,
                "root_cause": {"type": self.root_type, "id": self.root_id},
                "start": iso(self.start), "end": iso(self.end), "score": round(self.score, 3),
                "summary": self.summary, "evidence": self.evidence,
                "explanation": self.explanation, "impact": self.impact}

    def ports(self) -> list[str]:
        """The port ids the root cause names (both ends of a link, the port itself)."""
        if self.root_type == "link" and "--" in self.root_id:
            return self.root_id.split("--", 1)
        if self.root_type == "port":
            return [self.root_id]
        return []


StoredIncident = Incident  # its name before detectors and the store shared one type


def iso(t: datetime | None) -> str | None:
    """A timestamp as the JSON contract writes it: ISO-8601 to the millisecond, `Z`."""
    return None if t is None else t.isoformat(timespec="milliseconds") + "Z"


def load_incidents(con: duckdb.DuckDBPyConnection, evidence: bool = True) -> list[Incident]:
    """The stored incidents, rank 1 first, with their evidence and explanation unless
    `evidence=False` (a store written before explanations has none: {})."""
    rows = con.execute(f"""
        SELECT i.rank, kind, root_type, root_id, start, "end", score, summary, impact,
               {"list(e.evidence ORDER BY e.seq) FILTER (WHERE e.evidence IS NOT NULL)"
                if evidence else "NULL"}
        FROM incidents i {"LEFT JOIN incident_evidence e USING (rank)" if evidence else ""}
        GROUP BY ALL ORDER BY i.rank""").fetchall()
    explained = dict(con.execute("SELECT rank, explanation FROM incident_explanations").fetchall()
                     ) if evidence and _has_table(con, "incident_explanations") else {}
    return [Incident(r[1], r[2], r[3], r[4], r[5], r[6] or 0.0, r[7] or "",
                     [parse_json(e) for e in r[9] or []], parse_json(r[8]) or {}, rank=r[0],
                     explanation=parse_json(explained.get(r[0])) or {})
            for r in rows]


def _has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    return bool(con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?",
                            [name]).fetchone()[0] or con.execute(
        "SELECT count(*) FROM duckdb_views() WHERE view_name = ?", [name]).fetchone()[0])


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

"""What Just Happened drops as evidence of the incidents they explain.

Spectrum switches report every drop with its reason (WJH): a degraded link shows as FCS or
other L1/L2 ingress drops on its ends, a congested egress as buffer (tail) drops or ECN. gnmic
delivers them as JSON records inside string values; ingest keeps each record as a `drop` event
(its message the record as JSON: Reason, ReasonId, AggCount, IngressPort, EgressPort,
FirstTimestamp, EndTimestamp, ...) on the port it names. This post-pass of the diagnosis
attaches, to each incident, the drops on its root ports (both ends of a link, a port) and their
cable peers during the incident, one evidence entry per port and reason:
`{"source": "wjh", "port", "reason", "count", "first", "last"}` (count: the sum of the records'
aggregate counts; first/last: the records' own aggregation times where they carry them).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime

import duckdb
import orjson

from replay.stored import Incident, iso

SOURCE = "wjh"


def _peers(con: duckdb.DuckDBPyConnection, ports: list[str]) -> list[str]:
    """The ports and the ports cabled to them, in that order, each once."""
    rows = con.execute("""
        SELECT port_a, port_b FROM links WHERE port_a IN (SELECT unnest($1))
        OR port_b IN (SELECT unnest($1))""", [ports]).fetchall()
    out = list(ports)
    for a, b in rows:
        out += [p for p in (a, b) if p not in out]
    return out


def _epoch(value) -> datetime | None:
    """A record's FirstTimestamp/EndTimestamp (epoch seconds) as naive UTC."""
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 1e11:
        return datetime.fromtimestamp(value, UTC).replace(tzinfo=None)
    return None


def wjh_evidence(con: duckdb.DuckDBPyConnection, ports: list[str], start: datetime | None,
                 end: datetime | None) -> list[dict]:
    """The WJH evidence entries of `ports` (and their peers) between start and end."""
    where = _peers(con, ports)
    rows = con.execute("""
        SELECT ts, device || ':' || ifname, message FROM events
        WHERE kind = 'drop' AND ($2::TIMESTAMP IS NULL OR ts >= $2)
          AND ($3::TIMESTAMP IS NULL OR ts <= $3)
          AND device IN (SELECT split_part(unnest($1), ':', 1))
        ORDER BY ts""", [where, start, end]).fetchall()
    agg: dict[tuple[str, str], dict] = defaultdict(lambda: {"count": 0, "first": None, "last": None})
    for ts, port, message in rows:
        try:
            rec = orjson.loads(message)
        except orjson.JSONDecodeError:
            continue  # a drop line that is not a record: kept in events, no count to add
        if not isinstance(rec, dict):
            continue
        dev = port.split(":", 1)[0]
        named = {port} | {f"{dev}:{rec[k]}" for k in ("IngressPort", "EgressPort")
                          if isinstance(rec.get(k), str) and rec[k]}
        hit = next((p for p in where if p in named), None)
        if hit is None:
            continue
        reason = str(rec.get("Reason") or rec.get("ReasonId") or "unknown")
        a = agg[(hit, reason)]
        count = rec.get("AggCount")
        a["count"] += count if isinstance(count, int | float) and not isinstance(count, bool) else 1
        first = _epoch(rec.get("FirstTimestamp")) or ts
        last = _epoch(rec.get("EndTimestamp")) or ts
        a["first"] = first if a["first"] is None else min(a["first"], first)
        a["last"] = last if a["last"] is None else max(a["last"], last)
    order = {p: i for i, p in enumerate(where)}
    return [{"source": SOURCE, "port": port, "reason": reason, "count": a["count"],
             "first": iso(a["first"]), "last": iso(a["last"])}
            for (port, reason), a in sorted(agg.items(), key=lambda kv: (order[kv[0][0]], -kv[1]["count"],
                                                                         kv[0][1]))]


def add_wjh(con: duckdb.DuckDBPyConnection, incidents: list[Incident]) -> None:
    """Append each incident's WJH drops to its evidence (a port or link root; the incident's
    end, when still open, is the end of the data)."""
    if not incidents or not con.execute(
            "SELECT EXISTS (SELECT 1 FROM events WHERE kind = 'drop')").fetchone()[0]:
        return
    for inc in incidents:
        ports = inc.ports()
        if ports:
            inc.evidence = [*inc.evidence, *wjh_evidence(con, ports, inc.start, inc.end)]

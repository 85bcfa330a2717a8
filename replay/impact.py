"""What each incident cost: the jobs running through it (for a port's incident, the jobs with a
host on its tree), the links that took its rerouted load, the capacity it took away. Victims
land here, never among the root causes.

Read from the store: `jobs` for the jobs whose time overlaps the incident, and, when a replay is
stored, `expected_ports` for the links of the same plane whose load left the twin's expectation
during the incident (the reroute around a dead link shows as its peers carrying more, or less,
than adaptive routing would have given them) and for the capacity a link lost while down.
"""

from __future__ import annotations

from datetime import datetime

import duckdb

from replay.detectors import Incident

DEVIATION = 0.15  # |observed / expected - 1| that makes a link a victim of a reroute
MAX_LISTED = 20


def add_impact(con: duckdb.DuckDBPyConnection, incidents: list[Incident]) -> None:
    """Fill each incident's impact (keeping what its detector put there)."""
    if not incidents:
        return
    replayed = con.execute("SELECT status = 'ok', t_to FROM replay_runs").fetchone()
    t_end = (replayed[1] if replayed else None) or con.execute(
        "SELECT max(ts) FROM samples").fetchone()[0]
    for inc in incidents:
        end = inc.end or t_end
        impact = dict(inc.impact)
        impact.setdefault("jobs", _jobs(con, inc, end))
        if replayed and replayed[0] and inc.root_type == "link":
            impact.update(_link_impact(con, inc.root_id, inc.start, end))
        inc.impact = impact


def _jobs(con: duckdb.DuckDBPyConnection, inc: Incident, end: datetime) -> list[str]:
    """The jobs running during the incident; for a port's incident, those with a host on its
    tree (the root's device and its peer, the ports it pauses or explains) when any is in a
    job: a storm or an incast stalls the jobs whose traffic crosses it, not every job."""
    devices = sorted({p.split(":", 1)[0] for p in _tree_ports(con, inc)})
    on_tree = "AND job_id IN (SELECT job_id FROM job_span_hosts WHERE host IN (SELECT unnest(?)))"
    when = """SELECT DISTINCT job_id FROM job_spans
              WHERE (start IS NULL OR start <= ?) AND ("end" IS NULL OR "end" >= ?)"""
    if devices:
        rows = con.execute(f"{when} {on_tree} ORDER BY job_id", [end, inc.start, devices]).fetchall()
        if rows:
            return [r[0] for r in rows]
    return [r[0] for r in con.execute(f"{when} ORDER BY job_id", [end, inc.start]).fetchall()]


def _tree_ports(con: duckdb.DuckDBPyConnection, inc: Incident) -> list[str]:
    """A port incident's root, its peer and the ports its impact names (empty for others)."""
    if inc.root_type != "port":
        return []
    ports = [inc.root_id]
    ports += [r[0] for r in con.execute(
        "SELECT CASE WHEN port_a = ? THEN port_b ELSE port_a END FROM links "
        "WHERE port_a = ? OR port_b = ?", [inc.root_id] * 3).fetchall()]
    for key in ("paused_ports", "victim_ports"):
        ports += [p for p in inc.impact.get(key, []) if isinstance(p, str)]
    return ports


def _link_impact(con: duckdb.DuckDBPyConnection, link: str, start: datetime,
                 end: datetime) -> dict:
    rows = con.execute("""
        SELECT plane, avg(capacity_bytes_per_s * (1 - up_fraction)) * 8 / 1e9
        FROM expected_ports
        WHERE link_id = ? AND uplink AND window_end > ? AND window_start < ?
        GROUP BY plane""", [link, start, end]).fetchall()
    if not rows:
        return {}
    plane, lost = rows[0]
    victims = con.execute(f"""
        SELECT link_id, max(abs(observed_tx_bytes_per_s / expected_tx_bytes_per_s - 1)) AS dev
        FROM expected_ports
        WHERE plane = ? AND tier >= 1 AND link_id <> ? AND window_end > ? AND window_start < ?
          AND expected_tx_bytes_per_s > 0.05 * capacity_bytes_per_s
          AND observed_tx_bytes_per_s IS NOT NULL
        GROUP BY link_id HAVING dev > {DEVIATION}
        ORDER BY dev DESC, link_id LIMIT {MAX_LISTED}""", [plane, link, start, end]).fetchall()
    return {"plane": plane, "capacity_lost_gbps": round(float(lost or 0.0), 1),
            "rerouted_links": [v[0] for v in victims]}

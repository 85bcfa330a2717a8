"""Victims folded into their roots (design section 7: victims are not root causes): what one
fault does to the traffic around it shows as another kind of incident at another entity, and
the detectors, each reading one symptom, report it as a rival root.

- a slower link: whatever balances by load sends less over it and over the cables into its
  upper end, so the switches below show uneven uplinks (`load_imbalance`);
- a switch balancing unevenly (ECMP collisions, adaptive routing off): the uplinks its hash
  piles flows on run full and mark ECN, and so do the ports of the switches above it that those
  flows converge on (`congestion`);
- a link down or flapping: its traffic moves to its devices' other cables, which may run full
  and mark ECN from the outage on (`congestion`);
- a link flapping: what it had in flight is lost while it is down, a deficit on the cable with
  no error counter (a silent loss, `link_degraded`) in the windows the outage touches;
- a congestion: the switch above the overloaded one, paused, fills its buffers and may drop
  what arrives from further up, counted nowhere, for as long as the overload lasts (a silent
  loss, `link_degraded`, into that switch or the congested one).

A victim becomes evidence (a `victim` row) and impact (`victim_incidents`) of its root and
leaves the ranking; a candidate the root does not explain (its other uplinks uneven too, its
congestion earlier than the outage) stays a root.
"""

from __future__ import annotations

from datetime import timedelta

import duckdb

from replay.detectors import IMBALANCE_LEAVING_OUT, imbalance_floor
from replay.stored import Incident, rows_of

# an outage's victims start with it: a sample interval and a clock skew of a few seconds early
BEFORE_OUTAGE = timedelta(seconds=30)


def fold_victims(con: duckdb.DuckDBPyConnection, incidents: list[Incident]) -> list[Incident]:
    """The incidents without the victims of the others, each victim in its root's evidence."""
    if not _replayed(con):
        return incidents
    ends = _ports(con)
    folded: dict[int, Incident] = {}
    for victim, root in [*_slow_link_victims(con, incidents, ends),
                         *_imbalance_victims(incidents, ends), *_outage_victims(incidents, ends),
                         *_flap_loss_victims(incidents), *_congestion_victims(incidents, ends)]:
        if id(victim) in folded or id(root) in folded or victim is root:
            continue
        folded[id(victim)] = root
        root.evidence.append({"role": f"victim: {victim.kind} explained by this {root.kind}",
                              "kind": victim.kind, "root_cause": {"type": victim.root_type,
                                                                  "id": victim.root_id},
                              "detector_score": round(victim.score, 3), "summary": victim.summary})
        root.impact.setdefault("victim_incidents", []).append(
            {"kind": victim.kind, "id": victim.root_id})
    return [i for i in incidents if id(i) not in folded]


def _replayed(con: duckdb.DuckDBPyConnection) -> bool:
    status = con.execute("SELECT status FROM replay_runs").fetchone()
    return bool(status and status[0] == "ok")


def _ports(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, str | None, bool]]:
    """port -> (its device, its peer's device, whether it is its cable's lower end)."""
    rows = con.execute("""
        SELECT DISTINCT e.port_id, e.device, p.device, e.uplink FROM expected_ports e
        LEFT JOIN (SELECT DISTINCT port_id, device FROM expected_ports) p
          ON p.port_id = e.peer_port""").fetchall()
    return {r[0]: (r[1], r[2], bool(r[3])) for r in rows}


def overlap(a: Incident, b: Incident) -> bool:
    """Whether two incidents' times overlap (an open start or end reaches either way)."""
    return ((a.start is None or b.end is None or a.start <= b.end)
            and (b.start is None or a.end is None or b.start <= a.end))


def _slow_link_victims(con: duckdb.DuckDBPyConnection, incidents: list[Incident], ends: dict):
    """(load_imbalance, slow link) pairs: a switch some but not all of whose uplinks lead to
    paths across the slow cable (`_crossing`), those uplinks carrying less than its others
    (paths through a slower cable draw less: adaptive routing steers away from them, congestion
    control throttles what a hash keeps on them), its other uplinks even (or fewer than two),
    from the slow link's start on. An uplink heavier than its peers, or uneven uplinks the
    slow cable does not reach, is a fault of its own."""
    slow = [i for i in incidents if i.kind == "link_degraded" and i.root_type == "link"
            and any("speed_bps" in e for e in i.evidence)]
    uneven = [i for i in incidents if i.kind == "load_imbalance"]
    if not slow or not uneven:
        return
    floor = imbalance_floor(con)  # one noise-floor query, not one per link
    window = _window(con)
    for root in slow:
        crossing = _crossing(ends, root.root_id.split("--", 1), {i.root_id for i in uneven})
        into = sorted(p for ports in crossing.values() for p in ports)
        spread = {r["device"]: r for r in rows_of(con, IMBALANCE_LEAVING_OUT,
                                                  {"left_out": into or [""], "floor": floor})}
        for inc in uneven:
            if inc.root_id not in crossing or not overlap(inc, root) or (
                    root.start and inc.start and inc.start < root.start - BEFORE_OUTAGE - window):
                continue
            if not _lighter(con, inc, crossing[inc.root_id]):
                continue
            r = spread.get(inc.root_id)
            if r is None or r["share"] < 0.5 or r["cv"] <= floor:
                yield inc, root


def _window(con: duckdb.DuckDBPyConnection) -> timedelta:
    """The replay's window: an incident's start is its first window's."""
    rows = con.execute("SELECT max(window_end - window_start) FROM expected_ports").fetchall()
    return rows[0][0] if rows and rows[0][0] is not None else timedelta(0)


def _crossing(ends: dict, cable: list[str], devices: set[str]) -> dict[str, set[str]]:
    """Per switch of `devices`, those of its uplinks (2 or more) whose up-then-down paths can cross the
    cable, when some of its uplinks' paths cannot: the cable itself; one below the cable's
    lower end (its traffic climbs through the cable); or one from which the cable's upper end
    is reached up and then down (a path descending through the cable), as in a 3-tier fabric
    the cores above one aggregation switch reach the far pods only through the aggregation
    switches they are cabled to. Paths through the switch itself do not count."""
    ups: dict[str, set[tuple[str, str]]] = {}
    for port, (dev, peer, up) in ends.items():
        if up and peer is not None:
            ups.setdefault(dev, set()).add((port, peer))
    lower = {ends[p][0] for p in cable if p in ends and ends[p][2]}
    upper = {ends[p][1] for p in cable if p in ends and ends[p][2]}
    if not lower or not upper:
        return {}
    above: dict[str, set[str]] = {}

    def climb(dev: str) -> set[str]:  # dev and every switch above it
        if dev not in above:
            above[dev] = {dev}.union(*(climb(x) for _, x in ups.get(dev, ())))
        return above[dev]

    # a path up from x and down to the cable's upper end exists when they share a switch above
    meets = set().union(*(climb(u) for u in upper))
    out: dict[str, set[str]] = {}
    for dev in devices:
        links = ups.get(dev, set())
        if len(links) < 2:
            continue
        hit = set()
        for port, x in links:
            if port in cable or (dev not in lower | upper
                                 and (lower & climb(x) or meets & climb(x))):
                hit.add(port)
        if hit and len(hit) < len(links):
            out[dev] = hit
    return out


def _lighter(con: duckdb.DuckDBPyConnection, inc: Incident, ports: set[str]) -> bool:
    """Whether the switch's uplinks in `ports` carried less, on average over the incident's
    windows, than its other uplinks."""
    rows = con.execute("""
        SELECT port_id, avg(observed_tx_bytes_per_s) FROM expected_ports
        WHERE device = ? AND uplink AND observed_tx_bytes_per_s IS NOT NULL
          AND window_end > coalesce(?::TIMESTAMP, '-infinity'::TIMESTAMP)
          AND window_start < coalesce(?::TIMESTAMP, 'infinity'::TIMESTAMP)
        GROUP BY port_id""", [inc.root_id, inc.start, inc.end]).fetchall()
    on = [v for p, v in rows if p in ports]
    off = [v for p, v in rows if p not in ports]
    return bool(on and off) and sum(on) / len(on) < sum(off) / len(off)


def _imbalance_victims(incidents: list[Incident], ends: dict):
    """(congestion, load_imbalance) pairs: congestion at one of the switch's uplinks, or at a
    port of a switch right above it, while it balances unevenly."""
    for root in (i for i in incidents if i.kind == "load_imbalance"):
        above = {peer for dev, peer, up in ends.values() if dev == root.root_id and up}
        for inc in incidents:
            if inc.kind != "congestion" or inc.root_id not in ends or not overlap(inc, root):
                continue
            dev, _, up = ends[inc.root_id]
            if (dev == root.root_id and up) or dev in above:
                yield inc, root


def _outage_victims(incidents: list[Incident], ends: dict):
    """(congestion, link down or flap) pairs: congestion at another cable of the link's devices
    or at a port into them, from the outage on, where the reroute can put the load: a port
    facing a host carries what that host receives wherever the fabric routes it, so only a
    host's own cable going down (its NIC moves its traffic to its other planes) explains
    congestion there (an incast at a leaf's host port and one of the leaf's uplinks going
    down at the same time are two faults)."""
    hosts = {dev for dev, _, _ in ends.values()} - {dev for dev, _, up in ends.values() if not up}
    for root in (i for i in incidents if i.kind in ("link_down", "link_flap")):
        ports = root.root_id.split("--", 1)
        devices = {ends[p][0] for p in ports if p in ends}
        for inc in incidents:
            if inc.kind != "congestion" or inc.root_id not in ends or inc.root_id in ports:
                continue
            if root.start is None or inc.start is None or inc.start < root.start - BEFORE_OUTAGE:
                continue
            dev, peer, _ = ends[inc.root_id]
            reach = {peer} if peer in hosts else {dev, peer}
            if overlap(inc, root) and reach & devices:
                yield inc, root


def _flap_loss_victims(incidents: list[Incident]):
    """(silent loss, link flap or down) pairs on the same cable: what was in flight or queued
    for it while it was down is lost with no error counter, a deficit (`find_silent_loss`'s
    evidence names its direction and windows) in the windows the outage touches: one window
    of slack either side (a flap shorter than a sample is timed only by its reads). A loss
    outlasting that is a fault of its own."""
    for root in (i for i in incidents if i.kind in ("link_flap", "link_down")):
        for inc in incidents:
            head = inc.evidence[0] if inc.evidence else {}
            if (inc.kind != "link_degraded" or inc.root_id != root.root_id
                    or "direction" not in head or not head.get("windows")
                    or None in (inc.start, inc.end, root.start)):
                continue
            window = (inc.end - inc.start) / head["windows"]
            if (root.start - window <= inc.start
                    and (root.end is None or inc.end <= root.end + window)):
                yield inc, root


def _congestion_victims(incidents: list[Incident], ends: dict):
    """(silent loss, congestion) pairs: a deficit with no error counter (`find_silent_loss`'s
    evidence names its direction) into the congested port's switch or a switch cabled to it,
    starting with the congestion and over by its end (BEFORE_OUTAGE and one of the loss's
    windows of slack): drops at the buffers the overload fills. A loss outlasting the
    congestion, or starting well into it, is a fault of its own."""
    for root in (i for i in incidents if i.kind == "congestion" and i.root_id in ends):
        hot = ends[root.root_id][0]
        near = {hot} | {peer for dev, peer, _ in ends.values() if dev == hot}
        for inc in incidents:
            head = inc.evidence[0] if inc.evidence else {}
            if inc.kind != "link_degraded" or "direction" not in head or not head.get("windows"):
                continue
            rx = head["direction"].split(" -> ")[-1]
            if rx not in ends or ends[rx][0] not in near or None in (inc.start, inc.end, root.start):
                continue
            window = (inc.end - inc.start) / head["windows"]
            # from the overload's onset (the buffers fill within milliseconds of it) to its end
            if (root.start - BEFORE_OUTAGE - window <= inc.start <= root.start + window
                    and (root.end is None or inc.end <= root.end + window)):
                yield inc, root

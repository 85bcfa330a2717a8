"""Detectors: each reads the store (views of collectors/store/sql/views.sql) and returns incidents.

A detector is a plain function `find_<kind>(con) -> list[Incident]`. This first set works from
what the telemetry says: link state intervals, error, ECN and pause rates, and the invariant
that a leaf's equal-cost uplinks carry near-equal load under adaptive routing. It separates
root causes from victims the way design section 7 asks:
- a PFC storm's root is a port that sends pauses without receiving any (a NIC), never the
  switch ports that relay them upstream;
- a congestion's root is the egress port where the ECN marks pile up on a switch that pauses its
  feeders (an overload), not the feeders, and not a link merely running full;
- an uplink imbalance during a link's down time is the reroute, not a misconfiguration.
load_imbalance reads the twin's expected-versus-observed residuals when a replay is stored.
"""

from __future__ import annotations

import duckdb

from replay import roots
from replay.hosts import HOSTS
from replay.link_faults import (
    Z_RUN,
    counter_flaps,
    ensure_residuals,
    find_low_speed,
    find_silent_loss,
    flap_episodes,
    short_flaps,
)
from replay.outages import merge_outages
from replay.residuals import noise_floors, residuals_present
from replay.stored import Incident, rows_of
from replay.stored import iso as _iso

ERRORS_PER_S = 10.0  # FCS/symbol errors per second that count as a degraded link
IMBALANCE_CV = 0.15  # coefficient of variation of a leaf's raw uplink loads
RESIDUAL_CV = 0.04  # ... of its uplinks' observed/expected ratios, where no residual measures noise




def _link_of(con, port_id: str) -> str:
    row = con.execute("SELECT link_id FROM links WHERE port_a = ? OR port_b = ? LIMIT 1",
                      [port_id, port_id]).fetchone()
    return row[0] if row else port_id


def _window_end(con):
    return con.execute("SELECT max(ts) FROM samples").fetchone()[0]


def find_link_failures(con: duckdb.DuckDBPyConnection) -> list[Incident]:
    """link_down (down and still down at the end) and link_flap (down, then up), per link.

    Outages come from events and oper-status (either end: a silent device's links are seen from
    its neighbours), and from carrier / link-down counters that moved in a sample interval no
    outage of a second or more explains: a flap shorter than a sample
    (`replay.link_faults.short_flaps`)."""
    rows = rows_of(con, """
        SELECT port_id, state, start, "end", duration_s, source FROM link_state_intervals
        WHERE state = 'down' ORDER BY start""")
    end_of_window = _window_end(con)
    by_link: dict[str, list[dict]] = {}
    for r in rows:
        by_link.setdefault(_link_of(con, r["port_id"]), []).append(r)
    seen: dict[str, list] = {}
    moves = counter_flaps(con)
    for link, downs in by_link.items():
        # both ends report each transition: downs that overlap are one outage
        outages = merge_outages((d["start"], d["end"] or end_of_window) for d in downs)
        seen[link] = [o for o in outages if (o[1] - o[0]).total_seconds() >= 1.0]  # skew blips
        if all(d["source"] != "event" for d in downs):
            seen[link] = _read_bounds(seen[link], [m for m in moves if m["link"] == link])
    flaps = short_flaps(moves, seen)
    out = []
    for link in dict.fromkeys([*by_link, *flaps]):
        downs = by_link.get(link, [])
        still_down = any(d["end"] is None for d in downs)
        episodes = flap_episodes(flaps.get(link, []))
        outages = sorted(seen.get(link, []) + [(s, e) for s, e, _, _ in episodes])
        if not outages:
            continue
        evidence = [{"port": d["port_id"], "down_at": _iso(d["start"]), "up_at": _iso(d["end"]),
                     "source": d["source"]} for d in downs[:10]]
        evidence += [{"port": m["port"], "counter": m["counter"], "delta": m["delta"],
                      "interval_start": _iso(m["ts_start"]), "interval_end": _iso(m["ts"]),
                      "source": "counter, no down state seen"} for m in flaps.get(link, [])[:10]]
        if still_down and len(outages) == 1:  # down and stayed down; came back before: a flap
            start = outages[-1][0]
            out.append(Incident("link_down", "link", link, start, None, 0.95,
                                f"link {link} went down at {_iso(start)} and stayed down",
                                evidence))
            continue
        n = len(outages) - len(episodes) + sum(k for _, _, k, _ in episodes)
        total = sum((o[1] - o[0]).total_seconds() for o in seen.get(link, []))
        one_end = bool(episodes) and all(len(ports) < 2 for *_, ports in episodes)
        short = (f", {sum(k for _, _, k, _ in episodes)} of them shorter than a sample "
                 "(carrier counters only)") if episodes else ""
        down = f", {total:.0f} s down in all" if seen.get(link) else ""
        out.append(Incident("link_flap", "link", link, outages[0][0], outages[-1][1],
                            min(0.99, 0.8 + 0.05 * n) - (0.05 if one_end else 0.0),
                            f"link {link} flapped {n} time(s){down}{short}"
                            + (", and is down at the end" if still_down else ""),
                            evidence))
    return out


def _read_bounds(outages: list[tuple], moves: list[dict]) -> list[tuple]:
    """Outages read only from oper-status samples, each from the earliest instant the
    carrier counters that moved over its first read allow: a down read says the link was down
    at that instant, and the transition lies in the sample interval the counters moved in,
    which starts at the previous read (writer3 seed 600 w3_033: down 05:43:31.7-32.6 in true
    time, read down at 05:43:32.9 by a clock 1.2 s ahead; the counters moved from 05:43:22.4)."""
    out = []
    for start, end in outages:
        early = [m["ts_start"] for m in moves if m["ts_start"] <= start <= m["ts"]]
        out.append((min([start, *early]), end))
    return out


def find_degraded_links(con: duckdb.DuckDBPyConnection) -> list[Incident]:
    """link_degraded: links corrupting frames (error counters), losing packets no counter
    reports (conservation residuals) or running below their peers' speed; one incident per
    link, the strongest finding first and the others' evidence after it."""
    found = [*_links_with_errors(con), *find_silent_loss(con), *find_low_speed(con)]
    by_link: dict[str, list[Incident]] = {}
    for inc in found:
        by_link.setdefault(inc.root_id, []).append(inc)
    out = []
    for incs in by_link.values():
        incs.sort(key=lambda i: -i.score)
        top = incs[0]
        for other in incs[1:]:
            top.evidence.extend(other.evidence)
            top.summary += f"; also: {other.summary}"
            top.start = min(top.start, other.start) if top.start and other.start else top.start
            top.end = None if top.end is None or other.end is None else max(top.end, other.end)
        out.append(top)
    return out


def _links_with_errors(con: duckdb.DuckDBPyConnection) -> list[Incident]:
    """Links whose receiving ports count FCS/symbol errors while up."""
    rows = rows_of(con, f"""
        SELECT device || ':' || ifname AS port, min(ts_start) AS start, max(ts) AS "end",
               max(errors_per_s) AS peak, count(*) AS intervals
        FROM (SELECT *, ts - INTERVAL (interval_s) SECOND AS ts_start FROM port_rates)
        WHERE errors_per_s > {ERRORS_PER_S} GROUP BY 1 HAVING count(*) >= 2""")
    by_link: dict[str, list[dict]] = {}
    for r in rows:
        by_link.setdefault(_link_of(con, r["port"]), []).append(r)
    out = []
    for link, ports in by_link.items():
        peak = max(p["peak"] for p in ports)
        out.append(Incident(
            "link_degraded", "link", link, min(p["start"] for p in ports), max(p["end"] for p in ports),
            min(0.95, 0.6 + 0.1 * len(ports) + 0.05 * min(4, sum(p["intervals"] for p in ports) / 5)),
            f"link {link} is corrupting frames: up to {peak:.0f} errors/s received",
            [{"port": p["port"], "errors_per_s_peak": p["peak"], "intervals": p["intervals"]} for p in ports]))
    return out


def find_pfc_storms(con: duckdb.DuckDBPyConnection) -> list[Incident]:
    """Ports that emit pauses without end, nothing pausing them: the origin of a PFC tree
    (replay.roots: a silent storming NIC is seen through its leaf port's rx_pause)."""
    return roots.find_pfc_storms(con)


def find_congestion(con: duckdb.DuckDBPyConnection) -> list[Incident]:
    """Egress ports overloaded at line rate, marking ECN and not paused, on a switch pausing
    its feeders (replay.roots: paused ports and feeders are the root's victims)."""
    return roots.find_congestion(con)


def find_load_imbalance(con: duckdb.DuckDBPyConnection) -> list[Incident]:
    """Switches whose equal-cost uplinks carry uneven load most of the time (ECMP hashing,
    adaptive routing off).

    With a replay in the store, each uplink's observed load is divided by the twin's
    expectation for the same demand and link states, so reroutes around a down link and uneven
    demand cancel out; windows where a link of the plane was not up all along are left out all
    the same. Without one (no cabling the twin accepts), raw uplink loads are compared instead.
    A switch is a root cause when its spread is well above its peers': a fabric that hashes
    everywhere (ECMP by design) is uneven everywhere, and that is its design, not one switch's
    fault.
    """
    status = con.execute("SELECT status FROM replay_runs").fetchone()
    replayed = bool(status and status[0] == "ok")
    floor = imbalance_floor(con) if replayed else IMBALANCE_CV
    rows = {r["device"]: r for r in (rows_of(con, _IMBALANCE_FROM_REPLAY, {"floor": floor})
                                     if replayed else rows_of(con, _IMBALANCE_FROM_RATES))}
    by_tier: dict[int, list[tuple[str, float]]] = {}
    for r in rows.values():
        by_tier.setdefault(r["tier"], []).append((r["device"], r["cv"]))
    for r in rows.values():  # what the switch's peers of its tier show, itself left out
        peers = sorted(cv for d, cv in by_tier[r["tier"]] if d != r["device"]) or [0.0]
        r["typical"] = float(peers[len(peers) // 2])
    uneven = [r for r in rows.values() if r["share"] >= 0.5 and r["cv"] > max(floor, 3 * r["typical"])]
    below, starved = _from_below(con, rows, uneven, floor) if replayed else ({}, {})
    out = []
    for r in uneven:
        if r["device"] in below or r["device"] in starved:
            continue  # the hashing of a switch below it, or the uneven split of one above it
        out.append(_imbalance_incident(r, r))
    for lo, up in starved.items():
        inc = next(i for i in out if i.root_id == up)
        inc.evidence.append({"device": lo, "role": f"uneven uplinks below {up}: its cable into "
                             f"{up} carries what {up}'s own uneven split lets through, its other "
                             "upper switches are even", "uplink_cv": round(rows[lo]["cv"], 4),
                             "peer_median_cv": round(rows[lo]["typical"], 4)})
    by_root: dict[str, list[dict]] = {}
    for upper, root in below.items():
        by_root.setdefault(root, []).append(rows[upper])
    for root, uppers in by_root.items():
        if any(i.root_id == root for i in out):
            inc = next(i for i in out if i.root_id == root)
        else:
            inc = _imbalance_incident(rows[root], max(uppers, key=lambda u: u["cv"] - u["typical"]))
            out.append(inc)
        inc.evidence += [{"device": u["device"], "role": f"uneven uplinks above {root}: its "
                          "flows, hashed, reach them unevenly", "uplink_cv": round(u["cv"], 4),
                          "peer_median_cv": round(u["typical"], 4)} for u in uppers]
    return out


def imbalance_floor(con: duckdb.DuckDBPyConnection) -> float:
    """The spread of a switch's uplink ratios (observed / expected) that counter noise alone
    gives, measured on the bundle: Z_RUN times one port's window noise (the conservation
    residuals' robust sigma over sqrt(2): a deficit is the difference of two ends' reads).
    Adaptive routing's own imperfection shows in the switch's tier peers (3 x their median);
    RESIDUAL_CV where the bundle has no computable residual."""
    if not residuals_present(con) and con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'samples'").fetchone()[0]:
        ensure_residuals(con)  # a read-only store, or one replayed before residuals existed
    floors = noise_floors(con) if residuals_present(con) else {}
    if None not in floors:
        return RESIDUAL_CV
    return Z_RUN * max(floors[None].sigma, 1e-9) / 2 ** 0.5


def _imbalance_incident(r: dict, strongest: dict) -> Incident:
    """A load_imbalance at r's switch, scored by the spread of `strongest` (r itself, or the
    switch above it where its hashing shows most)."""
    return Incident(
        "load_imbalance", "device", r["device"], strongest["start"], strongest["end"],
        min(0.85, 0.5 + strongest["cv"] - strongest["typical"]),
        f"{r['device']}'s equal-cost uplinks are uneven (load varies {strongest['cv'] * 100:.0f}% "
        f"around what adaptive routing would carry{'' if strongest is r else ' on ' + strongest['device'] + ' above it'}): "
        "ECMP collisions or adaptive routing off",
        [{"device": r["device"], "uplink_cv": round(r["cv"], 4),
          "peer_median_cv": round(r["typical"], 4), "share_of_windows": round(r["share"], 3),
          "windows": r["windows"], "basis": r["basis"]}])


def _from_below(con: duckdb.DuckDBPyConnection, rows: dict[str, dict], uneven: list[dict],
                floor: float) -> tuple[dict[str, str], dict[str, str]]:
    """(upper switch -> the switch below it whose hashing its uneven uplinks carry, uneven
    lower switch -> the switch above it whose own uneven split it is the victim of).

    A flow hashed at a switch keeps its entropy: every switch above it carries that switch's
    flows unevenly (on few uplinks of its own the hash may even out; above, fewer flows share
    a port). Such a switch below stands out among the uneven switch's other lower neighbours
    and among its own tier (three times their median spread), and the other switches it feeds
    are uneven too. An uneven switch whose lower neighbour's other upper switches split
    evenly splits unevenly by its own choice: it is the root, and that lower switch, if it
    looks uneven (its cable into the root starved or overfed) by less than the root, is its
    victim; one more uneven than the switch above it whose split its other upper switches
    carry on (less up their uplinks where it starves them, `_passed_on`) is the root all the
    same."""
    pairs = con.execute("""
        SELECT DISTINCT e.device, p.device FROM expected_ports e
        JOIN (SELECT DISTINCT port_id, device FROM expected_ports) p ON p.port_id = e.peer_port
        WHERE e.uplink AND e.tier >= 1""").fetchall()
    lower: dict[str, list[str]] = {}
    upper: dict[str, list[str]] = {}
    for lo, up in pairs:
        lower.setdefault(up, []).append(lo)
        upper.setdefault(lo, []).append(up)
    names = {r["device"] for r in uneven}
    ratios = _cable_ratios(con)
    below, victims = {}, {}
    for u in uneven:
        cand = [rows[d] for d in lower.get(u["device"], []) if d in rows]
        if not cand:
            continue
        best = max(cand, key=lambda r: r["cv"])
        rest = sorted(r["cv"] for r in cand if r is not best) or [0.0]
        stands_out = best["cv"] > 3 * max(rest[len(rest) // 2], best["typical"]) and best["cv"] > 0
        # its hash reaches every switch it feeds: another of them uneven as well
        shared = any(x in names for x in upper.get(best["device"], []) if x != u["device"])
        # or its split, more uneven than the upper switch's, is passed on above it: the other
        # upper switches carry on what it sends them, less where it starves them (writer2
        # seed 9637: a leaf 1.72 / 0.28 under a spine at 18%, the other spine's uplinks at
        # 0.37); a lower switch whose starved cable's upper end carries more than expected
        # all the same only reflects the split above it (writer3 seed 322)
        # a switch above whose uplinks are uneven by its own choice turns the lower switch's
        # adaptive routing away from it (the cable into it starved, the others carrying more
        # on); a cable into it overfed while the lower switch's other upper switches carry on
        # its starvation is the lower switch's own split, even when the upper switch, above
        # fewer flows, spreads more (writer2 seed 23024: a leaf 1.14 / 0.86 under a spine
        # splitting 1.46 / 0.97, the other spine carrying on 0.73 / 0.73)
        overfed = ratios.get((best["device"], u["device"]), 1.0) - 1.0 > floor
        if stands_out and (shared or ((best["cv"] > u["cv"] or overfed) and _passed_on(
                ratios, best["device"], u["device"], upper, floor))):
            below[u["device"]] = best["device"]
        elif best["device"] in names and not shared:
            victims[best["device"]] = u["device"]
    # a switch is either a root's victim or a root, never both
    return below, {lo: up for lo, up in victims.items() if up not in below and lo not in below}


def _cable_ratios(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], float]:
    """(lower switch, upper switch) -> observed / expected on its cables into it, over the
    replay's loaded windows."""
    return {(lo, up): r for lo, up, r in con.execute("""
        SELECT e.device, p.device, avg(e.observed_tx_bytes_per_s / e.expected_tx_bytes_per_s)
        FROM expected_ports e JOIN (SELECT DISTINCT port_id, device FROM expected_ports) p
          ON p.port_id = e.peer_port
        WHERE e.uplink AND e.tier >= 1 AND e.observed_tx_bytes_per_s IS NOT NULL
          AND e.expected_tx_bytes_per_s > 0.05 * e.capacity_bytes_per_s
        GROUP BY 1, 2""").fetchall() if r is not None}


def _passed_on(ratios: dict[tuple[str, str], float], lower: str, root_above: str,
               upper: dict[str, list[str]], floor: float) -> bool:
    """Whether `lower`'s uneven split reaches its other upper switches: each carries on, up its
    own uplinks, more or less than expected as `lower` overfeeds or starves it (beyond the
    noise floor): the mark of a split made at `lower`, not a response to `root_above`'s."""
    others = [x for x in upper.get(lower, []) if x != root_above and (lower, x) in ratios]
    if not others:
        return False
    for x in others:
        ups = [r for (lo, _), r in ratios.items() if lo == x]
        if not ups:
            return False
        carried = sum(ups) / len(ups) - 1.0
        if abs(carried) <= floor or carried * (ratios[(lower, x)] - 1.0) <= 0:
            return False
    return True


# per switch and replay window: the spread of observed / expected over its loaded uplinks. In a
# window where a cable is not up all along, the reroute moves load between the uplinks of its
# lower end (that switch is left out) and away from the cables into its upper end (those
# uplinks are left out): the twin's reroute is not exact there; every other uplink counts
_IMBALANCE_FROM_REPLAY_OF = """
    WITH down AS (  -- the ends of each cable not up all along a window, in that window
        SELECT DISTINCT e.window_start, e.device, e.uplink FROM expected_ports e
        SEMI JOIN (SELECT link_id, window_start FROM expected_ports WHERE up_fraction < 1) x
          USING (link_id, window_start)
    ), dev AS (SELECT DISTINCT port_id, device FROM expected_ports
    ), up AS (
        SELECT e.device, e.tier, e.plane, e.window_start, e.window_end,
               e.observed_tx_bytes_per_s / e.expected_tx_bytes_per_s AS r
        FROM expected_ports e LEFT JOIN dev p ON p.port_id = e.peer_port
        WHERE e.uplink AND e.tier >= 1 AND e.observed_tx_bytes_per_s IS NOT NULL
          {LEFT_OUT}AND e.expected_tx_bytes_per_s > 0.05 * e.capacity_bytes_per_s
          AND NOT EXISTS (SELECT 1 FROM down d WHERE d.window_start = e.window_start
                          AND ((d.uplink AND d.device = e.device)
                               OR (NOT d.uplink AND d.device = p.device)))
    ), per_w AS (
        SELECT device, tier, window_start, window_end,
               stddev_pop(r) / nullif(avg(r), 0) AS cv
        FROM up GROUP BY ALL HAVING count(*) >= 2
    )
    SELECT device, tier, min(window_start) AS start, max(window_end) AS "end", avg(cv) AS cv,
           avg((cv > $floor)::INT) AS share, count(*) AS windows,
           'observed/expected' AS basis
    FROM per_w WHERE cv IS NOT NULL GROUP BY device, tier"""
_IMBALANCE_FROM_REPLAY = _IMBALANCE_FROM_REPLAY_OF.replace("{LEFT_OUT}", "")
# the same with the ports of `$left_out` left out (replay.victims: a slow link's own cables)
IMBALANCE_LEAVING_OUT = _IMBALANCE_FROM_REPLAY_OF.replace(
    "{LEFT_OUT}", "AND e.port_id NOT IN (SELECT unnest($left_out)) ")

# without a replay: the spread of raw uplink loads per leaf and sample, outside down times
# (a leaf: a switch cabled to a host; its uplinks: its cables to other switches)
_IMBALANCE_FROM_RATES = f"""
    WITH hosts AS {HOSTS}, leaves AS (
        SELECT DISTINCT device_a AS device FROM links WHERE device_b IN (SELECT device FROM hosts)
          AND device_a NOT IN (SELECT device FROM hosts)
        UNION SELECT device_b FROM links WHERE device_a IN (SELECT device FROM hosts)
          AND device_b NOT IN (SELECT device FROM hosts)
    ), up AS (
        SELECT r.device, r.ts, r.ifname, r.tx_bytes_per_s AS bps
        FROM port_rates r JOIN links l
          ON (l.port_a = r.device || ':' || r.ifname AND l.device_b NOT IN (SELECT device FROM hosts))
          OR (l.port_b = r.device || ':' || r.ifname AND l.device_a NOT IN (SELECT device FROM hosts))
        WHERE r.tx_bytes_per_s IS NOT NULL AND r.device IN (SELECT device FROM leaves)
    ), per_t AS (
        SELECT device, ts, stddev_pop(bps) / nullif(avg(bps), 0) AS cv, count(*) AS n
        FROM up GROUP BY device, ts HAVING count(*) >= 2
    ), quiet AS (
        -- a link down anywhere moves load between uplinks: those times say nothing
        SELECT p.* FROM per_t p WHERE NOT EXISTS (
            SELECT 1 FROM link_state_intervals s WHERE s.state = 'down'
            AND p.ts BETWEEN s.start - INTERVAL 30 SECOND
            AND coalesce(s."end", p.ts) + INTERVAL 30 SECOND)
    )
    SELECT device, 1 AS tier, min(ts) AS start, max(ts) AS "end", avg(cv) AS cv,
           avg((cv > {IMBALANCE_CV})::INT) AS share, count(*) AS windows, 'raw uplink load' AS basis
    FROM quiet GROUP BY device"""


# the detector of each fault kind of twin.faults.KINDS (one detector may find several kinds;
# tests/test_scenario_schema.py checks that every kind has one)
DETECTOR_OF = {"link_down": find_link_failures, "link_flap": find_link_failures,
               "link_degraded": find_degraded_links, "pfc_storm": find_pfc_storms,
               "congestion": find_congestion, "load_imbalance": find_load_imbalance}
DETECTORS = tuple(dict.fromkeys(DETECTOR_OF.values()))  # each once, in the order above

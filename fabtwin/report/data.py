"""What the report shows, read from a store opened read-only: summary, incidents, the fabric's
layout, per-window link utilization and per-port timelines.

Heavy lifting stays in DuckDB: `port_rates` is bucketed once into a temporary table of per-port
windows (switch ports only), and every heatmap and the busiest window are read from it. Timelines
read the raw rates of a handful of devices around one incident.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb
import polars as pl

from replay.detectors import ERRORS_PER_S
from replay.fabric import fabric_from_store
from replay.investigate import diagnose
from replay.outages import merge_outages
from replay.rates import RATE_COLUMNS, rates_sql
from replay.stored import StoredIncident as IncidentRow
from replay.stored import load_incidents
from twin.discover import SWITCH_NAME
from twin.faults import KINDS
from twin.topology import TopologyError


def one(con: duckdb.DuckDBPyConnection, sql: str, params: list | dict | None = None) -> tuple:
    """The one row of an aggregate query (fetched to the end, which DuckDB wants before a
    `register`)."""
    return con.execute(sql, params or []).fetchall()[0]


def frame(con: duckdb.DuckDBPyConnection, sql: str, params: dict | None = None) -> pl.DataFrame:
    return con.sql(sql, params=params or {}).pl()


@dataclass
class Summary:
    """The store in a few numbers."""

    start: datetime | None
    end: datetime | None
    samples: int
    events: int
    switches: int
    hosts: int
    links: int
    jobs: int
    files_loaded: int
    files_skipped: int
    rejects: int
    bundles: list[str]
    replay: dict | None  # the replay_runs row, when a replay ran

    @property
    def empty(self) -> bool:
        return self.samples == 0


def summary(con: duckdb.DuckDBPyConnection) -> Summary:
    """Time range, devices, links, jobs and files of the store."""
    start, end, samples = one(con, "SELECT min(ts), max(ts), count(*) FROM samples")
    names = pl.Series([r[0] for r in con.execute("SELECT device FROM devices").fetchall()],
                      dtype=pl.String)
    switches = int(names.str.contains(f"(?i){SWITCH_NAME.pattern}").sum())
    files = dict(con.execute("SELECT status, count(*) FROM files GROUP BY 1").fetchall())
    bundles = [r[0] for r in con.execute(
        "SELECT DISTINCT bundle FROM files WHERE bundle IS NOT NULL AND bundle <> '' ORDER BY 1").fetchall()]
    cur = con.execute("SELECT * FROM replay_runs ORDER BY created DESC LIMIT 1")
    rows = cur.fetchall()
    replay = dict(zip([d[0] for d in cur.description], rows[0], strict=True)) if rows else None
    return Summary(
        start=start, end=end, samples=samples,
        events=one(con, "SELECT count(*) FROM events")[0],
        switches=switches, hosts=names.len() - switches,
        links=one(con, "SELECT count(*) FROM links")[0],
        jobs=one(con, "SELECT count(DISTINCT job_id) FROM jobs")[0],
        files_loaded=files.get("loaded", 0), files_skipped=files.get("skipped", 0),
        rejects=one(con, "SELECT count(*) FROM rejects")[0],
        bundles=bundles, replay=replay)


def incidents(con: duckdb.DuckDBPyConnection, s: Summary,
              diagnose_now: bool = False) -> tuple[list[IncidentRow], str]:
    """The stored incidents, ranked; where no diagnosis was stored and `diagnose_now`, the
    telemetry detectors' findings, computed now (read-only; minutes and gigabytes on a large
    store, which is why it is asked for, not done by default).

    The second value says where they came from: "stored" (the `incidents` table), "computed",
    "undiagnosed" (nothing stored, nothing computed) or "empty" (a store without telemetry).
    """
    if s.empty:
        return [], "empty"
    stored = load_incidents(con)
    if stored or s.replay is not None:
        return stored, "stored"
    if not diagnose_now:
        return [], "undiagnosed"
    found = diagnose(con)  # detectors only read (and a temporary table): read-only is enough
    return found, "computed"  # ranked by diagnose: the stored incidents' type


def explanations(con: duckdb.DuckDBPyConnection) -> dict[int, dict]:
    """Each incident's stored `explanation` (incident_explanations, issue 17) by rank; {} for
    a store diagnosed before explanations were stored."""
    try:
        rows = con.execute("SELECT rank, explanation FROM incident_explanations").fetchall()
    except duckdb.CatalogException:
        return {}
    out = {}
    for rank, text in rows:
        try:
            value = json.loads(text or "")
        except ValueError:
            continue
        if isinstance(value, dict) and value:
            out[rank] = value
    return out


# -- the fabric -------------------------------------------------------------------------------

@dataclass
class Layout:
    """Every cable of the fabric with its plane and tier; `port_lo`/`dev_lo` is the lower end."""

    cables: pl.DataFrame  # link_id, port_lo, port_hi, dev_lo, dev_hi, plane, tier, capacity_Bps
    order: dict[str, int]  # device -> position in the twin's natural order
    tiers: int

    def plane_of_port(self, port: str) -> str | None:
        hit = self.cables.filter((pl.col("port_lo") == port) | (pl.col("port_hi") == port))
        return hit["plane"][0] if hit.height else None

    def plane_of_device(self, device: str) -> str | None:
        hit = self.cables.filter((pl.col("dev_lo") == device) | (pl.col("dev_hi") == device))
        return None if not hit.height else hit.sort("tier", descending=True)["plane"][0]


def layout(con: duckdb.DuckDBPyConnection) -> Layout | str:
    """The fabric the cabling describes (replay.fabric), or why there is none."""
    try:
        f = fabric_from_store(con)
    except TopologyError as exc:
        return str(exc)
    names = f.node_name
    cables = pl.DataFrame({
        "port_lo": f.cable_port_a, "port_hi": f.cable_port_b,
        "dev_lo": [names[i] for i in f.cable_a], "dev_hi": [names[i] for i in f.cable_b],
        "plane": [f"plane-{p}" for p in f.cable_plane], "tier": f.cable_tier.astype("int32"),
        "capacity_Bps": f.cable_gbps * 1e9 / 8,
    }).with_columns(link_id=pl.min_horizontal("port_lo", "port_hi") + "--"
                    + pl.max_horizontal("port_lo", "port_hi"))
    return Layout(cables, {n: i for i, n in enumerate(names)}, f.spec.tiers)


# -- utilization per window --------------------------------------------------------------------

NICE_WINDOWS_S = (1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1800, 3600)


def window_seconds(start: datetime, end: datetime, sample_s: float, max_windows: int = 360) -> int:
    """A window a little longer than the sample interval (so that every port has a sample in
    every window whatever the jitter), with at most `max_windows` of them."""
    span = max((end - start).total_seconds(), 1.0)
    need = max(1.2 * sample_s, span / max_windows)
    return next((w for w in NICE_WINDOWS_S if w >= need), NICE_WINDOWS_S[-1])


def sample_interval(con: duckdb.DuckDBPyConnection) -> float:
    """The typical seconds between two samples of a counter (one switch port's tx_bytes)."""
    row = one(con, """
        WITH one AS (SELECT device, ifname, metric, qualifier FROM samples
                     WHERE counter = 'tx_bytes' LIMIT 1)
        SELECT median(d) FROM (
            SELECT epoch_us(ts - lag(ts) OVER (ORDER BY ts)) / 1e6 AS d
            FROM samples s JOIN one USING (device, ifname, metric, qualifier))""")
    return float(row[0]) if row[0] else 10.0


def cache_down_intervals(con: duckdb.DuckDBPyConnection) -> None:
    """Every down interval, in temporary table `report_down`: the view behind it reads every
    oper-status sample, so it is read once."""
    con.execute("""CREATE OR REPLACE TEMP TABLE report_down AS
        SELECT port_id, start, "end" FROM link_state_intervals WHERE state = 'down'""")


DEVICES_PER_PASS = 32


class Windows:
    """Per-port averages over fixed windows (aligned to whole multiples of the width: 03:00:00,
    03:00:15, ...), for the ports of every cable (host links included), kept in a temporary
    table of the read-only connection."""

    def __init__(self, con: duckdb.DuckDBPyConnection, lay: Layout, start: datetime, width_s: int):
        epoch = datetime(2000, 1, 1)
        origin = epoch + timedelta(seconds=(start - epoch).total_seconds() // width_s * width_s)
        self.con, self.lay, self.origin, self.width_s = con, lay, origin, width_s
        self.end = one(con, "SELECT max(ts) FROM samples")[0]
        fabric = lay.cables  # host links too: a PFC storm or a host link down shows there
        con.register("report_cables_df", fabric)
        con.execute("CREATE OR REPLACE TEMP TABLE report_cables AS SELECT * FROM report_cables_df")
        con.unregister("report_cables_df")
        switches = sorted(set(fabric["dev_lo"]) | set(fabric["dev_hi"]))
        sql = rates_sql(["tx_bytes_per_s", "rx_bytes_per_s", "errors_per_s"],
                        f"time_bucket(INTERVAL {width_s} SECOND, ts, $origin::TIMESTAMP)")
        con.execute("""CREATE OR REPLACE TEMP TABLE report_port_windows (
            port VARCHAR, w TIMESTAMP, tx DOUBLE, rx DOUBLE, errors DOUBLE)""")
        # a few switches at a time: the read-only connection's memory limit cannot be set, and
        # the rates' window function holds its whole input
        for i in range(0, len(switches), DEVICES_PER_PASS):
            con.execute(f"""INSERT INTO report_port_windows
                SELECT port, ts, tx_bytes_per_s, rx_bytes_per_s, errors_per_s FROM ({sql})""",
                        {"d": switches[i:i + DEVICES_PER_PASS], "t0": start, "t1": self.end,
                         "origin": origin})

    def busiest(self) -> datetime | None:
        """The window whose fabric links carry the most load on average."""
        row = self.con.execute("""
            WITH u AS (
                SELECT p.w, p.tx / c.capacity_Bps AS util
                FROM report_port_windows p JOIN report_cables c ON p.port = c.port_lo
                WHERE c.tier >= 1  -- the fabric's load: switch-to-switch cables
                UNION ALL
                SELECT p.w, p.tx / c.capacity_Bps
                FROM report_port_windows p JOIN report_cables c ON p.port = c.port_hi
                WHERE c.tier >= 1
            ), per_w AS (SELECT w, avg(util) AS util, count(util) AS n FROM u GROUP BY w)
            -- windows at the edges, where few ports report yet, do not count
            SELECT w FROM per_w WHERE n >= 0.5 * (SELECT max(n) FROM per_w)
            ORDER BY util DESC, w LIMIT 1""").fetchall()
        return row[0][0] if row else None

    def snapshot(self, w: datetime, incident_links: list[str] | None = None) -> pl.DataFrame:
        """Per fabric cable at window `w`: utilization (the busier direction, observed at either
        end), the share of the window it was down, peak errors/s and whether it is degraded."""
        w1 = w + timedelta(seconds=self.width_s)
        return frame(self.con, """
            WITH ends AS (
                SELECT c.link_id, p.tx AS lo_tx, p.rx AS lo_rx, NULL AS hi_tx, NULL AS hi_rx, p.errors
                FROM report_cables c JOIN report_port_windows p ON p.port = c.port_lo AND p.w = $w
                UNION ALL
                SELECT c.link_id, NULL, NULL, p.tx, p.rx, p.errors
                FROM report_cables c JOIN report_port_windows p ON p.port = c.port_hi AND p.w = $w
            ), load AS (
                SELECT link_id, greatest(coalesce(max(lo_tx), max(hi_rx)),
                                         coalesce(max(hi_tx), max(lo_rx))) AS bps,
                       max(errors) AS errors
                FROM ends GROUP BY link_id
            ), spans AS (  -- each end's outages, clipped to the window
                SELECT c.link_id, greatest(r.start, $w) AS s, least(coalesce(r."end", $end), $w1) AS e
                FROM report_down r JOIN report_cables c ON r.port_id = c.port_lo OR r.port_id = c.port_hi
                WHERE r.start < $w1 AND coalesce(r."end", $end) > $w
            ), islands AS (  -- replay.outages.merge_outages's rule, for every cable at once:
                -- down while either end says so (overlapping or touching spans are one outage)
                SELECT link_id, s, e, sum(CASE WHEN s <= reach THEN 0 ELSE 1 END)
                    OVER (PARTITION BY link_id ORDER BY s, e ROWS UNBOUNDED PRECEDING) AS island
                FROM (SELECT *, max(e) OVER (PARTITION BY link_id ORDER BY s, e
                                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
                      FROM spans)
            ), down AS (
                SELECT link_id, sum(secs) AS down_s FROM (
                    SELECT link_id, epoch_us(max(e) - min(s)) / 1e6 AS secs
                    FROM islands GROUP BY link_id, island)
                GROUP BY link_id
            )
            SELECT c.link_id, c.dev_lo, c.dev_hi, c.plane, c.tier,
                   l.bps / c.capacity_Bps AS util,
                   least(1.0, coalesce(d.down_s, 0) / $width) AS down_fraction,
                   coalesce(l.errors, 0) AS errors_per_s,
                   coalesce(l.errors, 0) > $err OR list_contains($degraded::VARCHAR[], c.link_id) AS degraded
            FROM report_cables c LEFT JOIN load l USING (link_id) LEFT JOIN down d USING (link_id)
            """, {"w": w, "w1": w1, "end": self.end, "width": float(self.width_s),
                  "err": ERRORS_PER_S, "degraded": incident_links or []})

    def window_of(self, t: datetime) -> datetime:
        k = int((t - self.origin).total_seconds() // self.width_s)
        return self.origin + timedelta(seconds=k * self.width_s)


# -- timelines --------------------------------------------------------------------------------

# the rate (port_rates column) and axis label of each signal counter other than the load
_SIGNAL_RATES = {"rx_fcs_errors": ("errors_per_s", "errors/s"),
                 "ecn_marked": ("ecn_marked_per_s", "ECN-marked packets/s"),
                 "tx_pause": ("tx_pause_per_s", "pause frames sent/s")}
# per fault kind (twin.faults.KINDS): its signal, drawn under the load; the kinds that show in
# the load itself (link_down, link_flap, load_imbalance) have none
SIGNAL = {k.name: _SIGNAL_RATES[k.signal] for k in KINDS.values() if k.signal in _SIGNAL_RATES}


def peer_map(con: duckdb.DuckDBPyConnection, ports: list[str]) -> dict[str, str]:
    """The port at the other end of each of `ports`' cables."""
    rows = con.execute("""
        SELECT port_a, port_b FROM links
        WHERE list_contains($p::VARCHAR[], port_a) OR list_contains($p::VARCHAR[], port_b)""",
                       {"p": ports}).fetchall()
    out = {}
    for a, b in rows:
        out.setdefault(a, b)
        out.setdefault(b, a)
    return out


def involved_ports(con: duckdb.DuckDBPyConnection, inc: IncidentRow) -> tuple[list[str], list[str]]:
    """(root ports, other ports the incident names) of an incident."""
    if inc.root_type == "link":
        roots = inc.root_id.split("--")
    elif inc.root_type == "port":
        roots = [inc.root_id]
    else:  # a device: its ports are candidates, none is the root
        roots = []
    named: list[str] = []
    for e in inc.evidence:
        if isinstance(e, dict) and isinstance(e.get("port"), str):
            named.append(e["port"])
    for p in inc.impact.get("paused_ports", []) or []:
        named.append(p)
    for link in inc.impact.get("links", []) or []:
        if isinstance(link, str):
            named.extend(link.split("--"))
    peers = peer_map(con, roots)
    roots = list(dict.fromkeys(roots + [peers[p] for p in roots if p in peers]))
    return roots, [p for p in dict.fromkeys(named) if p not in roots]


def timeline(con: duckdb.DuckDBPyConnection, devices: list[str], t0: datetime, t1: datetime) -> pl.DataFrame:
    """The rates of every port of `devices` between t0 and t1, one row per port and sample."""
    return frame(con, rates_sql(list(RATE_COLUMNS), "ts") + " ORDER BY ts",
                 {"d": devices, "t0": t0, "t1": t1})


def down_intervals(con: duckdb.DuckDBPyConnection, ports: list[str], t0: datetime,
                   t1: datetime) -> list[tuple[datetime, datetime]]:
    """When any of `ports` was down between t0 and t1 (merged across ends)."""
    rows = con.execute("""
        SELECT greatest(start, $t0), least(coalesce("end", $t1), $t1) FROM report_down
        WHERE list_contains($p::VARCHAR[], port_id) AND start < $t1
          AND coalesce("end", $t1) > $t0""", {"p": ports, "t0": t0, "t1": t1}).fetchall()
    return merge_outages(rows)


def expected(con: duckdb.DuckDBPyConnection, ports: list[str], t0: datetime, t1: datetime) -> pl.DataFrame:
    """The twin's expected and the observed tx per port and replay window."""
    return frame(con, """
        SELECT port_id AS port, greatest(window_start, $t0) AS window_start,
               least(window_end, $t1) AS window_end, expected_tx_bytes_per_s,
               observed_tx_bytes_per_s, capacity_bytes_per_s
        FROM expected_ports WHERE list_contains($p::VARCHAR[], port_id)
          AND window_end > $t0 AND window_start < $t1 ORDER BY window_start""",
                 {"p": ports, "t0": t0, "t1": t1})

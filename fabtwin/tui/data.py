"""What the terminal UI reads from a store: small, bounded queries returning plain Python values.

No Textual here, so every query is testable on its own. Every query is bounded (a time range, a
port, a LIMIT): the UI must stay fast on a store of tens of millions of samples, where the
whole-store views (`port_rates`) would take seconds.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import duckdb

from collectors.store.readonly import open_readonly
from fabtwin.tui import series_rows
from fabtwin.tui.fabric_data import FabricData, Heatmap, opening_window  # noqa: F401 - screens'
from fabtwin.tui.fabric_windows import natural_key
from fabtwin.tui.records import json_or_none, wjh_fields, wjh_record
from replay.analysis_cache import CACHE_TABLES
from replay.stored import StoredIncident as Incident  # noqa: F401 - the screens' name
from replay.stored import load_evidence, load_incidents
from twin.faults import KINDS

DROP_SCAN = 5000  # newest drop events read per device set, matched to the ports in Python
# the per-port rates a drill-down can plot (port_rates' columns, same names)
RATE_COUNTERS = ("tx_bytes_per_s", "rx_bytes_per_s", "ecn_marked_per_s", "tx_pause_per_s",
                 "rx_pause_per_s", "discards_per_s", "errors_per_s")
_RATE_SQL = {
    "tx_bytes_per_s": "counter = 'tx_bytes'", "rx_bytes_per_s": "counter = 'rx_bytes'",
    "ecn_marked_per_s": "counter = 'ecn_marked'", "tx_pause_per_s": "counter = 'tx_pause'",
    "rx_pause_per_s": "counter = 'rx_pause'",
    "discards_per_s": "counter IN ('rx_discards', 'tx_discards', 'no_buffer_drops', 'wred_drops')",
    "errors_per_s": "counter IN ('rx_errors', 'tx_errors', 'rx_fcs_errors', 'symbol_errors')",
}
# which counter tells an incident's story best (the first one the plot shows)
def rate_of(counter: str) -> str:
    """The per-port rate (a port_rates column) that counts canonical `counter`."""
    return next(col for col, cond in _RATE_SQL.items() if f"'{counter}'" in cond)


# per fault kind: the rate of its signal counter (twin.faults.KINDS)
KIND_COUNTER = {k.name: rate_of(k.signal) for k in KINDS.values()}


def counters_for(kind: str) -> list[str]:
    """RATE_COUNTERS, the fault kind's own counter (KIND_COUNTER) first: what `c` steps through
    on an incident's screens."""
    first = KIND_COUNTER.get(kind, "tx_bytes_per_s")
    return [first] + [c for c in RATE_COUNTERS if c != first]


@dataclass
class Finding:
    """One row of check_findings (replay.checks.Finding as stored)."""

    seq: int
    check: str
    severity: str  # error | warning
    entities: list[str]  # port, link, device or plane ids
    summary: str
    evidence: dict
    created: datetime | None




@dataclass
class Series:
    """One counter of one entity over time, observed and (when the twin ran) expected."""

    counter: str
    ts: list[datetime]
    observed: list[float | None]
    expected_ts: list[datetime] = field(default_factory=list)
    expected: list[float | None] = field(default_factory=list)


class StoreData(FabricData):
    """A read-only view of one store for the UI; one DuckDB connection, a cursor per query."""

    def __init__(self, db: str | Path) -> None:
        self.db = str(db)
        self.con = open_readonly(db)
        self._cache: dict[str, object] = {}  # see _once
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self._init_fabric()

    def close(self) -> None:
        self._cache.clear()  # results read from DuckDB (Arrow) must not outlive its connection
        # a worker thread still inside a query at exit: the process ends anyway
        with contextlib.suppress(duckdb.Error):
            self.con.close()

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor of the shared read-only connection (one per thread or open result)."""
        return self.con.cursor()

    def _rows(self, sql: str, params: list | None = None) -> list[tuple]:
        return self._read(lambda cur: cur.execute(sql, params or []).fetchall())

    def _read(self, read: Callable[[duckdb.DuckDBPyConnection], list]) -> list:
        """`read(cursor)` on a cursor of its own (the UI reads from several threads)."""
        cur = self.cursor()
        try:
            return read(cur)
        except duckdb.CatalogException:
            return []  # a table an older store or a plain DuckDB file lacks
        finally:
            cur.close()

    def jobs_relation(self, hosts: bool = False) -> str:
        """`job_spans` (with `hosts`: `job_span_hosts`), or `jobs` / `job_hosts` in a store made
        before those views (the TUI opens it read-only: a missing view must not empty a screen)."""
        views = self._once("job_views", lambda: {r[0] for r in self._rows(
            "SELECT view_name FROM duckdb_views() WHERE view_name LIKE 'job_span%'")})
        name = "job_span_hosts" if hosts else "job_spans"
        return name if name in views else ("job_hosts" if hosts else "jobs")

    # -- overview ---------------------------------------------------------------------------
    def time_range(self) -> tuple[datetime | None, datetime | None]:
        def first_last():
            rows = self._rows("SELECT min(ts), max(ts) FROM samples")
            return rows[0] if rows else (None, None)

        return self._once("time_range", first_last)

    def counts(self) -> dict[str, int]:
        tables = ("samples", "events", "incidents", "expected_ports", "neighbors", "jobs")
        rows = self._rows("SELECT " + ", ".join(f"(SELECT count(*) FROM {t})" for t in tables))
        if rows:  # one query; a table an older store lacks makes it fail: then one by one
            return dict(zip(tables, rows[0], strict=True))
        out = {}
        for table in tables:
            rows = self._rows(f"SELECT count(*) FROM {table}")
            out[table] = rows[0][0] if rows else 0
        return out

    def replay_status(self) -> str:
        """One line on the latest replay run, or "no replay yet"."""
        rows = self._rows("SELECT status, windows, window_s, note FROM replay_runs "
                          "ORDER BY created DESC LIMIT 1")
        if not rows:
            return "no replay yet (run `fabtwin replay` or `fabtwin investigate`)"
        status, windows, window_s, note = rows[0]
        return (f"replay {status}: {windows or 0} windows of {window_s or 0:g} s"
                + (f" ({note})" if note else ""))

    def check_counts(self) -> dict[str, int]:
        """Findings of the latest `fabtwin check` per severity (`error` first); {} for none."""
        return dict(self._rows("SELECT severity, count(*) FROM check_findings GROUP BY 1 "
                               "ORDER BY severity <> 'error', severity"))

    def check_findings(self) -> list[Finding]:
        """The findings of the latest `fabtwin check` (table check_findings), in its order;
        [] when none are stored (no check ran, or the last one found nothing)."""
        rows = self._rows("SELECT seq, check_name, severity, entities, summary, evidence, "
                          "created FROM check_findings ORDER BY seq")
        out = []
        for seq, check, severity, entities, summary, evidence, created in rows:
            ids = json_or_none(entities)
            ev = json_or_none(evidence)
            out.append(Finding(seq, check, severity,
                               [str(e) for e in ids] if isinstance(ids, list) else [],
                               summary or "", ev if isinstance(ev, dict) else {}, created))
        return out

    # -- incidents --------------------------------------------------------------------------
    def incidents(self) -> list[Incident]:
        return self._read(lambda cur: load_incidents(cur, evidence=False))

    def evidence(self, rank: int) -> list[dict]:
        return self._read(lambda cur: load_evidence(cur, rank))

    # -- time series ------------------------------------------------------------------------
    def port_series(self, ports: list[str], counter: str, t0: datetime | None = None,
                    t1: datetime | None = None) -> Series:
        """`counter` (a RATE_COUNTERS name) summed over `ports` per sampling period, in [t0, t1],
        with the twin's expectation for the byte counters when a replay ran."""
        if counter not in _RATE_SQL or not ports:
            return Series(counter, [], [])
        (series,) = self.port_series_many(ports, [counter], t0, t1)
        return self.with_expected(series, ports, t0, t1)

    def with_expected(self, series: Series, ports: list[str], t0: datetime | None = None,
                      t1: datetime | None = None) -> Series:
        """`series` (of `ports`) with the twin's expectation in [t0, t1], for the byte
        counters when a replay ran (the replay's table: no samples read)."""
        if series.counter not in ("tx_bytes_per_s", "rx_bytes_per_s") or not ports:
            return series
        side = series.counter.split("_", 1)[0]
        # the window first, then a device's ifnames (_port_filter): a leaf's 64 port ids in
        # one IN list took 20-34 ms of CPU on a 344K-row table, this 6-8
        where, params = _port_filter(list(ports))
        bounds = "window_end >= ? AND window_start <= ? AND" if t0 and t1 else ""
        exp = self._rows(f"""
            SELECT window_start, sum(expected_{side}_bytes_per_s) FROM expected_ports
            WHERE {bounds} ({where}) GROUP BY 1 ORDER BY 1""",
                         ([t0, t1] if bounds else []) + params)
        return Series(series.counter, series.ts, series.observed, [r[0] for r in exp],
                      [r[1] for r in exp])

    def port_series_many(self, ports: list[str], counters: list[str],
                         t0: datetime | None = None, t1: datetime | None = None) -> list[Series]:
        """Each of `counters` (RATE_COUNTERS names) summed over `ports`, in one scan.

        Rates come straight from `samples` for these ports only (one metric per port and
        counter, the one with most samples, as port_rates does), so the cost is the ports'
        rows, not the store's. Ports sample at their own instants, so rates are averaged per
        port over the sampling period before they are summed.
        """
        counters = [c for c in counters if c in _RATE_SQL]
        if not counters or not ports:
            return [Series(c, [], []) for c in counters]
        by_name: dict[str, Series] = {c: Series(c, [], []) for c in counters}
        for cname, t, rate in self._series_rows(ports, counters, t0, t1, by_port=False):
            by_name[cname].ts.append(t)
            by_name[cname].observed.append(rate)
        return [by_name[c] for c in counters]

    def port_series_each(self, ports: list[str], counter: str, t0: datetime | None = None,
                         t1: datetime | None = None) -> list[Series]:
        """`counter` of each of `ports` (in that order), in one scan: what port_series_many
        gives for each port alone (a drill-down's 33 ports took 33 scans)."""
        if counter not in _RATE_SQL:
            return [Series(counter, [], []) for _ in ports]
        by_port: dict[str, Series] = {p: Series(counter, [], []) for p in ports}
        for _cname, port, t, rate in self._series_rows(ports, [counter], t0, t1, by_port=True):
            if port in by_port:
                by_port[port].ts.append(t)
                by_port[port].observed.append(rate)
        return [by_port[p] for p in ports]

    def _series_rows(self, ports: list[str], counters: list[str], t0: datetime | None,
                     t1: datetime | None, by_port: bool) -> list[tuple]:
        """(counter, [port,] period start, rate) rows: summed over `ports`, or per port (each
        port aligned on its own sampling period, as when it is read alone)."""
        where, params = _port_filter(ports)
        if not params:
            return []
        if t0 is not None and t1 is not None:  # over every device's term, not the last's
            where = f"({where}) AND ts BETWEEN ? AND ?"
            params += [t0, t1]
        sql = series_rows.fetch_sql(where, [_RATE_SQL[c] for c in counters], by_port)
        fast = self._read(lambda cur: [series_rows.compute(
            cur.execute(sql, params).fetchnumpy(), counters, by_port)])
        if fast and fast[0] is not None:  # numpy's; the SQL's below for non-finite samples
            return fast[0]
        return self._rows(series_rows.sql(where, {c: _RATE_SQL[c] for c in counters}, by_port),
                          params)

    # -- entities ---------------------------------------------------------------------------
    def entity_ports(self, kind: str, ident: str) -> list[str]:
        """The ports of a port, link, device or host (ports that sent samples or are cabled)."""
        if kind == "port":
            return [ident]
        if kind == "link":
            return ident.split("--", 1) if "--" in ident else [ident]
        rows = self._rows("SELECT device || ':' || ifname FROM neighbors WHERE device = ? UNION SELECT "
                          "peer_device || ':' || peer_ifname FROM neighbors WHERE peer_device = ?",
                          [ident, ident])  # a cable may be reported by its other end alone
        if not rows:  # not cabled: the ports it sent samples for
            rows = self._rows("SELECT DISTINCT device || ':' || ifname FROM samples "
                              "WHERE device = ?", [ident])
        return sorted((r[0] for r in rows), key=natural_key)

    def peers(self, ports: list[str]) -> list[tuple[str, str, str]]:
        """(port, peer port, link id) for each cabled port of `ports`."""
        mine = set(ports)
        cables = {c for p in mine for c in self._cables().get(p, ())}
        return sorted((a, b, link) if a in mine else (b, a, link) for a, b, link in cables)

    def _cables(self) -> dict[str, list[tuple[str, str, str]]]:
        """Each cabled port's cables (port_a, port_b, link id), from one read of `links` per
        store (a query per drill-down took 12-25 ms of CPU at 256 switches)."""
        def read():
            out: dict[str, list[tuple[str, str, str]]] = {}
            for a, b, link in self._rows("SELECT port_a, port_b, link_id FROM links"):
                out.setdefault(a, []).append((a, b, link))
                out.setdefault(b, []).append((a, b, link))
            return out

        return self._once("cables", read)

    def entity_kind(self, ident: str) -> str:
        """Guess what an id names: link (a--b), port (dev:if), host (in job_hosts) or device."""
        if "--" in ident:
            return "link"
        if ":" in ident:
            return "port"
        return "host" if self._rows("SELECT 1 FROM job_hosts WHERE host = ? LIMIT 1",
                                    [ident]) else "device"

    def jobs_of(self, hosts: list[str]) -> list[tuple]:
        if not hosts:
            return []
        return self._rows(f"""
            SELECT DISTINCT j.job_id, j.tenant, j.start, j."end", j.state
            FROM {self.jobs_relation()} j JOIN {self.jobs_relation(hosts=True)} h USING (job_id)
            WHERE h.host IN ({", ".join("?" * len(hosts))})
            ORDER BY j.start""", list(hosts))

    def hosts_of_links(self, links: list[str]) -> list[str]:
        devices = {p.split(":", 1)[0] for link in links for p in link.split("--")}
        if not devices:
            return []
        rows = self._rows(f"SELECT DISTINCT host FROM job_hosts WHERE host IN "
                          f"({', '.join('?' * len(devices))})", sorted(devices))
        return [r[0] for r in rows]

    def entities(self, limit: int = 1_000_000) -> list[tuple[str, str]]:
        """(kind, id) of the cabled devices, links and ports, for the command palette (from
        the cabling and the jobs: small tables, where the samples' ports view scans them all)."""
        rows = self._rows(f"""
            SELECT DISTINCT 'device', device FROM neighbors
            UNION ALL SELECT DISTINCT 'host', host FROM job_hosts
            WHERE host NOT IN (SELECT device FROM neighbors)
            UNION ALL SELECT 'link', link_id FROM links
            UNION ALL SELECT DISTINCT 'port', device || ':' || ifname FROM neighbors
            LIMIT {int(limit)}""")
        return [(k, i) for k, i in rows]

    # -- events -----------------------------------------------------------------------------
    def events(self, device: str = "", kind: str = "", limit: int = 5000) -> list[tuple]:
        """(ts, device, ifname, kind, message): events plus job starts and ends, newest last."""
        jobs = self.jobs_relation()
        rows = self._rows(f"""
            SELECT * FROM (
                SELECT ts, device, ifname, kind, message FROM events
                UNION ALL SELECT start, job_id, '', 'job_start',
                    coalesce(tenant, '') || ' ' || coalesce(nodelist, '') FROM {jobs}
                    WHERE start IS NOT NULL
                UNION ALL SELECT "end", job_id, '', 'job_end', coalesce(state, '') FROM {jobs}
                    WHERE "end" IS NOT NULL)
            WHERE (? = '' OR device ILIKE '%' || ? || '%') AND (? = '' OR kind = ?)
            ORDER BY ts LIMIT {int(limit)}""", [device, device, kind, kind])
        return rows

    def event_kinds(self) -> list[str]:
        rows = self._rows("SELECT DISTINCT kind FROM events ORDER BY 1")
        kinds = [r[0] for r in rows]
        if self._rows("SELECT 1 FROM jobs LIMIT 1"):
            kinds += ["job_start", "job_end"]
        return kinds

    def events_of(self, ports: list[str], devices: list[str], limit: int = 500) -> list[tuple]:
        where, params = _port_filter(ports) if ports else ("false", [])
        if devices:
            where += f" OR device IN ({', '.join('?' * len(devices))})"
            params += list(devices)
        return self._rows(f"SELECT ts, device, ifname, kind, message FROM events WHERE {where} "
                          f"ORDER BY ts LIMIT {int(limit)}", params)

    # -- fabric: fabric_data.FabricData -------------------------------------------------

    # -- on-call: drill-down peers, explanations, WJH drops, the schema ---------------------
    def warm_drill(self) -> None:
        """Read what a drill-down's peers need (two scans of the replay's ports)."""
        self._port_roles()
        self._cables()

    def uplink_peers(self, ports: list[str]) -> list[str]:
        """The other uplinks of the switches (or hosts) whose uplinks `ports` are, and for a
        port that is not an uplink the other ports of its device facing the same tier: the
        ports an equal-cost fault is compared with (replay's `expected_ports.uplink`)."""
        roles, by_role = self._port_roles()
        mine = {r for p in ports for r in roles.get(p, ())}
        return sorted({q for r in mine for q in by_role[r]} - set(ports), key=natural_key)

    def uplinks_of(self, device: str) -> list[str]:
        """The uplinks of `device` (the lower ends of its cables, `expected_ports.uplink`): the
        equal-cost ports a load_imbalance compares."""
        by_role = self._port_roles()[1]
        return sorted({q for (d, _t, up), ps in by_role.items() if d == device and up
                       for q in ps}, key=natural_key)

    def _port_roles(self) -> tuple[dict[str, list[tuple]], dict[tuple, list[str]]]:
        """Each replayed port's (device, tier, uplink), and the ports of each: one scan of
        `expected_ports` per store (the peers' two scans took 35-47 ms of CPU a drill-down at
        256 switches); a NULL in a role matches nothing, as in a join."""
        def read():
            roles: dict[str, list[tuple]] = {}
            by_role: dict[tuple, list[str]] = {}
            for port, *role in self._rows("SELECT DISTINCT port_id, device, tier, uplink "
                                          "FROM expected_ports"):
                if None not in role:
                    roles.setdefault(port, []).append(tuple(role))
                    by_role.setdefault(tuple(role), []).append(port)
            return roles, by_role

        return self._once("port roles", read)

    def explanation(self, rank: int) -> dict | None:
        """The stored `explanation` object of incident `rank` (issue 17's
        incident_explanations), None when the store has none (an older diagnosis)."""
        rows = self._rows("SELECT explanation FROM incident_explanations WHERE rank = ?", [rank])
        if not rows or not rows[0][0]:
            return None
        try:
            value = json.loads(rows[0][0])
        except ValueError:
            return None
        return value if isinstance(value, dict) and value else None

    def drops_of(self, ports: list[str], limit: int = 200) -> list[tuple]:
        """What Just Happened drops on `ports`, newest first: (ts, port, reason, severity,
        count, first, last). The gNMI collector stores each aggregate as an event of kind
        `drop` on its IngressPort, its record as JSON; a drop names its port as the event's or
        as the record's IngressPort or EgressPort (a buffer drop at an egress), as
        replay.wjh reads them for the incidents' evidence."""
        wanted = set(ports)
        devices = sorted({p.split(":", 1)[0] for p in ports if ":" in p})
        if not devices:
            return []
        rows = self._rows(f"SELECT ts, device, ifname, message FROM events WHERE kind = 'drop' "
                          f"AND device IN ({', '.join('?' * len(devices))}) ORDER BY ts DESC "
                          f"LIMIT {DROP_SCAN}", devices)
        out = []
        for ts, dev, ifname, message in rows:
            rec = wjh_record(message)
            named = [f"{dev}:{ifname}"] + [f"{dev}:{rec[k]}" for k in ("IngressPort", "EgressPort")
                                           if isinstance(rec.get(k), str) and rec[k]]
            port = next((p for p in named if p in wanted), None)
            if port is not None:
                out.append((ts, port, *wjh_fields(message)))
                if len(out) >= limit:
                    break
        return out

    def schema(self) -> list[tuple[str, str, list[tuple[str, str]]]]:
        """(kind 'table' or 'view', name, [(column, type)]) of the store's own objects, less
        the copies of two views a diagnosis keeps (replay.analysis_cache: the views are listed)."""
        rows = self._rows(f"""
            SELECT CASE WHEN t.table_name IS NULL THEN 'view' ELSE 'table' END, c.table_name,
                list((c.column_name, c.data_type) ORDER BY c.column_index)
            FROM duckdb_columns() c
            LEFT JOIN duckdb_tables() t ON t.table_name = c.table_name
                AND t.schema_name = c.schema_name AND t.database_name = c.database_name
            WHERE c.database_name = current_database() AND c.schema_name = 'main'
                AND NOT c.internal AND c.table_name NOT IN ({", ".join(map(repr, CACHE_TABLES))})
            GROUP BY ALL ORDER BY 1, 2""")
        return [(kind, name, [(col[0], col[1]) if isinstance(col, tuple)
                              else (col["column_name"], col["data_type"]) for col in cols])
                for kind, name, cols in rows]

    def _once(self, key: str, compute):
        """compute() once per store (it is opened read-only: nothing goes stale); a second
        thread asking meanwhile waits for the first one's answer."""
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._cache:
                self._cache[key] = compute()
            return self._cache[key]


def _port_filter(ports: list[str]) -> tuple[str, list]:
    """A WHERE clause (and its parameters) for the samples or events of `ports`: one term per
    device, its ifnames in a list (a device's 64 ports as 64 OR-ed pairs made DuckDB test
    every pair on every row)."""
    by_device: dict[str, list[str]] = {}
    for p in ports:
        if ":" in p:
            device, ifname = p.split(":", 1)
            by_device.setdefault(device, []).append(ifname)
    if not by_device:
        return "false", []
    where = " OR ".join(f"(device = ? AND ifname IN ({', '.join('?' * len(ifs))}))"
                        for ifs in by_device.values())
    return where, [x for device, ifs in by_device.items() for x in (device, *ifs)]

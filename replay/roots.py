"""Root versus victim for congestion and PFC storms (design section 7), from the physics of a
lossless fabric rather than from which port is loudest.

- A pause frame is sent by the receiving end of a link to stop its sender. Every link is seen
  from both ends: the pauses a port emits are its own `tx_pause` or, when its device exports
  nothing (a stuck host NIC that reports no telemetry), the `rx_pause` its peer counts.
- How much a port is paused is measured against the link: one maximal pause lasts 65535 quanta
  of 512 bit times, so `speed / (65535 * 512)` frames per second keep the sender paused all the
  time (`full_pause_rate`). Floors are shares of that rate and of what the same bundle's ports
  show anyway (stray pause frames and ECN microbursts on healthy links are noise).
- A PFC storm's root keeps emitting pauses that nothing on its device explains (a switch
  relays pauses when one of its own ports is paused or its queue builds; a host NIC relays
  nothing; being paused itself explains no pause it sends). The ports its pauses reach, and
  the ports those relays pause in turn, are its tree: impact and evidence, never roots.
- A congestion's root is an egress port that carries at or near its line rate (so pauses do
  not throttle it; line rate unknown: it is not paused), marks ECN, on a switch that pauses its
  feeders. A port that marks ECN because its peer pauses it (a spine port above a congested
  leaf) is throttled below line rate: a victim however loud, and so is a hot port feeding a
  root's device at the same time. Among the planes and rails of one receiving host
  the root is where the overload is (utilization times ECN), the first plane on a tie. Where ECN
  says nothing (marking off, counters that never move), a switch that pauses its feeders with
  no pause or queue of its own to explain it has an egress it cannot drain: the port there at
  line rate, unpaused, not a feeder (`quiet_congestion_roots`).
- Two faults at once stay two incidents: a port is suppressed only when an identified root's
  tree, device and time explain it, never because something else happened nearby.
"""

from __future__ import annotations

import math
import warnings
import weakref
from dataclasses import dataclass, field
from datetime import datetime

import duckdb
import polars as pl

from replay import analysis_cache
from replay.counters import PAUSE_QUANTA_BITS
from replay.hosts import HOSTS
from replay.stored import Incident

PAUSED = 0.02  # share of the full-pause rate above which a port counts as paused
STORMING = 0.1  # ... kept up, unexplained: a storm (back-pressure is explained by its cause)
NEAR_LINE_RATE = 0.8  # tx / capacity of an egress port that the offered load saturates
SUSTAINED = 2  # samples: a storm or a congestion lasts more than one sample interval
NOISE_MARGIN = 3.0  # floors sit this far above what the bundle's typical port shows anyway
MAX_LISTED = 20
QUIET_SCORE = 0.6  # a congestion seen without ECN: pauses and line rate only


def full_pause_rate(speed_bps: float) -> float:
    """Pause frames per second that keep a sender at `speed_bps` paused all the time."""
    return speed_bps / PAUSE_QUANTA_BITS


@dataclass
class Span:
    """A port's sustained intervals of one signal: when, how many samples, how strong."""

    start: datetime
    end: datetime
    n: int
    peak: float  # rate (frames/s or marks/s)
    share: float  # mean share of the full-pause rate (pauses) or utilization (congestion)
    source: str = ""  # the counter that saw it, named from the emitter's side: its own
    # "tx_pause" or "peer's rx_pause" (for a paused port: its peer's tx, or its own rx)

    def overlaps(self, other: Span) -> bool:
        return self.start <= other.end and other.start <= self.end


@dataclass
class Facts:
    """What both detectors read: cabling, speeds, sustained pause emission and reception."""

    peer: dict[str, str]
    speed: dict[str, float]  # port -> line rate, b/s (the link's, either end's report)
    hosts: set[str]
    emits: dict[str, Span]  # port -> its sustained pause emission (its tx or its peer's rx)
    paused: dict[str, Span]  # port -> its sustained pause reception (its rx or its peer's tx)
    pause_floor: dict[str, float] = field(default_factory=dict)  # port -> frames/s
    default_speed: float = 400e9
    ecn_noise: float = 0.0
    queues: dict[str, Span] = field(default_factory=dict)  # port -> sustained ECN marking

    def floor(self, port: str) -> float:
        return self.pause_floor.get(port) or PAUSED * full_pause_rate(self.default_speed)

    def by_device(self, spans: dict[str, Span]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for port in spans:
            out.setdefault(port.split(":", 1)[0], []).append(port)
        return out


def _frame(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> pl.DataFrame:
    """A query's rows as a polars frame. Through execute, not con.sql: the detectors before
    this one leave results open on the connection, which con.sql refuses; the copy execute's
    arrow output makes (DuckDB warns of it) is of a few filtered rows."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return pl.from_arrow(con.execute(sql, params or []).to_arrow_table())


def _interval_start() -> pl.Expr:
    """When a sample's interval began (its rate covers ts - interval_s .. ts)."""
    return pl.col("ts") - pl.duration(microseconds=(pl.col("interval_s") * 1e6).cast(pl.Int64))


def _device(port: str) -> str:
    return port.split(":", 1)[0]


# one analysis (replay.investigate.views_once: port_rates a temp table or view for its
# duration) reads the facts once for both detectors: connection -> (its oid, facts, roots)
_ANALYSIS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _analysis(con: duckdb.DuckDBPyConnection) -> tuple[Facts, list[tuple[Hot, list[Hot]]]]:
    """The facts and congestion roots of this analysis, computed once within a views_once
    block (outside one, every call reads the store afresh)."""
    made = analysis_cache.shadow(con, "port_rates")
    oid = made[1] if made else None
    cached = _ANALYSIS.get(con)
    if oid is not None and cached and cached[0] == oid:
        return cached[1], cached[2]
    facts = gather(con)
    roots = congestion_roots(con, facts)
    roots += quiet_congestion_roots(con, facts, roots)
    if oid is not None:
        _ANALYSIS[con] = (oid, facts, roots)
    return facts, roots


def gather(con: duckdb.DuckDBPyConnection) -> Facts:
    """Read the cabling, the speeds and the sustained pauses of every port once."""
    has_cap = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = "
                          "'expected_ports'").fetchall()[0][0]
    ports = _frame(con, _PORTS_SQL.format(cap=_CAP_SQL if has_cap else _NO_CAP_SQL))
    known = ports["speed"].drop_nulls()
    default_speed = float(known.median()) if known.len() else 400e9
    # what every port shows anyway (0 on a clean fabric): for ECN the typical port's worst
    # rate (microbursts); for pauses the typical port's typical sample (its median over time),
    # not its worst: one congestion's pause tree reaches most ports of a small fabric for a
    # few samples (the project's seed 12030: 70 of 128 ports, worst 450/s at the median port,
    # a floor of 1,350/s that hid the tree), while stray frames last one sample (SUSTAINED)
    noise, ecn_noise = con.execute("""
        SELECT coalesce(median(p), 0), coalesce(median(e), 0) FROM (
            SELECT median(greatest(coalesce(rx_pause_per_s, 0), coalesce(tx_pause_per_s, 0))) AS p,
                   max(coalesce(ecn_marked_per_s, 0)) AS e
            FROM port_rates GROUP BY device, ifname)""").fetchall()[0]
    ports = ports.with_columns(pl.col("speed").fill_null(default_speed)).with_columns(
        pl.max_horizontal(PAUSED * pl.col("speed") / PAUSE_QUANTA_BITS,
                          pl.lit(NOISE_MARGIN * noise)).alias("floor"))
    linked = ports.filter(pl.col("peer").is_not_null())
    peer = dict(zip(linked["port"].to_list(), linked["peer"].to_list(), strict=True))
    speed = dict(zip(ports["port"].to_list(), ports["speed"].to_list(), strict=True))
    floor = dict(zip(ports["port"].to_list(), ports["floor"].to_list(), strict=True))
    hosts = {r[0] for r in con.execute(f"SELECT device FROM {HOSTS}").fetchall()}
    rows = _frame(con, """
        SELECT device || ':' || ifname AS port, ts, interval_s,
               coalesce(rx_pause_per_s, 0) AS rxp, coalesce(tx_pause_per_s, 0) AS txp
        FROM port_rates
        WHERE coalesce(rx_pause_per_s, 0) > 0 OR coalesce(tx_pause_per_s, 0) > 0""")
    emits, paused = {}, {}
    if rows.height:
        # every row seen as the emitter's and as the receiver's counter
        r = rows.join(ports.select("port", "peer"), on="port", how="left")
        v = pl.concat([
            r.select(pl.col("port").alias("emitter"), pl.col("peer").alias("receiver"), "ts",
                     "interval_s", pl.col("txp").alias("rate"), pl.lit("tx_pause").alias("source")),
            r.select(pl.col("peer").alias("emitter"), pl.col("port").alias("receiver"), "ts",
                     "interval_s", pl.col("rxp").alias("rate"),
                     pl.lit("peer's rx_pause").alias("source")),
        ])
        frame = ports.select("port", "floor", "speed")
        emits = _spans(v.filter(pl.col("emitter").is_not_null()), "emitter", frame,
                       prefer="tx_pause")
        paused = _spans(v.filter(pl.col("receiver").is_not_null()), "receiver", frame,
                        prefer="peer's rx_pause")
    # egress queues that build (ECN above what the typical port shows, sustained): what makes
    # a switch pause its feeders, whether or not the port runs at line rate
    queues = {r[0]: Span(r[1], r[2], r[3], r[4], math.nan) for r in con.execute("""
        SELECT device || ':' || ifname, min(ts - to_microseconds((interval_s * 1e6)::BIGINT)),
               max(ts), count(*), max(ecn_marked_per_s)
        FROM port_rates WHERE ecn_marked_per_s > ? GROUP BY 1 HAVING count(*) >= ?""",
        [NOISE_MARGIN * float(ecn_noise or 0), SUSTAINED]).fetchall()}
    return Facts(peer, speed, hosts, emits, paused, floor, default_speed, float(ecn_noise or 0),
                 queues)


# every cabled or reporting port: its peer and its line rate (b/s): its own speed gauge, else
# its peer's (a link runs at one speed), else the capacity the replay gave its link
_PORTS_SQL = """
    WITH ends AS (SELECT port_a AS port, port_b AS peer FROM links
                  UNION ALL SELECT port_b, port_a FROM links),
    cabled AS (SELECT port, min(peer) AS peer FROM ends GROUP BY port),
    own AS (SELECT device || ':' || ifname AS port, arg_max(value, ts) AS bps FROM samples
            WHERE counter = 'port_speed_bps' AND value > 0 GROUP BY 1),
    cap AS ({cap}),
    reporting AS (SELECT DISTINCT device || ':' || ifname AS port FROM port_rates
                  WHERE coalesce(rx_pause_per_s, 0) > 0 OR coalesce(tx_pause_per_s, 0) > 0
                     OR coalesce(ecn_marked_per_s, 0) > 0),
    every AS (SELECT port FROM cabled UNION SELECT port FROM reporting)
    SELECT e.port, c.peer, coalesce(o.bps, op.bps, k.bps, kp.bps)::DOUBLE AS speed
    FROM every e LEFT JOIN cabled c USING (port)
    LEFT JOIN own o ON o.port = e.port LEFT JOIN own op ON op.port = c.peer
    LEFT JOIN cap k ON k.port = e.port LEFT JOIN cap kp ON kp.port = c.peer"""
_CAP_SQL = """SELECT port_id AS port, max(capacity_bytes_per_s) * 8 AS bps FROM expected_ports
              WHERE capacity_bytes_per_s > 0 GROUP BY 1"""
_NO_CAP_SQL = "SELECT NULL::VARCHAR AS port, NULL::DOUBLE AS bps WHERE false"


def _spans(v: pl.DataFrame, key: str, ports: pl.DataFrame, prefer: str) -> dict[str, Span]:
    """Per port (`key`): the sustained intervals above its pause floor, from whichever view
    (own counter or peer's) saw more of them; the floor and speed are those of its link."""
    v = v.join(ports, left_on=key, right_on="port", how="left").filter(
        pl.col("rate") > pl.col("floor").fill_null(0.0))
    if not v.height:
        return {}
    g = v.group_by(key, "source").agg(
        _interval_start().min().alias("start"),
        pl.col("ts").max().alias("end"), pl.len().alias("n"), pl.col("rate").max().alias("peak"),
        (pl.col("rate") * PAUSE_QUANTA_BITS / pl.col("speed")).mean().alias("share"))
    out: dict[str, Span] = {}
    for r in g.sort(key, "n", pl.col("source") == prefer, descending=[False, True, True]
                    ).iter_rows(named=True):
        if r[key] in out or r["n"] < SUSTAINED:
            continue
        out[r[key]] = Span(r["start"], r["end"], r["n"], r["peak"], r["share"], r["source"])
    return out


# -- congestion ----------------------------------------------------------------------------

@dataclass
class Hot:
    """An egress port that marks ECN at or near line rate, not paused: a congestion candidate."""

    port: str
    span: Span
    ecn_peak: float
    overload: float  # mean of utilization x ECN marks/s over its hot samples
    overload_se: float  # its standard error (noise of this port's own samples)
    util: float | None
    tied: list[str] = field(default_factory=list)  # no ECN: the ports as loaded beside it


def _pause_floor(facts: Facts) -> pl.Expr:
    """Each row's port's pause floor (frames/s), as column `floor`."""
    return pl.col("port").replace_strict(facts.pause_floor, default=facts.floor(""),
                                         return_dtype=pl.Float64).alias("floor")


def hot_ports(con: duckdb.DuckDBPyConnection, facts: Facts) -> list[Hot]:
    """Switch egress ports whose sustained samples mark ECN above the bundle's noise while
    running near line rate (line rate unknown: while not paused)."""
    rows = _frame(con, """
        SELECT device || ':' || ifname AS port, ts, interval_s, tx_bytes_per_s AS tx,
               ecn_marked_per_s AS ecn, coalesce(rx_pause_per_s, 0) AS rxp
        FROM port_rates WHERE ecn_marked_per_s > ?""", [NOISE_MARGIN * facts.ecn_noise])
    if not rows.height:
        return []
    rows = rows.filter(~pl.col("port").str.split(":").list.first().is_in(sorted(facts.hosts)))
    known = pl.DataFrame({"port": list(facts.speed), "speed": list(facts.speed.values())},
                         schema={"port": pl.Utf8, "speed": pl.Float64})
    rows = rows.join(known, on="port", how="left").with_columns(
        (pl.col("tx") * 8 / pl.col("speed")).alias("util"),
        _pause_floor(facts))
    # a port paused enough to matter cannot run at line rate: with its line rate known, its
    # utilization says whether it is throttled; without, the pauses it receives do
    rows = rows.filter(pl.when(pl.col("util").is_null()).then(pl.col("rxp") <= pl.col("floor"))
                       .otherwise(pl.col("util") >= NEAR_LINE_RATE))
    load = pl.col("ecn") * pl.col("util").fill_null(1.0)
    g = rows.group_by("port").agg(
        _interval_start().min().alias("start"), pl.col("ts").max().alias("end"),
        pl.len().alias("n"), pl.col("ecn").max().alias("peak"), pl.col("util").mean().alias("util"),
        load.mean().alias("load"), load.std().fill_null(0.0).alias("sd"),
    ).filter(pl.col("n") >= SUSTAINED)
    out = []
    for r in g.iter_rows(named=True):
        util = r["util"]
        span = Span(r["start"], r["end"], r["n"], r["peak"], math.nan if util is None else util)
        paused = facts.paused.get(r["port"])
        if util is None and paused and paused.source == "tx_pause" and paused.overlaps(span):
            # line rate unknown and its peer pauses it, as the peer's tx_pause says (it reports
            # no rx_pause of its own, which the samples above were filtered on): a victim
            continue
        out.append(Hot(r["port"], span, r["peak"], r["load"], r["sd"] / math.sqrt(r["n"]), util))
    return sorted(out, key=lambda h: h.port)


def congestion_roots(con: duckdb.DuckDBPyConnection, facts: Facts) -> list[tuple[Hot, list[Hot]]]:
    """(root, other hot ports it explains) per congestion: hot ports on a switch that pauses
    its feeders; one per receiving host (the plane with the overload); hot ports feeding a
    root's device at the same time are the root's feeders, not roots."""
    emitting = facts.by_device(facts.emits)
    hot = [h for h in hot_ports(con, facts)
           if any(facts.emits[p].overlaps(h.span) for p in emitting.get(_device(h.port), [])
                  if p != h.port)]
    by_host: dict[str, list[Hot]] = {}
    rest = []
    for h in hot:
        peer = facts.peer.get(h.port)
        if peer and _device(peer) in facts.hosts:
            by_host.setdefault(_device(peer), []).append(h)
        else:
            rest.append(h)
    roots: list[tuple[Hot, list[Hot]]] = []
    for _host, planes in sorted(by_host.items()):
        best = max(planes, key=lambda h: h.overload)
        # planes within the noise of the best overload share one incast: the first one names it
        tied = [h for h in planes if best.overload - h.overload
                <= 2 * math.hypot(best.overload_se, h.overload_se)]
        root = min(tied, key=lambda h: h.port)
        roots.append((root, [h for h in planes if h is not root]))
    # downstream first: a hot port whose peer's device holds a root at the same time feeds it
    for h in rest:
        peer = facts.peer.get(h.port)
        fed = next((r for r in roots if peer and _device(peer) == _device(r[0].port)
                    and r[0].span.overlaps(h.span)), None)
        if fed:
            fed[1].append(h)
        else:
            roots.append((h, []))
    return roots


def quiet_congestion_roots(con: duckdb.DuckDBPyConnection, facts: Facts,
                           found: list[tuple[Hot, list[Hot]]]) -> list[tuple[Hot, list[Hot]]]:
    """Congestion where ECN says nothing (marking off, or counters that never move in the
    bundle): a switch that keeps pausing its feeders while none of its own ports is paused and
    no queue of it marks ECN has an egress it cannot drain; the root is the egress port that
    runs at line rate, unpaused, through the pauses, not one the switch pauses (a feeder), whose
    ECN never rises above the bundle's noise in the whole bundle (ECN marks there at other times
    would say its marking works, and quiet now, no queue). Where a queue gauge is reported, the
    port whose queue is deepest by far; otherwise ports loaded alike cannot be told apart: the
    first by name is named (the project's seed 16038: three host ports at line rate, ECN frozen
    on every port), the others listed."""
    emitting = facts.by_device(facts.emits)
    paused_on, queued = facts.by_device(facts.paused), facts.by_device(facts.queues)
    held = {_device(r.port) for r, _ in found}
    pausing: list[tuple[str, list[str], Span]] = []
    for dev, ports in sorted(emitting.items()):
        if dev in facts.hosts or dev in held:
            continue
        spans = [facts.emits[p] for p in ports]
        span = Span(min(s.start for s in spans), max(s.end for s in spans),
                    max(s.n for s in spans), max(s.peak for s in spans), math.nan)
        if any(facts.paused[p].overlaps(span) for p in paused_on.get(dev, [])):
            continue  # relaying a pause it receives
        if any(facts.queues[p].overlaps(span) for p in queued.get(dev, [])):
            continue  # a queue marks ECN there: the ECN path names its root
        pausing.append((dev, ports, span))
    if not pausing:
        return []
    every = _frame(con, """
        SELECT device, device || ':' || ifname AS port, ts, interval_s, tx_bytes_per_s AS tx,
               coalesce(rx_pause_per_s, 0) AS rxp, ecn_marked_per_s AS ecn
        FROM port_rates WHERE device IN (SELECT unnest(?::VARCHAR[]))""",
                   [[dev for dev, _, _ in pausing]])
    by_dev = every.partition_by("device", as_dict=True)
    chosen: list[tuple[list[Hot], Span]] = []
    for dev, ports, span in pausing:
        rows = by_dev.get((dev,))
        if rows is None:
            continue
        dead = rows.group_by("port").agg(
            (pl.col("ecn").fill_null(0.0).max() <= NOISE_MARGIN * facts.ecn_noise).alias("dead"))
        during = rows.filter((_interval_start() < span.end) & (pl.col("ts") > span.start))
        during = during.join(dead, on="port").filter(pl.col("dead")).with_columns(
            (pl.col("tx") * 8 / pl.col("port").replace_strict(
                facts.speed, default=facts.default_speed, return_dtype=pl.Float64)).alias("util"),
            _pause_floor(facts))
        # at line rate and unpaused in half the samples of the pauses or more (those at the edges
        # straddle the onset: skew between ports' clocks is a sample's fraction)
        full = (pl.col("util") >= NEAR_LINE_RATE) & (pl.col("rxp") <= pl.col("floor"))
        g = during.group_by("port").agg(
            full.sum().alias("n"), full.mean().alias("most"),
            pl.col("util").filter(full).mean().alias("util"),
            pl.col("util").filter(full).std().fill_null(0.0).alias("sd"),
        ).filter((pl.col("most") >= 0.5) & (pl.col("n") >= SUSTAINED))
        # the ports it pauses are its feeders: the blocked egress is one they send to, not
        # one of them, unless every candidate is one
        fed = g.filter(~pl.col("port").is_in(ports))
        g = fed if fed.height else g
        if not g.height:
            continue
        chosen.append(([Hot(r["port"], span, 0.0, r["util"], r["sd"] / math.sqrt(r["n"]),
                            r["util"]) for r in g.iter_rows(named=True)], span))
    if not chosen:
        return []
    gauges = _queue_gauges(con, [dev for dev, _, _ in pausing])  # one read for every switch
    out: list[tuple[Hot, list[Hot]]] = []
    for cands, span in chosen:
        deep = _deepest_queue(gauges, [h.port for h in cands], span)
        if deep:
            root = next(h for h in cands if h.port == deep)
        else:
            best = max(cands, key=lambda h: h.overload)
            tied = sorted(h.port for h in cands if best.overload - h.overload
                          <= max(0.01, 2 * math.hypot(best.overload_se, h.overload_se)))
            root = next(h for h in cands if h.port == tied[0])
            root.tied = tied[1:]
        out.append((root, []))
    return _merge_planes(facts, out)


def _queue_gauges(con: duckdb.DuckDBPyConnection, devices: list[str]) -> pl.DataFrame:
    """The reported queue gauge (`max_queue_len`) samples of these switches' ports."""
    return _frame(con, """
        SELECT device || ':' || ifname AS port, ts, value FROM samples
        WHERE counter = 'max_queue_len' AND device IN (SELECT unnest(?::VARCHAR[]))""",
                  [devices])


def _deepest_queue(gauges: pl.DataFrame, ports: list[str], span: Span) -> str | None:
    """The port whose queue gauge (`_queue_gauges`) peaks during span at least twice as deep
    as any other candidate's and twice its own median over the bundle: where the queue is,
    when ECN cannot say. None without such a gauge or such a port."""
    if not gauges.height:
        return None
    g = gauges.filter(pl.col("port").is_in(ports)).group_by("port").agg(
        pl.col("value").filter(pl.col("ts").is_between(span.start, span.end)).max().alias("peak"),
        pl.col("value").median().alias("usual"),
    ).drop_nulls("peak").sort("peak", descending=True)
    if not g.height or g["peak"][0] <= 2 * (g["usual"][0] or 0):
        return None
    if g.height > 1 and g["peak"][0] < 2 * g["peak"][1]:
        return None
    return g["port"][0]


def _merge_planes(facts: Facts, roots: list[tuple[Hot, list[Hot]]]) -> list[tuple[Hot, list[Hot]]]:
    """One incident per receiving host, as the ECN path makes: quiet roots on switches of
    different planes or rails whose candidates face the same host at the same time are one
    incast; the first by name names it, the others are its other planes."""
    def faced(h: Hot) -> set[str]:
        return {_device(facts.peer[p]) for p in [h.port, *h.tied]
                if p in facts.peer and _device(facts.peer[p]) in facts.hosts}
    out: list[tuple[Hot, list[Hot]]] = []
    for root, others in sorted(roots, key=lambda r: r[0].port):
        into = next((r for r in out if faced(r[0]) & faced(root) and r[0].span.overlaps(root.span)),
                    None)
        if into is None:
            out.append((root, others))
        else:
            into[1].extend([root, *others])
    return out


def find_congestion(con: duckdb.DuckDBPyConnection) -> list[Incident]:
    """Congestion incidents: each root egress port with its victims in the evidence (the ports
    its switch pauses, the other planes' and feeders' hot ports) and impact."""
    facts, roots = _analysis(con)
    out = []
    for root, others in roots:
        span = root.span
        victims = _paused_by_device(facts, _device(root.port), span, exclude={root.port})
        util = f" at {root.util:.0%} of line rate" if root.util is not None else ""
        evidence = [{"port": root.port, "role": "root", "ecn_marked_per_s_peak": root.ecn_peak,
                     "utilization": None if root.util is None else round(root.util, 3),
                     "intervals": span.n}]
        evidence += [{"port": p, "role": "as loaded as the root, no ECN to tell them apart"}
                     for p in root.tied[:MAX_LISTED]]
        evidence += [{"port": h.port, "role": "hot port explained by the root",
                      "ecn_marked_per_s_peak": h.ecn_peak, "intervals": h.span.n}
                     for h in others[:MAX_LISTED]]
        evidence += [{"port": p, "role": "paused by the root's switch",
                      "rx_pause_per_s_peak": s.peak, "intervals": s.n}
                     for p, s in victims[:MAX_LISTED]]
        if root.ecn_peak > 0:
            score = min(0.95, 0.7 + 0.05 * min(5, span.n / 4))
            what = f"up to {root.ecn_peak:.0f} ECN-marked packets/s"
        else:  # no ECN to confirm the queue, and maybe ports loaded alike beside it
            score = QUIET_SCORE if not root.tied else QUIET_SCORE - 0.05
            what = ("no ECN counter of its switch moves" + (
                f"; {len(root.tied)} other port(s) there run as loaded" if root.tied else ""))
        out.append(Incident(
            "congestion", "port", root.port, span.start, span.end, score,
            f"{root.port} is congested{util}: {what}, its switch pauses {len(victims)} port(s)",
            evidence,
            {"paused_ports": [p for p, _ in victims[:MAX_LISTED]],
             "victim_ports": [h.port for h in others[:MAX_LISTED]]}))
    return out


def _paused_by_device(facts: Facts, device: str, span: Span,
                      exclude: set[str]) -> list[tuple[str, Span]]:
    """The peers that `device`'s ports pause during `span`, strongest first."""
    out = []
    for p, s in facts.emits.items():
        if _device(p) == device and p not in exclude and s.overlaps(span) and p in facts.peer:
            out.append((facts.peer[p], s))
    return sorted(out, key=lambda x: -x[1].peak)


# -- PFC storms ----------------------------------------------------------------------------

def find_pfc_storms(con: duckdb.DuckDBPyConnection) -> list[Incident]:
    """Ports that emit pauses most of the time while nothing pauses them and nothing on their
    device explains them, each with its pause tree (the ports it and its relays pause)."""
    facts, congested = _analysis(con)
    paused_on, queued = facts.by_device(facts.paused), facts.by_device(facts.queues)
    out = []
    for port, span in sorted(facts.emits.items()):
        if span.share < STORMING:
            continue
        # being paused itself explains nothing: a port that is paused stops sending, it does
        # not start pausing (the concurrent congestion at a storming NIC's leaf pauses the NIC)
        dev = _device(port)
        if dev not in facts.hosts:
            # a switch pauses a port when one of its own egresses is paused or its queue builds
            if any(facts.paused[p].overlaps(span) for p in paused_on.get(dev, []) if p != port):
                continue
            if any(facts.queues[p].overlaps(span) for p in queued.get(dev, []) if p != port):
                continue
            # ... or one of its egresses runs at line rate through it with no ECN to see
            if any(_device(h.port) == dev and h.span.overlaps(span)
                   for r, others in congested for h in (r, *others)):
                continue
        tree, relays = _pause_tree(facts, port, span)
        seen_as = ("its own tx_pause counter" if span.source == "tx_pause"
                   else f"the pause frames its peer {facts.peer.get(port)} receives")
        out.append(Incident(
            "pfc_storm", "port", port, span.start, span.end,
            min(0.95, 0.8 + 0.05 * min(3, span.n / 4)),
            f"{port} keeps sending pause frames ({span.peak:.0f}/s) and pauses {len(tree)} "
            f"port(s) upstream (its peer paused {min(span.share, 1):.0%} of the time at the "
            "link's line rate)",
            [{"port": port, "role": "root", "tx_pause_per_s_peak": span.peak,
              "paused_share": round(min(span.share, 1.0), 3), "intervals": span.n, "seen_as": seen_as}]
            + [{"port": p, "role": "paused", "rx_pause_per_s_peak": s.peak, "intervals": s.n}
               for p, s in tree[:MAX_LISTED]]
            + [{"port": p, "role": "relays the storm upstream", "tx_pause_per_s_peak": s.peak}
               for p, s in relays[:MAX_LISTED]],
            {"paused_ports": [p for p, _ in tree[:MAX_LISTED]],
             "pausing_ports": [p for p, _ in relays[:MAX_LISTED]]}))
    return out


def _pause_tree(facts: Facts, root: str, span: Span) -> tuple[list[tuple[str, Span]],
                                                              list[tuple[str, Span]]]:
    """The ports a storm pauses: the root's peer, then the ports each paused switch's relays
    pause in turn (same time, breadth first); and those relays."""
    emitting = facts.by_device(facts.emits)
    tree, relays = [], []
    seen = {root}
    frontier = [facts.peer.get(root)]
    while frontier:
        nxt = []
        for p in frontier:
            if not p or p in seen:
                continue
            seen.add(p)
            s = facts.paused.get(p) or facts.emits.get(root, span)
            tree.append((p, s))
            dev = _device(p)
            if dev in facts.hosts:
                continue  # a host NIC relays nothing
            for e in emitting.get(dev, []):
                if e not in seen and facts.emits[e].overlaps(span):
                    seen.add(e)
                    relays.append((e, facts.emits[e]))
                    nxt.append(facts.peer.get(e))
        frontier = nxt
    return tree, relays


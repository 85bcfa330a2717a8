"""Build the report of a store: query, draw, write `report.html` and the PNGs into a directory."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl

from collectors.store.writer import open_readonly
from fabtwin.report import data, figures
from fabtwin.report.html import render
from fabtwin.report.model import Picture, Report
from twin.discover import natural_key

MAX_LINES = 6  # ports per timeline
OWN_FILES = re.compile(r"(heatmap-busiest(-plane-\d+)?|incident-\d+-(heatmap|timeline))\.png")


def build(db: str | Path, top: int = 5, diagnose_now: bool = False) -> Report:
    """Everything the report shows, pictures included, for the store at `db` (read-only);
    `diagnose_now` runs the telemetry detectors when no diagnosis is stored."""
    t_start = time.perf_counter()
    con = open_readonly(db)
    try:
        s = data.summary(con)
        incs, source = data.incidents(con, s, diagnose_now)
        rep = Report(str(db), s, incs, source, explanations=data.explanations(con))
        if s.empty:
            rep.notes.append(f"This store holds no telemetry yet: load a bundle first with "
                             f"`fabtwin ingest BUNDLE --db {db}` (or `fabtwin investigate BUNDLE --db {db}`).")
        else:
            if s.replay is None:
                rep.notes.append(
                    "No replay yet: "
                    + {"computed": "no diagnosis is stored in this store, so the incidents below come "
                                   "from the telemetry detectors, run just now (read-only); ",
                       "undiagnosed": "no diagnosis is stored in this store, so no incident is listed "
                                      "(`--diagnose` runs the telemetry detectors now); "}.get(source, "")
                    + f"the timelines show the observed load only. `fabtwin replay --db {db}` replays "
                    "the store through the twin and stores the expected load and the incidents.")
            elif s.replay.get("status") != "ok":
                rep.notes.append(f"The last replay did not run the twin ({s.replay.get('status')}: "
                                 f"{s.replay.get('note') or 'no reason given'}): no expected load.")
            _draw(con, rep, top)
    finally:
        con.close()
    rep.seconds = time.perf_counter() - t_start
    return rep


def _draw(con, rep: Report, top: int) -> None:
    s = rep.summary
    data.cache_down_intervals(con)
    lay = data.layout(con)
    win = None
    if isinstance(lay, str):
        rep.notes.append(f"No heatmaps: the cabling does not describe a fabric the twin knows ({lay}).")
    else:
        rep.window_s = data.window_seconds(s.start, s.end, data.sample_interval(con))
        win = data.Windows(con, lay, s.start, rep.window_s)
        tiers = _tier_names(lay.tiers)
        busiest = win.busiest()
        if busiest is not None:
            snap = win.snapshot(busiest, _degraded_roots(rep.incidents, busiest, rep.window_s))
            planes = sorted(snap["plane"].unique().to_list(), key=natural_key)
            # one picture per plane: side by side, planes of 24 x 32 switches left each cell
            # a few pixels (issue 21)
            for plane in planes:
                title = f"Busiest window, {plane}: {_t(busiest)} + {rep.window_s} s"
                part = snap.filter(pl.col("plane") == plane)
                rep.pictures.append(Picture(
                    "heatmap-busiest.png" if len(planes) == 1 else f"heatmap-busiest-{plane}.png",
                    title, f"Link utilization of {plane} (host links included) in the window where "
                    f"the fabric carried the most load ({_t(busiest)} UTC, {rep.window_s} s).",
                    figures.png(figures.heatmap(part, lay.order, [plane], title, tiers)),
                    snapshot=part))
    replayed = s.replay is not None and data.one(con, "SELECT count(*) FROM expected_ports")[0] > 0
    lay = lay if win is not None else None
    focus = [_focus(con, s, inc, rep.window_s or 10) for inc in rep.incidents[:top]]
    devices = list(dict.fromkeys(d for f in focus for d in f.devices))
    # one pass over port_rates for every incident's devices: the view is costly to evaluate
    rates = (data.timeline(con, devices, min(f.t0 for f in focus), max(f.t1 for f in focus))
             if devices else None)
    for f in focus:
        if lay is not None:
            _incident_heatmap(rep, f, lay, win)
        if rates is not None:
            part = rates.filter(pl.col("device").is_in(f.devices) & pl.col("ts").is_between(f.t0, f.t1))
            _incident_timeline(con, rep, f, part, lay, replayed)


@dataclass
class Focus:
    """What an incident's pictures look at: its window, padded span, ports and down times."""

    inc: data.IncidentRow
    start: datetime
    end: datetime
    t0: datetime
    t1: datetime
    roots: list[str]
    named: list[str]
    devices: list[str]
    downs: list[tuple[datetime, datetime]]

    @property
    def label(self) -> str:
        return f"#{self.inc.rank} {self.inc.kind}: {self.inc.root_type} {self.inc.root_id}"


def _focus(con, s: data.Summary, inc: data.IncidentRow, window_s: int) -> Focus:
    start = inc.start or s.start
    end = inc.end or s.end
    pad = timedelta(seconds=max(60.0, 0.5 * (end - start).total_seconds(), 3 * window_s))
    t0, t1 = max(s.start, start - pad), min(s.end, end + pad)
    roots, named = data.involved_ports(con, inc)
    devices = list(dict.fromkeys(([inc.root_id] if inc.root_type == "device" else [])
                                 + [p.split(":", 1)[0] for p in roots + named]))[:6]
    downs = data.down_intervals(con, roots, t0, t1) if roots else []
    return Focus(inc, start, end, t0, t1, roots, named, devices, downs)


def _incident_heatmap(rep: Report, f: Focus, lay: data.Layout, win: data.Windows) -> None:
    """The fabric during the incident: a link fault while the link is down, any other at its middle."""
    inside = [d for d in f.downs if d[1] > f.start and d[0] < f.end]
    at = inside[0][0] + (inside[0][1] - inside[0][0]) / 2 if inside else f.start + (f.end - f.start) / 2
    w = win.window_of(at)
    plane = lay.plane_of_port(f.roots[0]) if f.roots else lay.plane_of_device(f.inc.root_id)
    snap = win.snapshot(w, _degraded_roots(rep.incidents, w, win.width_s))
    planes = [plane] if plane else sorted(snap["plane"].unique().to_list(), key=natural_key)
    rank = f.inc.rank
    rep.pictures.append(Picture(
        f"incident-{rank}-heatmap.png", f"Incident #{rank}: fabric at {_t(w)}",
        f"Link utilization of {', '.join(planes)} during incident #{rank} "
        f"({_t(w)} UTC, {win.width_s} s window).",
        figures.png(figures.heatmap(snap, lay.order, planes, f"{f.label}\nat {_t(w)} + {win.width_s} s",
                                    _tier_names(lay.tiers))),
        rank=rank, snapshot=snap))


def _incident_timeline(con, rep: Report, f: Focus, rates: pl.DataFrame, lay: data.Layout | None,
                       replayed: bool) -> None:
    """The load of the incident's ports around it, and the counter that shows its kind."""
    if not rates.height:
        return
    signal = data.SIGNAL.get(f.inc.kind)
    ports = _pick_ports(rates, f.roots, f.named, f.inc, lay, (f.start, f.end), signal)
    exp = data.expected(con, ports, f.t0, f.t1) if replayed else None
    rank = f.inc.rank
    rep.pictures.append(Picture(
        f"incident-{rank}-timeline.png", f"Incident #{rank}: ports around it",
        f"tx load of the ports incident #{rank} involves, {_t(f.t0)} to {_t(f.t1)} UTC; the incident "
        f"window shaded" + (", down times hatched red" if f.downs else "")
        + ("; dashed: the twin's expected load" if exp is not None and exp.height else "") + ".",
        figures.png(figures.timeline(f"{f.label}\n{f.inc.summary}", rates, ports, set(f.roots),
                                     (f.start, f.end), f.downs, exp, signal)),
        rank=rank))


def _pick_ports(rates: pl.DataFrame, roots: list[str], named: list[str], inc: data.IncidentRow,
                lay: data.Layout | None, window: tuple[datetime, datetime],
                signal: tuple[str, str] | None) -> list[str]:
    """The root's ports first, then the ports whose load (or fault counter) changed most inside
    the incident window against outside it; a device's equal-cost uplinks when it is the root."""
    have = set(rates.filter(pl.col("tx_bytes_per_s").is_not_null())["port"].unique().to_list())
    if inc.root_type == "device" and lay is not None:
        ups = lay.cables.filter((pl.col("dev_lo") == inc.root_id) & (pl.col("tier") >= 1))["port_lo"]
        return [p for p in ups.to_list() if p in have][:8]
    inside = pl.col("ts").is_between(*window)
    cols = ["tx_bytes_per_s"] + ([signal[0]] if signal else [])
    change = rates.group_by("port").agg([
        ((pl.col(c).filter(inside).mean() - pl.col(c).filter(~inside).mean()).abs()
         / pl.col(c).abs().max().clip(lower_bound=1e-9)).fill_null(0).fill_nan(0).alias(c) for c in cols])
    change = change.with_columns(score=pl.sum_horizontal(cols)).sort("score", "port", descending=[True, False])
    first = [p for p in roots if p in have]
    rest = [p for p in named if p in have] + change["port"].to_list()
    return list(dict.fromkeys(first + rest))[:MAX_LINES]


def _degraded_roots(incs: list[data.IncidentRow], w: datetime, width_s: int) -> list[str]:
    w1 = w + timedelta(seconds=width_s)
    return [i.root_id for i in incs if i.kind == "link_degraded" and (i.start is None or i.start < w1)
            and (i.end is None or i.end >= w)]


def _tier_names(tiers: int) -> dict[int, tuple[str, str]]:
    return {0: ("host", "leaf"), 1: ("leaf", "agg" if tiers == 3 else "spine"), 2: ("agg", "core")}


def _t(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S")


def write(rep: Report, out: Path) -> Path:
    """Write report.html and the PNGs into `out` (created; PNGs of an earlier report removed)."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        if OWN_FILES.fullmatch(old.name):
            old.unlink()
    for pic in rep.pictures:
        (out / pic.name).write_bytes(pic.png)
    path = out / "report.html"
    path.write_text(render(rep), encoding="utf-8")
    return path

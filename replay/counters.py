"""Expected counters: per port and replay window, what the twin predicts for every counter the
diagnosis reads, next to what the port reported, and the noise of that counter on this bundle.

Written by the replay (`store_counters`) into `expected_counters` (one row per port and window,
four columns per counter; README "Tables and views"), read back by the explanation
(`replay.explain`). Per counter C:

- `observed_C`: the window's mean of the port's rate (`port_rates`), its link state, its speed;
- `expected_C`: the twin's prediction for the observed demand and the observed link states (the
  loads of `expected_ports`; packets are those bytes over the packet size the port or its peer
  measured; ECN marks, pause frames, drops and queue depth from the twin's queueing layer,
  `twin.queueing.queue_state`, on those loads);
- `healthy_C`: the same with every cable up at its peers' speed and queues under the marking
  threshold (no ECN mark, pause frame or drop): what a fabric without any fault would have
  shown. A diagnosis explains `observed - healthy`.

`noise_C` is the counter's scale of disagreement measured on the bundle itself (see `_noise`):
the unit a residual is counted in.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, replace
from datetime import datetime

import duckdb
import numpy as np
import polars as pl
import scipy.sparse as sp

from replay import analysis_cache
from replay.rate_arrays import epoch_us, rate_arrays
from twin.maxmin import Incidence
from twin.queueing import MTU, queue_state
from twin.topology import Fabric

# the counters of a cell, in the order of the arrays' first axis
COUNTERS = ("tx_bytes", "rx_bytes", "tx_packets", "rx_packets", "ecn_marked", "tx_pause",
            "rx_pause", "discards", "errors", "link_down_events", "down_fraction", "port_speed",
            "queue_depth")
K = {name: i for i, name in enumerate(COUNTERS)}
BYTES = ("tx_bytes", "rx_bytes")
PACKETS = ("tx_packets", "rx_packets")
EVENTS = ("ecn_marked", "tx_pause", "rx_pause", "discards", "errors")  # per second
# port_rates' column of each rate counter, the bytes first (the replay's load: `observed_rates`)
RATE_COLUMN = {"tx_bytes": "tx_bytes_per_s", "rx_bytes": "rx_bytes_per_s",
               "tx_packets": "tx_packets_per_s", "rx_packets": "rx_packets_per_s",
               "ecn_marked": "ecn_marked_per_s", "tx_pause": "tx_pause_per_s",
               "rx_pause": "rx_pause_per_s", "discards": "discards_per_s",
               "errors": "errors_per_s"}
# a flap is one down event, two carrier transitions
DOWN_EVENTS = {"link_down_events": 1.0, "carrier_down_events": 1.0, "carrier_transitions": 0.5}
PAUSE_QUANTA_BITS = 65535 * 512  # the longest pause an 802.3x/PFC frame asks for, in bit times
BYTES_FLOOR = 1e-3  # of line rate: below this a byte residual is counter timing, not traffic
# of line-rate packets: ECN marks, discards and errors a healthy fabric shows in microbursts
RARE_FLOOR = 1e-5


@dataclass
class Grid:
    """Per counter, port index and window (`Fabric` port order: the a-sides then the b-sides of
    its cables): observed (NaN where unreported), expected, healthy; noise per counter and port."""

    fabric: Fabric
    bounds: list[datetime]  # window edges, len windows + 1
    window_s: float
    interval_s: float  # the median sample interval
    observed: np.ndarray  # (counters, ports, windows)
    expected: np.ndarray
    healthy: np.ndarray
    noise: np.ndarray  # (counters, ports)

    @property
    def ports(self) -> list[str]:
        return self.fabric.cable_port_a + self.fabric.cable_port_b


def nominal_fabric(fabric: Fabric) -> Fabric:
    """The fabric with every cable at the median speed of the cables of its plane and tier:
    the speed a port that negotiated less than its peers should have."""
    gbps = fabric.cable_gbps.astype(float).copy()
    for key in set(zip(fabric.cable_plane.tolist(), fabric.cable_tier.tolist(), strict=True)):
        sel = (fabric.cable_plane == key[0]) & (fabric.cable_tier == key[1])
        gbps[sel] = float(np.median(fabric.cable_gbps[sel]))
    return replace(fabric, cable_gbps=gbps)


def build_grid(con: duckdb.DuckDBPyConnection, fabric: Fabric, bounds: list[datetime],
               window_s: float, rates: np.ndarray, up: np.ndarray,
               exp: tuple[np.ndarray, np.ndarray], healthy: tuple[np.ndarray, np.ndarray],
               interval_s: float | None = None) -> Grid:
    """The grid of a replay: `rates` (`observed_rates`), `up`, `exp` (tx, rx) and `healthy`
    (tx, rx) are the replay's per port (or cable) and window arrays (rates in their units/s);
    `interval_s` the median sample interval (`sample_interval`), read here if not given."""
    _, n_ports, n_win = rates.shape
    shape = (len(COUNTERS), n_ports, n_win)
    obs = np.full(shape, np.nan)
    for i, counter in enumerate(RATE_COLUMN):
        obs[K[counter]] = rates[i]
    _queue_depth(con, fabric, bounds, obs)
    _observed_down_events(con, fabric, bounds, obs)
    down = 1.0 - np.tile(up, (2, 1))
    obs[K["down_fraction"]] = down
    speed = _reported_speed(con, fabric)
    obs[K["port_speed"]] = speed[:, None]
    ex, he = np.zeros(shape), np.zeros(shape)
    ex[K["tx_bytes"]], ex[K["rx_bytes"]] = exp
    he[K["tx_bytes"]], he[K["rx_bytes"]] = healthy
    size = _packet_bytes(fabric, obs)
    for b, p in zip(BYTES, PACKETS, strict=True):
        ex[K[p]], he[K[p]] = ex[K[b]] / size[:, None], he[K[b]] / size[:, None]
    cap = np.tile(fabric.cable_gbps * 1e9, 2)
    nominal = np.tile(nominal_fabric(fabric).cable_gbps * 1e9, 2)
    _queues(fabric, ex, cap, size)
    # healthy queues stay under the marking threshold: no ECN, pause or drop (the queueing
    # layer's M/D/1 near line rate only says that a full link marks, not how much; a link
    # running full is not a fault), hence 0 rather than `_queues` on the healthy loads
    ex[K["down_fraction"]] = down  # the link states are the replay's input
    ex[K["port_speed"]] = cap[:, None]
    he[K["port_speed"]] = nominal[:, None]
    interval = (interval_s if interval_s is not None else sample_interval(con)) or window_s / 6
    g = Grid(fabric, bounds, window_s, interval, obs, ex, he, np.ones(shape[:2]))
    g.noise = _noise(g, cap, size)
    return g


def _window_sql(bounds: list[datetime]) -> str:
    t0 = bounds[0].isoformat(sep=" ")
    width = (bounds[1] - bounds[0]).total_seconds() * 1e6 if len(bounds) > 1 else 1e6
    return f"floor((epoch_us(ts - TIMESTAMP '{t0}') - 1) / {width})::BIGINT"


def _port_frame(fabric: Fabric) -> pl.DataFrame:
    return pl.DataFrame({"port_id": fabric.cable_port_a + fabric.cable_port_b}).with_row_index("p")


def _fill(obs: np.ndarray, df: pl.DataFrame, fabric: Fabric, columns: dict[str, str]) -> None:
    df = df.join(_port_frame(fabric), on="port_id", how="inner").filter(
        pl.col("w").is_between(0, obs.shape[2] - 1))
    p, w = df["p"].to_numpy(), df["w"].to_numpy()
    for counter, col in columns.items():
        obs[K[counter], p, w] = df[col].cast(pl.Float64).fill_null(np.nan).to_numpy()


def window_index_sql(t_from: datetime, window_s: float) -> str:
    """The replay window of a rate stamped `ts`: it covers (ts - interval, ts], so a sample
    exactly on a boundary closes the window before it."""
    return (f"floor((epoch_us(ts - TIMESTAMP '{t_from.isoformat(sep=' ')}') - 1) "
            f"/ {window_s * 1e6})::BIGINT")


def observed_rates(con: duckdb.DuckDBPyConnection, fabric: Fabric, t_from: datetime,
                   t_to: datetime, window_s: float, n_win: int) -> np.ndarray:
    """Per port_rates column (RATE_COLUMN order), port index and replay window, the window's
    mean of the port's rates (NaN where the port said nothing): the replay's observed load
    and the grid's observed rates, from the analysis' one read of port_rates
    (`replay.rate_arrays`)."""
    # the windows and the fabric (its port order: the rows of the result)
    params = [t_from.isoformat(), t_to.isoformat(), window_s, n_win,
              analysis_cache.fabric_digest(fabric)]
    kept = analysis_cache.load_arrays(con, "observed_rates", params)
    if kept is not None:  # the store's copy of these windows' rates (replay.analysis_cache)
        return kept["rates"]
    out = _observed_rates(con, fabric, t_from, t_to, window_s, n_win)
    analysis_cache.save_arrays(con, "observed_rates", params, {"rates": out})
    return out


def _observed_rates(con: duckdb.DuckDBPyConnection, fabric: Fabric, t_from: datetime,
                    t_to: datetime, window_s: float, n_win: int) -> np.ndarray:
    # each mean summed in time order, as `avg(x ORDER BY ts)` sums it (the same bits whatever
    # order DuckDB reads the rows in): the rows come sorted by (port code, ts), so a (port,
    # window) group is a run of consecutive rows in time order
    ra = rate_arrays(con)
    index = pl.DataFrame({"port_id": ra.ports}).with_row_index("code").join(
        _port_frame(fabric), on="port_id", how="left")
    p_of = np.full(len(ra.ports), -1, dtype=np.int64)
    p_of[index["code"].to_numpy()] = index["p"].fill_null(-1).to_numpy()
    t0_us, t1_us = epoch_us(t_from), epoch_us(t_to)
    # window_index_sql's window: floor((us since t_from - 1) / window us)
    w = np.floor((ra.ts_us - t0_us - 1) / (window_s * 1e6)).astype(np.int64)
    p = p_of[ra.pc]
    keep = (p >= 0) & (ra.ts_us > t0_us) & (ra.ts_us <= t1_us) & (w >= 0) & (w < n_win)
    keep = None if keep.all() else np.flatnonzero(keep)  # no copy of nine columns for nothing
    if keep is not None:
        p, w = p[keep], w[keep]
    out = np.full((len(RATE_COLUMN), 2 * fabric.n_cables, n_win), np.nan)
    starts = np.flatnonzero(np.r_[True, (p[1:] != p[:-1]) | (w[1:] != w[:-1])]) if p.size \
        else np.zeros(0, np.int64)
    steps = _group_steps(starts, p.size)
    for i, col in enumerate(RATE_COLUMN.values()):
        values, valid = ra.values[col], ra.valid(col)
        if keep is not None:
            values, valid = values[keep], valid[keep]
        out[i, p[starts], w[starts]] = _means_in_order(values, valid, steps)
    return out


def _queue_depth(con, fabric: Fabric, bounds: list[datetime], obs: np.ndarray) -> None:
    """The window's largest reported queue depth."""
    q = con.sql(f"""
        SELECT device || ':' || ifname AS port_id, {_window_sql(bounds)} AS w, max(value) AS q
        FROM samples WHERE counter = 'max_queue_len' AND ts > ? AND ts <= ? GROUP BY ALL""",
                params=[bounds[0], bounds[-1]]).pl()
    _fill(obs, q, fabric, {"queue_depth": "q"})


def _group_steps(starts: np.ndarray, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per step k, the groups (consecutive rows from each of `starts`, `n` rows in all) that
    have a k-th row, and that row: shared by every column `_means_in_order` averages."""
    size = np.diff(np.r_[starts, n])
    steps = []
    for k in range(int(size.max()) if size.size else 0):
        group = np.flatnonzero(size > k)
        steps.append((group, starts[group] + k))
    return steps


def _means_in_order(values: np.ndarray, valid: np.ndarray,
                    steps: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Per group (`_group_steps`), the mean of its `valid` values summed one after the other
    from 0, as DuckDB's avg sums them (NaN for a group without one). Vectorized over the
    groups, a step per row of the largest group (a few per window); an invalid row adds 0.0,
    which leaves a sum that starts at +0.0 bit for bit unchanged."""
    n = len(steps[0][0]) if steps else 0
    total, count = np.zeros(n), np.zeros(n)
    for group, at in steps:
        ok = valid[at]
        total[group] += np.where(ok, values[at], 0.0)
        count[group] += ok
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan)


def _observed_down_events(con, fabric: Fabric, bounds: list[datetime], obs: np.ndarray) -> None:
    """Link down events per window from the ports' flap counters (carrier transitions halved):
    a flap shorter than a sample shows there and nowhere else. Decreases are resets: skipped."""
    names = ", ".join(f"'{c}'" for c in DOWN_EVENTS)
    weight = " ".join(f"WHEN '{c}' THEN {v}" for c, v in DOWN_EVENTS.items())
    df = analysis_cache.kept_relation(con, "down_events", f"""
        WITH d AS (
            SELECT device, ifname, counter, ts,
                   value - lag(value) OVER (PARTITION BY device, ifname, counter, metric, qualifier
                                            ORDER BY ts, file_id, line) AS dv
            FROM samples WHERE counter IN ({names}) AND value IS NOT NULL AND ts <= ?
        ), per AS (
            SELECT device || ':' || ifname AS port_id, {_window_sql(bounds)} AS w, counter,
                   sum(dv) FILTER (WHERE dv > 0) * any_value(CASE counter {weight} END) AS n
            FROM d WHERE ts > ? AND dv IS NOT NULL GROUP BY 1, 2, 3
        )
        SELECT port_id, w, coalesce(max(n), 0) AS n FROM per GROUP BY ALL""",
                 [bounds[-1], bounds[0]]).pl()
    _fill(obs, df, fabric, {"link_down_events": "n"})


def _reported_speed(con, fabric: Fabric) -> np.ndarray:
    """Bits/s each port reports (NaN where it does not)."""
    df = con.sql("""SELECT device || ':' || ifname AS port_id, max(value) AS bps FROM port_gauges
                    WHERE counter = 'port_speed_bps' AND value > 0 GROUP BY 1""").pl()
    out = np.full(2 * fabric.n_cables, np.nan)
    df = df.join(_port_frame(fabric), on="port_id", how="inner")
    out[df["p"].to_numpy()] = df["bps"].to_numpy()
    return out


def sample_interval(con) -> float | None:
    """The median of port_rates' intervals (the rate arrays': as DuckDB's median)."""
    kept = analysis_cache.load_arrays(con, "sample_interval", [])
    if kept is not None:
        return float(kept["s"][0]) or None
    interval = rate_arrays(con).interval_s
    s = float(np.median(interval)) if interval.size else 0.0
    analysis_cache.save_arrays(con, "sample_interval", [], {"s": np.array([s])})
    return s or None


def _packet_bytes(fabric: Fabric, obs: np.ndarray) -> np.ndarray:
    """Bytes per packet each port's traffic measured (tx and rx over every window), else its
    peer's, else the bundle's median: the divisor from expected bytes to packets."""
    def ratio(b: str, p: str) -> np.ndarray:
        by, pk = np.nansum(obs[K[b]], axis=1), np.nansum(obs[K[p]], axis=1)
        ok = (pk > 0) & (by > 0)
        return np.where(ok, by / np.where(ok, pk, 1), np.nan)
    both = np.vstack([ratio("tx_bytes", "tx_packets"), ratio("rx_bytes", "rx_packets")])
    seen = np.isfinite(both)  # a port that counted no packet either way (a silent device's) has none
    own = np.divide(np.where(seen, both, 0.0).sum(axis=0), seen.sum(axis=0),
                    out=np.full(obs.shape[1], np.nan), where=seen.any(axis=0))
    c = fabric.n_cables
    peer = np.concatenate([own[c:], own[:c]])
    size = np.where(np.isfinite(own), own, peer)
    bundle = float(np.nanmedian(size)) if np.isfinite(size).any() else float(MTU)
    return np.where(np.isfinite(size) & (size > 0), size, bundle)


def _queues(fabric: Fabric, cells: np.ndarray, cap_bps: np.ndarray, size: np.ndarray) -> None:
    """ECN marks, pause frames, drops and queue depth the twin's queueing layer gives for the
    cells' tx loads: each port's egress is a queue fed by its own load (the demand was observed,
    so it fit: queues build only where the expected load meets the port's capacity)."""
    c, n_win = fabric.n_cables, cells.shape[2]
    # directed link 2c runs up cable c from its a-side (port c), 2c+1 down from port c + C
    sender = np.empty(2 * c, dtype=np.int64)
    sender[0::2], sender[1::2] = np.arange(c), np.arange(c) + c
    receiver = np.where(sender < c, sender + c, sender - c)
    inc = Incidence(sp.identity(2 * c, format="csr"))
    link_cap = cap_bps[sender]
    plane = np.repeat(fabric.cable_plane, 2)
    for w in range(n_win):
        load = np.nan_to_num(cells[K["tx_bytes"], sender, w]) * 8
        q = queue_state(inc, load, link_cap, load, load > 0, link_pos=fabric.link_position,
                        link_plane=plane)
        # the twin counts MTU packets; the port's own packet size makes them its packets
        cells[K["ecn_marked"], sender, w] = q.ecn_marks_per_s * MTU / size[sender]
        cells[K["discards"], sender, w] = q.drops_per_s * MTU / size[sender]
        cells[K["queue_depth"], sender, w] = q.queue_bytes
        # a paused sender hears pause frames from its receiver, one per longest pause it asks
        frames = q.paused_fraction * link_cap / PAUSE_QUANTA_BITS
        cells[K["tx_pause"], receiver, w] = frames
        cells[K["rx_pause"], sender, w] = frames


def _noise(g: Grid, cap_bps: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Per counter and port, the scale a residual is measured in, from the
    bundle itself, per counter and cable tier (a fault touches few cells, so the spread over a
    tier's cells is its healthy peers' spread):
    - bytes and packets: 1.4826 x the median absolute deviation of observed - expected as a
      share of line rate, at least BYTES_FLOOR of line rate;
    - event rates (ECN, pauses, discards, errors): the 90th percentile of |observed| over the
      tier's cells, at least one event per window, and at least a floor relative to line rate:
      pauses that stop the port BYTES_FLOOR of the time, RARE_FLOOR of its line-rate packets
      for ECN marks and discards (what microbursts give a healthy fabric; errors have none);
    - link down events: a tenth of one (healthy links count none: one event is a fact, ten
      noise units, not a fluctuation);
    - down_fraction: one sample interval of the window; port_speed: BYTES_FLOOR of it."""
    n_k, n_p, _ = g.observed.shape
    out = np.ones((n_k, n_p))
    tier = np.tile(g.fabric.cable_tier, 2)
    res = g.observed - g.expected
    line_bytes = cap_bps / 8
    for t in np.unique(tier):
        sel = tier == t
        for name in BYTES + PACKETS:
            k = K[name]
            unit = line_bytes[sel] if name in BYTES else line_bytes[sel] / size[sel]
            rel = (res[k, sel] / unit[:, None]).ravel()
            rel = rel[np.isfinite(rel)]
            mad = 1.4826 * float(np.median(np.abs(rel - np.median(rel)))) if rel.size else 0.0
            out[k, sel] = max(BYTES_FLOOR, mad) * unit
        for name in EVENTS:
            k = K[name]
            # against healthy (no marks): the queueing layer's M/D/1 expectation near line rate
            # would count its own error as the bundle's noise
            r = np.abs(g.observed[k, sel] - g.healthy[k, sel])
            r = r[np.isfinite(r)]
            spread = max(1.0 / g.window_s, float(np.quantile(r, 0.9)) if r.size else 0.0)
            if name in ("tx_pause", "rx_pause"):  # paused BYTES_FLOOR of the time
                floor = BYTES_FLOOR * cap_bps[sel] / PAUSE_QUANTA_BITS
            elif name == "errors":  # a healthy link corrupts next to nothing: no traffic floor
                floor = np.zeros(int(sel.sum()))
            else:
                floor = RARE_FLOOR * line_bytes[sel] / size[sel]
            out[k, sel] = np.maximum(spread, floor)
    out[K["link_down_events"]] = 0.1
    out[K["down_fraction"]] = min(1.0, g.interval_s / g.window_s)
    out[K["port_speed"]] = BYTES_FLOOR * cap_bps
    out[K["queue_depth"]] = float(MTU)
    return out


VALUES = ("observed", "expected", "healthy", "noise")


def store_counters(con: duckdb.DuckDBPyConnection, g: Grid) -> int:
    """Replace `expected_counters` with the grid: one row per port and window (window-major),
    four columns per counter (`observed_C`, `expected_C`, `healthy_C`, `noise_C`)."""
    analysis_cache.forget_tables(con)
    con.execute("DELETE FROM expected_counters")
    n_k, n_p, n_w = g.observed.shape
    starts = np.array(g.bounds, dtype="datetime64[us]")
    cols: dict[str, object] = {
        "window_start": np.repeat(starts[:-1], n_p), "window_end": np.repeat(starts[1:], n_p),
        "port_id": pl.Series(g.ports).gather(np.tile(np.arange(n_p), n_w))}
    # window-major: one transpose of each array, then every counter's column is a view
    obs, exp, hea = (np.ascontiguousarray(a.transpose(0, 2, 1)).reshape(n_k, -1)
                     for a in (g.observed, g.expected, g.healthy))
    for name, k in K.items():
        cols[f"observed_{name}"], cols[f"expected_{name}"] = obs[k], exp[k]
        cols[f"healthy_{name}"] = hea[k]
        cols[f"noise_{name}"] = np.tile(g.noise[k], n_w)
    frame = pl.DataFrame(cols, nan_to_null=True).to_arrow()
    con.register("_counters_frame", frame)
    try:
        con.execute("INSERT INTO expected_counters SELECT * FROM _counters_frame")
    finally:
        con.unregister("_counters_frame")
    return frame.num_rows


# connection -> (the replay_runs row and expected_counters' row count it was stored with, the
# grid as load_grid reads it back): the explanation of the same analysis takes the replay's grid
# from here instead of reading 1.5M rows x 52 columns back (7 s of CPU on the 256-switch hour)
_STORED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _stored_key(con: duckdb.DuckDBPyConnection) -> tuple:
    run = con.execute("SELECT * FROM replay_runs").fetchall()
    return tuple(run), con.execute("SELECT count(*) FROM expected_counters").fetchall()[0][0]


def remember_grid(con: duckdb.DuckDBPyConnection, g: Grid) -> None:
    """Keep the grid the replay just stored (`store_counters`, then its replay_runs row) for
    `load_grid` on this connection, as it would read it back: the expected and healthy cells
    the store holds as NULL are 0, a NULL noise is 1 (the arrays are changed in place: the
    replay has no further use for them)."""
    for a in (g.expected, g.healthy):
        a[np.isnan(a)] = 0.0
    g.noise[np.isnan(g.noise)] = 1.0
    n_p = g.observed.shape[1]
    g.interval_s = float(g.noise[K["down_fraction"], 0]) * g.window_s if n_p else g.window_s / 6
    _STORED[con] = (_stored_key(con), g)


def load_grid(con: duckdb.DuckDBPyConnection, fabric: Fabric) -> Grid | None:
    """The stored grid of the latest replay, for this fabric (None when there is none)."""
    runs = con.execute("SELECT status, window_s FROM replay_runs").fetchall()
    if not runs or runs[0][0] != "ok":
        return None
    kept = _STORED.get(con)
    if kept is not None and kept[0] == _stored_key(con) and kept[1].observed.size:
        return replace(kept[1], fabric=fabric)
    return _read_grid(con, fabric, float(runs[0][1]))


def _read_grid(con: duckdb.DuckDBPyConnection, fabric: Fabric, window_s: float) -> Grid | None:
    """The stored grid, read from expected_counters."""
    df = con.sql("SELECT * FROM expected_counters ORDER BY window_start").pl()
    if df.height == 0:
        return None
    starts = df["window_start"].unique(maintain_order=True)
    bounds = starts.to_list() + [df["window_end"].max()]
    n_win, n_p = len(starts), 2 * fabric.n_cables
    ports = _port_frame(fabric)
    df = df.join(ports, on="port_id").join(
        pl.DataFrame({"window_start": starts}).with_row_index("w"), on="window_start")
    p, w = df["p"].to_numpy().astype(np.int64), df["w"].to_numpy().astype(np.int64)
    shape = (len(COUNTERS), n_p, n_win)
    arrays = {v: np.full(shape, np.nan if v == "observed" else 0.0) for v in VALUES[:3]}
    noise = np.ones(shape[:2])
    for name, k in K.items():
        for v in VALUES[:3]:
            arrays[v][k, p, w] = df[f"{v}_{name}"].fill_null(np.nan if v == "observed" else 0.0
                                                           ).to_numpy()
        noise[k, p] = df[f"noise_{name}"].fill_null(1.0).to_numpy()
    interval = float(noise[K["down_fraction"], 0]) * window_s if n_p else window_s / 6
    return Grid(fabric, bounds, window_s, interval, arrays["observed"], arrays["expected"],
                arrays["healthy"], noise)

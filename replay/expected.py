"""Replay a stored trace through the twin: expected against observed load, per port and window.

For every window of `window_s` seconds between `t_from` and `t_to`:
- link states: the share of the window each cable was up, from `link_state_intervals` (events
  and oper-status, either end);
- demand: what each host NIC port sent and received (`port_rates` at the host, or at the leaf
  end of its cable when the host reported nothing), grouped by the job on the host (`job_spans`,
  `job_span_hosts`; hosts outside any job form one group) and by NIC rail;
- traffic: within each (job, rail) group a gravity model. NIC counters say how much a port sent
  and received, not to whom, so a sender's bytes go to the group's receivers in proportion to
  what each of them received. Summed per leaf, that is one leaf-to-leaf matrix per plane;
- expectation: that matrix routed by the twin (`twin.routing.route`) on the window's fabric state,
  with adaptive routing by default: what a healthy fabric carries on every link for the demand
  that was observed. A link down for part of a window carries its up share of the load.

The fabric comes from the store's cabling (`replay.fabric.fabric_from_store`: `neighbors`, speeds
from `port_speed_bps` gauges). The result replaces the store's `expected_ports` and `replay_runs`
rows. Windows with the same set of impaired links share one routing, so the cost is one sparse
product per distinct link state, not one per window.

Assumptions a reader of the residuals should keep in mind: the gravity model spreads a group's
traffic over all its receivers, which is right for collectives that touch every member (ring,
all-to-all) and only on average for pipelines; the expectation is not capped at capacity (the
demand was observed, so it fit); a host link's expected tx is its own observed tx (it is the
demand), so host-port residuals are on the receive side only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa

from replay import analysis_cache
from replay.counters import (
    build_grid,
    nominal_fabric,
    observed_rates,
    remember_grid,
    sample_interval,
    store_counters,
)
from replay.fabric import fabric_from_store
from replay.outages import merge_outages
from replay.port_sums import keep_sums, span_of
from replay.rate_arrays import forget as forget_rates
from replay.rate_arrays import kept as rates_kept
from replay.results import ensure_results
from twin.parallel import run_tasks
from twin.routing import BALANCERS, FabricState, route
from twin.topology import Fabric, TopologyError


@dataclass
class ReplaySummary:
    """What one replay did (also the store's `replay_runs` row)."""

    created: datetime
    t_from: datetime | None
    t_to: datetime | None
    window_s: float
    windows: int
    planes: int
    tiers: int
    ports: int
    routing: str
    status: str  # ok | no_fabric | no_data
    note: str
    rows: int
    seconds: float
    # the store's replay tables were those of the same inputs (`analysis_cache.tables_kept`):
    # not written again (not a replay_runs column)
    kept: bool = False


def default_window_s(con: duckdb.DuckDBPyConnection) -> float:
    """Six sample intervals (median over the switch and NIC counters), at least one second."""
    row = con.execute("""
        SELECT median(d) FROM (
            SELECT epoch_us(ts - lag(ts) OVER (PARTITION BY device, ifname, counter, metric,
                                               qualifier ORDER BY ts)) / 1e6 AS d
            FROM (SELECT * FROM samples WHERE counter = 'tx_bytes' LIMIT 200000))
        WHERE d > 0""").fetchone()
    interval = float(row[0]) if row and row[0] else 10.0
    return max(1.0, round(6.0 * interval))


def replay(con: duckdb.DuckDBPyConnection, t_from: datetime | None = None,
           t_to: datetime | None = None, window_s: float | None = None,
           routing: str = "ar", executor: str = "local", workers: int = 1,
           address: str | None = None, chunk_windows: int | None = None) -> ReplaySummary:
    """Replay the stored trace between `t_from` and `t_to` and store expected_ports/replay_runs.

    The store is read here (DuckDB runs its queries in parallel itself); the twin's part runs
    in chunks of `chunk_windows` windows on `workers` local processes or on Ray
    (`executor="ray"`, `address` "local" or a cluster's), which need no access to the store.
    Windows are independent, so the rows are the same whatever the chunking and the executor.
    """
    if routing not in BALANCERS:
        raise ValueError(f"unknown routing {routing!r}; one of {', '.join(BALANCERS)}")
    ensure_results(con)  # replay's own tables, whatever opened the connection
    started = time.perf_counter()
    created = datetime.utcnow().replace(microsecond=0)
    lo, hi = con.execute("SELECT min(ts), max(ts) FROM samples").fetchone()
    window_s = float(window_s or (default_window_s(con) if lo is not None else 60.0))
    if t_from is None and lo is not None:  # windows on round boundaries: 03:00:00, 03:01:00, ...
        epoch = datetime(1970, 1, 1)
        t_from = epoch + timedelta(seconds=((lo - epoch).total_seconds() // window_s) * window_s)
    if t_to is None and hi is not None and t_from is not None:
        # a last sliver of a window holds a sample of some ports and not of others: leave it
        full = int((hi - t_from).total_seconds() // window_s)
        cut = t_from + timedelta(seconds=full * window_s)
        t_to = cut if full >= 1 and (hi - cut).total_seconds() < window_s / 2 else hi

    def done(status: str, note: str, windows: int = 0, fabric: Fabric | None = None,
             rows: int = 0, kept: bool = False) -> ReplaySummary:
        s = ReplaySummary(created, t_from, t_to, window_s, windows,
                          fabric.spec.planes if fabric else 0, fabric.spec.tiers if fabric else 0,
                          2 * fabric.n_cables if fabric else 0, routing, status, note, rows,
                          round(time.perf_counter() - started, 3), kept)
        _store_run(con, s)
        return s

    if t_from is None or t_to is None or t_to <= t_from:
        _clear(con)
        return done("no_data", "no counter samples in the window")
    try:
        fabric = fabric_from_store(con)
    except TopologyError as exc:
        _clear(con)
        return done("no_fabric", str(exc))
    n_win = max(1, int(np.ceil((t_to - t_from).total_seconds() / window_s - 1e-9)))
    rates = observed_rates(con, fabric, t_from, t_to, window_s, n_win)
    interval = sample_interval(con)
    up = _up_fraction(con, fabric, t_from, t_to, window_s, n_win)
    groups = _groups(con, fabric, t_from, window_s, n_win)
    # the observed rates are the copies' for these windows and this fabric (their own key):
    # not hashed again (160 MB on the 256-switch hour)
    inputs = analysis_cache.digest(
        [t_from.isoformat(), t_to.isoformat(), window_s, n_win, routing, interval],
        analysis_cache.fabric_digest(fabric), up, groups) if analysis_cache.keyed_now(con) else None
    kept = inputs is not None and analysis_cache.tables_kept(con, inputs)
    # the rate arrays' other readers, served now: their 0.85 GB (the 256-switch hour) go
    # before the twin runs, the residuals' port sums (0.3 GB) and the interval stay
    # (outside views_once the residuals read port_rates themselves)
    if rates_kept(con) or analysis_cache.keyed_now(con):
        if not kept:  # kept: the residuals are there already
            keep_sums(con, span_of(t_from, t_to, window_s, n_win))
        forget_rates(con)
    obs_tx, obs_rx = rates[0], rates[1]  # RATE_COLUMN's bytes
    parallel = executor != "local" or workers > 1
    size = chunk_windows or (max(1, -(-n_win // (4 * workers))) if parallel else n_win)
    tasks = [Chunk(fabric, t_from + timedelta(seconds=w0 * window_s),
                   min(t_to, t_from + timedelta(seconds=min(w0 + size, n_win) * window_s)),
                   window_s, routing, obs_tx[:, w0:w0 + size], obs_rx[:, w0:w0 + size],
                   up[:, w0:w0 + size], groups[:, w0:w0 + size])
             for w0 in range(0, n_win, size)]
    frames = run_tasks(expected_chunk, tasks, executor=executor, workers=workers, address=address)
    if not kept:
        _clear(con)
        for frame in frames:
            con.register("_expected_frame", frame)
            try:
                con.execute("INSERT INTO expected_ports SELECT * FROM _expected_frame")
            finally:
                con.unregister("_expected_frame")
    rows = sum(frame.num_rows for frame in frames)
    exp = tuple(np.concatenate([_column(f, f"expected_{d}_bytes_per_s", len(up) * 2)
                                for f in frames], axis=1) for d in ("tx", "rx"))
    bounds = [min(t_from + timedelta(seconds=w * window_s), t_to) for w in range(n_win + 1)]
    grid = build_grid(con, fabric, bounds, window_s, rates, up, exp,
                      _healthy(fabric, obs_tx, obs_rx, groups, routing), interval)
    if not kept:
        store_counters(con, grid)
        if inputs is not None:
            analysis_cache.replayed(con, inputs)
    summary = done("ok", KEPT_NOTE if kept else "", n_win, fabric, rows, kept)
    remember_grid(con, grid)  # the explanation's grid, without reading it back
    return summary


# replay_runs' note of a replay that found its tables written by one of the same inputs
KEPT_NOTE = ("expected_ports, expected_counters and the residuals kept: a replay of the same "
             "data, windows, routing and code wrote them")


def _column(frame: pa.Table, name: str, n_ports: int) -> np.ndarray:
    """A per-port column of a window-major expected_ports frame as (ports, windows)."""
    values = frame.column(name).to_numpy(zero_copy_only=False).astype(float)
    return values.reshape(-1, n_ports).T


def _healthy(fabric: Fabric, obs_tx: np.ndarray, obs_rx: np.ndarray, groups: np.ndarray,
             routing: str) -> tuple[np.ndarray, np.ndarray]:
    """Expected tx and rx bytes/s with every cable up at its peers' speed (the fault-free
    fabric a diagnosis compares with), for the same demand."""
    nominal = nominal_fabric(fabric)
    demand_tx, demand_rx = _host_demand(nominal, obs_tx, obs_rx)
    return _expected(nominal, np.ones((fabric.n_cables, obs_tx.shape[1])), demand_tx, demand_rx,
                     groups, obs_tx, obs_rx, routing)


@dataclass
class Chunk:
    """Consecutive windows of a replay: everything the twin needs, and nothing of the store."""

    fabric: Fabric
    t_from: datetime
    t_to: datetime
    window_s: float
    routing: str
    obs_tx: np.ndarray  # (ports, windows) bytes/s, NaN where unreported
    obs_rx: np.ndarray
    up: np.ndarray  # (cables, windows) share of the window up
    groups: np.ndarray  # (endpoints, windows) traffic group


def expected_chunk(chunk: Chunk) -> pa.Table:
    """The expected_ports rows of one chunk of windows (an Arrow table, cheap to ship)."""
    f, n_win = chunk.fabric, chunk.up.shape[1]
    demand_tx, demand_rx = _host_demand(f, chunk.obs_tx, chunk.obs_rx)
    exp_tx, exp_rx = _expected(f, chunk.up, demand_tx, demand_rx, chunk.groups, chunk.obs_tx,
                               chunk.obs_rx, chunk.routing)
    return _frame(f, chunk.t_from, chunk.t_to, chunk.window_s, n_win, chunk.up, exp_tx, exp_rx,
                  chunk.obs_tx, chunk.obs_rx).to_arrow()


def _clear(con: duckdb.DuckDBPyConnection) -> None:
    analysis_cache.forget_tables(con)
    con.execute("DELETE FROM expected_ports")
    con.execute("DELETE FROM expected_counters")


def _store_run(con: duckdb.DuckDBPyConnection, s: ReplaySummary) -> None:
    con.execute("DELETE FROM replay_runs")
    con.execute("INSERT INTO replay_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [s.created, s.t_from, s.t_to, s.window_s, s.windows, s.planes, s.tiers, s.ports,
                 s.routing, s.status, s.note])


def _query(con: duckdb.DuckDBPyConnection, sql: str, params: object = None) -> pl.DataFrame:
    return con.sql(sql, params=params).pl()


def _port_ids(fabric: Fabric) -> list[str]:
    """Port index p: the a-side (lower) end of cable p, then the b-side end of cable p - C."""
    return fabric.cable_port_a + fabric.cable_port_b


def _up_fraction(con: duckdb.DuckDBPyConnection, fabric: Fabric, t_from: datetime,
                 t_to: datetime, window_s: float, n_win: int) -> np.ndarray:
    """Share of each window each cable was up: down while either end says so (its ends' down
    intervals merged, `merge_outages`), counted in integer microseconds so sums are exact."""
    rows = con.execute("""
        SELECT port_id, greatest(start, $t0), least(coalesce("end", $t1), $t1)
        FROM link_state_intervals
        WHERE state = 'down' AND start < $t1 AND coalesce("end", $t1) > $t0""",
                       {"t0": t_from, "t1": t_to}).fetchall()
    c = fabric.n_cables
    port_index = {p: i % c for i, p in enumerate(_port_ids(fabric))}
    spans: dict[int, list[tuple[datetime, datetime]]] = {}
    for port, start, end in rows:
        if port in port_index and end > start:
            spans.setdefault(port_index[port], []).append((start, end))
    down = np.zeros((c, n_win))
    width = window_s * 1e6
    for cable, cable_spans in spans.items():
        for start, end in merge_outages(cable_spans):
            s_us, e_us = _us(start - t_from), _us(end - t_from)
            w = np.arange(int(s_us // width), int((e_us - 1) // width) + 1)
            w = w[(w >= 0) & (w < n_win)]
            lo = np.maximum(s_us, np.round(w * width).astype(np.int64))
            hi = np.minimum(e_us, np.round((w + 1) * width).astype(np.int64))
            down[cable, w] += np.maximum(hi - lo, 0) / 1e6
    # the last window may be cut short by t_to
    length = np.minimum(window_s, (t_to - t_from).total_seconds() - np.arange(n_win) * window_s)
    up = 1.0 - np.clip(down / np.maximum(length, 1e-9), 0.0, 1.0)
    return np.where(up < 1e-9, 0.0, up)


def _us(delta: timedelta) -> int:
    """A timedelta in whole microseconds (exact, where total_seconds() rounds)."""
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def _host_demand(fabric: Fabric, obs_tx: np.ndarray, obs_rx: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Bytes/s each endpoint sent and received per window: the host port's counters, else the
    leaf port's at the other end of the cable (its rx is what the host sent)."""
    c = fabric.n_cables
    host_side = fabric.ep_cable  # the a-side port index of the host cable
    leaf_side = fabric.ep_cable + c
    tx = np.where(np.isnan(obs_tx[host_side]), obs_rx[leaf_side], obs_tx[host_side])
    rx = np.where(np.isnan(obs_rx[host_side]), obs_tx[leaf_side], obs_rx[host_side])
    return np.nan_to_num(tx), np.nan_to_num(rx)


def _groups(con: duckdb.DuckDBPyConnection, fabric: Fabric, t_from: datetime, window_s: float,
            n_win: int) -> np.ndarray:
    """Per endpoint and window, the group whose members talk: 0 for hosts outside any job,
    then one per job running at the window's middle (the first job id when several)."""
    hosts = pl.DataFrame({"host": [fabric.node_name[h] for h in fabric.ep_host]}).with_row_index("e")
    mids = [t_from + timedelta(seconds=(w + 0.5) * window_s) for w in range(n_win)]
    jobs = _query(con, """
        SELECT j.job_id, h.host, j.start, j."end" FROM job_spans j JOIN job_span_hosts h USING (job_id)
        ORDER BY j.job_id""")
    out = np.zeros((len(fabric.ep_host), n_win), dtype=np.int64)
    if jobs.height == 0:
        return out
    ids = {j: i + 1 for i, j in enumerate(jobs["job_id"].unique(maintain_order=True))}
    win = pl.DataFrame({"w": np.arange(n_win), "mid": mids})
    active = (jobs.join(win, how="cross")
              .filter((pl.col("start").is_null() | (pl.col("start") <= pl.col("mid")))
                      & (pl.col("end").is_null() | (pl.col("end") > pl.col("mid"))))
              .group_by("host", "w").agg(pl.col("job_id").first())
              .join(hosts, on="host", how="inner"))
    if active.height:
        g = active["job_id"].replace_strict(ids, return_dtype=pl.Int64).to_numpy()
        out[active["e"].to_numpy(), active["w"].to_numpy()] = g
    return out


@dataclass
class Traffic:
    """The twin's input for some windows: leaf-pair demand (bytes/s per pair and window, the
    pair's source and destination standing for their leaves' hosts) and the hosts' demand."""

    src_ep: np.ndarray
    dst_ep: np.ndarray
    demand: np.ndarray  # (pairs, windows)
    demand_tx: np.ndarray  # (endpoints, windows): what each host port sent
    host_rx: np.ndarray  # (endpoints, windows): what each is expected to receive


def _expected(fabric: Fabric, up: np.ndarray, demand_tx: np.ndarray, demand_rx: np.ndarray,
              groups: np.ndarray, obs_tx: np.ndarray, obs_rx: np.ndarray, routing: str
              ) -> tuple[np.ndarray, np.ndarray]:
    """Expected tx and rx bytes/s per port index and window."""
    t = traffic(fabric, demand_tx, demand_rx, groups, obs_tx, obs_rx)
    return port_loads(fabric, t, _route_windows(fabric, up, t.src_ep, t.dst_ep, t.demand, routing))


def port_loads(fabric: Fabric, t: Traffic, load: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Expected tx and rx bytes/s per port index and window from the fabric links' `load`
    (directed links x windows) and the hosts' own demand."""
    c, n_win = fabric.n_cables, load.shape[1]
    exp_tx = np.empty((2 * c, n_win))
    exp_rx = np.empty((2 * c, n_win))
    exp_tx[:c], exp_rx[:c] = load[0::2], load[1::2]  # a-side: egress on the up link
    exp_tx[c:], exp_rx[c:] = load[1::2], load[0::2]
    host = fabric.ep_cable
    exp_tx[host], exp_rx[host] = t.demand_tx, t.host_rx
    exp_tx[host + c], exp_rx[host + c] = t.host_rx, t.demand_tx
    return exp_tx, exp_rx


def traffic(fabric: Fabric, demand_tx: np.ndarray, demand_rx: np.ndarray, groups: np.ndarray,
            obs_tx: np.ndarray, obs_rx: np.ndarray) -> Traffic:
    """The gravity model of the module docstring: leaf-pair demand per plane and window."""
    n_win = demand_tx.shape[1]
    n_groups = int(groups.max()) + 1
    nics = fabric.spec.nics_per_host
    leaves = np.unique(fabric.ep_leaf)
    leaf_row = np.full(fabric.n_nodes, -1, dtype=np.int64)
    leaf_row[leaves] = np.arange(len(leaves))
    n_leaves = len(leaves)
    ep_leaf = leaf_row[fabric.ep_leaf]
    # per (window, group x rail, leaf): what the leaf's hosts of that group and rail sent/received
    key = (np.arange(n_win)[None, :] * (n_groups * nics) + groups * nics
           + fabric.ep_nic[:, None]) * n_leaves + ep_leaf[:, None]
    size = n_win * n_groups * nics * n_leaves
    tx = np.bincount(key.ravel(), demand_tx.ravel(), size).reshape(n_win, n_groups * nics, n_leaves)
    rx = np.bincount(key.ravel(), demand_rx.ravel(), size).reshape(n_win, n_groups * nics, n_leaves)
    out_obs, in_obs = _leaf_uplink_totals(fabric, leaf_row, obs_tx, obs_rx)
    leaf_plane = fabric.node_plane[leaves]
    src, dst, demand = [], [], []
    host_rx = np.zeros_like(demand_rx)
    _, rep = np.unique(ep_leaf, return_index=True)  # one endpoint per leaf stands for its hosts
    for p in range(fabric.spec.planes):  # a handful of planes: the work inside is vectorized
        lp = np.flatnonzero(leaf_plane == p)
        tx_p, rx_p = tx[:, :, lp], rx[:, :, lp]
        rx_tot = rx_p.sum(axis=2, keepdims=True)
        share = np.divide(rx_p, rx_tot, out=np.zeros_like(rx_p), where=rx_tot > 0)
        # the hosts' view: within each (job, rail) group, leaf a -> leaf b, per window
        t = tx_p.transpose(0, 2, 1) @ share  # (window, a, b)
        off = ~np.eye(len(lp), dtype=bool)[None]
        out_host = (t * off).sum(axis=2).T  # (a, window): what left the leaf
        in_host = (t * off).sum(axis=1).T
        # the leaves' view, where they report: what their uplinks sent and received
        out = np.where(np.isnan(out_obs[lp]), out_host, out_obs[lp])
        inn = np.where(np.isnan(in_obs[lp]), in_host, in_obs[lp])
        rest = inn.sum(axis=0, keepdims=True) - inn  # what the other leaves received
        frac = np.divide(inn[None, :, :], rest[:, None, :], out=np.zeros((len(lp),) * 2 + (n_win,)),
                         where=rest[:, None, :] > 0)
        pair = out[:, None, :] * frac * off[0][:, :, None]  # a -> b: a's outflow by b's inflow
        a, b = np.nonzero(pair.sum(axis=2) > 0)
        src.append(rep[lp[a]])
        dst.append(rep[lp[b]])
        demand.append(pair[a, b, :])
        # a receiver's expected rx: its share of its group's sending, per window
        ratio = np.divide(tx_p.sum(axis=2), rx_tot[:, :, 0], out=np.zeros(tx_p.shape[:2]),
                          where=rx_tot[:, :, 0] > 0)  # (window, group x rail)
        in_p = np.flatnonzero(fabric.ep_plane == p)
        k = groups[in_p] * nics + fabric.ep_nic[in_p, None]
        host_rx[in_p] = demand_rx[in_p] * ratio[np.arange(n_win)[None, :], k]
    return Traffic(np.concatenate(src), np.concatenate(dst),
                   np.concatenate(demand) if demand else np.zeros((0, n_win)), demand_tx, host_rx)


def _leaf_uplink_totals(fabric: Fabric, leaf_row: np.ndarray, obs_tx: np.ndarray,
                        obs_rx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per leaf row and window, the bytes/s its uplinks sent and received (NaN where none of
    its uplinks reported; a silent uplink counts as the peer end's view of it)."""
    c = fabric.n_cables
    cables = np.flatnonzero(fabric.cable_tier == 1)  # a-side: the leaf
    tx = np.where(np.isnan(obs_tx[cables]), obs_rx[cables + c], obs_tx[cables])
    rx = np.where(np.isnan(obs_rx[cables]), obs_tx[cables + c], obs_rx[cables])
    rows = leaf_row[fabric.cable_a[cables]]
    n_leaves, n_win = int(leaf_row.max()) + 1, obs_tx.shape[1]
    out = np.zeros((n_leaves, n_win))
    inn = np.zeros((n_leaves, n_win))
    seen = np.zeros((n_leaves, n_win))
    np.add.at(out, rows, np.nan_to_num(tx))
    np.add.at(inn, rows, np.nan_to_num(rx))
    np.add.at(seen, rows, ~np.isnan(tx))
    out[seen == 0] = np.nan
    inn[seen == 0] = np.nan
    return out, inn


def _route_windows(fabric: Fabric, up: np.ndarray, src_ep: np.ndarray, dst_ep: np.ndarray,
                   demand: np.ndarray, routing: str) -> np.ndarray:
    """Per directed link and window, the load of the leaf pairs' demand: one routing per
    distinct set of impaired fabric cables; a cable up for a share f of a window carries the
    mix f x (routing with it up) + (1 - f) x (routing without it)."""
    n_win = up.shape[1]
    load = np.zeros((fabric.n_links, n_win))
    if len(src_ep) == 0:
        return load
    fabric_cable = fabric.cable_tier > 0
    impaired = (up < 1.0) & fabric_cable[:, None]
    modes = [routing] * fabric.spec.planes

    def routed(down: np.ndarray, windows: np.ndarray) -> np.ndarray:
        state = FabricState(fabric, mode=list(modes))
        state.cable_gbps[down] = 0.0
        state.converge()
        state.nic_notices()
        return route(state, src_ep, dst_ep).link_load(demand[:, windows])

    all_up = routed(np.zeros(0, dtype=np.int64), np.arange(n_win))
    patterns, which = np.unique(impaired.T, axis=0, return_inverse=True)
    which = which.ravel()
    for i, pattern in enumerate(patterns):  # distinct link states: few, whatever the windows
        windows = np.flatnonzero(which == i)
        if not pattern.any():
            load[:, windows] = all_up[:, windows]
            continue
        down = np.flatnonzero(pattern)
        f = up[down][:, windows].mean(axis=0)
        load[:, windows] = f * all_up[:, windows] + (1 - f) * routed(down, windows)
    return load


def _frame(fabric: Fabric, t_from: datetime, t_to: datetime, window_s: float, n_win: int, up: np.ndarray,
           exp_tx: np.ndarray, exp_rx: np.ndarray, obs_tx: np.ndarray, obs_rx: np.ndarray
           ) -> pl.DataFrame:
    """The expected_ports rows, window-major: a reader of one window (the TUI's heatmap) reads
    the row groups of that window only."""
    c = fabric.n_cables
    ports = _port_ids(fabric)
    peers = fabric.cable_port_b + fabric.cable_port_a
    links = [fabric.link_id(i) for i in range(c)] * 2
    n_ports = len(ports)
    bounds = [min(t_from + timedelta(seconds=w * window_s), t_to) for w in range(n_win + 1)]
    starts = np.array(bounds, dtype="datetime64[us]")
    attrs = pl.DataFrame({
        "port_id": ports, "device": [p.split(":", 1)[0] for p in ports],
        "ifname": [p.split(":", 1)[1] for p in ports], "link_id": links, "peer_port": peers,
        "plane": [f"plane-{int(p)}" for p in np.tile(fabric.cable_plane, 2)],
        "tier": np.tile(fabric.cable_tier, 2).astype(np.int32),
        "capacity_bytes_per_s": np.tile(fabric.cable_gbps * 1e9 / 8, 2),
        "uplink": np.arange(2 * c) < c,
    }).with_row_index("p")
    grid = pl.DataFrame({
        "p": np.tile(np.arange(n_ports, dtype=np.uint32), n_win),
        "window_start": np.repeat(starts[:-1], n_ports), "window_end": np.repeat(starts[1:], n_ports),
        "up_fraction": np.tile(up, (2, 1)).T.ravel(),
        "expected_tx_bytes_per_s": exp_tx.T.ravel(), "observed_tx_bytes_per_s": obs_tx.T.ravel(),
        "expected_rx_bytes_per_s": exp_rx.T.ravel(), "observed_rx_bytes_per_s": obs_rx.T.ravel(),
    }, nan_to_null=True)
    return grid.join(attrs, on="p", how="left", maintain_order="left").select(
        "window_start", "window_end", "port_id", "device", "ifname", "link_id", "peer_port",
        "plane", "tier", "capacity_bytes_per_s", "up_fraction", "expected_tx_bytes_per_s",
        "observed_tx_bytes_per_s", "expected_rx_bytes_per_s", "observed_rx_bytes_per_s", "uplink")

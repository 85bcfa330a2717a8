"""The fabric screen's per-window link state, computed once per store, so that a window step
is an array lookup instead of queries over the store.

Two things are precomputed, each by one scan (DuckDB) at the first need, in the caller's
thread (the screen's background worker):
- `Layout`: per plane, the cells of the leaf x spine grid and of each leaf's host links, as
  arrays of port indexes, so a window's utilization is computed with numpy for all cells;
- `PortWindows`: per window and port, bytes/s (the larger of tx and rx) and whether it was down,
  from the replay's window averages (`expected_ports`), and the ports whose error counters
  rose, per window (`samples`, the error counters only).
No Textual here (the import contracts): this is data, tested through `StoreData.heatmaps`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np
import pyarrow as pa

ERROR_COUNTERS = ("rx_errors", "tx_errors", "rx_fcs_errors", "symbol_errors")
ERROR_SUFFIX = "_errors"  # what every one of ERROR_COUNTERS ends with
assert all(c.endswith(ERROR_SUFFIX) for c in ERROR_COUNTERS)


def natural_key(text: str) -> list:
    """`swp10` after `swp9` (twin.discover's rule; not imported, to keep networkx out of the
    UI's start-up)."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


@dataclass
class Cells:
    """The cables drawn in one grid (spine or host columns) of one plane: cable i is in cell
    `cell[i]` (row * cols + column), between ports `a[i]` and `b[i]` (indexes in
    Layout.ports), of capacity `cap[i]` bytes/s."""

    rows: int
    cols: int
    cell: np.ndarray
    a: np.ndarray
    b: np.ndarray
    cap: np.ndarray
    links: list[list[str]]  # link id per cell, "" when no cable
    line_cap: np.ndarray | None = None  # bytes/s of each cable's line rate (the cabling's)

    def set_capacities(self, port_cap: np.ndarray) -> None:
        """`cap` from per-port capacities (`Layout.ports` order; 0: not known): the lower
        port's, else the upper port's, else the cable's line rate."""
        line = self.line_cap if self.line_cap is not None else self.cap
        self.cap = np.where(port_cap[self.a] != 0, port_cap[self.a],
                            np.where(port_cap[self.b] != 0, port_cap[self.b], line))

    def arrays(self, util: np.ndarray, down: np.ndarray, bad: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        """Per cell (row * cols + column): utilization (max of both ends over capacity, max
        over parallel cables; NaN: no data or no cable) and state (STATES' index), from
        per-port arrays."""
        n = self.rows * self.cols
        with np.errstate(invalid="ignore"):
            u = np.fmax(util[self.a], util[self.b]) / self.cap
        best = np.full(n, -np.inf)
        np.maximum.at(best, self.cell, np.where(np.isnan(u), -np.inf, u))
        dn, bd, has = np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, bool)
        np.logical_or.at(dn, self.cell, down[self.a] | down[self.b])
        np.logical_or.at(bd, self.cell, bad[self.a] | bad[self.b])
        has[self.cell] = True
        state = np.where(dn, 1, np.where(bd, 2, np.where(has, 0, 3))).astype(np.int8)
        return np.where(best == -np.inf, np.nan, best), state

    def draw(self, util: np.ndarray, down: np.ndarray, bad: np.ndarray
             ) -> tuple[list[list[float | None]], list[list[str]], np.ndarray]:
        """Utilization and state ("" ok, "down", "degraded", "-" no cable) per cell as rows
        of lists, and the cells' codes (rows x cols, `cell_codes`), from per-port arrays."""
        best, state = self.arrays(util, down, bad)
        vals = [None if v != v else v for v in best.tolist()]  # NaN: None
        states = [STATES[s] for s in state.tolist()]
        c = self.cols
        return ([vals[r * c:(r + 1) * c] for r in range(self.rows)],
                [states[r * c:(r + 1) * c] for r in range(self.rows)],
                cell_codes(best, state).reshape(self.rows, self.cols))


STATES = ("", "down", "degraded", "-")  # a cell's state, by its index in the codes
PCT_CODES = 1001  # codes per state: no data, then 0-999 %


def cell_codes(util: np.ndarray, state: np.ndarray) -> np.ndarray:
    """One int per cell for what it shows: state * PCT_CODES + 1 + the rounded percent (0 for
    no data), the percent capped at 999 as the cell prints it (two cells showing 25 get one
    code, hence one colour)."""
    with np.errstate(invalid="ignore"):
        pct = np.where(np.isnan(util), -1, np.round(np.minimum(util * 100, 999)))
    pct = np.where(state == 3, -1, pct)
    return (state.astype(np.int16) * PCT_CODES + 1 + pct.astype(np.int16)).astype(np.int16)


def decode(code: int) -> tuple[float | None, str]:
    """A cell code's (utilization, rounded as shown; None: no data) and state."""
    state, pct = divmod(int(code), PCT_CODES)
    return (None if pct == 0 else (pct - 1) / 100), STATES[state]


@dataclass
class PlaneLayout:
    plane: int
    leaves: list[str]
    spines: list[str]
    spine_cells: Cells
    host_cells: Cells


@dataclass
class Layout:
    """Every plane's cells, and the ports they read (index = position in `ports`)."""

    ports: list[str]
    index: dict[str, int]
    planes: list[PlaneLayout] = field(default_factory=list)

    def arrays(self, util: dict[str, float], down: set[str], bad: set[str]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-port arrays (NaN: no data) from per-port dicts and sets."""
        u = np.full(len(self.ports), np.nan)
        for p, v in util.items():
            i = self.index.get(p)
            if i is not None and v is not None:
                u[i] = v
        return u, self.mask(down), self.mask(bad)

    def mask(self, ports: set[str]) -> np.ndarray:
        m = np.zeros(len(self.ports), bool)
        m[[self.index[p] for p in ports if p in self.index]] = True
        return m

    def set_capacities(self, capacity: dict[str, float]) -> Layout:
        """Every cell's capacity from per-port bytes/s (the replay's; a port missing or 0:
        its cable's other end, else its line rate); returns self."""
        port_cap = np.array([capacity.get(p) or 0.0 for p in self.ports], dtype=float)
        for pl in self.planes:
            pl.spine_cells.set_capacities(port_cap)
            pl.host_cells.set_capacities(port_cap)
        return self


def build_layout(fab, capacity: dict[str, float]) -> Layout:
    """The cells of `fab` (a twin Fabric): per plane, leaf x spine cables (tier 1) and each
    leaf's host cables (tier 0) in the leaf's port order, of the ports' `capacity`."""
    return cell_layout(fab).set_capacities(capacity)


def cell_layout(fab) -> Layout:
    """build_layout's cells, each of its cable's line rate: what the cabling alone gives (and
    layout_cache keeps)."""
    ports: list[str] = []
    index: dict[str, int] = {}

    def at(port: str) -> int:
        if port not in index:
            index[port] = len(ports)
            ports.append(port)
        return index[port]

    layout = Layout(ports, index)
    names, kind = fab.node_name, fab.node_kind
    for plane in sorted(set(int(p) for p in fab.node_plane if p >= 0)):
        leaves = [n for i, n in enumerate(names) if kind[i] == 1 and fab.node_plane[i] == plane]
        spines = [n for i, n in enumerate(names) if kind[i] == 2 and fab.node_plane[i] == plane]
        li, si = {n: i for i, n in enumerate(leaves)}, {n: i for i, n in enumerate(spines)}
        spine_rows: list[tuple[int, int, str, str, float]] = []
        host_ports: list[list[tuple[str, str, str, float]]] = [[] for _ in leaves]
        for c in range(fab.n_cables):
            if int(fab.cable_plane[c]) != plane:
                continue
            a, b = fab.cable_port_a[c], fab.cable_port_b[c]
            cap = float(fab.cable_gbps[c]) * 1e9 / 8
            tier = int(fab.cable_tier[c])
            if tier == 0:  # host-leaf: either end may be the leaf's
                for port in (a, b):
                    r = li.get(port.split(":", 1)[0])
                    if r is not None:
                        host_ports[r].append((port, a, b, cap))
                        break
            elif tier == 1:
                r, k = li.get(a.split(":", 1)[0]), si.get(b.split(":", 1)[0])
                if r is not None and k is not None:
                    spine_rows.append((r, k, a, b, cap))
        width = max((len(row) for row in host_ports), default=0)
        host_rows = [(r, k, a, b, cap) for r, row in enumerate(host_ports)
                     for k, (_, a, b, cap) in enumerate(sorted(row, key=lambda x: natural_key(x[0])))]
        layout.planes.append(PlaneLayout(
            plane, leaves, spines, _cells(spine_rows, len(leaves), len(spines), at),
            _cells(host_rows, len(leaves), width, at)))
    return layout


def _cells(rows: list[tuple[int, int, str, str, float]], n_rows: int, n_cols: int, at) -> Cells:
    links = [[""] * n_cols for _ in range(n_rows)]
    for r, k, a, b, _ in rows:
        links[r][k] = f"{min(a, b)}--{max(a, b)}"
    line = np.array([cap for *_, cap in rows], dtype=float)
    return Cells(n_rows, n_cols,
                 np.array([r * n_cols + k for r, k, *_ in rows], dtype=np.int64),
                 np.array([at(a) for _, _, a, _, _ in rows], dtype=np.int64),
                 np.array([at(b) for _, _, _, b, _ in rows], dtype=np.int64),
                 line, links, line)


@dataclass
class PortWindows:
    """Per window (its start) and port (Layout index): bytes/s and down, from the replay."""

    starts: dict[datetime, int]
    util: np.ndarray  # [windows, ports] bytes/s, NaN: no data
    down: np.ndarray  # [windows, ports] bool
    covered: np.ndarray  # [windows] bool: the replay has rows in that window


def replayed_windows(cur, layout: Layout) -> PortWindows | None:
    """Every replay window's per-port load (the max of tx and rx over the window) and outages
    (a port is down in a window when its up fraction is below 1 at some point, as
    `_replayed_state` reads it) as arrays over `layout`'s ports, from one scan of
    `expected_ports` joined to the layout's ports in DuckDB (None: no replay). Several rows of
    a window and port take the max load and the least up fraction.

    The join gives each row its port's index, and the windows are found by a search in their
    sorted starts: a hash of 344K port names in Python (Arrow's dictionary encoding, then a
    dict) and a sort of the starts (np.unique) took 150-300 ms of CPU at 256 switches."""
    starts_us = cur.execute("SELECT DISTINCT epoch_us(window_start) FROM expected_ports "
                            "ORDER BY 1").fetchnumpy()
    first = next(iter(starts_us.values()), np.zeros(0, np.int64))
    if not len(first):
        return None
    starts_us = np.ma.filled(first, 0).astype(np.int64)
    cur.register("fabric_screen_ports", pa.table({
        "port": pa.array(layout.ports, pa.string()),
        "i": pa.array(np.arange(len(layout.ports), dtype=np.int64))}))
    try:
        got = cur.execute("""
            SELECT epoch_us(e.window_start) AS w, p.i,
                greatest(coalesce(e.observed_tx_bytes_per_s, 0),
                         coalesce(e.observed_rx_bytes_per_s, 0)) AS u,
                e.up_fraction AS up
            FROM expected_ports e JOIN fabric_screen_ports p ON e.port_id = p.port""").fetchnumpy()
    finally:
        cur.unregister("fabric_screen_ports")
    w = np.searchsorted(starts_us, np.ma.filled(got["w"], 0).astype(np.int64))
    i = np.ma.filled(got["i"], 0).astype(np.int64)
    shape = (len(starts_us), len(layout.ports))
    util, low = np.full(shape, np.nan), np.full(shape, np.nan)
    np.fmax.at(util, (w, i), np.ma.filled(np.ma.asarray(got["u"], dtype=float), np.nan))
    np.fmin.at(low, (w, i), np.ma.filled(np.ma.asarray(got["up"], dtype=float), np.nan))
    down = ~np.isnan(low) & (low < 1)
    starts = {t: k for k, t in enumerate(starts_us.astype("datetime64[us]").tolist())}
    return PortWindows(starts, util, down, np.ones(len(starts_us), bool))


def rising_errors_by_window(cur, windows: list[datetime], window_s: float
                            ) -> dict[datetime, set[str]] | None:
    """Per window of `windows` (equal, contiguous), the ports whose error counters rose in it,
    in one scan of the error counters; None when the windows are not evenly spaced."""
    if not windows:
        return {}
    step = round(window_s * 1e6)
    first = windows[0]
    if any(round((w - first).total_seconds() * 1e6) != i * step for i, w in enumerate(windows)):
        return None
    listed = ", ".join(f"'{c}'" for c in ERROR_COUNTERS)
    rows = cur.execute(f"""
        SELECT k, device || ':' || ifname FROM (
            SELECT (epoch_us(ts - $t0::TIMESTAMP) // $step) AS k, device, ifname
            FROM samples  -- suffix() first: cheaper than IN alone (22.7M samples: 15-25% less CPU)
            WHERE ts >= $t0::TIMESTAMP AND ts < $t1::TIMESTAMP
                AND suffix(counter, '{ERROR_SUFFIX}') AND counter IN ({listed})
            GROUP BY k, device, ifname, metric, qualifier HAVING max(value) > min(value))
        GROUP BY ALL""", {"t0": first, "step": step,
                          "t1": windows[-1] + timedelta(seconds=window_s)}).fetchall()
    out: dict[datetime, set[str]] = {w: set() for w in windows}
    for k, port in rows:
        if 0 <= k < len(windows):
            out[windows[int(k)]].add(port)
    return out

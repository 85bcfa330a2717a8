"""The fabric screen's per-window link state, read so that showing a window costs a small
query and numpy over every cell, whatever the size of the fabric.

- `Layout`: per plane, the cells of the leaf x spine grid and of each leaf's host links, as
  arrays of port indexes, so a window's utilization is computed with numpy for all cells;
- `PortWindow`: one replay window's bytes/s per port (the larger of tx and rx), whether it was
  down and its capacity, from the replay's window averages (`expected_ports`), read one window
  at a time (the rows of one window at 256 switches: 24K, about 10 ms);
- the ports whose error counters rose, per window (`samples`, the error counters only), in one
  scan.
No Textual here (the import contracts): this is data, tested through `StoreData.heatmaps`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

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
    Layout.ports), of line rate `cap[i]` bytes/s (the cabling's)."""

    rows: int
    cols: int
    cell: np.ndarray
    a: np.ndarray
    b: np.ndarray
    cap: np.ndarray
    links: list[list[str]]  # link id per cell, "" when no cable

    def capacity(self, port_cap: np.ndarray | None) -> np.ndarray:
        """Each cable's bytes/s from per-port capacities (`Layout.ports` order; 0 or NaN: not
        known): the lower port's, else the upper port's, else the cable's line rate."""
        if port_cap is None:
            return self.cap
        lo, hi = port_cap[self.a], port_cap[self.b]
        return np.where(lo > 0, lo, np.where(hi > 0, hi, self.cap))

    def arrays(self, util: np.ndarray, down: np.ndarray, bad: np.ndarray,
               port_cap: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per cell (row * cols + column): utilization (max of both ends over capacity, max
        over parallel cables; NaN: no data or no cable) and state (STATES' index), from
        per-port arrays (`port_cap`: capacities, see `capacity`)."""
        n = self.rows * self.cols
        with np.errstate(invalid="ignore"):
            u = np.fmax(util[self.a], util[self.b]) / self.capacity(port_cap)
        best = np.full(n, -np.inf)
        np.maximum.at(best, self.cell, np.where(np.isnan(u), -np.inf, u))
        dn, bd, has = np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, bool)
        np.logical_or.at(dn, self.cell, down[self.a] | down[self.b])
        np.logical_or.at(bd, self.cell, bad[self.a] | bad[self.b])
        has[self.cell] = True
        state = np.where(dn, 1, np.where(bd, 2, np.where(has, 0, 3))).astype(np.int8)
        return np.where(best == -np.inf, np.nan, best), state

    def draw(self, util: np.ndarray, down: np.ndarray, bad: np.ndarray,
             port_cap: np.ndarray | None = None
             ) -> tuple[list[list[float | None]], list[list[str]], np.ndarray]:
        """Utilization and state ("" ok, "down", "degraded", "-" no cable) per cell as rows
        of lists, and the cells' codes (rows x cols, `cell_codes`), from per-port arrays."""
        best, state = self.arrays(util, down, bad, port_cap)
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

    def add_ports(self, ports: list[str]) -> np.ndarray:
        """The indexes of `ports`, those not in `ports` yet appended."""
        index, known = self.index, self.ports
        for p in ports:
            if p not in index:
                index[p] = len(known)
                known.append(p)
        return np.array([index[p] for p in ports], dtype=np.int64)

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

    def capacities(self, capacity: dict[str, float]) -> np.ndarray:
        """Per-port bytes/s (`ports` order; 0: not known) from a dict of them."""
        return np.array([capacity.get(p) or 0.0 for p in self.ports], dtype=float)


def cell_layout(fab) -> Layout:
    """The cells of `fab` (a twin Fabric): per plane, leaf x spine cables (tier 1) and each
    leaf's host cables (tier 0) in the leaf's port order, each of its cable's line rate: what
    the cabling alone gives (and layout_cache keeps).

    The cables are sorted into planes, grids and cells with numpy over the fabric's node
    indexes (`cable_a` the lower end, its port `cable_port_a`); a leaf's host ports are
    ordered by their interface names' natural keys, one per name (a row is one leaf's). 12,288
    cables: 58 -> 15 ms of CPU, on the path of a first-ever fabric visit."""
    layout = Layout([], {})
    kind, node_plane = np.asarray(fab.node_kind), np.asarray(fab.node_plane)
    ca, cb = np.asarray(fab.cable_a, dtype=np.int64), np.asarray(fab.cable_b, dtype=np.int64)
    tier, cable_plane = np.asarray(fab.cable_tier), np.asarray(fab.cable_plane)
    line = np.asarray(fab.cable_gbps, dtype=float) * 1e9 / 8
    pa, pb, names = fab.cable_port_a, fab.cable_port_b, fab.node_name
    for plane in sorted(set(node_plane[node_plane >= 0].tolist())):
        leaf_nodes = np.flatnonzero((kind == 1) & (node_plane == plane))
        spine_nodes = np.flatnonzero((kind == 2) & (node_plane == plane))
        row, col = np.full(len(kind), -1), np.full(len(kind), -1)
        row[leaf_nodes], col[spine_nodes] = np.arange(len(leaf_nodes)), np.arange(len(spine_nodes))
        mine = cable_plane == plane
        up = np.flatnonzero(mine & (tier == 1) & (row[ca] >= 0) & (col[cb] >= 0)).tolist()
        spine_cells = _grid(layout, row[ca[up]], col[cb[up]], up, pa, pb, line,
                            len(leaf_nodes), len(spine_nodes))
        # host-leaf cables: the leaf is whichever end is one of this plane's (the lower first)
        down = np.flatnonzero(mine & (tier == 0) & ((row[ca] >= 0) | (row[cb] >= 0)))
        lower = row[ca[down]] >= 0
        r = np.where(lower, row[ca[down]], row[cb[down]])
        ifnames = [(pa[c] if low else pb[c]).split(":", 1)[1]
                   for c, low in zip(down.tolist(), lower.tolist(), strict=True)]
        keys = {n: natural_key(n) for n in set(ifnames)}
        rows = r.tolist()
        order = sorted(range(len(rows)), key=lambda i: (rows[i], keys[ifnames[i]]))
        r = r[order]
        counts = np.bincount(r, minlength=len(leaf_nodes))
        k = np.arange(len(r)) - np.repeat(np.cumsum(counts) - counts, counts)  # rank in its row
        host_cells = _grid(layout, r, k, down[order].tolist(), pa, pb, line, len(leaf_nodes),
                           int(counts.max(initial=0)))
        layout.planes.append(PlaneLayout(plane, [names[n] for n in leaf_nodes.tolist()],
                                         [names[n] for n in spine_nodes.tolist()],
                                         spine_cells, host_cells))
    return layout


def _grid(layout: Layout, r: np.ndarray, k: np.ndarray, cables: list[int], pa: list[str],
          pb: list[str], line: np.ndarray, n_rows: int, n_cols: int) -> Cells:
    """The Cells of `cables`, cable i in row r[i] and column k[i] (ports added to `layout`)."""
    links = [[""] * n_cols for _ in range(n_rows)]
    a, b = [pa[c] for c in cables], [pb[c] for c in cables]
    for ri, ki, x, y in zip(r.tolist(), k.tolist(), a, b, strict=True):
        links[ri][ki] = f"{x}--{y}" if x <= y else f"{y}--{x}"
    return Cells(n_rows, n_cols, (r * n_cols + k).astype(np.int64), layout.add_ports(a),
                 layout.add_ports(b), line[cables].astype(float), links)


@dataclass
class PortWindow:
    """One replay window's per-port arrays (Layout index)."""

    util: np.ndarray  # bytes/s, the larger of tx and rx; NaN: no data
    down: np.ndarray  # bool
    cap: np.ndarray  # bytes/s the replay gives the port; NaN: none


def replayed_window(cur, layout: Layout, start: datetime) -> PortWindow:
    """The replay's per-port load (the max of tx and rx over the window), outages (a port is
    down when its up fraction is below 1 at some point, as `_replayed_state` reads it) and
    capacities in the window starting at `start`, as arrays over `layout`'s ports; several
    rows of a port take the max load and capacity and the least up fraction.

    One window at a time: the first window shown waits for its rows only (24K at 256
    switches: 14-16 ms of CPU), where a scan of every window's 344K rows took 130-220 ms
    before the first one could be drawn. The rows find their ports by a dict lookup (a join
    to the ports in DuckDB cost 25-30 ms; Arrow's index_in 10 ms, but importing pyarrow for it
    added 85-150 ms of CPU before the first paint)."""
    got = cur.execute("""
        SELECT port_id, greatest(coalesce(observed_tx_bytes_per_s, 0),
                                 coalesce(observed_rx_bytes_per_s, 0)) AS u,
            up_fraction AS up, capacity_bytes_per_s AS cap
        FROM expected_ports WHERE window_start = $t0::TIMESTAMP""", {"t0": start}).fetchnumpy()
    names = got["port_id"].tolist()
    at = np.array(list(map(layout.index.get, names, [-1] * len(names))), dtype=np.int64)
    known = at >= 0  # a port the cabling does not know is not drawn
    n = len(layout.ports)
    util, low, cap = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    for reduce, out, col in ((np.fmax, util, "u"), (np.fmin, low, "up"), (np.fmax, cap, "cap")):
        values = np.ma.filled(np.ma.asarray(got[col], dtype=float), np.nan)
        reduce.at(out, at[known], values[known])
    return PortWindow(util, ~np.isnan(low) & (low < 1), cap)


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

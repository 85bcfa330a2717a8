"""The fabric screen's data: the cells of the store's cabling, its windows and each window's
heatmaps (per plane, leaf x spine and host links), read from a read-only store.

A mixin of StoreData (its `_read`, `_rows`, `_once`, `_cache` and `time_range`), kept apart
from the rest of what the UI reads. Showing a window costs the replay's rows of that window
(fabric_windows.replayed_window) and numpy over every cell; the heatmaps are kept per window,
so the window the screen opens on (computed from the app's start, warm_fabric) and the ones
either side of the window shown (prefetch) are lookups.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

from fabtwin.tui import layout_cache
from fabtwin.tui.fabric_cache import cached_fabric
from fabtwin.tui.fabric_windows import (
    Layout,
    PortWindow,
    cell_layout,
    replayed_window,
    rising_errors_by_window,
)
from replay.rates import rates_sql

NICE_WINDOWS_S = (30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 86400)
WINDOWS_KEPT = 64  # replay windows' port arrays kept (0.6 MB each at 256 switches)
MAPS_KEPT = 16  # windows' heatmaps kept (drawn, or read ahead of a step)


@dataclass
class Heatmap:
    """Leaf x spine utilization of one plane in one window (None: no data for that cable), and
    each leaf's host links."""

    plane: int
    leaves: list[str]
    spines: list[str]
    util: list[list[float | None]]
    state: list[list[str]]  # "" ok, "down", "degraded", "-" no cable
    links: list[list[str]]  # link id per cell ("" when no cable)
    # the host-facing links of each leaf (row), in the leaf's port order, padded to the
    # longest row: same meaning as util, state and links (a PFC storm shows on a host link)
    host_util: list[list[float | None]] = field(default_factory=list)
    host_state: list[list[str]] = field(default_factory=list)
    host_links: list[list[str]] = field(default_factory=list)
    # what each cell shows, spine columns then host columns (fabric_windows.cell_codes): the
    # screen's colours and counts, without a pass over the lists
    codes: np.ndarray | None = None

    @property
    def host_cols(self) -> int:
        """How many host-link columns the rows have."""
        return max((len(row) for row in self.host_links), default=0)

    def find(self, ident: str) -> tuple[int, int] | None:
        """(row, column) of the cell of link `ident`, or of the link one of whose ends is port
        `ident`; spine columns first, host columns after them; None when not drawn."""
        for grid, offset in ((self.links, 0), (self.host_links, len(self.spines))):
            for r, row in enumerate(grid):
                for k, link in enumerate(row):
                    if link and (link == ident or ident in link.split("--")):
                        return r, offset + k
        return None


class NotKept(Exception):
    """cells(discover=False): this cabling is not in layout_cache."""


class FabricData:
    """The fabric part of StoreData (see the module's docstring)."""

    def _init_fabric(self) -> None:
        self._fabric_error: str | None = None
        self._port_windows: OrderedDict[datetime, PortWindow] = OrderedDict()  # see _window
        self._window_lock = threading.Lock()
        self._maps: OrderedDict[tuple, list[Heatmap]] = OrderedDict()  # see heatmaps
        self._warming = False  # see warm_fabric
        self._unsaved: list[Callable[[], None]] = []  # layout_cache saves warm_fabric runs

    def fabric(self):
        """The store's cabling's twin (fabric_from_store), or None; once per process."""
        def once():
            fab, self._fabric_error = cached_fabric(self.db, self._discover)
            return fab

        return self._once("fabric", once)

    def _discover(self) -> tuple[object, str | None]:
        """(the fabric, None), or (None, why it cannot be built)."""
        # imported here: networkx and the twin stay out of the UI's start-up
        from replay.fabric import fabric_from_store
        from twin.topology import TopologyError

        try:
            # the speeds would read every gauge sample of the store: the heatmap takes the
            # replay's capacities when there are, the cabling's default otherwise
            found = self._read(lambda cur: [fabric_from_store(cur, speeds=False)])
        except TopologyError as exc:
            return None, str(exc)
        if not found:  # a DuckDB file without a neighbors table
            return None, "no cabling: ingest LLDP (lldpctl -f json) or a containerlab topology first"
        return found[0], None

    @property
    def fabric_error(self) -> str | None:
        return self._fabric_error

    def cells(self, discover: bool = True) -> Layout | None:
        """The fabric screen's cells (each of its line rate), kept by layout_cache per
        cabling; None when the cabling gives no fabric (fabric_error says why). With
        `discover` False, a cabling not in layout_cache raises NotKept (nothing is kept, a
        later call discovers it)."""
        return self._once("layout", lambda: self._cells(discover))

    def cells_ready(self) -> bool:
        """Whether cells() answers at once (built, or known not to be buildable)."""
        return "layout" in self._cache

    def _cells(self, allowed: bool) -> Layout | None:
        def discover() -> Layout | str:  # a cabling not seen before
            if not allowed:
                raise NotKept
            fab = self.fabric()
            return cell_layout(fab) if fab is not None else (self._fabric_error or "no fabric")

        if not allowed and not layout_cache.holds_any():
            raise NotKept  # an empty cache: not even the cabling's key is read
        key = (self._read(lambda cur: [layout_cache.cabling_key(cur)]) or [None])[0]
        found = layout_cache.kept_or(key, discover, self._unsaved if self._warming else None)
        if isinstance(found, str):
            self._fabric_error = found
            return None
        return found

    def windows_ready(self) -> bool:
        """Whether windows() answers at once."""
        return "windows" in self._cache

    def heatmaps_ready(self, t0: datetime, window_s: float, errors: bool) -> bool:
        """Whether heatmaps(t0, window_s, errors) is a lookup (computed before, or no fabric
        to draw)."""
        return (t0, window_s, errors) in self._maps or (
            self.cells_ready() and self._cache["layout"] is None)

    def fabric_drawn(self) -> bool:
        """Whether the fabric screen's first window is a lookup (warm_fabric is done)."""
        if not self.cells_ready() or not self.windows_ready():
            return False
        windows, length = self.windows()
        return not windows or self.heatmaps_ready(windows[opening_window(windows)], length,
                                                  False)

    def prefetch(self, starts: list[datetime]) -> None:
        """The heatmaps of the windows starting at `starts` (a step's neighbours), computed
        ahead (with the error counters when their scan is done)."""
        _, length = self.windows()
        for t0 in starts:
            self.heatmaps(t0, length, errors=self.errors_cached())

    def windows(self) -> tuple[list[datetime], float]:
        """Window starts to step the fabric through, and their length in seconds.

        The replay's windows when there is a replay, else at most 60 nice-sized windows (30 s
        or more, so a window holds a few samples) over the samples' time range.
        """
        return self._once("windows", self._windows)

    def _windows(self) -> tuple[list[datetime], float]:
        rows = self._rows("SELECT DISTINCT window_start, epoch(window_end - window_start) "
                          "FROM expected_ports ORDER BY 1")
        if rows:
            return [r[0] for r in rows], float(rows[0][1])
        t0, t1 = self.time_range()
        if t0 is None:
            return [], 0.0
        span = max((t1 - t0).total_seconds(), 1.0)
        step = next((w for w in NICE_WINDOWS_S if span / w <= 60), NICE_WINDOWS_S[-1])
        start = _floor(t0, step)
        n = int((t1 - start).total_seconds() // step) + 1
        return [start + timedelta(seconds=step * i) for i in range(n)], float(step)

    def heatmaps(self, t0: datetime, window_s: float, errors: bool = True) -> list[Heatmap]:
        """Per plane, leaf x spine utilization in [t0, t0 + window_s), and each leaf's host
        links: max of the two directions over capacity, max over parallel cables; down and
        degraded cables marked.

        Load and outages come from the replay's window averages when it covered the window (a
        small table), else from the counters. A cable is degraded when the diagnosis holds a
        link_degraded incident on it then, or (`errors`) when an error counter of either end
        rose in the window: that reads the error counters of the window from `samples`, the
        slow part on a big store, so the fabric screen draws first without it.

        Kept (the last MAPS_KEPT): the store is read-only, so a window's heatmaps never change.
        """
        key = (t0, window_s, errors)
        found = self._maps.get(key)
        if found is None:
            found = self._heatmaps(t0, window_s, errors)
            with self._window_lock:
                self._maps[key] = found
                while len(self._maps) > MAPS_KEPT:
                    self._maps.popitem(last=False)
        return found

    def _heatmaps(self, t0: datetime, window_s: float, errors: bool) -> list[Heatmap]:
        layout = self.cells()
        if layout is None:
            return []
        t1 = t0 + timedelta(seconds=window_s)
        replayed = self._window(layout, t0) if window_s == self.windows()[1] else None
        if replayed is not None:  # one replay window: its rows' arrays
            util, down, cap = replayed.util, replayed.down, replayed.cap
        else:  # the replay did not cover it: from the counters, for this window only
            util, down, _ = layout.arrays(self._port_util(t0, t1), self._down_ports(t0, t1),
                                          set())
            cap = layout.capacities(self._capacities())
        bad = self._diagnosed_degraded(t0, t1) | (self._rising(t0, window_s) if errors else set())
        bad_mask = layout.mask(bad)
        maps = []
        for pl in layout.planes:
            grid, state, codes = pl.spine_cells.draw(util, down, bad_mask, cap)
            h_grid, h_state, h_codes = pl.host_cells.draw(util, down, bad_mask, cap)
            maps.append(Heatmap(pl.plane, pl.leaves, pl.spines, grid, state, pl.spine_cells.links,
                                h_grid, h_state, pl.host_cells.links,
                                np.concatenate([codes, h_codes], axis=1)))
        return maps

    def _rising(self, t0: datetime, window_s: float) -> set[str]:
        """rising_errors of one of the fabric's windows, from one scan of the whole store's
        error counters made at the first need (every later window is a lookup); a window
        the scan does not cover is read on its own."""
        windows, length = self.windows()
        by_window = self._once("rising errors", lambda: self._read(
            lambda cur: [rising_errors_by_window(cur, windows, length)])[0]) \
            if window_s == length else None
        if by_window is not None and t0 in by_window:
            return by_window[t0]
        return self.rising_errors(t0, t0 + timedelta(seconds=window_s))

    def errors_cached(self) -> bool:
        """Whether a window's error check is a lookup now: the one scan of the store's error
        counters is done (_rising)."""
        return self._cache.get("rising errors") is not None

    def rising_errors(self, t0: datetime, t1: datetime) -> set[str]:
        """Ports whose error counters rose in [t0, t1)."""
        rows = self._rows("""
            SELECT device || ':' || ifname FROM samples
            WHERE ts >= ? AND ts < ? AND counter IN ('rx_errors', 'tx_errors', 'rx_fcs_errors',
                'symbol_errors')
            GROUP BY device, ifname, metric, qualifier HAVING max(value) > min(value)""", [t0, t1])
        return {r[0] for r in rows}

    def _diagnosed_degraded(self, t0: datetime, t1: datetime) -> set[str]:
        """The ports of the link_degraded incidents under way in [t0, t1)."""
        rows = self._rows("""
            SELECT root_id FROM incidents WHERE kind = 'link_degraded'
                AND (start IS NULL OR start < ?) AND ("end" IS NULL OR "end" >= ?)""", [t1, t0])
        return {p for (root,) in rows for p in root.split("--")}

    def _window(self, layout: Layout, t0: datetime) -> PortWindow | None:
        """The replay's per-port arrays of its window starting at `t0` (fabric_windows), read
        once (the last WINDOWS_KEPT windows read are kept); None when the replay has no such
        window. A window in memory is answered without the lock (the UI thread asks for it
        while a worker may be reading the next one)."""
        found = self._port_windows.get(t0)
        if found is not None or t0 not in self._replayed_starts():
            return found
        with self._window_lock:  # one read per window, even when two threads ask for it
            found = self._port_windows.get(t0)
            if found is None:
                found = self._read(lambda cur: [replayed_window(cur, layout, t0)])[0]
                self._port_windows[t0] = found
                while len(self._port_windows) > WINDOWS_KEPT:
                    self._port_windows.popitem(last=False)
            return found

    def _replayed_starts(self) -> frozenset[datetime]:
        """The starts of the replay's windows (empty: no replay)."""
        return self._once("replay starts", lambda: frozenset(
            r[0] for r in self._rows("SELECT DISTINCT window_start FROM expected_ports")))

    def warm_fabric(self, discover: bool = True) -> bool:
        """The fabric screen's first window's heatmaps, and what they need: its cells (the
        layout cache, or the fabric discovered), the windows, the replay's rows of that
        window. With `discover` False, only for a cabling in layout_cache: False (nothing
        computed) for another."""
        self._warming = True  # a new cabling's cells are saved once its window is computed
        try:
            try:
                layout = self.cells(discover)  # or wait for the thread reading them
            except NotKept:
                return False
            windows, length = self.windows()
            if layout is not None and windows:
                self.heatmaps(windows[opening_window(windows)], length, errors=False)
        finally:
            self._warming = False
            while self._unsaved:  # layout_cache's file (15 ms of CPU at 256 switches)
                self._unsaved.pop()()
        return True

    def _capacities(self) -> dict[str, float]:
        return self._once("capacities", lambda: {p: c for p, c in self._rows(
            "SELECT port_id, max(capacity_bytes_per_s) FROM expected_ports GROUP BY 1") if c})

    def _down_ports(self, t0: datetime, t1: datetime) -> set[str]:
        """Ports down at some point of [t0, t1): an oper-status sample or a link_down event in
        the window, or a last event before it that was link_down. Bounded by the window (the
        link_state_intervals view would scan every oper-status sample of the store)."""
        rows = self._rows("""
            SELECT device || ':' || ifname FROM samples
            WHERE ts >= ? AND ts < ? AND counter IN ('oper_status', 'link_up') AND value <> 1
            UNION SELECT device || ':' || ifname FROM events
            WHERE ts >= ? AND ts < ? AND kind = 'link_down'
            UNION SELECT port FROM (
                SELECT device || ':' || ifname AS port, arg_max(kind, ts) AS last FROM events
                WHERE ts < ? AND kind IN ('link_up', 'link_down') GROUP BY ALL)
            WHERE last = 'link_down'""", [t0, t1, t0, t1, t0])
        return {r[0] for r in rows}

    def _port_util(self, t0: datetime, t1: datetime) -> dict[str, float]:
        """Bytes/s per port in [t0, t1), the larger of tx and rx: the counted bytes of the
        sample intervals ending in the window over their seconds, as `port_rates` counts them
        (wraps added back, resets dropped: `replay.rates`), for this window's samples only."""
        sql = rates_sql(["tx_bytes_per_s", "rx_bytes_per_s"], "$t0::TIMESTAMP", by_device=False)
        # rates_sql's window is closed; the heatmap's is [t0, t1)
        params = {"t0": t0, "t1": t1 - timedelta(microseconds=1)}
        rows = self._read(lambda cur: cur.execute(f"""
            SELECT port, greatest(tx_bytes_per_s, rx_bytes_per_s) FROM ({sql})
            WHERE greatest(tx_bytes_per_s, rx_bytes_per_s) IS NOT NULL""", params).fetchall())
        return {p: r for p, r in rows}


def opening_window(windows: list[datetime]) -> int:
    """The index of the window the fabric screen opens on (the middle one)."""
    return len(windows) // 2


def _floor(t: datetime, step: int) -> datetime:
    epoch = datetime(1970, 1, 1)
    return epoch + timedelta(seconds=int((t - epoch).total_seconds()) // step * step)

"""Fabric: per plane, a leaf x spine heatmap of link utilization in one window, each leaf's host
links in the columns after the spines (h1, h2, ...); `[` `]` step the windows, `p` the planes,
Enter opens the link under the cursor. Down links show `DN` on
red, degraded ones (error counters rising, or a link_degraded incident) a `!` on yellow."""

from __future__ import annotations

import time
from datetime import datetime
from functools import lru_cache

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.coordinate import Coordinate
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import WorkerState

from fabtwin.tui.actions import bindings
from fabtwin.tui.bars import KeyBar, TitleBar
from fabtwin.tui.data import Heatmap, opening_window
from fabtwin.tui.fabric_windows import PCT_CODES, decode
from fabtwin.tui.heatgrid import HeatGrid

ONE_PASS_S = 0.1  # an error check quicker than this is done with the load, in one pass
ERRORS_AFTER_S = 0.3  # the error check starts when the screen has been shown this long
# utilization -> background, coolest first
SCALE = ((0.05, "#1c1c1c"), (0.25, "#005f5f"), (0.5, "#008700"), (0.75, "#afaf00"),
         (0.9, "#d75f00"), (9e9, "#d70000"))


def cell_look(util: float | None, state: str) -> tuple[str, str]:
    """The text and style of a heatmap cell."""
    if state == "-":
        return "  ", "dim"
    if state == "down":
        return " DN", "bold white on #870000"
    # the colour comes from the rounded percent the cell shows: two cells labelled 25 look alike
    pct = round(min((util or 0.0) * 100, 999))
    bg = next(c for limit, c in SCALE if pct < round(limit * 100))
    mark = "!" if state == "degraded" else " "
    text = "  ?" if util is None else f"{pct:3d}"
    style = "bold black on #ffff00" if state == "degraded" else f"white on {bg}"
    return text + mark, style


@lru_cache(maxsize=4096)
def _text(look: tuple[str, str]) -> Text:
    return Text(look[0], style=look[1])


def cell(util: float | None, state: str) -> Text:
    """A heatmap cell (shared: a Text is never changed once built)."""
    return _text(cell_look(util, state))


@lru_cache(maxsize=4 * PCT_CODES)
def code_look(code: int) -> tuple[str, str]:
    """The text and style of a heatmap cell from its code (fabric_windows.cell_codes)."""
    return cell_look(*decode(code))


def legend() -> Text:
    out = Text("util % ")
    lo = 0.0
    for limit, colour in SCALE:
        label = f"<{limit * 100:.0f}" if limit < 10 else f">={lo * 100:.0f}"
        out.append(f" {label} ", style=f"white on {colour}")
        lo = limit
    out.append(" DN ", style="bold white on #870000")
    out.append(" down ")
    out.append(" ! ", style="bold black on #ffff00")
    out.append(" degraded")
    return out


class FabricScreen(Screen):
    SCOPE = "fabric"
    BINDINGS = bindings(SCOPE)
    DEFAULT_CSS = "FabricScreen #slider { height: 1; padding: 0 1; }"

    def __init__(self) -> None:
        super().__init__()
        self.windows: list[datetime] = []
        self.window_s = 0.0
        self.index = 0
        self.plane = 0
        self.maps: list[Heatmap] = []
        self._pending: datetime | None = None
        self._find: str | None = None  # a link to put the cursor on once the maps are in
        self._shown: tuple[datetime | None, bool] = (None, False)  # window drawn, errors checked
        self._checking = False  # an error check is running
        self._one_pass = False  # the error check is quick: load and check at once

    def compose(self) -> ComposeResult:
        yield TitleBar()
        yield Static("loading the fabric...", classes="summary", id="head")
        yield Static("", id="slider")
        yield HeatGrid(code_look, corner="leaf \\ spine", id="heatmap")
        yield Static(legend(), classes="hint", id="legend")
        yield KeyBar(self.SCOPE)

    def on_mount(self) -> None:
        self.title = "Fabric"
        grid = self.query_one(HeatGrid)
        grid.cell_id = lambda at: (self._entity_at(at) or ("", ""))[1]  # what `y` copies
        grid.focus()
        data = self.app.data
        if data.cells_ready() and data.windows_ready():  # the app read them from its start
            self._windows_in(data.windows())  # its first frame holds the heatmap
            return
        if not data.cells_ready():
            self.query_one("#head", Static).update(  # one line at 80 columns
                "building the fabric view... (once per cabling: it fills when ready)")

        def prepare():
            data.cells()
            return data.windows()

        self.run_worker(prepare, thread=True, group="windows")

    def _windows_in(self, found: tuple[list[datetime], float]) -> None:
        self.windows, self.window_s = found
        self.index = opening_window(self.windows)
        if self._pending is not None:
            self.go_to(self._pending, self._find)
        else:
            self.load()

    def on_worker_state_changed(self, event) -> None:
        worker = event.worker
        if worker.group == "errors" and worker.is_finished:
            self._checking = False
        if worker.state != WorkerState.SUCCESS or worker.result is None:
            return
        if worker.group == "windows":
            self._windows_in(worker.result)
            return
        if worker.group == "prefetch":
            return
        t0, maps, checked = worker.result
        current = self.windows[self.index]
        if worker.group == "errors":
            if t0 != current:  # stepped on meanwhile: check the window shown now
                self._check_errors()
                return
        elif t0 != current or self._shown == (t0, True):
            return
        self._show(t0, maps, checked)

    def _show(self, t0: datetime, maps: list[Heatmap], checked: bool) -> None:
        """Draw `maps` of window `t0` (`checked`: their error counters are), then read the
        windows either side, so that a step finds its rows in memory."""
        self.maps, self._shown = maps, (t0, checked)
        found, self._find = self._locate(self._find), None
        if found is not None:
            self.plane = found[0]
        self.draw()
        if found is not None:
            self.query_one(HeatGrid).cursor_coordinate = Coordinate(*found[1:])
        self._errors_soon()
        self.call_after_refresh(self._prefetch)

    def _errors_soon(self) -> None:
        """Check the errors once the heatmap is painted and the user stays on the screen
        ERRORS_AFTER_S: the scan keeps both cores busy for seconds on a big store, and a key
        meanwhile (`3` right after the heatmap came in) waited 1.2 s for its screen."""
        self.call_after_refresh(lambda: self.set_timer(ERRORS_AFTER_S, self._check_errors))

    def _prefetch(self) -> None:
        """Compute the heatmaps of the windows either side of the one shown, for a step."""
        data, near = self.app.data, self.windows[max(0, self.index - 1):self.index + 2]
        self.run_worker(lambda: data.prefetch(near), thread=True, group="prefetch",
                        exit_on_error=False)

    def go_to(self, when: datetime, link: str | None = None) -> None:
        """Show the window that holds `when`; `link` (a link id): on its plane, the cursor
        on its cell."""
        self._find = link
        if not self.windows:
            self._pending = when
            return
        self._pending = None
        self.index = max(0, sum(1 for w in self.windows if w <= when) - 1)
        self.load()

    def load(self) -> None:
        """Draw the window at self.index: load and outages first, then (_check_errors) which
        cables' error counters rose, which reads the samples (seconds on a big store); both at
        once when the check proved quick."""
        data = self.app.data
        if data.cells() is None:  # read by now (the worker that gave the windows): a lookup
            self.query_one("#head", Static).update(
                Text(f"No fabric to draw: {data.fabric_error or 'no cabling'}"))
            return
        if not self.windows:
            self.query_one("#head", Static).update("No samples: nothing to draw.")
            return
        t0, w = self.windows[self.index], self.window_s
        self.query_one("#head", Static).update(f"window {t0:%Y-%m-%d %H:%M:%S} + {w:g} s ...")
        # the check is a lookup (the store's scan is done) or proved quick: in one pass
        errors = (self._one_pass or data.errors_cached()) and self.is_current
        if data.heatmaps_ready(t0, w, errors):
            # computed ahead (the app's warm-up, the previous draw's read-ahead): drawn now; a
            # worker's round trip to the UI thread took 60-130 ms on a busy interpreter
            self._show(t0, data.heatmaps(t0, w, errors=errors), errors)
            return
        self.run_worker(lambda: (t0, data.heatmaps(t0, w, errors=errors), errors), thread=True,
                        exclusive=True, group="heatmap")

    def _locate(self, ident: str | None) -> tuple[int, int, int] | None:
        """(plane index, row, column) of the cell of `ident` (a link, or a port: its link) in
        the maps, or None."""
        for i, hm in enumerate(self.maps if ident else []):
            found = hm.find(ident)
            if found is not None:
                return i, found[0], found[1] + 1  # column 0 names the leaf
        return None

    def on_screen_resume(self) -> None:
        self._errors_soon()

    def _check_errors(self) -> None:
        """Check the shown window's error counters, one scan at a time (stepping fast does not
        pile up scans: the latest window is checked when the running one ends), and only on
        screen (built in the background, the screen waits for its first visit)."""
        if (self._checking or not self.windows or self._shown[1] or not self.maps
                or not self.is_current):
            return
        self._checking = True
        data, t0, w = self.app.data, self.windows[self.index], self.window_s

        def check() -> tuple[datetime, list[Heatmap], bool]:
            start = time.perf_counter()
            maps = data.heatmaps(t0, w)
            self._one_pass = time.perf_counter() - start < ONE_PASS_S
            return t0, maps, True

        self.run_worker(check, thread=True, group="errors")

    def draw(self) -> None:
        grid = self.query_one(HeatGrid)
        if not self.maps:
            grid.set_grid([], [], np.zeros((0, 0), dtype=np.int16), None)
            self.query_one("#head", Static).update("No leaf-spine links in this fabric.")
            return
        self.plane %= len(self.maps)
        hm = self.maps[self.plane]
        t0 = self.windows[self.index]
        columns = [s.rsplit("-", 1)[-1] for s in hm.spines] + \
            [f"h{k + 1}" for k in range(hm.host_cols)]  # the leaf's host ports, in port order
        grid.set_grid(hm.leaves, columns, hm.codes, (t0, self._shown[1], hm.plane))
        states, pct = np.divmod(hm.codes, PCT_CODES)
        n_down, n_bad = int((states == 1).sum()), int((states == 2).sum())
        busiest = int(pct.max()) - 1 if pct.size else -1  # 0: no data
        bad = f"{n_bad} degraded" if self._shown[1] else "degraded: checking errors..."
        self.query_one("#head", Static).update(
            f"plane {hm.plane} ({self.plane + 1} of {len(self.maps)}, p: next)   "
            f"window {t0:%Y-%m-%d %H:%M:%S} + {self.window_s:g} s "
            f"({self.index + 1}/{len(self.windows)})   "
            f"{n_down} down, {bad}, busiest " + (f"{busiest}%" if busiest >= 0 else "-"))
        self._draw_slider()

    def _draw_slider(self) -> None:
        width = max(10, self.size.width - 30)
        pos = int(self.index / max(1, len(self.windows) - 1) * (width - 1))
        bar = Text(f"{self.windows[0]:%H:%M} ▕", style="dim")
        bar.append("─" * pos, style="dim")
        bar.append("●", style="bold yellow")
        bar.append("─" * (width - 1 - pos), style="dim")
        bar.append(f"▏ {self.windows[-1]:%H:%M}  [ ] step", style="dim")
        self.query_one("#slider", Static).update(bar)

    def on_resize(self) -> None:
        if self.windows and self.maps:
            self._draw_slider()

    def action_step(self, delta: int) -> None:
        if self.windows:
            self.index = max(0, min(len(self.windows) - 1, self.index + delta))
            self.load()

    def action_next_plane(self) -> None:
        if self.maps:
            self.plane = (self.plane + 1) % len(self.maps)
            self.draw()

    def action_open_link(self) -> None:
        grid = self.query_one(HeatGrid)
        if grid.row_count:
            self._open(grid.cursor_coordinate)

    def on_line_grid_selected(self, event: HeatGrid.Selected) -> None:
        self._open(event.coordinate)

    def _open(self, coord: Coordinate) -> None:
        found = self._entity_at(coord)
        if found is not None:
            self.app.open_entity(*found, self.windows[self.index])

    def _entity_at(self, coord: Coordinate) -> tuple[str, str] | None:
        """What the cell at `coord` shows: ("device", leaf) in column 0, else ("link", id);
        None for no cable."""
        if not self.maps:
            return None
        hm = self.maps[self.plane]
        r, k = coord.row, coord.column - 1
        if not 0 <= r < len(hm.leaves):
            return None
        if k < 0:
            return "device", hm.leaves[r]
        link = hm.links[r][k] if k < len(hm.spines) else hm.host_links[r][k - len(hm.spines)]
        return ("link", link) if link else None

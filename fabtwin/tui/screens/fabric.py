"""Fabric: per plane, a leaf x spine heatmap of link utilization in one window; `[` `]` step
the windows, `p` the planes, Enter opens the link under the cursor. Down links show `DN` on
red, degraded ones (errors rising) a `!` on yellow."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import DataTable, Static

from fabtwin.tui.actions import bindings
from fabtwin.tui.bars import KeyBar, TitleBar
from fabtwin.tui.data import Heatmap

# utilization -> background, coolest first
SCALE = ((0.05, "#1c1c1c"), (0.25, "#005f5f"), (0.5, "#008700"), (0.75, "#afaf00"),
         (0.9, "#d75f00"), (9e9, "#d70000"))


def cell(util: float | None, state: str) -> Text:
    if state == "-":
        return Text("  ", style="dim")
    if state == "down":
        return Text(" DN", style="bold white on #870000")
    bg = next(c for limit, c in SCALE if (util or 0.0) < limit)
    mark = "!" if state == "degraded" else " "
    text = "  ?" if util is None else f"{min(util * 100, 999):3.0f}"
    style = "bold black on #ffff00" if state == "degraded" else f"white on {bg}"
    return Text(text + mark, style=style)


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
    BINDINGS = bindings("fabric")
    DEFAULT_CSS = "FabricScreen #slider { height: 1; padding: 0 1; }"

    def __init__(self) -> None:
        super().__init__()
        self.windows: list[datetime] = []
        self.window_s = 0.0
        self.index = 0
        self.plane = 0
        self.maps: list[Heatmap] = []
        self._pending: datetime | None = None

    def compose(self) -> ComposeResult:
        yield TitleBar()
        yield Static("loading the fabric...", classes="summary", id="head")
        yield Static("", id="slider")
        yield DataTable(cursor_type="cell", id="heatmap")
        yield Static(legend(), classes="hint", id="legend")
        yield KeyBar(self.SCOPE)

    def on_mount(self) -> None:
        self.title = "Fabric"
        self.query_one(DataTable).focus()

        def prepare():
            data = self.app.data
            data.fabric()
            return data.windows()

        self.run_worker(prepare, thread=True, group="windows")

    def on_worker_state_changed(self, event) -> None:
        worker = event.worker
        if not worker.is_finished or worker.result is None:
            return
        if worker.group == "windows":
            self.windows, self.window_s = worker.result
            self.index = len(self.windows) // 2
            if self._pending is not None:
                self.go_to(self._pending)
            else:
                self.load()
        elif worker.group == "heatmap":
            self.maps = worker.result
            self.draw()

    def go_to(self, when: datetime) -> None:
        """Show the window that holds `when`."""
        if not self.windows:
            self._pending = when
            return
        self._pending = None
        self.index = max(0, sum(1 for w in self.windows if w <= when) - 1)
        self.load()

    def load(self) -> None:
        data = self.app.data
        if data.fabric() is None:
            self.query_one("#head", Static).update(
                Text(f"No fabric to draw: {data.fabric_error or 'no cabling'}"))
            return
        if not self.windows:
            self.query_one("#head", Static).update("No samples: nothing to draw.")
            return
        t0, w = self.windows[self.index], self.window_s
        self.query_one("#head", Static).update(f"window {t0:%Y-%m-%d %H:%M:%S} + {w:g} s ...")
        self.run_worker(lambda: data.heatmaps(t0, w), thread=True, exclusive=True,
                        group="heatmap")

    def draw(self) -> None:
        table = self.query_one(DataTable)
        table.clear(columns=True)
        if not self.maps:
            self.query_one("#head", Static).update("No leaf-spine links in this fabric.")
            return
        self.plane %= len(self.maps)
        hm = self.maps[self.plane]
        t0 = self.windows[self.index]
        table.add_column("leaf \\ spine", key="leaf")
        for s in hm.spines:
            table.add_column(s.rsplit("-", 1)[-1], key=s)
        for r, leaf in enumerate(hm.leaves):
            table.add_row(leaf, *(cell(hm.util[r][k], hm.state[r][k])
                                  for k in range(len(hm.spines))), key=leaf)
        n_down = sum(s == "down" for row in hm.state for s in row)
        n_bad = sum(s == "degraded" for row in hm.state for s in row)
        busiest = max((u for row in hm.util for u in row if u is not None), default=None)
        self.query_one("#head", Static).update(
            f"plane {hm.plane} ({self.plane + 1} of {len(self.maps)}, p: next)   "
            f"window {t0:%Y-%m-%d %H:%M:%S} + {self.window_s:g} s "
            f"({self.index + 1}/{len(self.windows)})   "
            f"{n_down} down, {n_bad} degraded, busiest "
            + (f"{busiest * 100:.0f}%" if busiest is not None else "-"))
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
        table = self.query_one(DataTable)
        if table.row_count:
            self._open(table.cursor_coordinate)

    def on_data_table_cell_selected(self, event: DataTable.CellSelected) -> None:
        self._open(event.coordinate)

    def _open(self, coord) -> None:
        if not self.maps:
            return
        hm = self.maps[self.plane]
        r, k = coord.row, coord.column - 1
        if 0 <= r < len(hm.leaves):
            when = self.windows[self.index]
            if k < 0:
                self.app.open_entity("device", hm.leaves[r], when)
            elif hm.links[r][k]:
                self.app.open_entity("link", hm.links[r][k], when)

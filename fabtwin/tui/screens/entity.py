"""Drill-down on a port, link, device or host: a counter over time, its peers (or ports),
its events, its jobs. `c` steps through the counters, Enter opens a row, Esc goes back."""

from __future__ import annotations

from datetime import datetime, timedelta

from textual.app import ComposeResult
from textual.markup import escape
from textual.screen import Screen
from textual.widgets import Static

from fabtwin.tui.actions import bindings
from fabtwin.tui.bars import KeyBar, TitleBar
from fabtwin.tui.counts import plural
from fabtwin.tui.data import RATE_COUNTERS, Series
from fabtwin.tui.drops import drop_text, fill_drops
from fabtwin.tui.plot import plot_height, render_plot, render_sparklines
from fabtwin.tui.rowgrid import KeyedGrid

HALF = timedelta(minutes=30)  # the plot shows the hour around the time of interest
DROP_ROWS = 4  # WJH drop reports shown at once; more scroll
SPARKLINE_ROWS = 36  # below this terminal height the sparklines give their rows to the tables


class EntityScreen(Screen):
    SCOPE = "entity"
    BINDINGS = bindings(SCOPE)
    # the tables share what the plot leaves; the sparklines of every counter are a secondary
    # pane, shown only when the terminal has rows to spare (SPARKLINE_ROWS)
    DEFAULT_CSS = """
    EntityScreen #plot { height: auto; padding: 0 1; }
    EntityScreen #all { height: auto; padding: 0 1; }
    EntityScreen KeyedGrid { height: 1fr; min-height: 4; }
    """

    def __init__(self, kind: str = "", ident: str = "", around: datetime | None = None) -> None:
        super().__init__()
        self._composed = False  # on_mount ran: show() refills the widgets itself
        self._reset(kind, ident, around)

    def _reset(self, kind: str, ident: str, around: datetime | None) -> None:
        self.kind, self.ident, self.around = kind, ident, around
        self.counter = 0
        self.series: Series | None = None
        self.all_series: list[Series] = []
        self.ports: list[str] = []  # known once a worker has read them
        self._series_ports: list[str] = []  # the ports the plot sums
        self.loaded = False  # the tables are filled (tests wait for it)
        self._arrived: dict[str, object] = {}  # the first reads' results, by worker group
        self._workers: dict[str, object] = {}  # this visit's worker of each group

    def compose(self) -> ComposeResult:
        yield TitleBar()
        yield Static("", classes="summary", id="head")
        yield Static("loading...", id="plot")
        yield Static("", id="all")
        yield KeyedGrid(id="peers")  # a leaf's 64 ports: only the rows on screen are drawn
        yield KeyedGrid(id="events")
        drops = KeyedGrid(id="drops")  # WJH, on the ports that drop
        drops.styles.height = "auto"  # its rows, up to DROP_ROWS (the app's CSS says 1fr)
        drops.styles.max_height = DROP_ROWS + 1
        yield drops
        yield KeyBar(self.SCOPE)

    def on_mount(self) -> None:
        self._composed = True
        self.query_one("#peers", KeyedGrid).focus()
        if self.ident:  # a screen built ahead for later visits (app.open_entity) waits for one
            self._begin()

    def show(self, kind: str, ident: str, around: datetime | None = None) -> None:
        """Make this screen the drill-down of `ident` (before the app pushes it): a screen
        built once and shown again is only refilled, not composed, mounted and styled anew
        (which cost the UI thread more than its data). Reads from an earlier visit still
        running are ignored when they finish."""
        self._reset(kind, ident, around)
        if not self._composed:  # on_mount begins
            return
        for grid in self.query(KeyedGrid):  # as composed: empty, at the top, no inline height
            grid.set_rows([], [], [])
            grid.border_title = ""
            grid.move_cursor(0)
            grid.scroll_home(animate=False, immediate=True)
            grid.styles.min_height = None
        self.query_one("#drops", KeyedGrid).display = True
        self.query_one("#plot", Static).update("loading...")
        self.query_one("#all", Static).update("")
        self.set_focus(self.query_one("#peers", KeyedGrid))
        self._begin()

    def _begin(self) -> None:
        # the frame paints at once; the store is read on worker threads (the tables' facts and
        # the counters, side by side) and each part fills in when it arrives
        self.title = f"{self.kind} {self.ident}"
        self.query_one("#head", Static).update(f"[b]{self.kind} {escape(self.ident)}[/b]  loading...")
        data, kind, ident = self.app.data, self.kind, self.ident
        self._workers["facts"] = self.run_worker(lambda: _facts(data, kind, ident), thread=True,
                                                 group="facts")
        self._load()

    def _fill(self, facts: dict) -> None:
        """The head and the peers, events and drops tables, from what _facts read."""
        self.ports = ports = facts["ports"]
        devices = sorted({p.split(":", 1)[0] for p in ports}) or [self.ident]
        peers = self.query_one("#peers", KeyedGrid)
        rows: list[tuple[str, str, str]] = []
        if self.kind in ("device", "host"):
            linked = {p: (peer, link) for p, peer, link in facts["peers"]}
            rows = [(p, *linked.get(p, ("", ""))) for p in ports]
            keys = [f"port|{p}" for p in ports]
            peers.border_title = f"{plural(len(ports), 'port')} (Enter opens)"
        else:
            rows = [*facts["peers"], *((d, "", "device") for d in devices)]
            keys = [f"port|{peer}" for _p, peer, _l in facts["peers"]] + \
                [f"device|{d}" for d in devices]
            peers.border_title = "peers and devices (Enter opens)"
        if not rows:
            rows, keys = [("no ports or cabling known for this entity", "", "")], ["none|"]
        peers.set_rows(["port", "peer", "link"], rows, keys)
        jobs = facts["jobs"]
        head = f"[b]{self.kind} {escape(self.ident)}[/b]  {plural(len(ports), 'port')}"
        if jobs:
            head += escape("  jobs: " + ", ".join(f"{j[0]} ({j[1] or '-'})" for j in jobs[:5]))
        self.query_one("#head", Static).update(head)
        events = self.query_one("#events", KeyedGrid)
        rows = facts["events"]
        cells = [(f"{ts:%m-%d %H:%M:%S.%f}"[:-3], dev, ifn or "", kind,
                  (drop_text(msg) if kind == "drop" else msg or "")[:80])  # a WJH record, told
                 for ts, dev, ifn, kind, msg in rows]
        keys = [f"{i}|port|{dev}:{ifn}" if ifn else f"{i}|device|{dev}"
                for i, (_ts, dev, ifn, _k, _m) in enumerate(rows)]
        if not rows:  # a header alone reads as a table still loading
            cells, keys = [("", "", "", "", "no events recorded for this entity")], ["none|"]
        events.set_rows(["time", "device", "ifname", "kind", "message"], cells, keys)
        events.border_title = plural(len(rows), "event")
        drops = self.query_one("#drops", KeyedGrid)
        fill_drops(drops, facts["drops"])
        if drops.display:  # three tables under the plot: each keeps a header and two rows
            for table in self.query(KeyedGrid):  # at 80x24 (three 1fr of 4 overflowed)
                table.styles.min_height = 3
        self.loaded = True
        self._draw()  # the plot's rows depend on whether the drops show

    def _plot_rows(self) -> int:
        """plot_height's rows, two fewer when the WJH drops take a third table's rows (at
        80x24: 4 bar rows, and the peers, events and drops keep their rows on screen)."""
        rows = plot_height(self.size.height)
        return max(2, rows - 2) if self.query_one("#drops", KeyedGrid).display else rows

    def _load(self) -> None:
        """Every counter of the entity over the hour around self.around, in one scan of its
        samples: one sparkline each, and the plot of the current one (with the twin's
        expectation, from the replay's table)."""
        data, kind, ident, around, counter = (self.app.data, self.kind, self.ident,
                                              self.around, self.counter)

        def fetch() -> tuple[list[str], datetime, list[Series], Series]:
            ports = data.entity_ports(kind, ident)
            # a link's story is one direction: its first port's tx is its peer's rx
            ports = ports[:1] if kind == "link" else ports
            when = around
            if when is None:  # the store's last hour
                when = (data.time_range()[1] or datetime(1970, 1, 1)) - HALF
            t0, t1 = when - HALF, when + HALF
            every = data.port_series_many(ports, list(RATE_COUNTERS), t0, t1)
            return ports, when, every, data.with_expected(every[counter], ports, t0, t1)

        self._workers["all"] = self.run_worker(fetch, thread=True, group="all")

    def _load_series(self) -> None:
        """The plot of the current counter, from the samples already read."""
        ports = self._series_ports
        data, t0, t1 = self.app.data, self.around - HALF, self.around + HALF
        observed = self.all_series[self.counter]
        self._workers["series"] = self.run_worker(
            lambda: data.with_expected(observed, ports, t0, t1), thread=True, exclusive=True,
            group="series")

    def on_worker_state_changed(self, event) -> None:
        worker = event.worker
        if not worker.is_finished or worker is not self._workers.get(worker.group):
            return  # running, or an earlier visit's
        if worker.group == "series":
            if worker.result:
                self.series = worker.result
                self._draw()
            return
        # the tables' facts and the counters are put on screen together, once both are in:
        # one layout and one render of the screen instead of two (and one _draw)
        self._arrived[worker.group] = worker.result
        if len(self._arrived) < 2:
            return
        facts, counters = self._arrived.get("facts"), self._arrived.get("all")
        with self.app.batch_update():
            if counters:
                self._series_ports, self.around, self.all_series, self.series = counters
            if facts:
                self._fill(facts)  # draws too
            else:
                self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        sparklines = self.query_one("#all", Static)
        shown = self.size.height >= SPARKLINE_ROWS
        if sparklines.display != shown:  # setting it at all asks for a layout of the screen
            sparklines.display = shown
        if self.all_series:
            self.query_one("#all", Static).update(
                render_sparklines(self.all_series, self.size.width - 4))
        if self.series is None:
            return
        what = self._series_ports[0] if self.kind == "link" and self._series_ports else self.ident
        summed = " (sum of its ports)" if self.kind in ("device", "host") else ""
        self.query_one("#plot", Static).update(render_plot(
            self.series, self.size.width - 4, height=self._plot_rows(),
            title=f"{self.series.counter} of {what}{summed}   (c: next counter)"))

    def action_next_counter(self) -> None:
        if self.all_series:  # else the first load is still running
            self.counter = (self.counter + 1) % len(RATE_COUNTERS)
            self._load_series()

    def action_open_row(self) -> None:
        focused = self.focused
        self._open(focused.cursor_key() if isinstance(focused, KeyedGrid) else None)

    def on_line_grid_selected(self, event: KeyedGrid.Selected) -> None:  # a click on the cursor
        self._open(event.grid.row_key(event.coordinate.row))

    def _open(self, key: str | None) -> None:
        if not key:
            return
        parts = key.split("|")
        kind, ident = parts[-2], parts[-1]
        if kind != "none" and ident and (kind, ident) != (self.kind, self.ident):
            self.app.open_entity(kind, ident, self.around)

    def action_back(self) -> None:
        self.app.pop_screen()


def _facts(data, kind: str, ident: str) -> dict:
    """What the entity screen's head and tables show, read from the store (off the UI
    thread): its ports, their cabling, its jobs, events and WJH drops."""
    ports = data.entity_ports(kind, ident)
    devices = sorted({p.split(":", 1)[0] for p in ports}) or [ident]
    return {"ports": ports, "peers": data.peers(ports), "jobs": data.jobs_of(devices),
            "events": data.events_of(ports if kind in ("port", "link") else [],
                                     devices if kind in ("device", "host") else []),
            "drops": data.drops_of(ports)}

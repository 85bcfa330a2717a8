"""An incident's drill-down: its fault kind's counter (KIND_COUNTER) on both ends of the root
cause, over the other uplinks of the same switch, the incident's window shaded. `+` and `-`
zoom the time range around the incident, `c` steps through the counters, Enter opens a port."""

from __future__ import annotations

from datetime import datetime, timedelta

from textual.app import ComposeResult
from textual.markup import escape
from textual.screen import Screen
from textual.widgets import Static

from fabtwin.tui.actions import bindings
from fabtwin.tui.bars import KeyBar, TitleBar
from fabtwin.tui.counts import plural
from fabtwin.tui.data import Incident, Series, counters_for
from fabtwin.tui.overlay import Line, render_overlay
from fabtwin.tui.plot import plot_height
from fabtwin.tui.rowgrid import KeyedGrid
from fabtwin.units import rate

MIN_SPAN = timedelta(seconds=30)  # zooming in stops here: a few samples still show
MAX_PEERS = 31  # a 64-port leaf's other uplinks


def initial_view(start: datetime, end: datetime | None) -> tuple[datetime, datetime]:
    """The incident's window with half its length (at least two minutes) on each side."""
    end = end or start
    pad = max(timedelta(minutes=2), (end - start) / 2)
    return start - pad, end + pad


def zoomed(view: tuple[datetime, datetime], factor: float,
           bounds: tuple[datetime | None, datetime | None]) -> tuple[datetime, datetime]:
    """`view` scaled by `factor` around its centre, no shorter than MIN_SPAN and, when the
    store's time range `bounds` is known, kept inside it (all of it at most)."""
    centre = view[0] + (view[1] - view[0]) / 2
    half = max(MIN_SPAN / 2, (view[1] - view[0]) * factor / 2)
    b0, b1 = bounds
    if b0 is None or b1 is None or half * 2 <= MIN_SPAN:
        return centre - half, centre + half
    if half * 2 >= b1 - b0:
        return b0, b1
    centre = min(max(centre, b0 + half), b1 - half)  # slid back inside the store's range
    return centre - half, centre + half


class DrillScreen(Screen):
    SCOPE = "drill"
    BINDINGS = bindings(SCOPE)
    DEFAULT_CSS = """
    DrillScreen #plot { height: auto; padding: 0 1; }
    DrillScreen #lines { height: 1fr; min-height: 4; }
    """

    def __init__(self, incident: Incident) -> None:
        super().__init__()
        self.incident = incident
        self.counters = counters_for(incident.kind)
        self.counter = 0
        self.own: list[str] = []
        self.peers: list[str] = []
        self.lines: list[Line] = []
        self.view: tuple[datetime, datetime] | None = None
        self.loaded: tuple[datetime, datetime] | None = None  # the range the lines cover

    @property
    def counter_name(self) -> str:
        return self.counters[self.counter]

    def compose(self) -> ComposeResult:
        yield TitleBar()
        yield Static("", classes="summary", id="head")
        yield Static("loading...", id="plot")
        yield KeyedGrid(id="lines")
        yield KeyBar(self.SCOPE)

    def on_mount(self) -> None:
        inc, data = self.incident, self.app.data
        self.title = f"Drill-down #{inc.rank}: {inc.kind} {inc.root_id}"
        if inc.start is not None:
            self.view = initial_view(inc.start, inc.end)
        else:  # no time recorded: the store's last ten minutes (time_range is read once)
            last = data.time_range()[1] or datetime(1970, 1, 1)
            self.view = (last - timedelta(minutes=10), last)
        self.query_one("#lines", KeyedGrid).focus()
        self._load()

    def _own_ports(self) -> list[str]:
        """Both ends of the root cause: a link's two ports, a port and its cable's other end;
        none for a device (its uplinks are the peers)."""
        inc = self.incident
        ports = inc.ports()
        if inc.root_type == "port":
            ports += [peer for _p, peer, _l in self.app.data.peers(ports) if peer not in ports]
        return ports

    def _ports(self) -> tuple[list[str], list[str]]:
        """The incident's own ports and their peers (read on the worker's thread)."""
        inc, data = self.incident, self.app.data
        own = self._own_ports()
        if own:
            return own, data.uplink_peers(own)[:MAX_PEERS]
        # a device: its equal-cost uplinks (all its ports when no replay says which)
        peers = (data.uplinks_of(inc.root_id) if inc.root_type == "device" else []) \
            or data.entity_ports(inc.root_type, inc.root_id)
        return own, peers[:MAX_PEERS]

    def _load(self) -> None:
        """Read every line's counter over twice the view (so that a zoom out shows at once);
        the ports first, on the first load (off the UI thread: the frame paints at once)."""
        assert self.view is not None
        span = self.view[1] - self.view[0]
        t0, t1 = self.view[0] - span / 2, self.view[1] + span / 2
        data, counter = self.app.data, self.counter_name
        known = (self.own, self.peers) if self.own or self.peers else None

        def fetch() -> tuple[tuple[datetime, datetime], list[str], list[str], list[Series]]:
            own, peers = known or self._ports()
            return (t0, t1), own, peers, data.port_series_each(own + peers, counter, t0, t1)

        self.run_worker(fetch, thread=True, exclusive=True, group="drill")

    def on_worker_state_changed(self, event) -> None:
        if event.worker.group == "drill" and event.worker.is_finished and event.worker.result:
            self.loaded, self.own, self.peers, series = event.worker.result
            ports = self.own + self.peers
            self.lines = [Line(p, s, p in self.own) for p, s in zip(ports, series, strict=True)]
            self._fill_table()
            self._draw()

    def _fill_table(self) -> None:
        table = self.query_one("#lines", KeyedGrid)
        f0, f1 = self.incident.start, self.incident.end or self.incident.start
        rows = []
        for ln in self.lines:
            vals = [v for v in ln.series.observed if v is not None]
            inside = [v for t, v in zip(ln.series.ts, ln.series.observed, strict=True)
                      if v is not None and f0 is not None and f0 <= t <= f1]
            rows.append((ln.label, "incident" if ln.own else "peer",
                         rate(self.counter_name, max(vals) if vals else None),
                         rate(self.counter_name, max(inside) if inside else None)))
        # the cursor keeps its row (set_rows clamps it to the last)
        table.set_rows(["port", "role", "peak", "peak in the incident"], rows,
                       [f"port|{ln.label}" for ln in self.lines])
        table.border_title = (f"{plural(len(self.own), 'incident port')}, "
                              f"{plural(len(self.peers), 'peer')} (Enter opens)")

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        if self.view is None or self.loaded is None:
            return
        inc = self.incident
        span = self.view[1] - self.view[0]
        self.query_one("#head", Static).update(
            f"[b]#{inc.rank} {escape(inc.kind)}[/b] {escape(inc.root_type)} "
            f"[b]{escape(inc.root_id)}[/b]\n{self.counter_name} over {_span_text(span)} "
            f"({self.view[0]:%H:%M:%S} .. {self.view[1]:%H:%M:%S})   + / -: zoom, c: counter")
        height = max(4, plot_height(self.size.height))  # the table keeps rows at 80x24
        self.query_one("#plot", Static).update(render_overlay(
            self.lines, self.size.width - 2, height, self.view, (inc.start, inc.end)))

    def action_zoom(self, factor: float) -> None:
        if self.view is None:
            return
        self.view = zoomed(self.view, factor, self.app.data.time_range())
        if self.loaded and self.loaded[0] <= self.view[0] and self.view[1] <= self.loaded[1]:
            self._draw()  # inside what was read: no query
        else:
            self._load()

    def action_next_counter(self) -> None:
        self.counter = (self.counter + 1) % len(self.counters)
        self._load()

    def action_open_row(self) -> None:
        key = self.query_one("#lines", KeyedGrid).cursor_key()
        if key:
            self.app.open_entity("port", key.split("|", 1)[1], self.incident.start)

    def on_line_grid_selected(self, event: KeyedGrid.Selected) -> None:  # a click on the cursor
        key = event.grid.row_key(event.coordinate.row)
        self.app.open_entity("port", key.split("|", 1)[1], self.incident.start)

    def action_back(self) -> None:
        self.app.pop_screen()


def _span_text(span: timedelta) -> str:
    s = span.total_seconds()
    return f"{s / 3600:.3g} h" if s >= 7200 else f"{s / 60:.3g} min" if s >= 120 else f"{s:.0f} s"

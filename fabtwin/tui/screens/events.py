"""Events: a timeline (one lane per kind) and the table of flaps, storms and job starts;
`/` filters by device, `k` steps through the kinds, Enter opens the device or port."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static

from fabtwin.tui.actions import bindings
from fabtwin.tui.bars import KeyBar, TitleBar
from fabtwin.tui.counts import event_rows
from fabtwin.tui.drops import drop_text
from fabtwin.tui.plot import merge_spans
from fabtwin.tui.tables import cursor_key

# how each fault kind (twin.faults.KINDS) is shown; a test checks that every kind has a style
FAULT_STYLES = {"link_down": "red", "link_flap": "bright_red", "link_degraded": "dark_orange",
                "congestion": "yellow", "pfc_storm": "magenta", "load_imbalance": "bright_blue"}
# the lanes: events named like a fault kind take its style
LANE_STYLES = {**FAULT_STYLES, "link_up": "green", "job_start": "cyan", "job_end": "blue"}


def timeline(rows: list[tuple], width: int, span: tuple | None = None) -> Text:
    """One lane per event kind: a mark in each column holding events of that kind. The lanes
    cover `span` (the samples' time range) when given: a job that started hours before the
    telemetry would squeeze every fault into the last columns; such events sit in the first
    or last column, marked ◀ or ▶."""
    out = Text()
    if not rows:
        out.append("no events match", style="dim")
        return out
    t0, t1 = span if span and span[0] is not None else (rows[0][0], rows[-1][0])
    seconds = max((t1 - t0).total_seconds(), 1e-6)
    kinds = sorted({r[3] for r in rows})
    label = max(len(k) for k in kinds) + 1
    width = max(10, width - label - 1)
    for kind in kinds:
        cols = [0] * width
        early = late = False
        for r in rows:
            if r[3] == kind:
                c = int((r[0] - t0).total_seconds() / seconds * width)
                early, late = early or c < 0, late or c >= width
                cols[min(width - 1, max(0, c))] += 1
        out.append(f"{kind:>{label}} ", style="bold")
        style = LANE_STYLES.get(kind, "yellow")
        for c, n in enumerate(cols):
            mark = "·" if n == 0 else "▌" if n == 1 else "█"
            if (c == 0 and early) or (c == width - 1 and late):
                mark = "◀" if c == 0 else "▶"
            out.append(mark, style="dim" if n == 0 else style)
        out.append("\n")
    left, right = f"{t0:%m-%d %H:%M:%S}", f"{t1:%m-%d %H:%M:%S}"
    out.append(" " * (label + 1) + left + " " * max(1, width - len(left) - len(right)) + right,
               style="dim")
    return merge_spans(out)


class EventsScreen(Screen):
    SCOPE = "events"
    BINDINGS = bindings(SCOPE)
    DEFAULT_CSS = "EventsScreen #timeline { height: auto; padding: 0 1; }"

    def __init__(self) -> None:
        super().__init__()
        self.device = ""
        self.kinds: list[str] = []
        self.kind = -1  # -1: every kind
        self.rows: list[tuple] = []

    def compose(self) -> ComposeResult:
        yield TitleBar()
        yield Input(placeholder="device filter (part of a name; Esc clears)", classes="filter",
                    id="filter")
        yield Static("", classes="summary", id="filters")
        yield Static("", id="timeline")
        yield DataTable(cursor_type="row", zebra_stripes=True, id="events")
        yield KeyBar(self.SCOPE)

    def on_mount(self) -> None:
        self.title = "Events"
        self.query_one(DataTable).add_columns("time", "device", "ifname", "kind", "message")
        self.kinds = self.app.data.event_kinds()
        self.span = self.app.data.time_range()
        self.total = self.app.data.counts()["events"]  # the events table, as the incidents say
        self.reload()
        self.query_one(DataTable).focus()

    def reload(self) -> None:
        kind = self.kinds[self.kind] if self.kind >= 0 else ""
        self.rows = self.app.data.events(self.device, kind)
        table = self.query_one(DataTable)
        table.clear()
        for i, (ts, dev, ifn, k, msg) in enumerate(self.rows):
            key = f"{i}|job|{dev}" if k.startswith("job_") else (
                f"{i}|port|{dev}:{ifn}" if ifn else f"{i}|device|{dev}")
            # a WJH drop's message is its JSON record: told as reason, severity, packets
            text = drop_text(msg) if k == "drop" else msg or ""
            table.add_row(f"{ts:%m-%d %H:%M:%S.%f}"[:-3], dev, ifn, k, text[:100], key=key)
        self.query_one("#filters", Static).update(Text(
            f"{event_rows([r[3] for r in self.rows], self.total, bool(self.device or kind))}   "
            f"device: {self.device or 'any'}   "
            f"kind: {kind or 'any'} (K: next of {', '.join(self.kinds) or 'none'})"))
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        self.query_one("#timeline", Static).update(
            timeline(self.rows, self.size.width - 2, self.span))

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.add_class("visible")
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.remove_class("visible")
        self.device, self.kind = "", -1
        self.reload()
        self.query_one(DataTable).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.device = event.value.strip()
        self.reload()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one(DataTable).focus()

    def action_next_kind(self) -> None:
        self.kind = self.kind + 1 if self.kind + 1 < len(self.kinds) else -1
        self.reload()

    def action_open_row(self) -> None:
        self._open(cursor_key(self.query_one(DataTable)))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self._open(event.row_key.value)

    def _open(self, key: str | None) -> None:
        if not key:
            return
        i, kind, ident = key.split("|", 2)
        if kind == "job":
            self.app.open_job(ident)
        else:
            self.app.open_entity(kind, ident, self.rows[int(i)][0])

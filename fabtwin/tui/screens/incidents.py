"""Incidents: the ranked table of the latest diagnosis, `/` to filter, `s` to sort."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static

from fabtwin.tui.actions import bindings
from fabtwin.tui.bars import KeyBar, TitleBar
from fabtwin.tui.counts import plural, shown_of
from fabtwin.tui.data import Incident
from fabtwin.tui.tables import cursor_key

COLUMNS = ("#", "kind", "root cause", "start", "duration", "score", "summary")
# (name, key, the column it orders): `s` steps through them
SORTS = (("rank", lambda i: i.rank, "#"), ("score", lambda i: -i.score, "score"),
         ("start", lambda i: (i.start is None, i.start or 0), "start"),
         ("kind", lambda i: (i.kind, i.rank), "kind"))
ARROWS = {"rank": "▲", "score": "▼", "start": "▲", "kind": "▲"}  # which way each one runs


def duration(inc: Incident) -> str:
    if inc.start is None or inc.end is None:
        return "ongoing" if inc.start else "-"
    return f"{(inc.end - inc.start).total_seconds():.0f} s"


class IncidentsScreen(Screen):
    SCOPE = "incidents"
    BINDINGS = bindings(SCOPE)

    def __init__(self) -> None:
        super().__init__()
        self.incidents: list[Incident] = []
        self.sort = 0
        self.query_text = ""
        self.head = ("", "")  # the store's span and counts, and the replay's status

    def compose(self) -> ComposeResult:
        yield TitleBar()
        yield Input(placeholder="filter: kind, root cause or summary text (Esc clears)",
                    classes="filter", id="filter")
        yield Static("", classes="summary", id="summary")
        yield Static("", classes="empty", id="empty")
        yield DataTable(cursor_type="row", zebra_stripes=True, id="incidents")
        yield KeyBar(self.SCOPE)

    def on_mount(self) -> None:
        self.title = "Incidents"
        data = self.app.data
        t0, t1 = data.time_range()
        n = data.counts()
        end = "%H:%M:%S" if t0 and t0.date() == t1.date() else "%Y-%m-%d %H:%M:%S"
        span = f"{t0:%Y-%m-%d %H:%M:%S} .. {t1:{end}}" if t0 else "no samples"
        checks = data.check_counts()  # read before the incidents, as an operator would
        told = ", ".join(plural(k, sev) for sev, k in checks.items())
        self.head = (f"{span}  {plural(n['samples'], 'sample')}  {plural(n['events'], 'event')}",
                     data.replay_status() + (f"   fabtwin check: {told} (5 lists them)"
                                             if checks else ""))
        self.incidents = data.incidents()
        self.refresh_table()
        self.query_one(DataTable).focus()

    def refresh_table(self) -> None:
        table = self.query_one(DataTable)
        table.clear(columns=True)
        # the sort order is told where one looks for it: an arrow on its column's header
        by, _key, column = SORTS[self.sort]
        table.add_columns(*(f"{c} {ARROWS[by]}" if c == column else c for c in COLUMNS))
        q = self.query_text.lower()
        shown = [i for i in self.incidents
                 if not q or q in f"{i.kind} {i.root_type} {i.root_id} {i.summary}".lower()]
        shown.sort(key=_key)
        count = shown_of(len(shown), len(self.incidents), "incident", bool(q))
        self.query_one("#summary", Static).update(
            Text(f"{self.head[0]}  {count}\n{self.head[1]}   sorted by {by} {ARROWS[by]}"))
        for i in shown:
            table.add_row(str(i.rank), i.kind, f"{i.root_type} {i.root_id}",
                          f"{i.start:%H:%M:%S}" if i.start else "-", duration(i),
                          f"{i.score:.2f}", i.summary, key=str(i.rank))
        empty = self.query_one("#empty", Static)
        if not self.incidents:
            empty.update("No incidents in this store: it is healthy, or it was not diagnosed "
                         "yet (run `fabtwin investigate BUNDLE --db FILE`, or open the bundle "
                         "with `fabtwin tui BUNDLE`).")
        elif not shown:
            empty.update(Text(f"No incident matches {self.query_text!r} (Esc clears the filter)."))
        else:
            empty.update("")
        empty.display = not (self.incidents and shown)

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.add_class("visible")
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.remove_class("visible")
        self.query_one(DataTable).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_text = event.value
        self.refresh_table()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one(DataTable).focus()

    def action_sort(self) -> None:
        self.sort = (self.sort + 1) % len(SORTS)
        self.refresh_table()

    def action_open(self) -> None:
        self._open(cursor_key(self.query_one(DataTable)))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self._open(event.row_key.value)

    def _open(self, rank: str | None) -> None:
        from fabtwin.tui.screens.incident import IncidentScreen

        inc = next((i for i in self.incidents if str(i.rank) == rank), None)
        if inc is not None:
            self.app.push_screen(IncidentScreen(inc))

"""Checks: the findings of the latest `fabtwin check` (table check_findings), the fabric against
its own design, read before the incidents. The highlighted finding's summary and evidence show
under the list with its entities; Enter opens an entity (a port, link, device or host in its
drill-down, a plane on the fabric screen)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import DataTable, Static

from fabtwin.incident_text import evidence_line
from fabtwin.tui.actions import bindings
from fabtwin.tui.bars import KeyBar, TitleBar
from fabtwin.tui.counts import plural
from fabtwin.tui.data import Finding
from fabtwin.tui.tables import cursor_key, fitted_table

# a clean check stores no rows either: the store cannot tell "never ran" from "found nothing"
NONE_STORED = ("no checks stored (run fabtwin check BUNDLE); a check that finds nothing "
               "stores no rows either")
SEVERITY_STYLE = {"error": "bold red", "warning": "yellow"}


def entity_kind(ident: str, guess) -> str:
    """What a finding's entity is: `plane` for plane-N, else `guess(ident)` (StoreData's)."""
    return "plane" if ident.startswith("plane-") and ":" not in ident else guess(ident)


class ChecksScreen(Screen):
    SCOPE = "checks"
    BINDINGS = bindings(SCOPE)
    # the list takes what the finding's text and its entities leave, both sized to their
    # content (capped), so all three read at 80x24
    DEFAULT_CSS = """
    ChecksScreen #findings { min-height: 4; }
    ChecksScreen #finding { height: auto; max-height: 6; padding: 0 1; }
    ChecksScreen #entities { max-height: 7; min-height: 3; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.findings: list[Finding] = []

    def compose(self) -> ComposeResult:
        yield TitleBar()
        yield Static("", classes="summary", id="summary")
        yield Static("", classes="empty", id="empty")
        yield DataTable(cursor_type="row", zebra_stripes=True, id="findings")
        yield Static("", id="finding")
        yield fitted_table("entities")
        yield KeyBar(self.SCOPE)

    def on_mount(self) -> None:
        self.title = "Checks"
        if not self.query("#findings"):  # the app quit while it built this screen ahead
            return
        self.findings = self.app.data.check_findings()
        table = self.query_one("#findings", DataTable)
        table.add_columns("#", "severity", "check", "entities", "summary")
        for f in self.findings:
            table.add_row(str(f.seq), Text(f.severity, style=SEVERITY_STYLE.get(f.severity, "")),
                          f.check, _entities_text(f.entities), f.summary, key=str(f.seq))
        entities = self.query_one("#entities", DataTable)
        entities.add_columns("entity", "is")
        empty = self.query_one("#empty", Static)
        empty.update(NONE_STORED)
        empty.display = not self.findings
        for widget in (table, entities, self.query_one("#finding", Static)):
            widget.display = bool(self.findings)
        self.query_one("#summary", Static).update(Text(self._summary()))
        if self.findings:
            self._show(self.findings[0])
        table.focus()

    def _summary(self) -> str:
        if not self.findings:
            return "the latest fabtwin check: nothing stored"
        counts = {}
        for f in self.findings:
            counts[f.severity] = counts.get(f.severity, 0) + 1
        when = self.findings[0].created
        return (f"{plural(len(self.findings), 'finding')} of the latest fabtwin check"
                + (f" ({when:%Y-%m-%d %H:%M:%S})" if when else "") + ": "
                + ", ".join(plural(n, s) for s, n in sorted(counts.items())))

    def _show(self, f: Finding) -> None:
        """The finding's whole summary and evidence, and its entities to open."""
        text = Text(f"{f.check} ({f.severity}): ", style="bold")
        text.append(f.summary, style="")
        if f.evidence:
            text.append("\n" + evidence_line(f.evidence), style="dim")
        self.query_one("#finding", Static).update(text)
        table = self.query_one("#entities", DataTable)
        table.clear()
        for ident in f.entities:
            kind = entity_kind(ident, self.app.data.entity_kind)
            table.add_row(ident, kind, key=f"{kind}|{ident}")
        table.border_title = f"{plural(len(f.entities), 'entity')} (Enter opens)"

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "findings" and event.row_key.value is not None:
            f = next((f for f in self.findings if str(f.seq) == event.row_key.value), None)
            if f is not None:
                self._show(f)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self._select(event.data_table)

    def action_open(self) -> None:
        if isinstance(self.focused, DataTable):
            self._select(self.focused)

    def _select(self, table: DataTable) -> None:
        """Enter on an entity opens it; on a finding, its one entity, else the entities."""
        entities = self.query_one("#entities", DataTable)
        if table is entities or entities.row_count == 1:
            self._open(cursor_key(entities))
        elif entities.row_count:
            entities.focus()

    def _open(self, key: str | None) -> None:
        if not key or "|" not in key:
            return
        kind, ident = key.split("|", 1)
        if kind == "plane":
            self.app.fabric_plane(ident)
        else:
            self.app.open_entity(kind, ident)


def _entities_text(entities: list[str]) -> str:
    head = ", ".join(entities[:2])
    return head + (f" +{len(entities) - 2}" if len(entities) > 2 else "")

"""The fabtwin terminal UI: one App wiring the screens, k9s-style keys (see actions.py)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from textual.app import App

from fabtwin.tui.actions import bindings
from fabtwin.tui.data import StoreData
from fabtwin.tui.palette import ActionsProvider, EntitiesProvider
from fabtwin.tui.screens.entity import EntityScreen
from fabtwin.tui.screens.events import EventsScreen
from fabtwin.tui.screens.fabric import FabricScreen
from fabtwin.tui.screens.help import HelpScreen
from fabtwin.tui.screens.incidents import IncidentsScreen
from fabtwin.tui.screens.sql import SqlScreen

ENTITY_KINDS = ("port", "link", "device", "host")  # what the drill-down screen draws


class FabtwinApp(App):
    """Incidents, fabric heatmap, events, drill-downs and SQL over one read-only store."""

    TITLE = "fabtwin"
    CSS = """
    Screen { layout: vertical; }
    .summary { height: auto; padding: 0 1; color: $text-muted; }
    .hint { height: auto; padding: 0 1; color: $text-muted; }
    .empty { padding: 1 2; color: $warning; }
    DataTable { height: 1fr; }
    Input.filter { dock: top; display: none; }
    Input.filter.visible { display: block; }
    """
    MODES = {"incidents": IncidentsScreen, "fabric": FabricScreen, "events": EventsScreen,
             "sql": SqlScreen}
    BINDINGS = bindings("app")
    COMMANDS = App.COMMANDS | {ActionsProvider, EntitiesProvider}

    def __init__(self, db: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.db = db
        self.data = StoreData(db)
        self.sub_title = Path(db).name

    def on_mount(self) -> None:
        self.switch_mode("incidents")
        # discovering the fabric imports the twin (networkx): do it while the user reads
        self.call_after_refresh(lambda: self.run_worker(self.data.fabric, thread=True))

    def on_unmount(self) -> None:
        self.data.close()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def open_entity(self, kind: str, ident: str, around: datetime | None = None) -> None:
        """Drill down on a port, link, device or host, its counters plotted for the hour
        around `around` (default: the store's last hour). Esc comes back."""
        if kind not in ENTITY_KINDS:  # "", "auto", or a type the screens don't draw
            kind = self.data.entity_kind(ident)
        self.push_screen(EntityScreen(kind, ident, around))

    def open_job(self, job_id: str) -> None:
        """A job's hosts, as a query in the SQL console."""
        self.switch_mode("sql")
        self.screen.set_query(
            f"SELECT * FROM job_hosts WHERE job_id = '{job_id.replace(chr(39), '')}'")

    def fabric_at(self, when: datetime | None) -> None:
        """The fabric screen at the window holding `when`."""
        self.switch_mode("fabric")
        if when is not None:
            self.screen.go_to(when)

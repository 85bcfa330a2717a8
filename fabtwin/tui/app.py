"""The fabtwin terminal UI: one App wiring the screens, k9s-style keys (see actions.py)."""

from __future__ import annotations

import contextlib
import gc
import importlib
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import duckdb
from textual.app import App
from textual.screen import Screen
from textual.widget import AwaitMount
from textual.worker import Worker, WorkerState

from fabtwin.tui.actions import bindings
from fabtwin.tui.data import StoreData
from fabtwin.tui.palette import ActionsProvider, EntitiesProvider

ENTITY_KINDS = ("port", "link", "device", "host")  # what the drill-down screen draws
# mode -> module of its screen: imported on the first visit (or by the warm-up after the
# first paint), so opening the UI imports only the incidents screen
MODE_SCREENS = {"incidents": "incidents.IncidentsScreen", "fabric": "fabric.FabricScreen",
                "events": "events.EventsScreen", "sql": "sql.SqlScreen"}
# built while the user reads the incidents, so their first visit finds them ready
PREBUILT_MODES = ("fabric", "events", "sql")
# the modules the other screens need, imported in the background after the first paint
WARM_MODULES = ("fabtwin.tui.screens.fabric", "fabtwin.tui.screens.events",
                "fabtwin.tui.screens.sql", "fabtwin.tui.screens.incident",
                "fabtwin.tui.screens.entity", "fabtwin.tui.screens.help")


def screen_class(path: str) -> type[Screen]:
    """`fabric.FabricScreen` -> the class, from fabtwin.tui.screens.fabric."""
    module, name = path.rsplit(".", 1)
    return getattr(importlib.import_module(f"fabtwin.tui.screens.{module}"), name)


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
    BINDINGS = bindings("app")
    COMMANDS = App.COMMANDS | {ActionsProvider, EntitiesProvider}

    def __init__(self, db: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.db = db
        self.data = StoreData(db)
        self.sub_title = Path(db).name
        for mode, path in MODE_SCREENS.items():
            self.add_mode(mode, self._screen_factory(path))
        self._mode_built = False  # switch_mode: is the target screen built already?

    def _screen_factory(self, path: str) -> Callable[[], Screen]:
        def build() -> Screen:
            screen = screen_class(path)()
            # Textual restyles a mode's screen the first time it is switched to, by reparsing
            # every stylesheet (100-200 ms); this one was just styled with the current CSS
            if hasattr(screen, "_css_update_count") and hasattr(self, "_css_update_count"):
                screen._css_update_count = self._css_update_count
            return screen

        return build

    def switch_mode(self, mode: str) -> AwaitMount:
        self._mode_built = mode in getattr(self, "_screen_stacks", ())
        try:
            return super().switch_mode(mode)
        finally:
            self._mode_built = False

    def delay_update(self, delay: float = 0.05) -> None:
        """Textual holds every frame for 50 ms on a mode switch, to hide a screen still being
        built; a screen already built has nothing to hide, so it shows at once."""
        if not self._mode_built:
            super().delay_update(delay)

    def on_mount(self) -> None:
        # what is alive now (Textual, DuckDB, the store) lives as long as the UI: keep it out of
        # the garbage collector's full passes, which otherwise stall a key press by ~90 ms
        gc.freeze()
        self.switch_mode("incidents")
        self.call_after_refresh(self._warm_up)

    def _warm_up(self) -> None:
        """While the user reads the incidents: import the other screens and discover the
        fabric (it imports the twin, networkx) off the UI thread, then build the other
        screens (_prebuild)."""

        def warm() -> None:
            for module in WARM_MODULES:
                importlib.import_module(module)
            with contextlib.suppress(duckdb.Error):  # the app quit meanwhile: store closed
                self.data.fabric()

        self.run_worker(warm, thread=True, group="warm-up")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "warm-up" and event.worker.state == WorkerState.SUCCESS:
            self._prebuild(list(PREBUILT_MODES))

    def _prebuild(self, modes: list[str]) -> None:
        """Build the screens of `modes`, one per tick, without showing them: each loads its
        data as it mounts, so its first visit shows at once. Textual has no public call for
        this; without its private one the screens are built on their first visit instead."""
        build = getattr(self, "_init_mode", None)
        while modes and modes[0] in getattr(self, "_screen_stacks", ()):
            modes.pop(0)
        if not modes or build is None:
            gc.freeze()  # the screens are built: they live as long as the UI too
            return
        build(modes.pop(0))
        self.set_timer(0.05, lambda: self._prebuild(modes))

    def on_unmount(self) -> None:
        self.data.close()
        gc.unfreeze()

    def action_help(self) -> None:
        from fabtwin.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def open_entity(self, kind: str, ident: str, around: datetime | None = None) -> None:
        """Drill down on a port, link, device or host, its counters plotted for the hour
        around `around` (default: the store's last hour). Esc comes back."""
        if kind not in ENTITY_KINDS:  # "", "auto", or a type the screens don't draw
            kind = self.data.entity_kind(ident)
        from fabtwin.tui.screens.entity import EntityScreen

        self.push_screen(EntityScreen(kind, ident, around))

    def open_job(self, job_id: str) -> None:
        """A job's hosts, as a query in the SQL console."""
        self.switch_mode("sql")
        self.screen.set_query(
            f"SELECT * FROM job_hosts WHERE job_id = '{job_id.replace(chr(39), '')}'")

    def fabric_at(self, when: datetime | None, link: str | None = None) -> None:
        """The fabric screen at the window holding `when`, on the plane of `link` (a link id)
        with the cursor on it when it is a leaf-spine link."""
        self.switch_mode("fabric")
        if when is not None:
            self.screen.go_to(when, link)

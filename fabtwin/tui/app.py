"""The fabtwin terminal UI: one App wiring the screens, k9s-style keys (see actions.py)."""

from __future__ import annotations

import contextlib
import gc
import importlib
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import duckdb
from textual.app import App
from textual.screen import Screen
from textual.widget import AwaitMount
from textual.widgets import DataTable
from textual.worker import Worker, WorkerState

from fabtwin.tui.actions import ROOMS, START, TABS, Room, bindings, room
from fabtwin.tui.data import StoreData
from fabtwin.tui.gaps import build_mode, build_screen, mark_styled
from fabtwin.tui.linegrid import LineGrid
from fabtwin.tui.palette import ActionsProvider, EntitiesProvider

ENTITY_KINDS = ("port", "link", "device", "host")  # what the drill-down screen draws
ENTITY_SCREENS = 3  # drill-down screens kept built: a drill-down from a drill-down takes another


def screen_class(r: Room) -> type[Screen]:
    """The class of a room's screen, its module imported on first use: opening the UI imports
    only the screen it opens on (the others are imported after its first paint, _warm_up)."""
    return getattr(importlib.import_module(r.module), r.screen.rsplit(".", 1)[1])


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
        for tab in TABS:
            self.add_mode(tab.scope, self._screen_factory(tab))
        self._mode_built = False  # switch_mode: is the target screen built already?
        self._entity_screens: list[Screen] = []  # built drill-down screens, kept (open_entity)
        self._fabric_waits: set[str] = set()  # what the drill-downs' reads wait for
        # what the fabric screen's first window needs, from the app's construction on, beside
        # Textual's start and the first screen (the layout cache's file: 20-30 ms of CPU, the
        # window's rows 15, its heatmaps 6), so that `2` pressed at the first paint finds it
        # computed: only for a cabling in layout_cache. A cabling never drawn here is
        # discovered from the first paint on (_fabric_joined, started by _warm_up), as before
        # ba52c6d; an empty cache is seen from its folder alone. The thread that waited for
        # the paint to discover read the cabling's key before it (__init__ to the paint's
        # frame flushed: 202-224 ms of CPU against main's 125-201, traces at load 1.3-2.2)
        # and started the discovery 0-14 ms before that frame was flushed
        self._fabric_failure: Exception | None = None
        self._fabric_kept = False  # the thread computed the first window (a warm start)
        self._fabric_thread = threading.Thread(target=self._warm_fabric, daemon=True,
                                               name="fabtwin-warm-fabric")
        self._fabric_thread.start()

    def _screen_factory(self, tab: Room) -> Callable[[], Screen]:
        def build() -> Screen:
            screen = screen_class(tab)()
            mark_styled(self, screen)  # styled with the app's CSS as it is built
            return screen

        return build

    def _built(self, mode: str) -> bool:
        try:
            return bool(self.get_screen_stack(mode))
        except KeyError:  # Textual creates a mode's stack when it builds its screen
            return False

    def switch_mode(self, mode: str) -> AwaitMount:
        # the fabric's screen draws its heatmap as it mounts when its window is computed
        # (warm_fabric): nothing to hide while it is built
        self._mode_built = self._built(mode) or (mode == "fabric" and self.data.fabric_drawn())
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
        self._fabric_waits = {"warm-up-fabric", "warm-up-fabric-screen"}
        self.switch_mode(START)
        self.call_after_refresh(self._warm_up)

    def _warm_fabric(self) -> None:
        try:
            self._fabric_kept = self.data.warm_fabric(discover=False)
        except duckdb.Error:  # the app quit meanwhile: store closed
            pass
        except Exception as exc:  # noqa: BLE001 - a plain thread would print it on the screen
            self._fabric_failure = exc

    def _fabric_joined(self) -> None:
        """Wait for __init__'s thread; its failure is this worker's (an error state, as a
        worker's own would be: the fabric's screen then reads what it needs itself); when
        the cabling was not in layout_cache, discover it and compute the first window."""
        self._fabric_thread.join()
        if self._fabric_failure is not None:
            raise self._fabric_failure
        if not self._fabric_kept:
            with contextlib.suppress(duckdb.Error):  # the app quit meanwhile: store closed
                self.data.warm_fabric()

    def _warm_up(self) -> None:
        """From the first paint, off the UI thread: import the fabric's screen, build it (it
        draws its first window as it mounts when warm_fabric's data is in, and says it is
        building the fabric view until then), then import the other screens (95 ms of CPU in
        all) and build them (_prebuild). The drill-downs' reads (two scans, 170 ms of CPU)
        wait for the fabric's first window: they would share the interpreter with it."""
        # tells when __init__'s thread is done (a worker's end is an event the app handles),
        # and discovers a cabling it did not find kept
        self.run_worker(self._fabric_joined, thread=True, group="warm-up-fabric",
                        exit_on_error=False)
        self.run_worker(lambda: importlib.import_module(room("fabric").module), thread=True,
                        group="warm-up-fabric-screen", exit_on_error=False)

    def _fabric_in(self, what: str) -> None:
        """`what` (the fabric's data, its screen) is in; once both are, the drill-downs'
        reads."""
        self._fabric_waits.discard(what)
        if self._fabric_waits or not self.is_running:
            return

        def warm_drill() -> None:
            with contextlib.suppress(duckdb.Error):
                self.data.warm_drill()

        self.run_worker(warm_drill, thread=True, group="warm-up-drill", exit_on_error=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        group, worker = event.worker.group, event.worker
        if group == "warm-up-fabric-screen" and worker.is_finished:
            if worker.state == WorkerState.SUCCESS:
                self._prebuild(["fabric"], last=False)

            def warm() -> None:
                for r in ROOMS:
                    importlib.import_module(r.module)

            self.run_worker(warm, thread=True, group="warm-up")
            self._fabric_in(group)
        elif group == "warm-up-fabric" and worker.is_finished:
            self._fabric_in(group)
        elif group == "warm-up" and worker.state == WorkerState.SUCCESS:
            self._prebuild([tab.scope for tab in TABS if tab.scope != START])

    def _prebuild(self, modes: list[str], last: bool = True) -> None:
        """Build the screens of `modes`, one per tick, without showing them: each loads its
        data as it mounts, so its first visit shows at once (gaps.build_mode); the `last`
        call also builds a drill-down screen and freezes what is alive."""
        if not self.is_running:  # quitting: a screen built now would race Textual's shutdown
            return
        while modes and self._built(modes[0]):
            modes.pop(0)
        if not modes or not build_mode(self, modes.pop(0)):
            if last:
                if not self._entity_screens:  # and a drill-down's, for the first one opened
                    build_screen(self, self._entity_screen())
                gc.freeze()  # the screens are built: they live as long as the UI too
            return
        self.set_timer(0.05, lambda: self._prebuild(modes, last))

    def on_unmount(self) -> None:
        self.data.close()
        gc.unfreeze()

    def action_cursor(self, step: int) -> None:
        """j / k: the focused table's cursor down / up, beside the arrows (an editor or an
        input takes the letters first)."""
        if isinstance(self.focused, (DataTable, LineGrid)):
            (self.focused.action_cursor_down if step > 0 else self.focused.action_cursor_up)()

    def action_copy(self, what: str) -> None:
        """y: the id under the focused table's cursor; Y: its row (fabtwin.tui.clip)."""
        from fabtwin.tui.clip import cursor_id, row_text

        if not isinstance(self.focused, (DataTable, LineGrid)) or not self.focused.row_count:
            self.notify("nothing to copy here (move to a table)", severity="warning")
            return
        text = cursor_id(self.focused) if what == "id" else row_text(self.focused)
        self.copy_to_clipboard(text)
        self.notify(f"copied {text[:60]!r}" + ("..." if len(text) > 60 else ""), timeout=2)

    def action_open_tab(self, scope: str) -> None:
        """Switch to the tab `scope` at its own screen: `1` from an incident's detail is the
        incidents list again, not the detail left on top of it (Esc goes back one screen)."""
        if self.current_mode != scope:
            self.switch_mode(scope)
        while len(self.screen_stack) > 1:
            self.pop_screen()

    def action_open_room(self, scope: str) -> None:
        """Open a room that is not a tab (the help) over the current screen, once."""
        if getattr(self.screen, "SCOPE", None) != scope:
            self.push_screen(screen_class(room(scope))())

    def open_entity(self, kind: str, ident: str, around: datetime | None = None) -> None:
        """Drill down on a port, link, device or host, its counters plotted for the hour
        around `around` (default: the store's last hour). Esc comes back."""
        if kind not in ENTITY_KINDS:  # "", "auto", or a type the screens don't draw
            kind = self.data.entity_kind(ident)
        screen = self._entity_screen()
        screen.show(kind, ident, around)
        self.push_screen(screen)

    def _entity_screen(self) -> Screen:
        """A drill-down screen that no screen stack holds: one built before and kept (installed,
        so that Textual does not remove it when it is popped), refilled by its show(); else a
        new one, kept while fewer than ENTITY_SCREENS are. A 64-port leaf's drill-down on a new
        screen spent 25-30 ms of the UI thread composing, mounting and styling it."""
        held = {id(s) for tab in TABS if self._built(tab.scope)
                for s in self.get_screen_stack(tab.scope)}
        for screen in self._entity_screens:
            if id(screen) not in held:
                return screen
        screen = screen_class(room("entity"))()
        if len(self._entity_screens) < ENTITY_SCREENS:
            self.install_screen(screen, f"entity-{len(self._entity_screens)}")
            self._entity_screens.append(screen)
        return screen

    def open_job(self, job_id: str) -> None:
        """A job's hosts, as a query in the SQL console."""
        self.action_open_tab("sql")
        self.screen.set_query(
            f"SELECT * FROM {self.data.jobs_relation(hosts=True)} "
            f"WHERE job_id = '{job_id.replace(chr(39), '')}'")

    def fabric_plane(self, plane: str) -> None:
        """The fabric screen on `plane` (a check finding's plane-N), once its heatmaps are
        read (the first visit reads them in a worker: looked for again every 50 ms, 10 s)."""
        self.action_open_tab("fabric")
        self._show_plane(self.screen, plane, 200)

    def _show_plane(self, screen: Screen, plane: str, tries: int) -> None:
        if not self.is_running or self.screen is not screen:  # quit, or the user moved on
            return
        maps = getattr(screen, "maps", None) or []
        if not maps and self.data.fabric_error:
            self.notify(f"{plane}: the fabric screen cannot draw this cabling "
                        f"({self.data.fabric_error})", severity="warning", timeout=6)
            return
        if not maps and tries:
            self.set_timer(0.05, lambda: self._show_plane(screen, plane, tries - 1))
            return
        # a heatmap's plane is the cabling's plane number; findings name it plane-N
        index = next((i for i, hm in enumerate(maps)
                      if f"plane-{hm.plane}" in (plane, f"plane-{plane}")), None)
        if index is None:
            self.notify(f"{plane}: not in the fabric's heatmaps", severity="warning")
            return
        screen.plane = index
        screen.draw()

    def fabric_at(self, when: datetime | None, link: str | None = None) -> None:
        """The fabric screen at the window holding `when`, on the plane of `link` (a link id,
        or a port id: its link) with the cursor on its cell (leaf-spine or host link)."""
        self.action_open_tab("fabric")
        if when is not None:
            self.screen.go_to(when, link)

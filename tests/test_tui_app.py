"""Pilot drives every screen of `fabtwin tui` on two_faults and asserts on what is shown."""

from __future__ import annotations

import asyncio
import csv
import threading

from textual.command import CommandList, CommandPalette
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Input, TextArea

from fabtwin.tui.actions import ACTIONS
from fabtwin.tui.app import FabtwinApp
from fabtwin.tui.data import RATE_COUNTERS, StoreData
from fabtwin.tui.heatgrid import HeatGrid
from fabtwin.tui.resultview import PAGE, ResultsGrid
from fabtwin.tui.rowgrid import KeyedGrid

pytest_plugins = ["tui_fixtures"]  # the stores these tests open

FLAP = "leaf-p0-02:swp5--spine-p0-01:swp2"


async def until(pilot, ready, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not ready():
        assert loop.time() < deadline, "timed out waiting for the screen"
        await pilot.pause(0.02)


def palette_offers_first(app, text: str) -> bool:
    """The command palette has searched what was typed (no search running) and highlights
    `text` first: what Enter then runs (fixed pauses waited for this before)."""
    if not isinstance(app.screen, CommandPalette):
        return False
    if any(w.group == CommandPalette._GATHER_COMMANDS_GROUP and not w.is_finished
           for w in app.workers):
        return False
    hits = app.screen.query_one(CommandList)
    return hits.highlighted == 0 and hits.option_count > 0 and \
        str(hits.get_option_at_index(0).prompt).startswith(text)


def column(table: DataTable, index: int) -> list[str]:
    return [str(table.get_row_at(r)[index]) for r in range(table.row_count)]


def text_of(app, selector: str) -> str:
    return str(app.screen.query_one(selector).render())


async def test_incidents_are_ranked_filtered_and_sorted(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.screen.query_one("#incidents", DataTable)
        await until(pilot, lambda: table.row_count == 3)
        assert column(table, 0) == ["1", "2", "3"]
        assert column(table, 1) == ["link_flap", "pfc_storm", "congestion"]
        await pilot.press("s")  # by score: the planted 0.99 first
        assert column(table, 0) == ["3", "1", "2"]
        await pilot.press("s", "s")  # by kind
        assert column(table, 1) == ["congestion", "link_flap", "pfc_storm"]
        await pilot.press("slash", "p", "f", "c")
        assert app.screen.query_one("#filter", Input).has_focus
        assert column(table, 1) == ["pfc_storm"]
        await pilot.press("x")
        assert table.row_count == 0 and "No incident matches 'pfcx'" in text_of(app, "#empty")
        await pilot.press("escape")
        assert table.row_count == 3 and table.has_focus


async def test_incident_detail_plots_and_jumps_to_the_root_cause(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.screen.query_one("#incidents", DataTable).row_count)
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == "IncidentScreen"
                    and app.screen.series is not None and app.screen.loaded)
        head = text_of(app, "#head")
        assert "link_flap" in head and FLAP in head and "flapped 3 time(s)" in head
        assert "down_at=03:02:00.099Z" in text_of(app, "#evidence")  # the date is in the head
        plot = text_of(app, "#plot")
        assert "tx_bytes_per_s of leaf-p0-02:swp5" in plot and "▀" in plot and "━" in plot
        await pilot.press("c")
        await until(pilot, lambda: app.screen.series.counter == "rx_bytes_per_s")
        await pilot.press("r")
        await until(pilot, lambda: type(app.screen).__name__ == "EntityScreen" and app.screen.loaded)
        assert app.screen.kind == "link" and app.screen.ident == FLAP
        await until(pilot, lambda: app.screen.all_series)
        every = text_of(app, "#all")
        for counter in RATE_COUNTERS:  # every counter of the link, one sparkline each
            assert counter in every
        peers = app.screen.query_one("#peers", KeyedGrid)
        assert "leaf-p0-02:swp5" in column(peers, 0) and "spine-p0-01" in column(peers, 0)
        events = app.screen.query_one("#events", KeyedGrid)
        assert column(events, 3).count("link_down") == 6  # 3 flaps seen from both ends
        await pilot.press("escape")
        assert type(app.screen).__name__ == "IncidentScreen"
        await pilot.press("escape")
        assert type(app.screen).__name__ == "IncidentsScreen"


async def test_affected_links_of_an_incident_open_a_drill_down(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.screen.query_one("#incidents", DataTable).row_count)
        await pilot.press("down", "down", "enter")  # the planted congestion incident
        affected = app.screen.query_one("#affected", DataTable)
        assert column(affected, 1)[:2] == ["leaf-p0-01:swp5", "leaf-p0-01:swp5--spine-p0-01:swp1"]
        await pilot.press("down", "enter")
        await until(pilot, lambda: type(app.screen).__name__ == "EntityScreen" and app.screen.loaded)
        assert (app.screen.kind, app.screen.ident) == ("link", "leaf-p0-01:swp5--spine-p0-01:swp1")


async def fabric_heatmap(app, pilot) -> HeatGrid:
    """Switch to the fabric screen; its heatmap once two_faults' 4 leaves are drawn."""
    await pilot.press("2")
    heat = app.screen.query_one("#heatmap", HeatGrid)
    await until(pilot, lambda: heat.row_count == 4)
    return heat


async def test_fabric_heatmap_steps_windows_and_marks_the_down_link(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        heat = await fabric_heatmap(app, pilot)
        screen = app.screen
        # the window of the first flap, as the incident detail's `f` key would choose
        from datetime import datetime
        screen.go_to(datetime(2026, 11, 30, 3, 2, 5))
        await until(pilot, lambda: "1 down" in text_of(app, "#head"))
        leaf02 = heat.get_row_at(1)
        assert str(leaf02[0]) == "leaf-p0-02" and str(leaf02[1]).strip() == "DN"
        index = screen.index
        await pilot.press("right_square_bracket")
        await until(pilot, lambda: screen.index == index + 1 and "..." not in text_of(app, "#head"))
        await pilot.press("left_square_bracket", "left_square_bracket")
        await until(pilot, lambda: screen.index == index - 1 and "..." not in text_of(app, "#head"))
        assert "0 down" in text_of(app, "#head")
        heat.cursor_coordinate = heat.cursor_coordinate.__class__(1, 1)
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == "EntityScreen" and app.screen.loaded)
        assert (app.screen.kind, app.screen.ident) == ("link", FLAP)


async def test_fabric_at_an_incident_start_puts_the_cursor_on_its_link(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.screen.query_one("#incidents", DataTable).row_count)
        await pilot.press("enter")  # the flap
        await until(pilot, lambda: type(app.screen).__name__ == "IncidentScreen" and app.screen.loaded)
        await pilot.press("f")
        await until(pilot, lambda: type(app.screen).__name__ == "FabricScreen"
                    and "1 down" in text_of(app, "#head") and "..." not in text_of(app, "#head"))
        assert "window 2026-11-30 03:02:00" in text_of(app, "#head")
        heat = app.screen.query_one("#heatmap", HeatGrid)
        assert heat.cursor_coordinate == Coordinate(1, 1)  # leaf-p0-02 x spine-p0-01: the flap
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == "EntityScreen" and app.screen.loaded)
        assert (app.screen.kind, app.screen.ident) == ("link", FLAP)


async def test_events_filter_by_kind_and_device_and_open_a_port(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        table = app.screen.query_one("#events", DataTable)
        await until(pilot, lambda: table.row_count > 0)
        kinds = set(column(table, 3))
        assert {"link_down", "link_up", "pfc_storm", "job_start"} <= kinds
        assert "job_start" in text_of(app, "#timeline")
        await pilot.press("K")  # the first kind alphabetically: link_down (k is up, vi-like)
        assert set(column(table, 3)) == {"link_down"} and table.row_count == 6
        await pilot.press("slash", *"spine")
        assert set(column(table, 1)) == {"spine-p0-01"} and table.row_count == 3
        await pilot.press("enter", "enter")  # leave the filter box, open the first row
        await until(pilot, lambda: type(app.screen).__name__ == "EntityScreen" and app.screen.loaded)
        assert (app.screen.kind, app.screen.ident) == ("port", "spine-p0-01:swp2")
        await pilot.press("escape", "escape")
        assert len(column(table, 3)) > 6  # filters cleared


async def test_screens_built_while_the_user_reads_show_their_data_at_once(store_copy):
    app = FabtwinApp(str(store_copy))

    def built(mode: str):
        try:
            return app.get_screen_stack(mode)
        except KeyError:
            return []

    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: built("fabric") and built("events") and built("sql"))
        (fabric,) = built("fabric")
        await until(pilot, lambda: fabric.query_one("#heatmap", HeatGrid).row_count == 4)
        head = fabric.query_one("#head")
        assert "checking errors" in str(head.render())  # checked only once on screen
        assert app.screen.query_one("#incidents", DataTable).has_focus  # still the user's
        await pilot.press("2")
        assert app.screen is fabric and fabric.query_one("#heatmap", HeatGrid).has_focus
        await until(pilot, lambda: "0 degraded" in str(head.render()))
        heat = fabric.query_one("#heatmap", HeatGrid)
        heat.cursor_coordinate = Coordinate(2, 3)
        before = str(head.render())
        await pilot.press("right_square_bracket")  # the next window keeps the cursor's cell
        await until(pilot, lambda: str(head.render()) != before
                    and "..." not in str(head.render()))
        assert heat.cursor_coordinate == Coordinate(2, 3)
        await pilot.press("3")
        events = app.screen.query_one("#events", DataTable)
        assert events.row_count == 15 and events.has_focus
        lanes = text_of(app, "#timeline").splitlines()
        assert len(lanes[0]) > 100  # drawn across the terminal, not at its size unseen
        await pilot.press("4")
        assert app.screen.query_one("#editor", TextArea).has_focus


async def test_sql_console_runs_pages_refuses_recalls_and_exports(store_copy, tmp_path):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("f5")
        editor = app.screen.query_one("#editor", TextArea)
        grid = app.screen.query_one(ResultsGrid)
        editor.text = "SELECT range AS n FROM range(1000000)"
        await pilot.press("ctrl+r")
        await until(pilot, lambda: grid.row_count > 0)
        assert grid.row_count == PAGE and not grid.exhausted  # one page of a million rows
        assert "+" in str(grid.border_title)
        grid.focus()
        await pilot.press("ctrl+end")
        await until(pilot, lambda: grid.row_count == 2 * PAGE)
        assert str(grid.get_row_at(2 * PAGE - 1)[0]) == str(2 * PAGE - 1)
        editor.focus()
        editor.text = "DELETE FROM samples"
        await pilot.press("ctrl+r")
        await until(pilot, lambda: "refused" in text_of(app, "#status"))
        editor.text = "SELECT kind, root_id FROM incidents ORDER BY rank"
        await pilot.press("ctrl+r")
        await until(pilot, lambda: grid.row_count == 3 and grid.exhausted)
        assert str(grid.get_row_at(0)[1]) == FLAP
        await pilot.press("ctrl+up")
        assert editor.text == "DELETE FROM samples"
        await pilot.press("ctrl+down")
        assert editor.text == "SELECT kind, root_id FROM incidents ORDER BY rank"
        await pilot.press("ctrl+o")
        box = app.screen.query_one(Input)
        box.value = str(tmp_path / "incidents.csv")
        await pilot.press("enter")
        await until(pilot, lambda: "exported 3 rows" in text_of(app, "#status"))
        editor.text = "SELECT count(*) FROM range(100000000000) a"  # minutes of work
        await pilot.press("ctrl+r")
        await until(pilot, lambda: app.screen.running is not None)
        await pilot.press("ctrl+g")
        await until(pilot, lambda: "cancelled" in text_of(app, "#status"))
    with open(tmp_path / "incidents.csv") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["kind", "root_id"] and rows[1] == ["link_flap", FLAP] and len(rows) == 4
    # the history outlives the session: a new app recalls the last query with Ctrl+Up
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("f5", "ctrl+up")
        assert app.screen.query_one("#editor", TextArea).text.startswith("SELECT count(*)")


async def test_help_lists_every_action_and_palette_runs_them(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        assert type(app.screen).__name__ == "HelpScreen"
        help_text = text_of(app, "#help")
        for action in ACTIONS:
            assert action.description in help_text, action
        await pilot.press("escape")
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"Events (Everywhere)")
        await until(pilot, lambda: palette_offers_first(app, "Events (Everywhere)"))
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == "EventsScreen")
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"open device spine-p0-03")
        await until(pilot, lambda: palette_offers_first(app, "open device spine-p0-03"))
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == "EntityScreen" and app.screen.loaded)
        assert (app.screen.kind, app.screen.ident) == ("device", "spine-p0-03")


async def test_empty_store_and_resizes_do_not_crash(empty_db):
    app = FabtwinApp(str(empty_db))
    async with app.run_test(size=(80, 24)) as pilot:
        assert "No incidents in this store" in text_of(app, "#empty")
        sizes = [(40, 10), (200, 60), (80, 24)]
        for keys in (["enter", "s", "slash", "x", "escape"], ["2", "right_square_bracket", "p",
                     "enter"], ["3", "K", "enter"], ["f5", "ctrl+r", "ctrl+o", "escape"],
                     ["f1", "escape"]):
            await pilot.press(*keys)
            for size in sizes:
                await pilot.resize_terminal(*size)
                await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.press("f3")  # the SQL editor has focus: digits would be typed into it
        await until(pilot, lambda: "No fabric to draw" in text_of(app, "#head"))
        await pilot.press("f4")
        assert "0 events   " in text_of(app, "#filters")


async def test_a_switchs_port_table_moves_with_j_k_and_enter_opens_the_row(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.screen.query_one("#incidents", DataTable).row_count)
        app.open_entity("device", "leaf-p0-02")
        await until(pilot, lambda: type(app.screen).__name__ == "EntityScreen" and app.screen.loaded)
        peers = app.screen.query_one("#peers", KeyedGrid)
        assert peers.has_focus and column(peers, 0) == app.screen.ports  # a row per port
        await pilot.press("j", "j", "j", "k")
        assert peers.cursor_row == 2
        port = peers.get_row_at(2)[0]
        await pilot.press("y")
        assert app.clipboard == port
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == "EntityScreen"
                    and app.screen.ident == port and app.screen.loaded)
        assert app.screen.kind == "port"
        await pilot.press("escape")
        assert app.screen.ident == "leaf-p0-02" and peers.cursor_row == 2


async def test_the_fabric_screen_says_it_is_building_until_its_cells_are_in(store_copy,
                                                                             monkeypatch,
                                                                             tmp_path):
    """A cabling never drawn before: the app builds the fabric's cells in the background from
    its first paint; `2` before they are in shows the screen at once, saying so, the UI
    keeps answering, and the heatmap fills when they arrive."""
    gate, asked = threading.Event(), threading.Event()
    build = StoreData._cells

    def slow(self, allowed: bool):  # the discovery of a big fabric, held until the test
        if allowed:  # lets it finish (the app's start only looks in the empty cache)
            asked.set()
            gate.wait(20)
        return build(self, allowed)

    monkeypatch.setattr(StoreData, "_cells", slow)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # never drawn: not in the cache
    app = FabtwinApp(str(store_copy))
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: app.screen.query_one("#incidents", DataTable).row_count)
            await until(pilot, asked.is_set)  # asked for in the background, before any key
            await pilot.press("2")
            await until(pilot, lambda: type(app.screen).__name__ == "FabricScreen")
            assert "building the fabric view" in text_of(app, "#head")
            await pilot.press("1")  # not frozen: the other screens answer meanwhile
            await until(pilot, lambda: type(app.screen).__name__ == "IncidentsScreen")
            await pilot.press("2")
            gate.set()
            heat = app.screen.query_one("#heatmap", HeatGrid)
            await until(pilot, lambda: heat.row_count == 4 and "busiest" in text_of(app, "#head"))
    finally:
        gate.set()

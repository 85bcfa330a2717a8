"""The fabric screen reached from an incident: its window and cursor, and host links drawn."""

from __future__ import annotations

from textual.coordinate import Coordinate
from textual.widgets import DataTable

from fabtwin.tui.app import FabtwinApp
from fabtwin.tui.data import StoreData
from fabtwin.tui.heatgrid import HeatGrid

pytest_plugins = ["tui_fixtures"]  # the stores these tests open

from tests.test_tui_app import FLAP, fabric_heatmap, text_of, until  # noqa: E402


async def test_fabric_from_an_incident_after_stepping_shows_its_window_and_link(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("2")
        heat = app.screen.query_one("#heatmap", HeatGrid)
        fabric = app.screen
        await until(pilot, lambda: heat.row_count and "..." not in text_of(app, "#head"))
        await pilot.press("right_curly_bracket")  # to the last window, far from the flap's
        last = f"({len(fabric.windows)}/{len(fabric.windows)})"
        await until(pilot, lambda: last in text_of(app, "#head")
                    and "checking" not in text_of(app, "#head"))
        assert str(heat.get_cell_at(Coordinate(1, 1))).strip() != "DN"  # the flap is over
        await pilot.press("1")
        await until(pilot, lambda: type(app.screen).__name__ == "IncidentsScreen")
        await until(pilot, lambda: app.screen.query_one("#incidents", DataTable).row_count)
        await pilot.press("enter")  # the flap
        await until(pilot, lambda: type(app.screen).__name__ == "IncidentScreen" and app.screen.loaded)
        await pilot.press("f")
        await until(pilot, lambda: app.screen is fabric and "..." not in text_of(app, "#head")
                    and "checking" not in text_of(app, "#head"))
        await pilot.pause(0.3)
        assert "window 2026-11-30 03:02:00" in text_of(app, "#head")
        assert heat.cursor_coordinate == Coordinate(1, 1)  # leaf-p0-02 x spine-p0-01: the flap
        assert str(heat.get_cell_at(Coordinate(1, 1))).strip() == "DN"  # redrawn in place
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == "EntityScreen" and app.screen.loaded)
        assert (app.screen.kind, app.screen.ident) == ("link", FLAP)


STORM = "gpu-node-0011:eth0--leaf-p0-03:swp3"  # the PFC storm's host link


def test_heatmaps_hold_each_leafs_host_links_in_port_order(two_faults_db):
    data = StoreData(two_faults_db)
    try:
        windows, length = data.windows()
        (hm,) = data.heatmaps(windows[len(windows) // 2], length)
    finally:
        data.close()
    assert hm.host_cols == 4
    row = hm.host_links[hm.leaves.index("leaf-p0-03")]
    assert row == [f"gpu-node-{9 + k:04d}:eth0--leaf-p0-03:swp{k + 1}" for k in range(4)]
    assert all(u is not None and u > 0 for u in hm.host_util[hm.leaves.index("leaf-p0-03")])
    assert hm.find("gpu-node-0011:eth0") == (2, len(hm.spines) + 2) == hm.find(STORM)


async def test_fabric_draws_host_links_and_goes_to_a_host_ports_incident(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        incidents = app.screen.query_one("#incidents", DataTable)
        await until(pilot, lambda: incidents.row_count)
        await pilot.press("down")  # #2, the PFC storm on gpu-node-0011:eth0
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == "IncidentScreen" and app.screen.loaded)
        assert app.screen.incident.kind == "pfc_storm"
        await pilot.press("f")
        await until(pilot, lambda: type(app.screen).__name__ == "FabricScreen"
                    and "..." not in text_of(app, "#head"))
        heat = app.screen.query_one("#heatmap", HeatGrid)
        await until(pilot, lambda: heat.cursor_coordinate == Coordinate(2, 4 + 3))
        assert "window 2026-11-30 03:06:00" in text_of(app, "#head")
        assert heat.column_labels[4:] == ["h1", "h2", "h3", "h4"]
        assert str(heat.get_cell_at(Coordinate(2, 7))).strip().isdigit()  # utilization drawn
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == "EntityScreen" and app.screen.loaded)
        assert (app.screen.kind, app.screen.ident) == ("link", STORM)


async def test_fabric_j_and_k_move_the_cursor_and_y_copies_the_link_under_it(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        heat = await fabric_heatmap(app, pilot)
        await pilot.press("j", "right")  # leaf-p0-02 x spine-p0-01: the flap's cable
        assert heat.cursor_coordinate == Coordinate(1, 1)
        await pilot.press("y")
        assert app.clipboard == FLAP  # the link's id, not the "DN" or "25" it shows
        await pilot.press("k", "left", "y")
        assert app.clipboard == "leaf-p0-01"
        await pilot.press("Y")
        assert app.clipboard.split("\t")[0] == "leaf-p0-01"


async def test_a_step_after_the_error_scan_is_drawn_once_with_its_errors(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        await fabric_heatmap(app, pilot)
        fabric = app.screen
        await until(pilot, lambda: " degraded," in text_of(app, "#head"))  # the scan is done
        fabric._one_pass = False  # as after a first scan of seconds (a big store)
        heads: list[str] = []
        draw = fabric.draw

        def recording() -> None:
            draw()
            heads.append(text_of(app, "#head"))

        fabric.draw = recording
        index = fabric.index
        await pilot.press("right_square_bracket")
        await until(pilot, lambda: fabric.index == index + 1 and heads)
        await pilot.pause(0.3)
        # one pass: the window's errors are a lookup in the scan's result, not a second worker
        assert len(heads) == 1 and "checking" not in heads[0], heads

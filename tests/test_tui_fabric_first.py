"""The fabric screen's first window and its steps without a round trip through a worker: the
app computes the window the screen opens on from its start, the screen draws it as it mounts,
and the windows either side of the one shown are computed ahead, so a step onto one draws at
once (issue 21: `2` and every step within 200 ms on a 256-switch store)."""

from __future__ import annotations

from test_tui_app import text_of, until

from fabtwin.tui.app import FabtwinApp
from fabtwin.tui.data import opening_window
from fabtwin.tui.heatgrid import HeatGrid
from fabtwin.tui.screens.fabric import FabricScreen

pytest_plugins = ["tui_fixtures"]  # the stores these tests open


def _pending(app, *groups: str) -> list[str]:
    return [w.group for w in app.workers if w.group in groups and not w.is_finished]


async def test_the_app_computes_the_first_window_and_the_screen_draws_it_as_it_mounts(
        store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        data = app.data
        windows, length = data.windows()
        first = windows[opening_window(windows)]
        # computed by the app's own warm-up, without the fabric screen being visited
        await until(pilot, lambda: data.heatmaps_ready(first, length, False))
        screen = FabricScreen()
        await app.push_screen(screen)  # composed and mounted, no worker's answer handled yet
        assert screen.query_one(HeatGrid).row_count == 4
        assert "busiest" in text_of(app, "#head") and f"{first:%H:%M:%S}" in text_of(app, "#head")
        assert _pending(app, "windows", "heatmap") == []  # drawn by on_mount itself


async def test_a_step_onto_a_window_computed_ahead_draws_without_a_worker(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("2")
        screen = app.screen
        await until(pilot, lambda: "busiest" in text_of(app, "#head")
                    and "checking" not in text_of(app, "#head"))
        data, i = app.data, screen.index
        nxt = screen.windows[i + 1]
        await until(pilot, lambda: data.heatmaps_ready(nxt, screen.window_s, True))
        started: list[str] = []
        run = screen.run_worker

        def record(work, *args, group: str = "default", **kwargs):
            started.append(group)
            return run(work, *args, group=group, **kwargs)

        screen.run_worker = record
        screen.action_step(1)  # what `]` runs: drawn before it returns
        assert screen.index == i + 1 and f"{nxt:%H:%M:%S}" in text_of(app, "#head")
        assert "busiest" in text_of(app, "#head") and "heatmap" not in started
        assert screen.maps is data.heatmaps(nxt, screen.window_s, True)

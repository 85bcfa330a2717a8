"""The drill-down screen is built once and refilled per visit (app.open_entity): a later visit
shows only its own entity (no rows, drops, heights or cursor left from the one before), reads
of an earlier visit that finish late are ignored, and a drill-down opened from a drill-down
takes a screen of its own."""

from __future__ import annotations

import threading

from test_tui_app import until  # the Pilot's helpers, shared
from test_tui_oncall import link_degraded_with_wjh

import fabtwin.tui.screens.entity as entity
from fabtwin.tui.app import FabtwinApp
from fabtwin.tui.rowgrid import KeyedGrid

pytest_plugins = ["tui_fixtures"]  # store_copy, private_state_dir


def _loaded(app, ident: str):
    return lambda: (type(app.screen).__name__ == "EntityScreen" and app.screen.ident == ident
                    and app.screen.loaded and app.screen.series is not None)


def _column(grid: KeyedGrid) -> list[str]:
    return [grid.get_row_at(r)[0] for r in range(grid.row_count)]


async def _open(app, pilot, kind: str, ident: str) -> None:
    """The drill-down of `ident`, from the incidents list once it shows, loaded."""
    await until(pilot, lambda: app.screen.query("#incidents") or app.screen.SCOPE == "entity")
    app.open_entity(kind, ident)
    await until(pilot, _loaded(app, ident))


async def test_a_second_visit_refills_the_same_screen_with_its_own_entity(tmp_path,
                                                                        private_state_dir,
                                                                        sample_stores):
    """link_degraded with WJH drops on leaf-p0-01:swp7 (test_tui_oncall's): its port view
    shows the drops and gives the tables a smaller minimum height; the next drill-down, on a
    switch without drops, is the same screen object, its drops hidden, the heights as
    composed, the cursor and scroll at the top and only the switch's ports listed."""
    from test_wjh import wjh_line

    app = FabtwinApp(str(link_degraded_with_wjh(tmp_path, [
        wjh_line("leaf-p0-01", "swp7", "03:05:00", "Bad signal integrity", 10021, 120)], sample_stores)))
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(app, pilot, "device", "leaf-p0-02")
        first = app.screen
        peers = first.query_one("#peers", KeyedGrid)
        await pilot.press("j", "j", "j")
        assert peers.cursor_row == 3
        await pilot.press("escape")
        await _open(app, pilot, "port", "leaf-p0-01:swp7")
        assert app.screen is first  # refilled, not composed again
        drops = first.query_one("#drops", KeyedGrid)
        assert drops.display and drops.row_count == 1
        assert peers.styles.min_height.value == 3  # three tables share the rows
        assert _column(peers)[0] == "leaf-p0-01:swp7" and peers.cursor_row == 0
        assert "leaf-p0-01:swp7" in str(first.query_one("#head").render())
        await pilot.press("escape")
        await _open(app, pilot, "device", "leaf-p0-02")
        assert app.screen is first
        assert not drops.display and drops.row_count == 0
        assert peers.styles.min_height.value == 4  # the screen's CSS again, not the inline 3
        assert _column(peers) == first.ports and all(p.startswith("leaf-p0-02:")
                                                       for p in first.ports)
        assert peers.cursor_row == 0 and peers.scroll_offset.y == 0 and peers.has_focus
        assert "leaf-p0-02" in app.screen.title


async def test_reads_of_an_earlier_visit_that_finish_late_are_ignored(store_copy, monkeypatch):
    """The first drill-down's tables are still being read when the user goes back and opens
    another: when that read finishes, the screen (the same object, now the second entity's)
    keeps the second entity's rows."""
    gate, asked = threading.Event(), threading.Event()
    facts = entity._facts

    def slow(data, kind, ident):
        if ident == "leaf-p0-01":
            asked.set()
            gate.wait(20)
        return facts(data, kind, ident)

    monkeypatch.setattr(entity, "_facts", slow)
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.screen.query("#incidents"))
        app.open_entity("device", "leaf-p0-01")
        await until(pilot, asked.is_set)
        first = app.screen
        await pilot.press("escape")
        await _open(app, pilot, "device", "leaf-p0-02")
        assert app.screen is first
        gate.set()
        await pilot.pause(0.3)
        await pilot.pause()
        assert app.screen.ident == "leaf-p0-02"
        rows = _column(app.screen.query_one("#peers", KeyedGrid))
        assert rows and all(p.startswith("leaf-p0-02:") for p in rows)
        assert "leaf-p0-01" not in str(app.screen.query_one("#head").render())


async def test_a_drill_down_from_a_drill_down_takes_another_screen(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(app, pilot, "device", "leaf-p0-02")
        device = app.screen
        await pilot.press("enter")  # the first port's drill-down, over the switch's
        port = device.ports[0]
        await until(pilot, _loaded(app, port))
        assert app.screen is not device and device.ident == "leaf-p0-02"
        await pilot.press("escape")
        assert app.screen is device and device.ident == "leaf-p0-02"
        assert _column(device.query_one("#peers", KeyedGrid)) == device.ports

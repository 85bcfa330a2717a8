"""SVG snapshots of every screen at 80x24 and 120x40 (pytest-textual-snapshot; update with
`pytest tests/test_tui_snapshots.py --snapshot-update` after checking the new pictures)."""

from __future__ import annotations

import asyncio
import inspect
from datetime import datetime
from pathlib import Path

import pytest
from textual.widgets import TextArea

from fabtwin.tui.app import FabtwinApp
from fabtwin.tui.resultview import ResultsGrid
from fabtwin.tui.scrollbox import HintedScroll

pytest_plugins = ["tui_fixtures"]  # the stores these tests open

# every screen where on-call meets it: a laptop's 80x24 terminal and a roomier one
SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])


async def _until(pilot, ready) -> None:
    for _ in range(1000):
        if ready():
            return
        await pilot.pause(0.02)
    raise AssertionError("screen never got ready")


def _rows(pilot, selector: str):
    app = pilot.app
    return lambda: len(app.screen.query(selector)) > 0 and \
        app.screen.query_one(selector).row_count > 0


async def _first_incident(pilot) -> None:
    """The incident ranked first, opened from the list, its plot loaded."""
    await _until(pilot, _rows(pilot, "#incidents"))
    await pilot.press("enter")
    await _until(pilot, lambda: getattr(pilot.app.screen, "series", None) is not None
                 and pilot.app.screen.loaded)  # the plot and the tables: workers fill both
    await _titles_settled(pilot)


async def _titles_settled(pilot) -> None:
    """Every hinted box's border says what its scroll range now hides. The title follows the
    content a refresh later (call_after_refresh), so a loaded screen on a busy machine can still
    show the old title: wait until each title is what `retitle` would write, twice running."""
    def settled() -> bool:
        return all(box.border_title == (f"{box.heading} · {box.hint()}" if box.hint() else box.heading)
                   for box in pilot.app.screen.query(HintedScroll))

    for _ in range(500):
        await pilot.pause(0.02)
        if settled():
            await pilot.pause(0.02)
            if settled():
                return
    raise AssertionError("a box's title never caught up with its content")


@SIZES
def test_incidents_screen(snap_compare, store_copy, size):
    async def ready(pilot):
        await _until(pilot, _rows(pilot, "#incidents"))

    assert snap_compare(FabtwinApp(str(store_copy)), terminal_size=size, run_before=ready)


@SIZES
def test_incident_detail_screen(snap_compare, store_copy, size):
    async def ready(pilot):
        await _first_incident(pilot)
        await _titles_settled(pilot)

    assert snap_compare(FabtwinApp(str(store_copy)), terminal_size=size, run_before=ready)


@SIZES
def test_drill_down_screen(snap_compare, store_copy, size):
    async def ready(pilot):
        await _first_incident(pilot)
        await pilot.press("r")
        await _until(pilot, lambda: getattr(pilot.app.screen, "SCOPE", "") == "entity"
                     and pilot.app.screen.series is not None and pilot.app.screen.loaded)
        await _titles_settled(pilot)

    assert snap_compare(FabtwinApp(str(store_copy)), terminal_size=size, run_before=ready)


@SIZES
def test_incident_drill_down_screen(snap_compare, store_copy, size):
    """`d` on the flap: both ends over the leaf's and the spine's other uplinks, the window
    shaded, the table of peaks under it."""
    async def ready(pilot):
        await _first_incident(pilot)
        await pilot.press("d")
        await _until(pilot, lambda: getattr(pilot.app.screen, "SCOPE", "") == "drill"
                     and pilot.app.screen.lines)
        await _titles_settled(pilot)

    assert snap_compare(FabtwinApp(str(store_copy)), terminal_size=size, run_before=ready)


@SIZES
def test_fabric_screen_during_the_flap(snap_compare, store_copy, size):
    async def ready(pilot):
        await pilot.press("2")
        await _until(pilot, _rows(pilot, "#heatmap"))
        pilot.app.screen.go_to(datetime(2026, 11, 30, 3, 2, 5))
        head = pilot.app.screen.query_one("#head")
        # the window drawn, then its error counters checked (the head says so meanwhile)
        await _until(pilot, lambda: "1 down" in str(head.render())
                     and "checking" not in str(head.render()))
        await _titles_settled(pilot)

    assert snap_compare(FabtwinApp(str(store_copy)), terminal_size=size, run_before=ready)


@SIZES
def test_events_screen(snap_compare, store_copy, size):
    async def ready(pilot):
        await pilot.press("3")
        await _until(pilot, _rows(pilot, "#events"))

    assert snap_compare(FabtwinApp(str(store_copy)), terminal_size=size, run_before=ready)


@SIZES
def test_sql_screen_with_results(snap_compare, store_copy, size):
    async def ready(pilot):
        await pilot.press("4")
        schema = pilot.app.screen.query_one("#schema")  # filled by a worker: wait for it
        await _until(pilot, lambda: len(schema.root.children) > 0)
        editor = pilot.app.screen.query_one("#editor", TextArea)
        editor.cursor_blink = False
        editor.text = "SELECT device, count(*) AS n FROM samples GROUP BY 1 ORDER BY 1"
        await pilot.press("ctrl+r")
        grid = pilot.app.screen.query_one(ResultsGrid)
        await _until(pilot, lambda: grid.row_count > 0)
        status = pilot.app.screen.query_one("#status")
        status.update("ran")  # the status line holds a timing that changes run to run
        await asyncio.sleep(0)

    assert snap_compare(FabtwinApp(str(store_copy)), terminal_size=size, run_before=ready)


@SIZES
def test_checks_screen(snap_compare, checked_copy, size):
    """`5`: the findings `fabtwin check` stored for the planted miscabling, the first one's
    summary, evidence and entities under the list."""
    async def ready(pilot):
        await _until(pilot, lambda: len(pilot.app.screen.query("#incidents")) > 0)
        await pilot.press("5")
        await _until(pilot, _rows(pilot, "#findings"))
        await _titles_settled(pilot)

    assert snap_compare(FabtwinApp(str(checked_copy)), terminal_size=size, run_before=ready)


@SIZES
def test_help_screen(snap_compare, store_copy, size):
    assert snap_compare(FabtwinApp(str(store_copy)), terminal_size=size, press=["question_mark"])


def test_every_stored_snapshot_belongs_to_a_test_here():
    """What syrupy checks at the end of a serial run (an unused snapshot fails the session) and
    skips under pytest-xdist, the suite's default: a picture left behind by a renamed or removed
    test, or a size no longer taken, is an error."""
    taken = set()
    for name, test in globals().items():
        if name.startswith("test_") and "snap_compare" in inspect.signature(test).parameters:
            ids = [i for mark in getattr(test, "pytestmark", []) if mark.name == "parametrize"
                   for i in mark.kwargs.get("ids", [])]
            taken |= {f"{name}[{i}]" for i in ids} if ids else {name}
    stored = {p.stem for p in (Path(__file__).parent / "__snapshots__" / Path(__file__).stem).glob("*.svg")}
    assert taken and stored == taken, (sorted(stored - taken), sorted(taken - stored))

"""Every screen usable at 80x24: tables keep rows on screen, the key bar fits and shows the way
out, `1` goes back to the incidents list, the SQL editor can be left from the keyboard."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from textual.widget import Widget
from textual.widgets import DataTable, TextArea

from fabtwin.cli import main
from fabtwin.tui.app import FabtwinApp
from fabtwin.tui.bars import KeyBar, key_items, key_text
from fabtwin.tui.resultview import ResultsGrid
from fabtwin.tui.rowgrid import KeyedGrid

pytest_plugins = ["tui_fixtures"]

from test_tui_app import until  # noqa: E402  (the shared Pilot wait)

SIZES = [(80, 24), (120, 24), (80, 30), (120, 40)]


def lines_on_screen(app, widget: Widget) -> int:
    """How many screen lines show `widget` (not hidden under another widget or scrolled off)."""
    r = widget.region
    return sum(1 for y in range(r.y, min(r.bottom, app.size.height))  # below it: off screen
               if app.screen.get_widget_at(r.x + 1, y)[0] in (widget, *widget.walk_children()))


def scope(app) -> str:
    return getattr(app.screen, "SCOPE", "")


async def open_first_incident(app, pilot) -> None:
    await until(pilot, lambda: app.screen.query_one("#incidents", DataTable).row_count)
    await pilot.press("enter")
    await until(pilot, lambda: scope(app) == "incident" and app.screen.series is not None and app.screen.loaded)
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES)
async def test_incident_detail_shows_affected_rows_and_evidence(store_copy, size):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=size) as pilot:
        await open_first_incident(app, pilot)
        affected = app.screen.query_one("#affected", DataTable)
        assert affected.row_count >= 4  # root cause, two rerouted links, a job
        # the header and at least three rows on screen, Enter opens a row one can see
        assert lines_on_screen(app, affected) >= 4
        assert lines_on_screen(app, app.screen.query_one("#evidence-box")) >= 3
        assert lines_on_screen(app, app.screen.query_one("#plot")) >= 6


@pytest.mark.parametrize("size", SIZES)
async def test_drill_down_shows_peers_and_events(store_copy, size):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=size) as pilot:
        await open_first_incident(app, pilot)
        await pilot.press("r")
        await until(pilot, lambda: scope(app) == "entity" and app.screen.series is not None and app.screen.loaded)
        await pilot.pause()
        for table in ("#peers", "#events"):
            assert lines_on_screen(app, app.screen.query_one(table)) >= 4, table
        # the sparklines of every counter are the pane that gives way on a short terminal
        assert app.screen.query_one("#all").display == (size[1] >= 36)


async def test_1_returns_to_the_incidents_list_from_any_depth(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_first_incident(app, pilot)
        await pilot.press("1")
        await until(pilot, lambda: scope(app) == "incidents")
        await open_first_incident(app, pilot)
        await pilot.press("r")
        await until(pilot, lambda: scope(app) == "entity" and app.screen.loaded)
        await pilot.press("2")
        await until(pilot, lambda: scope(app) == "fabric")
        await pilot.press("1")
        await until(pilot, lambda: scope(app) == "incidents")
        assert len(app.screen_stack) == 1


async def test_sql_editor_is_left_with_escape_then_digits_switch(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.screen.query_one("#incidents", DataTable).row_count)
        await pilot.press("f5")
        await until(pilot, lambda: scope(app) == "sql")
        editor = app.screen.query_one("#editor", TextArea)
        await until(pilot, lambda: editor.has_focus)
        before = editor.text
        await pilot.press("1")  # typed: the editor has the keys
        assert scope(app) == "sql" and editor.text != before
        await pilot.press("escape")
        assert app.screen.query_one(ResultsGrid).has_focus
        await pilot.press("1")
        await until(pilot, lambda: scope(app) == "incidents")


async def test_sql_error_leaves_no_stale_result(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f5")
        await until(pilot, lambda: scope(app) == "sql")
        app.screen.set_query("SELECT rank FROM incidents")
        grid = app.screen.query_one(ResultsGrid)
        await until(pilot, lambda: grid.row_count == 3)
        app.screen.set_query("SELECT no_such_column FROM incidents")
        await until(pilot, lambda: "no_such_column" in str(app.screen.query_one("#status").render()))
        assert grid.row_count == 0 and not grid.columns


@pytest.mark.parametrize("room", ["incidents", "incident", "drill", "fabric", "events", "entity",
                                  "sql", "checks"])
def test_key_bar_fits_80_columns_and_shows_help_and_the_way_out(room):
    bar = key_text(room, 80).plain
    assert len(bar) <= 80
    assert bar.startswith(("? Help", "F1 Help"))
    if room == "sql":  # digits and q are typed there: the F keys, Esc and Ctrl+Q are the way out
        assert "Esc Leave editor" in bar and "F2-F6 Screens" in bar and "^Q Quit" in bar
    else:
        assert "1-5 Screens" in bar
    if room in ("incident", "drill", "entity"):
        assert "Esc Back" in bar
    assert ("^Q Quit" if room == "sql" else "q Quit") in bar  # the way out of the UI, always


@pytest.mark.parametrize("room", ["incidents", "incident", "fabric", "events", "sql"])
def test_a_narrow_key_bar_drops_the_screens_own_keys_before_quit(room):
    """From 120 columns down to the help's, the way back's, quit's and the tabs' width: the
    bar fits, keeps them, and shows what it keeps in the full bar's order."""
    full = [f"{key} {label}" for key, label, _rank in key_items(room)]
    quit_ = "^Q Quit" if room == "sql" else "q Quit"
    must = [k for k in full if k.endswith((" Help", " Back", " Leave editor", " Quit", " Screens"))]
    for width in range(120, sum(len(k) + 1 for k in must) - 1, -1):
        bar = key_text(room, width).plain
        assert len(bar) <= width
        assert bar.startswith(("? Help", "F1 Help")) and quit_ in bar
        assert all(f"{k} " in bar for k in must), (width, bar)
        shown = [k for k in full if f"{k} " in bar]
        assert bar == "".join(f"{k} " for k in shown)  # whole keys, in the full bar's order


async def test_every_screen_shows_quit_in_its_key_bar_at_80x24(store_copy):
    """Pilot: the key bar drawn on each screen at 80 columns ends with the way out."""
    app = FabtwinApp(str(store_copy))
    seen = {}
    async with app.run_test(size=(80, 24)) as pilot:
        async def look() -> None:
            await pilot.pause()
            seen[scope(app)] = str(app.screen.query_one(KeyBar).render())

        await until(pilot, lambda: app.screen.query_one("#incidents", DataTable).row_count)
        await look()
        await open_first_incident(app, pilot)
        await look()
        await pilot.press("d")
        await until(pilot, lambda: scope(app) == "drill")
        await look()
        await pilot.press("escape", "r")
        await until(pilot, lambda: scope(app) == "entity")
        await look()
        for key, room in (("2", "fabric"), ("3", "events"), ("5", "checks"), ("f5", "sql")):
            await pilot.press(key)
            await until(pilot, lambda room=room: scope(app) == room)
            await look()
    assert set(seen) == {"incidents", "incident", "drill", "entity", "fabric", "events",
                         "checks", "sql"}
    for room, bar in seen.items():
        assert len(bar.rstrip()) <= 80 and (" ^Q Quit " if room == "sql" else " q Quit ") in bar, \
            (room, bar)


async def test_key_bar_on_screen_is_cut_at_a_whole_key(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_first_incident(app, pilot)
        bar = app.screen.query_one(KeyBar)  # its width: the screen's less a scroll bar
        shown = str(bar.render())
        assert shown == key_text("incident", bar.size.width).plain and "Esc Back" in shown


def test_tui_on_a_missing_bundle_refuses_and_makes_no_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "x.duckdb"
    result = CliRunner().invoke(main, ["tui", str(tmp_path / "MISSING"), "--db", str(db)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"fabtwin: error: {tmp_path / 'MISSING'}: no such bundle"]
    assert list(tmp_path.iterdir()) == []


def summary(app) -> str:
    return str(app.screen.query_one("#summary").render())


async def test_incident_count_says_how_many_of_how_many_and_the_sort_is_in_the_header(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.query_one("#incidents", DataTable)
        await until(pilot, lambda: table.row_count == 3)
        assert "3 incidents\n" in summary(app) and "sorted by rank ▲" in summary(app)
        assert [str(c.label) for c in table.columns.values()][0] == "# ▲"
        await pilot.press("s")
        labels = [str(c.label) for c in table.columns.values()]
        assert "score ▼" in labels and "#" in labels and "sorted by score" in summary(app)
        await pilot.press("slash", "p", "f", "c")
        await until(pilot, lambda: table.row_count == 1)
        assert "1 of 3 incidents" in summary(app)
        await pilot.press("escape")
        assert "3 incidents" in summary(app) and " of " not in summary(app).split("\n")[0]


async def test_events_are_counted_by_one_rule_on_every_screen(store_copy):
    """The events table holds 14 rows; the events screen lists them and the job's start: it
    said 15 events where the incidents list said 14."""
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.screen.query_one("#incidents", DataTable).row_count)
        total = app.data.counts()["events"]
        assert f"{total} events" in summary(app)
        await pilot.press("3")
        await until(pilot, lambda: scope(app) == "events")
        rows = app.screen.query_one("#events", DataTable).row_count
        jobs = rows - total
        assert jobs >= 1  # the job's start is listed beside the events
        text = str(app.screen.query_one("#filters").render())
        assert text.startswith(f"{total} events + {jobs} job start/end   device: any")
        await pilot.press("K")  # one kind: how many of the store's events
        text = str(app.screen.query_one("#filters").render())
        assert f" of {total} events" in text


async def test_drill_down_without_events_says_so(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.screen.query_one("#incidents", DataTable).row_count)
        app.open_entity("device", "leaf-p0-01")
        await until(pilot, lambda: scope(app) == "entity" and app.screen.query("#events")
                    and app.screen.query_one("#events", KeyedGrid).row_count)
        events = app.screen.query_one("#events", KeyedGrid)
        assert [str(c) for c in events.get_row_at(0)][-1] == "no events recorded for this entity"
        await pilot.press("tab", "enter")  # the placeholder opens nothing
        assert scope(app) == "entity" and len(app.screen_stack) == 2


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_explanation_box_says_how_to_reach_its_hidden_lines(store_copy, size):
    """Its border says how many lines it hides and the key (shown in the key bar) that
    focuses it; the arrows then scroll it, the border counting down; `e` goes back."""
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=size) as pilot:
        await open_first_incident(app, pilot)
        box = app.screen.query_one("#evidence-box")
        await until(pilot, lambda: app.screen.loaded and box.virtual_size.height > 0)
        await pilot.pause()
        if size == (120, 40) and box.max_scroll_y == 0:
            # at 120x40 the top incident's explanation may fit whole: then the border says so
            assert str(box.border_title) == "why it was ranked"
            return
        await until(pilot, lambda: box.max_scroll_y > 0 and "more lines" in str(box.border_title))
        hidden = round(box.max_scroll_y)
        assert str(box.border_title) == f"why it was ranked · e, then ↓: {hidden} more lines"
        assert " e Why " in str(app.screen.query_one(KeyBar).render())
        await pilot.press("e")
        assert box.has_focus
        await pilot.press("down")
        await until(pilot, lambda: box.scroll_y == 1)
        await until(pilot, lambda: f"{hidden - 1} more line" in str(box.border_title))
        assert str(box.border_title).startswith("why it was ranked · ↓ PgDn: ")
        await pilot.press("e")
        assert app.screen.query_one("#affected", DataTable).has_focus
        left = hidden - 1
        await until(pilot, lambda: str(box.border_title) == (
            f"why it was ranked · e, then ↓: {left} more line{'' if left == 1 else 's'}"
            if left else "why it was ranked"))

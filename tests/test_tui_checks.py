"""The Checks screen (issue 22): `fabtwin check`'s findings (check_findings) in the TUI, each
finding's entities opening their drill-down, at 80x24 and 120x40. Pilot on the findings
`fabtwin check` stores for a bundle with planted miscabling (tui_fixtures.checked_db)."""

from __future__ import annotations

import shutil

import pytest
from test_tui_app import text_of, until  # the Pilot's helpers, shared
from textual.widgets import DataTable

from fabtwin.tui.app import FabtwinApp
from fabtwin.tui.bars import key_text
from fabtwin.tui.screens.checks import NONE_STORED

pytest_plugins = ["tui_fixtures"]

SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])


def scope(app) -> str:
    return getattr(app.screen, "SCOPE", "")


async def open_checks(app, pilot) -> None:
    """`5`, as the key bar says, once the incidents list is up."""
    await until(pilot, lambda: app.screen.query("#incidents"))
    await pilot.press("5")
    await until(pilot, lambda: scope(app) == "checks")


def test_the_checks_screen_is_a_tab_in_every_key_bar():
    for room in ("incidents", "incident", "fabric", "events", "entity", "checks"):
        assert "1-5 Screens" in key_text(room, 80).plain
    assert "F2-F6 Screens" in key_text("sql", 80).plain


@SIZES
async def test_findings_listed_and_each_entity_opens_its_view(checked_copy, size):
    app = FabtwinApp(str(checked_copy))
    async with app.run_test(size=size) as pilot:
        await open_checks(app, pilot)
        findings = app.screen.query_one("#findings", DataTable)
        assert findings.row_count == 3
        rows = [[str(c) for c in findings.get_row_at(r)] for r in range(3)]
        assert [r[1:3] for r in rows] == [["error", "rail"], ["error", "rail"],
                                          ["error", "missing_link"]]
        assert rows[0][3].startswith("gpu-node-0003:eth2, leaf-p0-01")
        assert "3 findings of the latest fabtwin check (2026-11-30 03:15:00): 3 errors" in \
            text_of(app, "#summary")
        # the highlighted finding: its whole summary and evidence, and its entities
        shown = text_of(app, "#finding")
        assert "rail (error): gpu-node-0003:eth2 is cabled to leaf-p0-01" in shown
        assert "expected_leaf=leaf-p0-02" in shown
        entities = app.screen.query_one("#entities", DataTable)
        ents = [[str(c) for c in entities.get_row_at(r)] for r in range(entities.row_count)]
        assert ents[:2] == [["gpu-node-0003:eth2", "port"], ["leaf-p0-01", "device"]]
        for table in (findings, entities):  # every part has rows on screen at 80x24 too
            assert table.region.height >= 3
        # Enter on a finding with several entities: to its entities; Enter opens the port
        await pilot.press("enter")
        assert app.focused is entities
        await pilot.press("enter")
        await until(pilot, lambda: scope(app) == "entity" and app.screen.loaded)
        assert (app.screen.kind, app.screen.ident) == ("port", "gpu-node-0003:eth2")
        await pilot.press("escape")
        await until(pilot, lambda: scope(app) == "checks")
        # the missing cable's finding: its two switches
        app.screen.query_one("#findings", DataTable).focus()
        await pilot.press("j", "j")
        await until(pilot, lambda: "missing_link (error): leaf-p1-03" in text_of(app, "#finding"))
        ents = [str(entities.get_row_at(r)[0]) for r in range(entities.row_count)]
        assert ents == ["leaf-p1-03", "spine-p1-02"]
        await pilot.press("enter", "j", "enter")
        await until(pilot, lambda: scope(app) == "entity" and app.screen.loaded)
        assert (app.screen.kind, app.screen.ident) == ("device", "spine-p1-02")


async def test_a_plane_opens_the_fabric_screen_on_that_plane(checked_copy):
    app = FabtwinApp(str(checked_copy))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_checks(app, pilot)
        app.fabric_plane("plane-1")  # the fabric not visited yet: its heatmaps read first
        await until(pilot, lambda: scope(app) == "fabric"
                    and "plane 1 (2 of 2" in text_of(app, "#head"))
        assert app.screen.maps[app.screen.plane].plane == 1


async def test_a_plane_finding_on_cabling_the_fabric_cannot_draw_says_why(host_cable_db,
                                                                          tmp_path):
    """gpu-node-0005 lost its plane-1 cable: the finding names the host and plane-1; the
    fabric screen cannot draw that cabling, and Enter on plane-1 says so at once."""
    db = tmp_path / "s.duckdb"
    shutil.copy(host_cable_db, db)
    app = FabtwinApp(str(db))
    told: list[str] = []
    notify = app.notify
    app.notify = lambda message, **kw: (told.append(str(message)), notify(message, **kw))[1]
    async with app.run_test(size=(80, 24)) as pilot:
        await open_checks(app, pilot)
        await pilot.press("j", "j")
        await until(pilot, lambda: "missing_link (error): gpu-node-0005 has 1 port(s) cabled "
                    "into plane-1" in text_of(app, "#finding"))
        entities = app.screen.query_one("#entities", DataTable)
        assert [[str(c) for c in entities.get_row_at(r)] for r in range(2)] == [
            ["gpu-node-0005", "host"], ["plane-1", "plane"]]
        await pilot.press("enter", "j", "enter")
        await until(pilot, lambda: scope(app) == "fabric" and any(
            m.startswith("plane-1: the fabric screen cannot draw this cabling (irregular "
                         "fabric: gpu-node-0005 has 1 port(s) in plane 1") for m in told))


async def test_the_incidents_list_tells_the_findings_first(checked_copy, store_copy):
    app = FabtwinApp(str(checked_copy))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.screen.query("#incidents"))
        assert "fabtwin check: 3 errors (5 lists them)" in text_of(app, "#summary")
    app = FabtwinApp(str(store_copy))  # none stored: nothing said
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.screen.query_one("#incidents", DataTable).row_count)
        assert "fabtwin check" not in text_of(app, "#summary")


async def test_a_store_without_findings_says_how_to_get_them(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_checks(app, pilot)
        assert NONE_STORED in text_of(app, "#empty")
        assert "no checks stored (run fabtwin check BUNDLE)" in NONE_STORED
        assert not app.screen.query_one("#findings", DataTable).display

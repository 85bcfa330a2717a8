"""What on-call does from an incident (issue 21): the drill-down on the incident's counter and
window, its explanation, the export for the ticket, copy, j/k, WJH drops on their port, the SQL
console's schema browser and statement under the cursor. Pilot on two_faults."""

from __future__ import annotations

from test_tui_app import column, text_of, until  # the Pilot's helpers, shared
from textual.widgets import DataTable

from fabtwin.tui.app import FabtwinApp
from fabtwin.tui.data import KIND_COUNTER
from fabtwin.tui.screens.drill import MIN_SPAN

pytest_plugins = ["tui_fixtures"]  # the stores these tests open

FLAP = "leaf-p0-02:swp5--spine-p0-01:swp2"


async def open_incident(app, pilot, kind: str) -> None:
    """From the incidents list, the incident of `kind`, as a user would: filter, Enter."""
    await until(pilot, lambda: app.screen.query_one("#incidents", DataTable).row_count)
    await pilot.press("slash", *kind, "enter", "enter")
    await until(pilot, lambda: type(app.screen).__name__ == "IncidentScreen")
    assert app.screen.incident.kind == kind


async def test_drill_down_starts_on_the_kinds_counter_both_ends_and_peers_in_the_window(
        store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_incident(app, pilot, "link_flap")
        inc = app.screen.incident
        await pilot.press("d")
        await until(pilot, lambda: type(app.screen).__name__ == "DrillScreen"
                    and app.screen.lines)
        drill = app.screen
        assert drill.counter_name == KIND_COUNTER["link_flap"] == "tx_bytes_per_s"
        # both ends of the link, then the leaf's and the spine's other uplinks
        assert drill.own == FLAP.split("--")
        assert set(drill.peers) == {"leaf-p0-02:swp6", "leaf-p0-02:swp7", "leaf-p0-02:swp8",
                                    "spine-p0-01:swp1", "spine-p0-01:swp3", "spine-p0-01:swp4"}
        assert [ln.label for ln in drill.lines if ln.own] == drill.own
        assert all(ln.series.ts for ln in drill.lines)  # every line has samples
        # the view holds the incident's window, the plot shades it and names both ends
        assert drill.view[0] < inc.start and inc.end < drill.view[1]
        plot = text_of(app, "#plot")
        assert "▀" in plot and FLAP.split("--")[0] in plot and "6 peer(s)" in plot
        # the flap's down time: the leaf end sends nothing, its peers keep sending
        leaf = next(ln for ln in drill.lines if ln.label == drill.own[0]).series
        peer = next(ln for ln in drill.lines if ln.label == "leaf-p0-02:swp6").series
        during = [v for t, v in zip(leaf.ts, leaf.observed, strict=True)
                  if inc.start <= t <= inc.end]
        assert min(during) < 0.01 * max(peer.observed)
        span = drill.view[1] - drill.view[0]
        await pilot.press("plus")
        assert drill.view[1] - drill.view[0] == span / 2
        await pilot.press("minus")
        assert abs(drill.view[1] - drill.view[0] - span).total_seconds() < 1e-3
        await pilot.press("minus", "minus", "minus")  # no further out than the store's range
        await until(pilot, lambda: drill.loaded[0] <= drill.view[0])
        first, last = app.data.time_range()
        assert drill.view == (first, last)
        for _ in range(12):
            await pilot.press("plus")
        assert drill.view[1] - drill.view[0] == MIN_SPAN
        await pilot.press("c")
        await until(pilot, lambda: drill.counter_name == "rx_bytes_per_s")
        lines = drill.query_one("#lines", DataTable)
        assert column(lines, 0)[:2] == drill.own
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == "EntityScreen")
        assert (app.screen.kind, app.screen.ident) == ("port", drill.own[0])


async def test_drill_down_of_a_port_adds_its_cable_end_and_that_switchs_peers(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_incident(app, pilot, "pfc_storm")
        root = app.screen.incident.root_id
        await pilot.press("d")
        await until(pilot, lambda: type(app.screen).__name__ == "DrillScreen"
                    and app.screen.lines)
        drill = app.screen
        assert drill.counter_name == KIND_COUNTER["pfc_storm"] == "tx_pause_per_s"
        assert drill.own[0] == root and drill.own[1].startswith("leaf-")
        # the leaf's other host-facing ports, not its uplinks
        assert drill.peers and all(p.startswith(drill.own[1].split(":")[0] + ":")
                                   for p in drill.peers)
        storm = next(ln for ln in drill.lines if ln.label == root).series
        assert max(v for v in storm.observed if v is not None) > 0

"""What on-call does from an incident (issue 21): the drill-down on the incident's counter and
window, its explanation, the export for the ticket, copy, j/k, WJH drops on their port, the SQL
console's schema browser and statement under the cursor. Pilot on two_faults."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from test_tui_app import column, text_of, until  # the Pilot's helpers, shared
from test_tui_layout import lines_on_screen
from textual.widgets import DataTable, TextArea

from fabtwin.explanation import NONE_STORED, as_text, cell_rows
from fabtwin.ticket import evidence_table
from fabtwin.tui.app import FabtwinApp
from fabtwin.tui.data import KIND_COUNTER
from fabtwin.tui.resultview import ResultsGrid
from fabtwin.tui.rowgrid import KeyedGrid
from fabtwin.tui.schema import SchemaTree, statement_at
from fabtwin.tui.screens.drill import MIN_SPAN

pytest_plugins = ["tui_fixtures"]  # the stores these tests open

FLAP = "leaf-p0-02:swp5--spine-p0-01:swp2"
REPO = Path(__file__).resolve().parents[1]


async def open_incident(app, pilot, kind: str) -> None:
    """From the incidents list, the incident of `kind`, as a user would: filter, Enter."""
    await until(pilot, lambda: app.screen.query_one("#incidents", DataTable).row_count)
    await pilot.press("slash", *kind, "enter", "enter")
    await until(pilot, lambda: type(app.screen).__name__ == "IncidentScreen" and app.screen.loaded)
    assert app.screen.incident.kind == kind


async def open_sql(app, pilot) -> None:
    await pilot.press("f5")
    await until(pilot, lambda: getattr(app.screen, "SCOPE", "") == "sql")


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
        assert "▀" in plot and FLAP.split("--")[0] in plot and "6 peers" in plot
        # byte rates in Gb/s (fabtwin.units), the peers' 16.3 GB/s: the axis and legend
        assert "130.0│" in plot and "Gb/s  ●" in plot
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
        lines = drill.query_one("#lines", KeyedGrid)
        assert column(lines, 0)[:2] == drill.own
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == "EntityScreen" and app.screen.loaded)
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


# the link_flap's explanation as replay/explain.py writes it for two_faults (decide=False: the
# detectors rank, the twin explains), one of its four cells and its fitted templates kept
FLAP_EXPLANATION = {
    "basis": "twin", "role": "root", "share": 0.146, "explained": 2863.9, "penalty": 4.6,
    "residual": 19590.3,
    "windows": {"start": "2026-11-30T03:02:00.099Z", "end": "2026-11-30T03:04:15.190Z"},
    "root": [{"port": "spine-p0-01:swp2", "counter": "tx_bytes",
              "window_start": "2026-11-30T03:03:00.000Z", "observed": 8744000000.0,
              "healthy": 12490000000.0, "with_fault": 9368000000.0, "noise": 50000000.0},
             {"port": "spine-p0-01:swp2", "counter": "tx_packets",
              "window_start": "2026-11-30T03:03:00.000Z", "observed": 2135000.0,
              "healthy": 3050000.0, "with_fault": 2287000.0, "noise": 12210.0}],
    "fitted": {"down share": 1.0, "reroute": 1.0},
    "runner_up": {"kind": "pfc_storm", "root_cause": {"type": "port", "id": "leaf-p0-03:swp2"},
                  "share": 0.0, "explained": 0.0, "why": "explains nothing beyond noise"},
    "other_roots": [{"kind": "pfc_storm",
                     "root_cause": {"type": "port", "id": "gpu-node-0011:eth0"}}],
    "victims": [{"kind": "link_degraded", "root_cause": {"type": "link", "id": FLAP},
                 "share_alone": 0.0}],
    "ranked_by": "detector"}


def stored_explanation(db, rank: int) -> dict | None:
    """What `investigate` stored for incident `rank` (incident_explanations)."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute("SELECT explanation FROM incident_explanations WHERE rank = ?",
                          [rank]).fetchone()
    finally:
        con.close()
    return json.loads(row[0]) if row else None


def flap_rank(db) -> int:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT rank FROM incidents WHERE kind = 'link_flap'").fetchone()[0]
    finally:
        con.close()


def test_explanation_text_reads_what_explain_stores_and_the_designs_names_alike():
    text = as_text(FLAP_EXPLANATION)
    assert text.splitlines()[0] == ("explains 15% of the residual (2,864 of 19,590 noise "
                                    "units), chosen as a root cause")
    # large sums without scientific notation (5.12276e+06 before)
    assert as_text({"share": 0.891, "explained": 5122760.4, "residual": 5752230.0}
                   ).startswith("explains 89% of the residual (5,122,760 of 5,752,230 noise")
    assert "ranked by its detector's score" in text  # ranked_by: detector
    assert "runner-up: pfc_storm port leaf-p0-03:swp2 explains 0%" in text
    assert "lost because it explains nothing beyond noise" in text
    assert "other roots of the residual: pfc_storm port gpu-node-0011:eth0" in text
    assert f"explains as victims: link_degraded link {FLAP}" in text
    # the cells: observed, the twin without the fault, with it, in expected_counters' units
    # (bytes/s as Gb/s, packets per second)
    assert re.search(r"spine-p0-01:swp2\s+tx_bytes\s+03:03:00\s+70\.0 Gb/s\s+99\.9 Gb/s\s+"
                     r"74\.9 Gb/s", text)
    assert re.search(r"tx_packets\s+03:03:00\s+2,135,000/s\s+3,050,000/s\s+2,287,000/s", text)
    designed = {"explained_share": 0.146, "runner_up": {
        "kind": "load_imbalance", "root_cause": {"type": "device", "id": "leaf-p0-02"},
        "explained_share": 0.037, "why": "x"}, "root": [
        {"port": "spine-p0-01:swp2", "counter": "tx_bytes", "window_start":
         "2026-11-30T03:03:00", "observed": 8.744e9, "without_fault": 1.249e10,
         "with_fault": 9.368e9}]}
    assert cell_rows(designed) == cell_rows(FLAP_EXPLANATION)[:1]
    assert "explains 15% of the residual" in as_text(designed)
    assert "explains 4%" in as_text(designed)
    assert as_text({"basis": "detector", "note": "no replay of this store"}) == \
        "not tested on the twin: no replay of this store"
    assert as_text(None) == as_text({}) == NONE_STORED


async def test_incident_screen_shows_the_stored_explanation_or_says_none_is_stored(store_copy):
    stored = stored_explanation(store_copy, flap_rank(store_copy))
    assert stored and stored["basis"] == "twin"  # what main's investigate stores
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_incident(app, pilot, "link_flap")
        shown = text_of(app, "#evidence")
        assert NONE_STORED not in shown
        for line in as_text(stored).splitlines()[:3]:
            assert line.strip() in shown
        assert "chosen as a root cause" in shown and "runner-up: " in shown
        cells = cell_rows(stored)
        assert cells  # the root's cells, each value in its counter's unit
        assert re.search(r"\s+".join(re.escape(v) for v in cells[0]), shown)
        assert all(re.fullmatch(r"[\d,.]+ Gb/s|[\d,.]+/s", v) for c in cells for v in c[3:])
    import duckdb

    con = duckdb.connect(str(store_copy))
    con.execute("DELETE FROM incident_explanations")  # a store diagnosed before issue 17
    con.close()
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_incident(app, pilot, "link_flap")
        assert NONE_STORED in text_of(app, "#evidence")


async def test_export_writes_markdown_and_json_and_never_overwrites(store_copy, tmp_path,
                                                                    monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    rank = flap_rank(store_copy)
    mine = work / f"incident-{rank}.md"
    mine.write_text("the user's own notes\n")
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_incident(app, pilot, "link_flap")
        await pilot.press("x")
        await pilot.press("x")
    assert mine.read_text() == "the user's own notes\n"  # never overwritten
    assert not (work / f"incident-{rank}.json").exists()  # the pair moves to a free stem
    for stem in (f"incident-{rank}-1", f"incident-{rank}-2"):
        md, js = (work / f"{stem}.md").read_text(), json.loads((work / f"{stem}.json").read_text())
        assert js["rank"] == rank and js["kind"] == "link_flap"
        assert js["root_cause"] == {"type": "link", "id": FLAP}
        assert list(js) == ["rank", "kind", "root_cause", "start", "end", "score", "summary",
                            "evidence", "explanation", "impact"]
        assert js["explanation"] == stored_explanation(store_copy, rank)
        assert js["evidence"] and js["evidence"][0]["down_at"].startswith("2026-11-30T03:02:00")
        assert md.startswith(f"# Incident #{rank}: link_flap on link `{FLAP}`")
        assert "- explains 15% of the residual" in md
        # evidence as a table: a header row naming the evidence's keys
        header = next(line for line in md.splitlines() if line.startswith("| ") and
                      "down_at" in line)
        assert header.count("|") >= 3
    assert sorted(p.name for p in work.iterdir()) == sorted(
        [mine.name] + [f"incident-{rank}-{n}.{e}" for n in (1, 2) for e in ("md", "json")])


async def test_j_and_k_move_in_every_table_and_y_copies_the_id_or_the_row(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.screen.query_one("#incidents", DataTable)
        await until(pilot, lambda: table.row_count == 3)
        await pilot.press("j", "j")
        assert table.cursor_row == 2
        await pilot.press("k")
        assert table.cursor_row == 1
        await pilot.press("y")  # the root cause's id of the incident under the cursor
        kind, root = table.get_row_at(1)[1], str(table.get_row_at(1)[2]).split()[-1]
        assert app.clipboard == root and ":" in root
        await pilot.press("Y")
        assert app.clipboard.split("\t")[:2] == [str(table.get_row_at(1)[0]), kind]
        await pilot.press("3")  # the events: k moves up there too (K is the kind filter)
        events = app.screen.query_one("#events", DataTable)
        await until(pilot, lambda: events.row_count > 3)
        await pilot.press("j", "j", "j", "k")
        assert events.cursor_row == 2 and events.row_count > 6  # no kind filter applied
        await pilot.press("1", "slash", *"link_flap", "enter", "enter")
        await until(pilot, lambda: type(app.screen).__name__ == "IncidentScreen" and app.screen.loaded)
        affected = app.screen.query_one("#affected", DataTable)
        await pilot.press("j")
        assert affected.cursor_row == 1
        await pilot.press("k", "y")  # the root cause row: its id
        assert app.clipboard == FLAP
        await pilot.press("4")  # in the SQL editor j and k are typed, not moves
        await until(pilot, lambda: getattr(app.screen, "SCOPE", "") == "sql")
        editor = app.screen.query_one("#editor")
        before = editor.text
        await pilot.press("j", "k")
        assert editor.text != before and "jk" in editor.text


async def test_sql_schema_browser_lists_tables_views_columns_and_inserts_a_name(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_sql(app, pilot)
        tree = app.screen.query_one("#schema", SchemaTree)
        await until(pilot, lambda: len(tree.root.children) == 2)
        tables, views = tree.root.children
        assert str(tables.label).startswith("tables (") and str(views.label).startswith("views (")
        names = {str(n.label): n for n in tables.children}
        assert {"samples", "events", "incidents", "expected_ports"} <= set(names)
        assert {"port_rates", "links"} <= {str(n.label) for n in views.children}
        columns = [n.data for n in names["incidents"].children]
        assert columns[:4] == ["rank", "kind", "root_type", "root_id"]
        editor = app.screen.query_one("#editor", TextArea)
        editor.text = "SELECT * FROM "
        editor.move_cursor((0, len(editor.text)))
        await pilot.press("ctrl+b")  # into the schema: tables, its first table
        assert tree.has_focus
        tree.move_cursor(names["incidents"])
        await pilot.press("enter")
        assert editor.text == "SELECT * FROM incidents" and editor.has_focus
        await pilot.press("ctrl+b", "ctrl+b")  # in, then out: hidden, the editor again
        assert not tree.display and editor.has_focus
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(80, 24)) as pilot:  # narrow: hidden until Ctrl+B
        await open_sql(app, pilot)
        tree = app.screen.query_one("#schema", SchemaTree)
        assert not tree.display
        await pilot.press("ctrl+b")
        assert tree.display and tree.has_focus


async def test_sql_runs_only_the_statement_under_the_cursor(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_sql(app, pilot)
        editor = app.screen.query_one("#editor", TextArea)
        grid = app.screen.query_one(ResultsGrid)
        editor.text = ("SELECT 'first' AS a;\n"
                       "SELECT kind FROM incidents WHERE kind = 'link_flap';  -- the flap\n"
                       "SELECT ';' AS c, 3 AS n")
        editor.move_cursor((1, 10))
        await pilot.press("f5")
        await until(pilot, lambda: grid.row_count == 1 and app.screen.last_sql)
        assert [str(c.label).split()[0] for c in grid.columns.values()] == ["kind"]
        assert str(grid.get_row_at(0)[0]) == "link_flap"
        assert app.screen.last_sql.startswith("SELECT kind") and "first" not in \
            app.screen.last_sql and "AS c" not in app.screen.last_sql
        editor.move_cursor((2, 3))  # the last one, a ';' in its string
        await pilot.press("f5")
        await until(pilot, lambda: [str(c.label).split()[0] for c in grid.columns.values()]
                    == ["c", "n"])
        assert [str(v) for v in grid.get_row_at(0)] == [";", "3"]
        editor.move_cursor((0, 0))
        await pilot.press("ctrl+r")  # all of it: the last statement's result
        await until(pilot, lambda: app.screen.last_sql == editor.text.strip())
    assert statement_at("SELECT 1;\nSELECT 2;\n", 9) == "SELECT 1;"  # just after its ';'
    assert statement_at("SELECT 1;\nSELECT 2;\n", 20) == "SELECT 2;"  # after the last
    assert statement_at("SELEC 1; SELECT 2", 2) == "SELEC 1; SELECT 2"  # unparsable: all


async def test_wjh_drops_show_on_their_port(real_samples, tmp_path, private_state_dir):
    """The real gnmic stream of a Cumulus switch's What Just Happened drops on swp8."""
    from collectors.store.ingest import ingest_bundle
    from collectors.store.writer import Store

    bundle = tmp_path / "bundle" / "gnmi"
    bundle.mkdir(parents=True)
    shutil.copy(real_samples / "gnmi" / "cumulus510-gnmic-json-wjh-swp8-stream.json",
                bundle / "neo-switch01.json")  # the device is the file's name (no LLDP here)
    db = tmp_path / "wjh.duckdb"
    with Store.open(db) as store:
        ingest_bundle(store, bundle.parent, workers=1)
    app = FabtwinApp(str(db))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3")
        events = app.screen.query_one("#events", DataTable)
        await until(pilot, lambda: events.row_count == 2)
        # the events table tells each drop's record, not its JSON
        assert [str(events.get_row_at(r)[4]) for r in range(2)] == [
            "Source MAC is multicast, Error, 283 packets",
            "Source MAC is multicast, Error, 287 packets"]
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == "EntityScreen" and app.screen.loaded)
        assert app.screen.ident == "neo-switch01:swp8"
        drops = app.screen.query_one("#drops", KeyedGrid)
        assert drops.display and drops.row_count == 2
        rows = [[str(c) for c in drops.get_row_at(r)] for r in range(2)]
        assert [r[1:5] for r in rows] == [
            ["neo-switch01:swp8", "287", "Source MAC is multicast", "Error"],
            ["neo-switch01:swp8", "283", "Source MAC is multicast", "Error"]]
        assert rows[0][5:] == ["03-01 18:25:02", "03-01 18:25:32"]  # its aggregation window
        assert "2 drop reports, 570 packets" in str(drops.border_title)


def link_degraded_with_wjh(tmp_path: Path, lines: list[str], sample_stores) -> Path:
    """sample_traces/link_degraded with gnmic WJH `lines` beside it, ingested: the store (a
    copy of the session's ingest of the sample, conftest's `sample_stores`, that the bundle
    is ingested into again: its other files are found unchanged, the WJH file loaded)."""
    from collectors.store.ingest import ingest_bundle
    from collectors.store.writer import Store

    bundle = tmp_path / "link_degraded"
    shutil.copytree(REPO / "sample_traces" / "link_degraded", bundle)
    (bundle / "gnmi" / "wjh.json").write_text("\n".join(lines) + "\n")
    db = sample_stores.copy(sample_stores.ingested("link_degraded"), tmp_path / "s.duckdb")
    with Store.open(db) as store:
        loaded = [f.path for f in ingest_bundle(store, bundle, workers=1).files
                  if f.status == "loaded"]
    assert loaded == ["gnmi/wjh.json"]
    return db


async def test_wjh_drops_on_a_degraded_link_show_on_its_port_as_the_diagnosis_reads_them(
        tmp_path, private_state_dir, sample_stores):
    """The link_degraded sample with the WJH records its switches would stream (test_wjh's
    gnmic lines): the port view of the degraded link's leaf end lists its own L1 drops and a
    buffer drop that names it only as the EgressPort (the event sits on the IngressPort,
    swp1), as replay.wjh counts them for the incident; not the other port's drop."""
    from test_wjh import wjh_line

    app = FabtwinApp(str(link_degraded_with_wjh(tmp_path, [
        wjh_line("leaf-p0-01", "swp7", "03:05:00", "Bad signal integrity", 10021, 120),
        wjh_line("leaf-p0-01", "swp7", "03:06:00", "Bad signal integrity", 10021, 80),
        wjh_line("leaf-p0-01", "swp1", "03:06:30", "Tail drop", 503, 55, "buffer", "swp7"),
        wjh_line("leaf-p0-02", "swp1", "03:05:00", "Tail drop", 503, 9, "buffer", "swp1"),
    ], sample_stores)))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.screen.query("#incidents"))
        app.open_entity("port", "leaf-p0-01:swp7")
        await until(pilot, lambda: type(app.screen).__name__ == "EntityScreen"
                    and app.screen.loaded and app.screen.series is not None)
        drops = app.screen.query_one("#drops", KeyedGrid)
        assert drops.display and drops.row_count == 3
        rows = [[str(c) for c in drops.get_row_at(r)] for r in range(3)]
        assert [r[1:5] for r in rows] == [  # newest first
            ["leaf-p0-01:swp7", "55", "Tail drop", "Error"],
            ["leaf-p0-01:swp7", "80", "Bad signal integrity", "Error"],
            ["leaf-p0-01:swp7", "120", "Bad signal integrity", "Error"]]
        # the port's events tell each drop's record, not its JSON
        events = app.screen.query_one("#events", KeyedGrid)
        told = [str(events.get_row_at(r)[4]) for r in range(events.row_count)]
        assert "Bad signal integrity, Error, 120 packets" in told
        # at 80 columns the packets column is on screen (it came after a 40-column reason)
        header = drops.render_line(0).text
        assert drops.region.width <= 80 and "packets" in header and "reason" in header
        assert "3 drop reports, 255 packets" in str(drops.border_title)
        # at 80x24 the drops, the peers and the events each keep a header and two rows on
        # screen (three 1fr tables of at least 4 rows overflowed: only the peers showed)
        for name in ("#peers", "#events", "#drops"):
            assert lines_on_screen(app, app.screen.query_one(name)) >= 3, name


async def test_a_port_without_drops_hides_the_wjh_table(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_incident(app, pilot, "link_flap")
        await pilot.press("r")
        await until(pilot, lambda: type(app.screen).__name__ == "EntityScreen" and app.screen.loaded)
        drops = app.screen.query_one("#drops", KeyedGrid)
        assert not drops.display and drops.row_count == 0


def test_evidence_table_has_a_column_per_key_and_byte_rates_in_gbps():
    columns, rows = evidence_table([
        {"port": "leaf-p0-01:swp5", "tx_bytes_per_s_peak": 5e10, "ecn_marked_per_s": 25217.0},
        {"port": "leaf-p0-01:swp6", "links": ["a", "b"]}])
    assert columns == ["port", "tx_bytes_per_s_peak", "ecn_marked_per_s", "links"]
    assert rows == [["leaf-p0-01:swp5", "400.0 Gb/s", "25,217/s", ""],
                    ["leaf-p0-01:swp6", "", "", "a, b"]]


async def test_drill_down_of_a_device_overlays_its_uplinks(store_copy):
    import duckdb

    con = duckdb.connect(str(store_copy))
    con.execute("INSERT INTO incidents VALUES (9, 'load_imbalance', 'device', 'leaf-p0-02', "
                "'2026-11-30 03:01:00', '2026-11-30 03:05:00', 0.5, 'planted: uneven uplinks', "
                "'{}')")
    con.close()
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_incident(app, pilot, "load_imbalance")
        await pilot.press("d")
        await until(pilot, lambda: type(app.screen).__name__ == "DrillScreen"
                    and app.screen.lines)
        drill = app.screen
        assert drill.counter_name == KIND_COUNTER["load_imbalance"]
        assert drill.own == [] and drill.peers == [f"leaf-p0-02:swp{i}" for i in (5, 6, 7, 8)]

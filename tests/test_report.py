"""fabtwin report: one self-contained HTML page with the incidents, heatmaps and timelines."""

from __future__ import annotations

import base64
import json
import re
import shutil
from datetime import datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import duckdb
import polars as pl
import pytest
from click.testing import CliRunner
from conftest import REPO

from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store, open_readonly
from fabtwin.cli import main
from fabtwin.report.build import build, write
from fabtwin.report.data import RATE_COLUMNS, frame, summary, timeline, window_seconds

PNG = b"\x89PNG\r\n\x1a\n"


class Page(HTMLParser):
    """The parts of the page the tests read: images, table rows by table class, list items."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.images: list[dict] = []
        self.tables: dict[str, list[list[str]]] = {}
        self.marks: list[tuple[str, str]] = []
        self.external: list[str] = []
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._li: tuple[str, list[str]] | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.images.append(a)
        if tag in ("script", "link", "iframe") or any(
                (v or "").startswith(("http:", "https:", "//")) for k, v in attrs if k in ("src", "href")):
            self.external.append(tag)
        if tag == "table":
            self._table = a.get("class", "")
            self.tables.setdefault(self._table, [])
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "li":
            self._li = (a.get("class", ""), [])

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None
        elif tag == "li" and self._li is not None:
            self.marks.append((self._li[0], "".join(self._li[1])))
            self._li = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._li is not None:
            self._li[1].append(data)


def _truth(name: str) -> list[dict]:
    return json.loads((REPO / "sample_traces" / name / "labels.json").read_text())["faults"]


@pytest.fixture(scope="module")
def investigated(sample_stores) -> dict[str, Path]:
    """Stores of sample bundles after `fabtwin investigate` (replayed, incidents stored), the
    session's (conftest's `sample_stores`): the tests read them or copy them."""
    return {name: sample_stores.investigated(name)
            for name in ("two_faults", "link_down", "link_degraded")}


def _report(db: Path, out: Path, *args: str):
    return CliRunner().invoke(main, ["report", "--db", str(db), "--out", str(out), *args])


@pytest.fixture(scope="module")
def two_faults_report(investigated, tmp_path_factory):
    """`fabtwin report` of a copy of the two_faults store, once for the module: (the store's
    bytes before, the copy, the CLI result, the output folder). The tests only read it."""
    root = tmp_path_factory.mktemp("two_faults_report")
    db = root / "copy.duckdb"
    shutil.copy(investigated["two_faults"], db)
    before = db.read_bytes()
    return before, db, _report(db, root / "r"), root / "r"


def test_two_faults_page_lists_the_labelled_incidents_and_embeds_every_png(two_faults_report):
    _, _, res, out = two_faults_report
    assert res.exit_code == 0, res.output
    page = Page((out / "report.html").read_text())
    rows = page.tables["incidents"][1:]
    got = sorted((r[1], r[2]) for r in rows)
    want = sorted((f["kind"], f"{f['root_cause']['type']} {f['root_cause']['id']}") for f in _truth("two_faults"))
    assert got == want
    assert [r[0] for r in rows] == ["1", "2"]
    assert page.tables["incidents"][0] == ["rank", "kind", "root cause", "start", "end", "score", "summary"]
    # busiest-window heatmap, then a heatmap and a timeline per incident, each also a PNG file
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == ["heatmap-busiest.png", "incident-1-heatmap.png", "incident-1-timeline.png",
                    "incident-2-heatmap.png", "incident-2-timeline.png"]
    assert len(page.images) == len(pngs)
    embedded = sorted(base64.b64decode(i["src"].split(",", 1)[1]) for i in page.images)
    assert embedded == sorted((out / n).read_bytes() for n in pngs)
    assert all(b.startswith(PNG) for b in embedded)
    assert page.external == []  # opens offline: nothing fetched, nothing run
    assert "no replay yet" not in res.output.lower()


@pytest.fixture(scope="module")
def two_faults(investigated):
    return build(investigated["two_faults"])


def test_flapping_link_is_marked_down_in_its_incident_heatmap_and_nothing_else(two_faults):
    rep = two_faults
    flap = next(i for i in rep.incidents if i.kind == "link_flap")
    snap = next(p for p in rep.pictures if p.name == f"incident-{flap.rank}-heatmap.png").snapshot
    down = snap.filter(snap["down_fraction"] > 0)
    assert down["link_id"].to_list() == [flap.root_id]
    assert down["down_fraction"][0] > 0.5  # the window is chosen inside a down time
    assert snap["util"].is_not_null().all()  # every fabric cable has a value


@pytest.mark.parametrize(("name", "mark"), [("link_down", "down"), ("link_degraded", "degraded")])
def test_faulty_link_is_marked_in_its_heatmap_and_listed_under_it(investigated, tmp_path, name, mark):
    rep = build(investigated[name])
    root = _truth(name)[0]["root_cause"]["id"]
    page = Page(write(rep, tmp_path / "r").read_text())
    marked = {text.rsplit(": ", 1)[1] for cls, text in page.marks if cls == mark}
    assert marked == {root}
    snap = next(p for p in rep.pictures if p.name == "incident-1-heatmap.png").snapshot
    col = "degraded" if mark == "degraded" else "down"
    flagged = snap.filter(snap["degraded"]) if col == "degraded" else snap.filter(snap["down_fraction"] > 0)
    assert flagged["link_id"].to_list() == [root]


def test_replayed_store_draws_the_twins_expectation(two_faults):
    rep = two_faults
    assert rep.source == "stored"
    timelines = [p for p in rep.pictures if p.name.endswith("timeline.png")]
    assert timelines and all("twin's expected" in p.caption for p in timelines)
    assert not any("No replay yet" in n for n in rep.notes)


@pytest.fixture(scope="module")
def ingested_only(sample_stores) -> Path:
    return sample_stores.ingested("two_faults")


def test_store_without_diagnosis_draws_the_fabric_and_says_how_to_diagnose(ingested_only, tmp_path):
    res = _report(ingested_only, tmp_path / "r")
    assert res.exit_code == 0, res.output
    html = (tmp_path / "r" / "report.html").read_text()
    assert "No replay yet" in html and "not diagnosed yet" in html and "--diagnose" in html
    page = Page(html)
    assert "incidents" not in page.tables and "Healthy" not in html
    assert [i["alt"] for i in page.images] == [p.title for p in build(ingested_only).pictures]
    assert sorted(p.name for p in (tmp_path / "r").glob("*.png")) == ["heatmap-busiest.png"]


def test_diagnose_flag_runs_the_detectors_read_only_and_says_so(ingested_only, tmp_path):
    before = ingested_only.read_bytes()
    res = _report(ingested_only, tmp_path / "r", "--diagnose")
    assert res.exit_code == 0, res.output
    html = (tmp_path / "r" / "report.html").read_text()
    assert "No replay yet" in html and "computed now by the telemetry detectors" in html
    page = Page(html)
    got = sorted((r[1], r[2].split(" ", 1)[1]) for r in page.tables["incidents"][1:])
    assert got == sorted((f["kind"], f["root_cause"]["id"]) for f in _truth("two_faults"))
    assert len(page.images) == 5
    # each picture's caption, as the page prints it (html.py: <figcaption>): none claims the
    # twin's expectation (there is no replay)
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", html, re.S)
    assert len(captions) == 5 and all("expected" not in c for c in captions)
    assert ingested_only.read_bytes() == before


def test_report_rates_equal_the_port_rates_view(ingested_only):
    # the report reads rates from samples for speed; they must be the view's, reset included
    # (spine-p0-02 reboots in this bundle)
    con = open_readonly(ingested_only)
    s = summary(con)
    devices = ["leaf-p0-02", "spine-p0-01", "spine-p0-02", "gpu-node-0011"]
    mine = timeline(con, devices, s.start, s.end)
    cols = list(RATE_COLUMNS)
    ref = frame(con, f"""SELECT device || ':' || ifname AS port, ts, {', '.join(cols)} FROM port_rates
                         WHERE list_contains($d::VARCHAR[], device)""", {"d": devices})
    con.close()
    assert mine.height == ref.height > 500
    joined = ref.join(mine, on=["port", "ts"], how="left", suffix="_r")
    for c in cols:
        a, b = joined[c], joined[f"{c}_r"]
        assert (a.is_null() == b.is_null()).all(), c
        assert ((a - b).abs() <= 1e-9 * a.abs().clip(lower_bound=1)).all(), c


def test_empty_store_gives_a_page_that_says_so(tmp_path):
    db = tmp_path / "empty.duckdb"
    Store.open(db).close()
    res = _report(db, tmp_path / "r")
    assert res.exit_code == 0, res.output
    html = (tmp_path / "r" / "report.html").read_text()
    assert "holds no telemetry yet" in html and f"fabtwin ingest BUNDLE --db {db}" in html
    page = Page(html)
    assert page.images == [] and "incidents" not in page.tables
    assert list((tmp_path / "r").glob("*.png")) == []


def test_missing_store_or_out_that_is_a_file_exit_2(investigated, tmp_path):
    res = _report(tmp_path / "nope.duckdb", tmp_path / "r")
    assert res.exit_code == 2 and "no such store" in res.output
    assert not (tmp_path / "r").exists()
    (tmp_path / "f").write_text("x")
    res = _report(investigated["two_faults"], tmp_path / "f")
    assert res.exit_code == 2 and "is a file" in res.output


def test_rerun_replaces_its_own_pngs_and_keeps_the_users_files(investigated, tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    (out / "incident-9-timeline.png").write_bytes(PNG)  # left by an earlier, bigger report
    (out / "my-notes.png").write_bytes(PNG)
    res = _report(investigated["two_faults"], out, "--top", "1")
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.glob("*.png")) == [
        "heatmap-busiest.png", "incident-1-heatmap.png", "incident-1-timeline.png", "my-notes.png"]
    assert len(Page((out / "report.html").read_text()).tables["incidents"]) == 3  # header + 2


def test_report_does_not_change_the_store(two_faults_report):
    before, db, res, _ = two_faults_report
    assert res.exit_code == 0, res.output
    assert db.read_bytes() == before


@pytest.mark.parametrize(("span_s", "sample_s", "want"), [
    (600, 10, 15),      # a little over the sample interval: every port has a sample per window
    (3600, 10, 15),
    (86400, 10, 300),   # at most 360 windows
    (600, 1, 2)])
def test_window_is_a_nice_width_over_the_sample_interval(span_s, sample_s, want):
    t0 = datetime(2026, 11, 30, 3)
    assert window_seconds(t0, datetime.fromtimestamp(t0.timestamp() + span_s), sample_s) == want


def test_store_without_cabling_keeps_timelines_and_says_why_no_heatmap(tmp_path):
    bundle = tmp_path / "b"
    shutil.copytree(REPO / "sample_traces" / "two_faults", bundle, ignore=shutil.ignore_patterns("topology"))
    db = tmp_path / "s.duckdb"
    with Store.open(db) as store:
        ingest_bundle(store, bundle)
    rep = build(db, diagnose_now=True)
    assert any(n.startswith("No heatmaps") and "no cabling" in n for n in rep.notes)
    names = [p.name for p in rep.pictures]
    assert names and all(n.endswith("-timeline.png") for n in names)


def test_report_rates_keep_wraps_and_drop_resets_as_the_view(tmp_path):
    # a 32-bit counter that wraps, then resets (a reboot); a 64-bit one that wraps
    t0 = 1_796_007_600_000
    out32 = [4294967000, 4294967200, 100, 50, 150]
    # multiples of 4096: doubles hold them exactly next to 2^64
    out64 = [2**64 - 819200, 2**64 - 409600, 409600, 819200, 1228800]
    lines = []
    for k in range(5):
        ts = t0 + k * 10_000
        lines.append(f'nvswitch_interface_if_out_octets{{instance="leaf-01",interface="swp1"}} '
                     f"{out32[k]} {ts}")
        lines.append(f'nvswitch_interface_if_out_octets{{instance="leaf-01",interface="swp2"}} '
                     f"{out64[k]} {ts}")
    bundle = tmp_path / "b"
    (bundle / "prom").mkdir(parents=True)
    (bundle / "prom" / "leaf-01.prom").write_text("\n".join(lines) + "\n")
    db = tmp_path / "s.duckdb"
    with Store.open(db) as store:
        ingest_bundle(store, bundle, workers=1)
    con = open_readonly(db)
    s = summary(con)
    mine = timeline(con, ["leaf-01"], s.start, s.end).select("port", "ts", "tx_bytes_per_s")
    ref = frame(con, "SELECT device || ':' || ifname AS port, ts, tx_bytes_per_s FROM port_rates")
    con.close()
    got = {(p, t.second): v for p, t, v in mine.sort("port", "ts").iter_rows()}
    assert got == {(p, t.second): v for p, t, v in ref.sort("port", "ts").iter_rows()}
    assert got[("leaf-01:swp1", 20)] == pytest.approx(19.6)  # 100 + 2^32 - 4294967200 in 10 s
    assert got.get(("leaf-01:swp1", 30)) is None  # 100 -> 50: a reset, no rate
    assert got[("leaf-01:swp2", 20)] == pytest.approx(81920.0)  # 409600 + 409600 in 10 s


def test_a_cable_is_down_while_either_end_says_so_in_the_heatmap():
    """Both ends report an outage a little apart: the window's down share is their union (as
    replay.outages.merge_outages), not the longer end's, and apart outages add up."""
    from types import SimpleNamespace

    from fabtwin.report.data import Windows

    con = duckdb.connect()
    t = datetime(2026, 11, 30, 3, 0, 0)
    con.execute("""CREATE TEMP TABLE report_cables AS SELECT * FROM (VALUES
        ('a:1--b:1', 'a:1', 'b:1', 'a', 'b', 0, 1, 1e9),
        ('a:2--b:2', 'a:2', 'b:2', 'a', 'b', 0, 1, 1e9)) AS c(link_id, port_lo, port_hi, dev_lo,
        dev_hi, plane, tier, capacity_Bps)""")
    con.execute("CREATE TEMP TABLE report_port_windows (port VARCHAR, w TIMESTAMP, tx DOUBLE, "
                "rx DOUBLE, errors DOUBLE)")
    s = lambda k: t + timedelta(seconds=k)  # noqa: E731
    con.execute('CREATE TEMP TABLE report_down (port_id VARCHAR, start TIMESTAMP, "end" TIMESTAMP)')
    con.executemany("INSERT INTO report_down VALUES (?, ?, ?)", [
        ("a:1", s(0), s(10)), ("b:1", s(5), s(20)),  # overlapping ends: 20 s, not 15
        ("a:2", s(0), s(5)), ("b:2", s(10), s(15)), ("a:2", s(40), s(50))])  # apart: 10 s in
    win = SimpleNamespace(con=con, width_s=30.0, end=s(60))
    snap = Windows.snapshot(win, t)
    down = dict(zip(snap["link_id"].to_list(), snap["down_fraction"].to_list(), strict=True))
    assert down == pytest.approx({"a:1--b:1": 20 / 30, "a:2--b:2": 10 / 30})


@pytest.fixture(scope="module")
def two_planes(tmp_path_factory) -> Path:
    """A generated 2-plane fabric (16 hosts, 4 leaves x 4 spines per plane), 60 s, ingested."""
    root = tmp_path_factory.mktemp("planes")
    toml = (REPO / "scenarios" / "gen" / "healthy.toml").read_text()
    toml = toml.replace("hosts_per_leaf = 4", "hosts_per_leaf = 4\nplanes = 2").replace(
        "duration_s = 600", "duration_s = 60")
    (root / "two_planes.toml").write_text(toml)
    res = CliRunner().invoke(main, ["generate", str(root / "two_planes.toml"), "--out",
                                    str(root / "bundle")])
    assert res.exit_code == 0, res.output
    db = root / "two_planes.duckdb"
    with Store.open(db) as store:
        ingest_bundle(store, root / "bundle", workers=1)
    return db


def test_busiest_window_draws_one_heatmap_per_plane_with_its_host_links(two_planes, tmp_path):
    res = _report(two_planes, tmp_path / "r")
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in (tmp_path / "r").glob("*.png")) == [
        "heatmap-busiest-plane-0.png", "heatmap-busiest-plane-1.png"]
    rep = build(two_planes)
    busiest = [p for p in rep.pictures if p.rank is None]
    assert [p.name for p in busiest] == ["heatmap-busiest-plane-0.png",
                                         "heatmap-busiest-plane-1.png"]
    for plane, pic in zip(("plane-0", "plane-1"), busiest, strict=True):
        assert pic.snapshot["plane"].unique().to_list() == [plane]
        hosts = pic.snapshot.filter(pl.col("tier") == 0)
        # every host's NIC port on this plane, with its load: 16 host links
        assert hosts.height == 16 and hosts["dev_lo"].str.starts_with("gpu-node-").all()
        assert hosts["util"].drop_nulls().len() == 16 and hosts["util"].max() > 0.1
    # a rerun replaces the per-plane pictures too (its own files)
    (tmp_path / "r" / "mine.png").write_bytes(PNG)
    assert _report(two_planes, tmp_path / "r").exit_code == 0
    assert sorted(p.name for p in (tmp_path / "r").glob("*.png")) == [
        "heatmap-busiest-plane-0.png", "heatmap-busiest-plane-1.png", "mine.png"]


def test_incident_sections_show_evidence_and_impact_as_tables_and_why(investigated,
                                                                      two_faults_report, tmp_path):
    _, _, res, out = two_faults_report
    assert res.exit_code == 0, res.output
    html = (out / "report.html").read_text()
    page = Page(html)
    assert "<details>" not in html and "<pre>" not in html  # no raw JSON
    evidence = page.tables["evidence"]
    assert ["port", "down_at", "up_at", "source"] in evidence  # the flap's rows, a column a key
    assert any(r[:2] == ["spine-p0-01:swp2", "2026-11-30T03:02:00.099Z"] for r in evidence)
    assert ["what", "which"] in page.tables["impact"]
    # what investigate stored (replay/explain.py): each incident's explanation, the root's
    # cells in expected_counters' units
    assert "no explanation stored (run investigate again)" not in html
    assert html.count("of the residual") >= 2 and "chosen as a root cause" in html
    cells = page.tables["explanation"]
    assert cells[0] == ["port", "counter", "window", "observed", "without fault", "with fault"]
    flap = [r for r in cells[1:] if r[0] == "spine-p0-01:swp2" and r[1] == "tx_bytes"]
    assert flap and all(v.endswith(" Gb/s") for r in flap for v in r[3:])
    # a store diagnosed before explanations were stored says so, once per incident
    db = tmp_path / "unexplained.duckdb"
    shutil.copy(investigated["two_faults"], db)
    con = duckdb.connect(str(db))
    con.execute("DELETE FROM incident_explanations")
    con.close()
    assert _report(db, tmp_path / "e").exit_code == 0
    html = (tmp_path / "e" / "report.html").read_text()
    assert html.count("no explanation stored (run investigate again)") == 2
    assert "explanation" not in Page(html).tables

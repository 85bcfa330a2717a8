"""The TUI's queries, plot and SQL fences, without Textual: known answers from two_faults."""

from __future__ import annotations

import csv
import shutil
from datetime import datetime, timedelta

import duckdb
import pyarrow.parquet as pq
import pytest

from collectors.store.query import QueryRefused
from fabtwin.tui.data import Series, StoreData
from fabtwin.tui.plot import render_plot
from fabtwin.tui.sqlrun import export, start_query

pytest_plugins = ["tui_fixtures"]  # the stores these tests open

FLAP = "leaf-p0-02:swp5--spine-p0-01:swp2"  # two_faults' flapping link (labels.json)
FLAP_DOWN = datetime(2026, 11, 30, 3, 2, 0, 179000)  # leaf-p0-02 swp5's first link_down event


def test_prepare_bundle_stores_investigates_incidents(two_faults_db):
    data = StoreData(two_faults_db)
    incidents = {(i.kind, i.root_id) for i in data.incidents()}
    assert ("link_flap", FLAP) in incidents
    assert ("pfc_storm", "gpu-node-0011:eth0") in incidents
    assert data.evidence(1), "evidence rows of incident 1"


def test_heatmap_marks_the_flapped_link_down_only_while_it_flaps(two_faults_db):
    data = StoreData(two_faults_db)
    windows, length = data.windows()
    during = max(w for w in windows if w <= FLAP_DOWN)
    before = max(w for w in windows if w <= datetime(2026, 11, 30, 3, 0, 30))  # a full window
    assert before + timedelta(seconds=length) < FLAP_DOWN
    (hm,) = data.heatmaps(during, length)
    r, k = hm.leaves.index("leaf-p0-02"), hm.spines.index("spine-p0-01")
    assert hm.links[r][k] == FLAP
    assert hm.state[r][k] == "down"
    assert sum(s == "down" for row in hm.state for s in row) == 1
    (hm0,) = data.heatmaps(before, length)
    assert hm0.state[r][k] == ""
    # every leaf-spine cable of the 4x4 plane carries traffic: a utilization in (0, 1]
    assert all(u is not None and 0 < u <= 1 for row in hm0.util for u in row)


def _flap_window(data: StoreData) -> tuple[datetime, datetime, float]:
    """The replay window holding the first flap, a full window before the flaps, its length."""
    windows, length = data.windows()
    return (max(w for w in windows if w <= FLAP_DOWN),
            max(w for w in windows if w <= datetime(2026, 11, 30, 3, 0, 30)), length)


def test_heatmap_reads_the_same_outages_from_the_replay_as_from_the_counters(two_faults_db,
                                                                           tmp_path):
    replayed = StoreData(two_faults_db)
    during, before, length = _flap_window(replayed)
    bare = tmp_path / "no_replay.duckdb"  # the same store, never replayed
    shutil.copy(two_faults_db, bare)
    with duckdb.connect(str(bare)) as con:
        con.execute("DELETE FROM expected_ports")
    counted = StoreData(bare)
    for t0 in (during, before):
        (a,), (b,) = replayed.heatmaps(t0, length), counted.heatmaps(t0, length)
        assert a.state == b.state and a.links == b.links
    assert sum(s == "down" for row in a.state for s in row) == 0  # before: all up
    for ra, rb in zip(a.util, b.util, strict=True):  # steady load: window averages and
        assert ra == pytest.approx(rb, rel=0.05)  # counter deltas agree


def test_heatmap_marks_degraded_cables_from_rising_errors_and_from_the_diagnosis(
        two_faults_db, tmp_path):
    _, before, length = _flap_window(StoreData(two_faults_db))
    db = tmp_path / "errors.duckdb"
    shutil.copy(two_faults_db, db)
    noisy, diagnosed = "leaf-p0-01:swp5--spine-p0-01:swp1", "leaf-p0-03:swp5--spine-p0-01:swp3"
    with duckdb.connect(str(db)) as con:
        for i, value in enumerate((10.0, 10.0, 250.0)):  # FCS errors rise inside the window
            con.execute("INSERT INTO samples (ts, device, ifname, counter, metric, qualifier, value) "
                        "VALUES (?, 'leaf-p0-01', 'swp5', 'rx_fcs_errors', 'in-fcs', 'planted', ?)",
                        [before + timedelta(seconds=5 + 20 * i), value])
        con.execute("INSERT INTO incidents VALUES (9, 'link_degraded', 'link', ?, ?, ?, 0.5, "
                    "'planted', '{}')", [diagnosed, before - timedelta(minutes=1),
                                         before + timedelta(minutes=5)])
    data = StoreData(db)
    (fast,) = data.heatmaps(before, length, errors=False)
    (full,) = data.heatmaps(before, length)

    def degraded(hm):
        return {hm.links[r][k] for r, row in enumerate(hm.state) for k, s in enumerate(row)
                if s == "degraded"}

    assert degraded(fast) == {diagnosed}  # no scan of the counters: the diagnosis only
    assert degraded(full) == {diagnosed, noisy}
    assert data.rising_errors(before, before + timedelta(seconds=length)) == {"leaf-p0-01:swp5"}
    later = before + timedelta(minutes=10)  # the incident is over, the errors stopped rising
    assert degraded(data.heatmaps(later, length)[0]) == set()


def test_port_series_rate_is_the_counter_delta_over_time(two_faults_db):
    data = StoreData(two_faults_db)
    series = data.port_series(["gpu-node-0011:eth0"], "tx_pause_per_s")
    con = duckdb.connect(str(two_faults_db), read_only=True)
    (metric,) = con.execute(
        "SELECT metric FROM samples WHERE device = 'gpu-node-0011' AND ifname = 'eth0' "
        "AND counter = 'tx_pause' GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1").fetchone()
    rows = con.execute(
        "SELECT ts, sum(value) FROM samples WHERE device = 'gpu-node-0011' AND ifname = 'eth0' "
        "AND metric = ? GROUP BY 1 ORDER BY 1", [metric]).fetchall()
    con.close()
    (t0, v0), (t1, v1) = rows[10], rows[11]
    expected = (v1 - v0) / (t1 - t0).total_seconds()
    period = 10  # the host's sampling period: the series' time buckets
    bucket = t1.replace(second=t1.second // period * period, microsecond=0)
    got = dict(zip(series.ts, series.observed, strict=True))[bucket]
    assert got == pytest.approx(expected, rel=1e-9)
    # the storm: the peak rate is the detector's peak
    assert max(v for v in series.observed if v is not None) > 20_000


def test_device_series_sums_its_ports_sampled_at_different_instants(two_faults_db):
    data = StoreData(two_faults_db)
    ports = data.entity_ports("device", "spine-p0-03")
    total = data.port_series(ports, "tx_bytes_per_s")
    each = [data.port_series([p], "tx_bytes_per_s") for p in ports]
    # the ports' own means add up to the device's mean (no bucket left with one port only)
    mean = lambda s: sum(s.observed) / len(s.observed)  # noqa: E731
    assert mean(total) == pytest.approx(sum(mean(s) for s in each), rel=0.05)


def test_events_filter_by_device_and_kind(two_faults_db):
    data = StoreData(two_faults_db)
    everything = data.events()
    downs = data.events(kind="link_down")
    assert downs and all(r[3] == "link_down" for r in downs)
    spine = data.events(device="spine")
    assert spine and all("spine" in r[1] for r in spine)
    assert len(everything) == len(data.events(kind="")) > len(downs)
    assert "job_start" in {r[3] for r in everything}
    assert [r[0] for r in everything] == sorted(r[0] for r in everything)


def test_empty_store_answers_empty(empty_db):
    data = StoreData(empty_db)
    assert data.incidents() == [] and data.events() == [] and data.heatmaps(
        datetime(2026, 1, 1), 60) == []
    assert data.windows() == ([], 0.0)
    assert data.fabric() is None and "no cabling" in data.fabric_error
    assert data.replay_status().startswith("no replay yet")


@pytest.mark.parametrize("sql", [
    "INSERT INTO incidents SELECT * FROM incidents",
    "COPY samples TO '/tmp/x.csv'",
    "ATTACH '/tmp/other.duckdb'",
    "SELECT * FROM read_csv('/etc/passwd')",
    "DROP TABLE samples",
])
def test_console_refuses_writes_and_file_access(two_faults_db, sql):
    data = StoreData(two_faults_db)
    with pytest.raises(QueryRefused):
        cur, reader = start_query(data.con, sql)
        reader.read_all()
        cur.close()


def test_console_pages_lazily_and_exports_the_whole_result(two_faults_db, tmp_path):
    data = StoreData(two_faults_db)
    cur, reader = start_query(data.con, "SELECT range AS n FROM range(1000000)", batch_rows=500)
    assert reader.read_next_batch().num_rows == 500
    cur.close()
    n = export(data.con, "SELECT range AS n, range * 2 AS twice FROM range(100000)",
               str(tmp_path / "r.parquet"))
    table = pq.read_table(tmp_path / "r.parquet")
    assert n == table.num_rows == 100_000 and table.column("twice")[99_999].as_py() == 199_998
    n = export(data.con, "SELECT kind, root_id FROM incidents ORDER BY rank", str(tmp_path / "r.csv"))
    with open(tmp_path / "r.csv") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["kind", "root_id"] and len(rows) == n + 1 and rows[1][1] == FLAP
    with pytest.raises(ValueError):
        export(data.con, "SELECT 1", str(tmp_path / "r.txt"))


def test_plot_marks_the_fault_window_and_the_expectation():
    t0 = datetime(2026, 1, 1)
    ts = [t0 + timedelta(seconds=10 * i) for i in range(100)]
    obs = [0.0 if 40 <= i < 60 else 12.5e9 for i in range(100)]  # 100 Gb/s
    series = Series("tx_bytes_per_s", ts, obs, [ts[0], ts[50]], [12.5e9, 6.25e9])
    text = render_plot(series, width=110, height=8, fault=(ts[40], ts[59])).plain
    axis = next(line for line in text.splitlines() if "└" in line)
    marked = axis.count("▀")
    assert 0.17 * 100 <= marked <= 0.23 * 100  # 20% of the time axis, 100 columns
    assert "━" in text and "expected (twin)" in text and "fault window" in text
    top_row = text.splitlines()[0]
    assert top_row.strip().startswith("100.0│")  # the y axis tops at the largest, in Gb/s


def test_tui_command_fails_in_one_line_without_a_store(tmp_path):
    from click.testing import CliRunner

    from fabtwin.cli import main

    missing = tmp_path / "none.duckdb"
    out = CliRunner().invoke(main, ["tui", "--db", str(missing)])
    assert out.exit_code == 2 and "no such store" in out.output
    out = CliRunner().invoke(main, ["tui", str(tmp_path / "no_bundle"), "--db", str(missing)])
    assert out.exit_code == 2 and "fabtwin: error:" in out.output


def test_palette_offers_names_holding_the_query_first_then_its_letters_in_order():
    from fabtwin.tui.palette import EntitiesProvider

    provider = EntitiesProvider.__new__(EntitiesProvider)  # no app: the matching alone
    names = [f"leaf-p{p}-{n:02d}:swp{s}" for p in (0, 1) for n in range(1, 65) for s in (1, 2)]
    provider._entities = [("port", n, f"open port {n}") for n in names]
    provider._lower = [t.lower() for _, _, t in provider._entities]
    hits = [ident for _, ident, _ in provider._candidates("P1-07:SWP")]
    assert hits == ["leaf-p1-07:swp1", "leaf-p1-07:swp2"]  # case folded, substring only
    spread = [ident for _, ident, _ in provider._candidates("p1-07s2")]  # letters in order
    assert spread == ["leaf-p1-07:swp2"]
    many = provider._candidates("leaf")
    assert len(many) == EntitiesProvider.MAX_HITS  # 256 names hold it: the first hundred


def test_a_devices_ports_include_the_cables_only_their_other_end_reports(tmp_path):
    """containerlab lists each cable once (`h1:eth0 -- leaf1:swp1`) and a host's LLDP names the
    leaf as its peer: the leaf's drill-down lists that port too, not only leaf1:swp9."""
    from collectors.store.ingest import ingest_bundle
    from collectors.store.writer import Store

    (tmp_path / "b" / "topology").mkdir(parents=True)
    (tmp_path / "b" / "topology" / "lab.clab.yml").write_text(
        "name: lab\ntopology:\n  nodes:\n    h1: {}\n    leaf1: {}\n    spine1: {}\n  links:\n"
        '    - endpoints: ["h1:eth0", "leaf1:swp1"]\n'
        '    - endpoints: ["leaf1:swp9", "spine1:swp1"]\n')
    with Store.open(tmp_path / "s.duckdb") as store:
        ingest_bundle(store, tmp_path / "b", workers=1)
    data = StoreData(tmp_path / "s.duckdb")
    assert data.entity_ports("device", "leaf1") == ["leaf1:swp1", "leaf1:swp9"]
    assert data.entity_ports("device", "spine1") == ["spine1:swp1"]

"""The Parquet lake: export, queries over it, ingest into it, and its plain hive layout."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from collectors.store.ingest import ingest_bundle
from collectors.store.lake import (
    PARTITIONED,
    TABLES,
    LakeError,
    export,
    open_for_ingest,
    read_manifest,
)
from collectors.store.writer import Store, open_readonly
from fabtwin.cli import main

REPO = Path(__file__).resolve().parents[1]
MIDNIGHT = 1_767_225_600  # 2026-01-01T00:00:00Z
VIEWS = ("port_rates", "link_state_intervals", "links", "counter_rates", "link_state_changes",
         "devices", "ports", "port_gauges", "preferred_metrics", "unmapped_metrics")


def _midnight_bundle(root: Path) -> Path:
    """Counters either side of midnight, from a device whose name needs escaping in a path."""
    rows = [f"{MIDNIGHT - 300 + 60 * i},{dev},swp1,rx_bytes,{1000 * i * (k + 1)}"
            for i in range(10) for k, dev in enumerate(("leaf-01", "sw/odd=1 %x"))]
    (root / "midnight").mkdir(parents=True)
    (root / "midnight" / "c.csv").write_text("ts,device,ifname,counter,value\n" + "\n".join(rows) + "\n")
    return root / "midnight"


@pytest.fixture(scope="module")
def store_and_lake(tmp_path_factory, sample_stores) -> tuple[Path, Path]:
    """A store with two sample bundles, a two-day bundle and replay rows; and its export (the
    store: a copy of the session's two_faults ingest, the two-day bundle ingested after it)."""
    root = tmp_path_factory.mktemp("lake")
    db = sample_stores.copy(sample_stores.ingested("two_faults"), root / "s.duckdb")
    with Store.open(db) as s:
        ingest_bundle(s, _midnight_bundle(root))
        s.con.execute("INSERT INTO replay_runs VALUES (TIMESTAMP '2026-11-30 04:00:00', "
                      "TIMESTAMP '2026-11-30 03:00:00', TIMESTAMP '2026-11-30 03:10:00', 10, 60, 1, 2, "
                      "96, 'ar', 'ok', NULL)")
        s.con.execute("INSERT INTO incidents VALUES (1, 'link_flap', 'link', 'a:swp1--b:swp2', "
                      "TIMESTAMP '2026-11-30 03:05:00', NULL, 0.9, 'flapped', '{\"jobs\": []}')")
        s.con.execute("INSERT INTO incident_evidence VALUES (1, 0, '{\"k\": 1}'), (1, 1, '{\"k\": 2}')")
        s.con.execute("INSERT INTO expected_ports (window_start, window_end, port_id, device, "
                      "ifname, link_id, peer_port, plane, tier, capacity_bytes_per_s, up_fraction, "
                      "expected_tx_bytes_per_s, observed_tx_bytes_per_s, expected_rx_bytes_per_s, "
                      "observed_rx_bytes_per_s) SELECT TIMESTAMP '2026-11-30 03:00:00', "
                      "TIMESTAMP '2026-11-30 03:00:10', port_a, device_a, 'swp1', link_id, port_b, "
                      "'p0', 1, 5e10, 1.0, 1e9, 1.1e9, 2e9, 1.9e9 FROM links")
    export(db, root / "lake")
    return db, root / "lake"


def _rows(con: duckdb.DuckDBPyConnection, relation: str, drop: tuple[str, ...] = ()) -> pl.DataFrame:
    df = pl.from_arrow(con.sql(f"SELECT * FROM {relation}").to_arrow_table()).drop(drop)
    return df.sort(df.columns, nulls_last=True)


@pytest.mark.parametrize("relation", TABLES + VIEWS)
def test_lake_answers_every_table_and_view_like_the_store(store_and_lake, relation):
    db, lake = store_and_lake
    a, b = open_readonly(db), open_readonly(lake)
    try:
        want, got = _rows(a, relation), _rows(b, relation)
    finally:
        a.close()
        b.close()
    assert got.schema == want.schema
    assert got.equals(want, null_equal=True)
    if relation in ("samples", "port_rates", "links", "files", "incidents", "expected_ports"):
        assert want.height > 0  # the comparison covered real rows


def test_partitioned_tables_use_plain_hive_paths_by_day_and_device(store_and_lake):
    _, lake = store_and_lake
    doc = read_manifest(lake)
    files = doc["tables"]["samples"]["files"]
    assert all(re.fullmatch(r"samples/day=\d{4}-\d{2}-\d{2}/device=[^/]+/export-\d+\.parquet", f)
               for f in files)
    assert {"samples/day=2025-12-31/device=sw%2Fodd%3D1%20%25x/export-0.parquet",
            "samples/day=2026-01-01/device=sw%2Fodd%3D1%20%25x/export-0.parquet"} <= set(files)
    for table in TABLES:
        assert doc["tables"][table]["partitioned"] == (table in PARTITIONED)
        assert all((lake / f).is_file() for f in doc["tables"][table]["files"])


def test_a_plain_hive_reader_sees_the_same_samples(store_and_lake):
    """What Spark or Trino do with the directory: hive partitions from the paths, no manifest."""
    db, lake = store_and_lake
    table = ds.dataset(lake / "samples", format="parquet", partitioning="hive").to_table()
    got = pl.from_arrow(table).group_by("device").len().sort("device")
    con = duckdb.connect(str(db), read_only=True)
    want = pl.from_arrow(con.sql("SELECT device, count(*)::UINT32 AS len FROM samples "
                                     "GROUP BY 1").to_arrow_table()).sort("device")
    con.close()
    assert got.equals(want)
    assert "sw/odd=1 %x" in got["device"].to_list()


def test_manifest_counts_rows(store_and_lake):
    db, lake = store_and_lake
    con = duckdb.connect(str(db), read_only=True)
    doc = read_manifest(lake)
    for table in TABLES:
        assert doc["tables"][table]["rows"] == con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    con.close()


def _ingest_lake(lake: Path, bundle: Path) -> dict:
    with open_for_ingest(lake) as s:
        return ingest_bundle(s, bundle).as_json()


def test_ingest_into_a_lake_equals_ingest_into_a_store_and_is_idempotent(sample_stores, tmp_path):
    # bundles whose series do not overlap in time: counter_rates orders each series by ts, so
    # two samples of one series at one instant (two_faults after link_down) rate in any order
    bundles = [REPO / "sample_traces" / "link_down", _midnight_bundle(tmp_path)]
    lake = tmp_path / "lake"
    lake.mkdir()
    # the store: the session's link_down ingest, the next bundle in a second store session (as
    # the lake gets each bundle in an ingest of its own: their file ids must agree)
    db = sample_stores.copy(sample_stores.ingested("link_down"), tmp_path / "s.duckdb")
    with Store.open(db) as s:
        for b in bundles[1:]:
            ingest_bundle(s, b)
    first = _ingest_lake(lake, bundles[0])
    again = _ingest_lake(lake, bundles[0])
    assert first["files_loaded"] == 83 and again["files_loaded"] == 0
    assert again["files_unchanged"] == 83
    def appended() -> set[Path]:  # counters and counter_map are replaced whole by each ingest
        return {p for p in lake.rglob("*.parquet")
                if p.relative_to(lake).parts[0] not in ("counters", "counter_map")}

    files_after_repeat = appended()
    for b in bundles[1:]:
        _ingest_lake(lake, b)
    # a strict subset: the next bundle adds files and leaves every earlier one in place
    assert files_after_repeat < appended()
    a, b = open_readonly(tmp_path / "s.duckdb"), open_readonly(lake)
    for relation in (*TABLES, "port_rates", "link_state_intervals", "links"):
        drop = ("ingested_at",) if relation == "files" else ()
        assert _rows(b, relation, drop).equals(_rows(a, relation, drop), null_equal=True), relation
    a.close()
    b.close()


def test_files_a_crashed_ingest_left_are_invisible_then_removed(store_and_lake, tmp_path):
    _, exported = store_and_lake
    lake = tmp_path / "lake"
    shutil.copytree(exported, lake)
    stray = lake / "samples" / "day=2026-11-30" / "device=leaf-p0-01" / "ingest-crashed-0.parquet"
    shutil.copy(next(stray.parent.glob("*.parquet")), stray)
    con = open_readonly(lake)
    before = con.execute("SELECT count(*) FROM samples").fetchone()[0]
    con.close()
    assert before == read_manifest(lake)["tables"]["samples"]["rows"]
    _ingest_lake(lake, REPO / "sample_traces" / "two_faults")  # nothing new: all unchanged
    assert not stray.exists()


def test_lake_reads_are_fenced_to_the_lake(store_and_lake):
    db, lake = store_and_lake
    con = open_readonly(lake)
    with pytest.raises(duckdb.PermissionException):
        con.execute(f"SELECT * FROM read_blob('{db}')").fetchall()
    with pytest.raises(duckdb.Error):
        con.execute("SET enable_external_access = true")
    con.close()


def test_a_second_writer_is_refused(tmp_path):
    lake = tmp_path / "lake"
    lake.mkdir()
    with open_for_ingest(lake), pytest.raises(LakeError, match="another ingest"):  # noqa: SIM117
        with open_for_ingest(lake):
            pass


def test_cli_export_then_sql_and_ingest_on_the_folder(store_and_lake, tmp_path):
    db, _ = store_and_lake
    lake = tmp_path / "out"
    run = CliRunner().invoke
    out = run(main, ["export", "--db", str(db), "--out", str(lake)])
    assert out.exit_code == 0, out.output
    assert "samples" in out.output and "(day, device)" in out.output
    q = "SELECT count(*) AS n FROM port_rates"
    a = run(main, ["sql", q, "--db", str(db), "--format", "json"])
    b = run(main, ["sql", q, "--db", str(lake), "--format", "json"])
    assert a.exit_code == b.exit_code == 0 and json.loads(a.output) == json.loads(b.output)
    assert json.loads(a.output)[0]["n"] > 0
    again = run(main, ["ingest", str(REPO / "sample_traces" / "two_faults"), "--db", str(lake), "--json"])
    assert again.exit_code == 0, again.output
    summary = json.loads(again.output)
    assert summary["files_loaded"] == 0 and summary["store"]["samples"] == read_manifest(lake)[
        "tables"]["samples"]["rows"]
    refused = run(main, ["export", "--db", str(db), "--out", str(lake)])
    assert refused.exit_code == 2 and "not an empty directory" in refused.output


def test_investigate_into_a_new_lake_gives_the_incidents_of_a_store(sample_stores, tmp_path):
    bundle = REPO / "sample_traces" / "link_down"
    lake = tmp_path / "lake"
    lake.mkdir()  # empty: becomes a lake; its first replay once failed on the empty result tables
    into_lake = CliRunner().invoke(main, ["investigate", str(bundle), "--db", str(lake), "-q", "--json"])
    # into a store file: investigate's document, as `investigate --json` prints it (the
    # session's: conftest's `sample_stores`)
    into_file = json.dumps(sample_stores.document("link_down"), default=str)
    assert into_lake.exit_code == 5, into_lake.output
    assert (lake / "lake.json").is_file()
    strip = lambda out: [{k: i[k] for k in ("kind", "root_cause", "start", "end", "score")}  # noqa: E731
                         for i in json.loads(out)["incidents"]]
    assert strip(into_lake.stdout) == strip(into_file) != []


def test_ingest_refuses_a_folder_that_is_neither_empty_nor_a_lake(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("the user's own file\n")
    out = CliRunner().invoke(main, ["ingest", str(REPO / "sample_traces" / "link_down"),
                                    "--db", str(folder), "-q"])
    assert out.exit_code == 2
    assert "neither empty nor a fabtwin lake" in out.stderr and "\n" not in out.stderr.strip()
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]  # nothing written


def _catalog(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    """(relation, column, type) as DuckDB's catalog declares them, and as a query binds them."""
    declared = con.execute("SELECT table_name, column_name, data_type FROM duckdb_columns() "
                           "WHERE NOT internal ORDER BY table_name, column_index").fetchall()
    bound = [(r, *d[:2]) for r in TABLES + VIEWS for d in con.execute(f"DESCRIBE {r}").fetchall()]
    return declared + bound


def test_lake_views_rebind(store_and_lake):
    """A lake's store views are created over the empty schema tables, before those become views
    over Parquet (lakeread.lake_connection): what the catalog declares and what a query binds
    are still the store's, column for column."""
    db, lake = store_and_lake
    a, b = open_readonly(db), open_readonly(lake)
    try:
        assert _catalog(b) == _catalog(a)
    finally:
        a.close()
        b.close()


def test_a_column_the_files_lack_reads_as_null_of_the_schema_type(store_and_lake, tmp_path):
    """Parquet written before the schema gained a column (files.time_source): the lake's view
    still has it, in the schema's place and type, NULL; the other columns read the files."""
    _, lake = store_and_lake
    copy = tmp_path / "old"
    shutil.copytree(lake, copy)
    for f in read_manifest(copy)["tables"]["files"]["files"]:
        t = pq.read_table(copy / f)
        pq.write_table(t.drop_columns(["time_source"]), copy / f)
    want, got = open_readonly(lake), open_readonly(copy)
    try:
        assert _catalog(got) == _catalog(want)
        assert got.execute("SELECT count(*) FROM files WHERE time_source IS NOT NULL").fetchall() == [(0,)]
        assert _rows(got, "files", ("time_source",)).equals(_rows(want, "files", ("time_source",)))
        assert _rows(want, "files").height > 0
    finally:
        want.close()
        got.close()

"""fabtwin replay: the twin's expected per-port load against the observed, window by window."""

from __future__ import annotations

import json
import shutil
from datetime import datetime

import duckdb
import numpy as np
import pytest
from click.testing import CliRunner
from conftest import REPO

from collectors.store.writer import Store
from fabtwin.cli import main
from replay.detectors import find_load_imbalance
from replay.expected import _expected, replay
from replay.investigate import investigate
from twin.topology import FabricSpec, build


@pytest.fixture(scope="module")
def stores(tmp_path_factory, sample_stores) -> dict[str, str]:
    """One replayed store per gallery bundle that the tests read (a copy of the session's
    ingest of it, replayed)."""
    out = {}
    for name in ("healthy", "link_down", "load_imbalance"):
        db = str(sample_stores.copy(sample_stores.ingested(name),
                                    tmp_path_factory.mktemp(name) / "s.duckdb"))
        with Store.open(db) as store:
            replay(store.con)
        out[name] = db
    return out


def _con(db: str) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(db, read_only=True)


def test_gravity_routing_known_answer():
    # 2 leaves x 4 hosts, 4 spines: leaf 0's hosts send 8 GB/s each, leaf 1's receive them
    f = build(FabricSpec(hosts=8, leaf_radix=8, spine_radix=8, hosts_per_leaf=4))
    n_win = 2
    on_leaf0 = f.ep_leaf == f.ep_leaf[0]
    tx = np.where(on_leaf0, 8e9, 0.0)[:, None].repeat(n_win, 1)
    rx = np.where(on_leaf0, 0.0, 8e9)[:, None].repeat(n_win, 1)
    groups = np.zeros((len(f.ep_host), n_win), dtype=np.int64)
    nan = np.full((2 * f.n_cables, n_win), np.nan)  # no switch telemetry: the hosts' view only
    up = np.ones((f.n_cables, n_win))
    exp_tx, exp_rx = _expected(f, up, tx, rx, groups, nan, nan, "ar")
    uplinks = np.flatnonzero((f.cable_tier == 1) & (f.cable_a == f.ep_leaf[0]))
    down_to_1 = np.flatnonzero((f.cable_tier == 1) & (f.cable_a != f.ep_leaf[0]))
    assert len(uplinks) == 4
    np.testing.assert_allclose(exp_tx[uplinks], 32e9 / 4)  # 4 x 8 GB/s over 4 uplinks
    np.testing.assert_allclose(exp_rx[down_to_1], 32e9 / 4)  # and down to leaf 1
    np.testing.assert_allclose(exp_rx[uplinks], 0, atol=1e-6)
    # one uplink of leaf 0 down for half of window 1: it carries half its share there
    up[uplinks[0], 1] = 0.5
    exp_tx, _ = _expected(f, up, tx, rx, groups, nan, nan, "ar")
    np.testing.assert_allclose(exp_tx[uplinks[0]], [8e9, 4e9])
    np.testing.assert_allclose(exp_tx[uplinks, 1].sum(), 32e9)  # the rest took the other half
    # receivers expect what the senders sent, in proportion to what each received
    host_rx_port = f.ep_cable[~on_leaf0]
    np.testing.assert_allclose(exp_rx[host_rx_port], 8e9)


def test_healthy_fabric_carries_what_the_twin_expects(stores):
    con = _con(stores["healthy"])
    status, windows = con.execute("SELECT status, windows FROM replay_runs").fetchone()
    assert status == "ok" and windows >= 10
    ratio = np.array([r[0] for r in con.execute("""
        SELECT observed_tx_bytes_per_s / expected_tx_bytes_per_s FROM expected_ports
        WHERE tier = 1 AND expected_tx_bytes_per_s > 1e8
          AND observed_tx_bytes_per_s IS NOT NULL""").fetchall()])
    assert len(ratio) > 100
    assert abs(np.median(ratio) - 1) < 0.01 and np.percentile(np.abs(ratio - 1), 95) < 0.05


def test_expected_uplink_load_conserves_each_leafs_outflow(stores):
    con = _con(stores["link_down"])
    rows = con.execute("""
        SELECT device, window_start, sum(expected_tx_bytes_per_s), sum(observed_tx_bytes_per_s)
        FROM expected_ports WHERE tier = 1 AND uplink AND observed_tx_bytes_per_s IS NOT NULL
        GROUP BY ALL HAVING count(*) = 4""").fetchall()
    assert len(rows) > 20
    for _, _, expected, observed in rows:
        assert expected == pytest.approx(observed, rel=1e-6)


def test_a_down_link_is_expected_to_carry_nothing_and_its_peers_take_its_share(stores):
    con = _con(stores["link_down"])
    link = json.loads((REPO / "sample_traces/link_down/labels.json").read_text())["faults"][0][
        "root_cause"]["id"]
    rows = con.execute("""
        SELECT window_start, up_fraction, expected_tx_bytes_per_s, observed_tx_bytes_per_s
        FROM expected_ports WHERE link_id = ? AND uplink ORDER BY window_start""",
                       [link]).fetchall()
    down = [r for r in rows if r[1] == 0.0]
    assert len(down) >= 4
    assert all(r[2] == 0.0 and (r[3] or 0.0) < 1e6 for r in down)
    leaf = link.split("--")[0].split(":")[0]
    peers = con.execute("""
        SELECT e.window_start, list(e.expected_tx_bytes_per_s), sum(e.observed_tx_bytes_per_s)
        FROM expected_ports e JOIN (SELECT window_start FROM expected_ports
                                    WHERE link_id = ? AND uplink AND up_fraction = 0) USING (window_start)
        WHERE e.device = ? AND e.tier = 1 AND e.uplink AND e.link_id <> ? GROUP BY 1""",
                        [link, leaf, link]).fetchall()
    assert len(peers) == len(down)
    for _, expected, observed in peers:  # 3 uplinks share evenly what 4 carried
        assert len(expected) == 3 and max(expected) == pytest.approx(min(expected), rel=1e-9)
        if observed is not None:  # the last, partial window may hold no sample
            assert sum(expected) == pytest.approx(observed, rel=1e-6)


def test_residuals_point_at_the_leaf_left_in_ecmp(stores):
    con = _con(stores["load_imbalance"])
    spread = dict(con.execute("""
        SELECT device, avg(abs(observed_tx_bytes_per_s / expected_tx_bytes_per_s - 1))
        FROM expected_ports WHERE tier = 1 AND uplink GROUP BY device""").fetchall())
    worst = max(spread, key=spread.get)
    assert worst == "leaf-p0-02"
    assert spread[worst] > 5 * sorted(spread.values())[len(spread) // 2]
    found = find_load_imbalance(con)
    assert [i.root_id for i in found] == ["leaf-p0-02"]
    assert found[0].evidence[0]["basis"] == "observed/expected"


def test_replay_command_windows_and_json(two_faults, tmp_path):
    db = tmp_path / "s.duckdb"
    shutil.copy(two_faults, db)
    out = CliRunner().invoke(main, ["replay", "--db", str(db), "--from", "2026-11-30T03:01:00Z",
                                    "--to", "2026-11-30T03:09:00Z", "--window", "30", "--json"])
    assert out.exit_code == 5, out.output  # incidents found
    doc = json.loads(out.stdout)
    assert doc["replay"]["windows"] == 16 and doc["replay"]["window_s"] == 30
    assert [i["kind"] for i in doc["incidents"]] == ["link_flap", "pfc_storm"]
    con = _con(str(db))
    lo, hi, n = con.execute("SELECT min(window_start), max(window_end), count(DISTINCT window_start) "
                            "FROM expected_ports").fetchone()
    assert (lo, hi, n) == (datetime(2026, 11, 30, 3, 1), datetime(2026, 11, 30, 3, 9), 16)
    stored = con.execute("SELECT kind, root_id FROM incidents ORDER BY rank").fetchall()
    assert stored == [(i["kind"], i["root_cause"]["id"]) for i in doc["incidents"]]


@pytest.fixture(scope="module")
def two_faults(sample_stores) -> str:
    """sample_traces/two_faults after investigate(), once for the session (conftest's
    `sample_stores`): the tests read it or copy it."""
    return str(sample_stores.investigated("two_faults"))


def test_investigate_stores_incidents_and_evidence(two_faults):
    db = two_faults
    con = _con(db)
    incidents = con.execute("SELECT rank, kind, root_type, root_id, score, impact FROM incidents "
                            "ORDER BY rank").fetchall()
    assert [r[1] for r in incidents] == ["link_flap", "pfc_storm"]
    assert all(0 <= r[4] <= 1 for r in incidents)
    assert isinstance(json.loads(incidents[1][5]), dict)
    evidence = con.execute("SELECT rank, count(*) FROM incident_evidence GROUP BY rank "
                           "ORDER BY rank").fetchall()
    assert [r[0] for r in evidence] == [1, 2] and all(r[1] >= 1 for r in evidence)
    assert json.loads(con.execute("SELECT evidence FROM incident_evidence LIMIT 1").fetchone()[0])
    # impact: the job running through it; for the flap, the capacity it took and the reroute
    flap, storm = (json.loads(r[5]) for r in incidents)
    assert flap["jobs"] == storm["jobs"] == ["1000"]
    assert 50 < flap["capacity_lost_gbps"] < 400  # a 400G link, down part of those windows
    root = incidents[0][3]
    assert flap["rerouted_links"] and root not in flap["rerouted_links"]
    assert all(link.startswith("leaf-p0-") for link in flap["rerouted_links"])


def test_without_cabling_replay_says_so_and_the_detectors_still_run(sample_stores, tmp_path):
    db = str(sample_stores.copy(sample_stores.ingested("two_faults"), tmp_path / "s.duckdb"))
    with Store.open(db) as store:
        store.con.execute("DELETE FROM neighbors")
    out = CliRunner().invoke(main, ["replay", "--db", db])
    assert out.exit_code == 5, out.output  # incidents found
    assert "no_fabric: no cabling" in out.output
    assert "pfc_storm" in out.output


def test_replay_of_a_missing_store_is_a_clear_error(tmp_path):
    out = CliRunner().invoke(main, ["replay", "--db", str(tmp_path / "none.duckdb")])
    assert out.exit_code == 2 and "no such store" in out.output


def test_bad_time_is_a_usage_error(tmp_path):
    out = CliRunner().invoke(main, ["replay", "--db", str(tmp_path / "x"), "--from", "yesterday"])
    assert out.exit_code == 2 and "ISO-8601" in out.output


def _expected_rows(db: str) -> list[tuple]:
    return _con(db).execute("SELECT * FROM expected_ports ORDER BY port_id, window_start").fetchall()


# README (Investigate): chunked and whole replays agree within this relative difference on the
# expected_* columns (measured: at most 7.6e-16, on a 256-host store in chunks of one window);
# every other column is the same bit for bit
CHUNK_REL_TOL = 1e-14
EXPECTED_COLS = ("expected_tx_bytes_per_s", "expected_rx_bytes_per_s")


def assert_same_replay(rows: list[tuple], reference: list[tuple], db: str) -> None:
    cols = [d[0] for d in _con(db).execute("SELECT * FROM expected_ports LIMIT 0").description]
    assert len(rows) == len(reference)
    for name, got, want in zip(cols, zip(*rows, strict=True), zip(*reference, strict=True),
                               strict=True):
        if name in EXPECTED_COLS:
            np.testing.assert_allclose(np.array(got, float), np.array(want, float),
                                       rtol=CHUNK_REL_TOL, atol=0)
        else:
            assert got == want, name


@pytest.fixture(scope="module")
def link_flap_whole(tmp_path_factory, sample_stores):
    """sample_traces/link_flap ingested (a copy of the session's ingest) and replayed whole in
    30 s windows, once: (store, the run, its expected_ports rows). The chunked replays run on
    copies."""
    db = str(sample_stores.copy(sample_stores.ingested("link_flap"),
                                tmp_path_factory.mktemp("link_flap") / "s.duckdb"))
    with Store.open(db) as store:
        whole = replay(store.con, window_s=30)
    return db, whole, _expected_rows(db)


def _copy_of(db: str, tmp_path) -> str:
    copy = str(tmp_path / "s.duckdb")
    shutil.copy(db, copy)
    return copy


@pytest.mark.parametrize(("chunk", "workers"), [(3, 2), (1, 1)])
def test_chunks_on_local_processes_give_the_same_rows(link_flap_whole, tmp_path, chunk, workers):
    src, whole, serial = link_flap_whole
    db = _copy_of(src, tmp_path)
    with Store.open(db) as store:
        chunked = replay(store.con, window_s=30, chunk_windows=chunk, workers=workers)
    assert chunked.windows == whole.windows > 6 and chunked.rows == whole.rows
    assert_same_replay(_expected_rows(db), serial, db)  # windows are independent


def test_chunks_on_ray_give_the_same_rows(link_flap_whole, tmp_path, ray_cluster):
    src, _, serial = link_flap_whole
    db = _copy_of(src, tmp_path)
    out = CliRunner().invoke(main, ["replay", "--db", db, "--window", "30", "--ray", "local",
                                    "--chunk-windows", "4", "--json"])
    assert out.exit_code == 5, out.output
    assert ray_cluster.is_initialized()  # the session's cluster ran the chunks
    assert json.loads(out.stdout)["incidents"][0]["kind"] == "link_flap"
    assert_same_replay(_expected_rows(db), serial, db)


def _renamed_bundle(src, dst, old: str, new: str) -> None:
    """A copy of bundle `src` with every `old` in file contents and paths replaced by `new`."""
    import gzip

    for path in src.rglob("*"):
        if path.is_dir() or path.name == "labels.json":
            continue
        target = dst / str(path.relative_to(src)).replace(old, new)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.compress(gzip.decompress(data).replace(old.encode(), new.encode()), mtime=0)
        else:
            data = data.replace(old.encode(), new.encode())
        target.write_bytes(data)


@pytest.mark.parametrize("name", ["congestion", "load_imbalance"])
def test_diagnosis_does_not_depend_on_host_names(tmp_path, name):
    # another site names its hosts its own way: the same faults must come out
    src = REPO / "sample_traces" / name
    _renamed_bundle(src, tmp_path / "b", "gpu-node-", "hgx-a")
    truth = json.loads((src / "labels.json").read_text())["faults"]
    got = investigate(tmp_path / "b", tmp_path / "s.duckdb")["incidents"]
    assert [(i["kind"], i["root_cause"]["id"]) for i in got] == [
        (f["kind"], f["root_cause"]["id"].replace("gpu-node-", "hgx-a")) for f in truth]


def test_replay_and_investigate_on_a_parquet_lake(two_faults, tmp_path):
    # a lake holds the data; replay reads it where it lies and writes its results beside it
    from collectors.store.lake import export, read_manifest
    from collectors.store.writer import open_readonly

    db = two_faults  # export reads it (read-only)
    export(db, tmp_path / "lake")
    out = CliRunner().invoke(main, ["replay", "--db", str(tmp_path / "lake"), "--json"])
    assert out.exit_code == 5, out.output
    assert [i["kind"] for i in json.loads(out.stdout)["incidents"]] == ["link_flap", "pfc_storm"]
    lake = open_readonly(tmp_path / "lake")
    assert lake.execute("SELECT count(*) FROM expected_ports").fetchone()[0] == \
        _con(db).execute("SELECT count(*) FROM expected_ports").fetchone()[0]
    assert lake.execute("SELECT kind FROM incidents ORDER BY rank").fetchall() == [
        ("link_flap",), ("pfc_storm",)]
    files = read_manifest(tmp_path / "lake")["tables"]["expected_ports"]["files"]
    assert len(files) == 1 and files[0].startswith("expected_ports/replay-")
    # and a bundle investigated straight into a new lake
    doc = investigate(REPO / "sample_traces" / "link_down", tmp_path / "lake2")
    assert [i["kind"] for i in doc["incidents"]] == ["link_down"]
    assert open_readonly(tmp_path / "lake2").execute(
        "SELECT count(*) FROM incidents").fetchone()[0] == 1
    # a lake holding another bundle is refused, as a store is, before anything is written
    from replay.investigate import OtherBundles

    manifest = (tmp_path / "lake" / "lake.json").read_bytes()
    with pytest.raises(OtherBundles, match="holds bundle .*two_faults"):
        investigate(REPO / "sample_traces" / "link_down", tmp_path / "lake")
    assert (tmp_path / "lake" / "lake.json").read_bytes() == manifest
    assert open_readonly(tmp_path / "lake").execute(
        "SELECT kind FROM incidents ORDER BY rank").fetchall() == [("link_flap",), ("pfc_storm",)]


def test_rates_computed_in_parts_equal_the_view(stores, monkeypatch):
    import replay.investigate as inv

    monkeypatch.setattr(inv, "SAMPLES_PER_PART", 5_000)  # several parts on a small store
    con = _con(stores["healthy"])
    try:
        view = con.execute("SELECT * FROM port_rates").fetchall()
        assert con.execute("SELECT count(*) FROM samples").fetchone()[0] > 3 * 5_000
        columns = ", ".join(d[0] for d in con.execute("SELECT * FROM port_rates LIMIT 0").description)
        with inv.views_once(con):
            parted = con.execute(f"SELECT {columns} FROM temp.port_rates").fetchall()
            # one port code per port across the parts (replay.rate_arrays keys on it)
            codes = con.execute("SELECT count(DISTINCT pc), count(DISTINCT (device, ifname)), "
                                "count(DISTINCT (pc, device, ifname)) FROM temp.port_rates"
                                ).fetchone()
        assert len(parted) == len(view) > 0
        assert sorted(parted, key=str) == sorted(view, key=str)
        assert codes[0] == codes[1] == codes[2] > 1
    finally:
        con.close()


def _stored(db: str) -> dict[str, list[tuple]]:
    con = _con(db)
    return {t: con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall()
            for t in ("incidents", "incident_evidence", "replay_runs", "expected_ports")}


@pytest.mark.parametrize("window", [["--from", "2020-01-01T00:00:00Z", "--to", "2020-01-02"],
                                    ["--from", "1577836800", "--to", "1577923200"]])
def test_replay_of_a_window_without_data_is_an_error_and_keeps_the_diagnosis(sample_stores,
                                                                            tmp_path, window):
    # two_faults investigated (as `fabtwin investigate` stores it), a copy of the session's
    db = str(sample_stores.copy(sample_stores.investigated("two_faults"), tmp_path / "s.duckdb"))
    before = _stored(db)
    assert len(before["incidents"]) == 2
    out = CliRunner().invoke(main, ["replay", "--db", db, *window])
    assert out.exit_code == 6, out.output
    assert out.stdout == "" and out.stderr.count("\n") == 1
    assert out.stderr.startswith(f"fabtwin: error: {db}: no telemetry between "
                                 "2020-01-01T00:00:00.000Z and 2020-01-02T00:00:00.000Z")
    assert "its samples run 2026-11-30T" in out.stderr
    assert _stored(db) == before  # incidents, evidence, the run and expected_ports as they were


def test_replay_exit_code_says_whether_incidents_were_found(stores):
    healthy = CliRunner().invoke(main, ["replay", "--db", stores["healthy"], "-q"])
    assert healthy.exit_code == 0 and "healthy: no incident found" in healthy.stdout
    faulty = CliRunner().invoke(main, ["replay", "--db", stores["link_down"], "-q", "--json"])
    assert faulty.exit_code == 5 and json.loads(faulty.stdout)["incidents"]


def test_ray_local_ignores_ray_address(ray_cluster):
    """`--ray local` starts a Ray here even where RAY_ADDRESS names a cluster (down here): the
    session's Ray was started so (conftest's `ray_cluster`), and runs tasks."""
    from conftest import RAY_LOCAL_IGNORED_RAY_ADDRESS

    from twin.parallel import run_tasks

    assert RAY_LOCAL_IGNORED_RAY_ADDRESS == [True] and ray_cluster.is_initialized()
    assert run_tasks(abs, [-3, 2], executor="ray", address="local", workers=1) == [3, 2]


def test_an_unreachable_ray_is_one_line_within_the_timeout(stores):
    """A server that accepts the TCP connection and never answers (a proxy, a wrong port) held
    ray.init for minutes; a refused port is an error at once."""
    pytest.importorskip("ray")
    import os
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes handshakes; nobody ever answers
        port = silent.getsockname()[1]
        env = {**os.environ, "FABTWIN_RAY_TIMEOUT_S": "2", "PYTHONPATH": str(REPO)}
        started = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "fabtwin.cli", "replay", "--db",
                              stores["healthy"], "--ray", f"ray://127.0.0.1:{port}", "-q"],
                             env=env, capture_output=True, text=True, timeout=120)
        took = time.monotonic() - started
    assert out.returncode == 2, out.stderr
    assert out.stderr.splitlines()[-1] == (f"fabtwin: error: Ray at ray://127.0.0.1:{port}: no "
                                           "answer within 2 s (FABTWIN_RAY_TIMEOUT_S sets "
                                           "another limit)")
    assert took < 30
    from twin.parallel import ExecutorError, check_reachable

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # bound, not listening: connections are refused
        with pytest.raises(ExecutorError, match=f"ray://127.0.0.1:{closed}: cannot connect: "
                                                "Connection refused$"):
            check_reachable(f"ray://127.0.0.1:{closed}")

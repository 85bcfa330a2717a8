"""The store: rates with wrap and reset, link state intervals, links, idempotent ingest, accounting."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import pytest

from collectors.core.schema import canonical_counters, counter_map
from collectors.store.ingest import BundleError, ingest_bundle
from collectors.store.writer import Store

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z


def csv_samples(rows: list[tuple]) -> str:
    """Normalized CSV: (seconds offset, device, ifname, counter, value)."""
    out = ["ts,device,ifname,counter,value"]
    out += [f"{T0 + t},{d},{i},{c},{v}" for t, d, i, c, v in rows]
    return "\n".join(out) + "\n"


@pytest.fixture
def store(tmp_path: Path):
    s = Store.open(tmp_path / "t.duckdb")
    yield s
    s.close()


def rates(store: Store, device: str = "leaf-1", counter: str = "rx_bytes") -> list:
    return store.con.execute(
        "SELECT epoch(ts)::BIGINT - ?, delta, rate, wrapped, reset FROM counter_rates "
        "WHERE device = ? AND counter = ? ORDER BY ts", [T0, device, counter]).fetchall()


def test_monotonic_counter_gives_delta_over_interval(store, write, tmp_path):
    write("b/c.csv", csv_samples([(0, "leaf-1", "swp1", "rx_bytes", 1000),
                                  (10, "leaf-1", "swp1", "rx_bytes", 11000),
                                  (30, "leaf-1", "swp1", "rx_bytes", 31000)]))
    ingest_bundle(store, tmp_path / "b")
    assert rates(store) == [(10, 10000.0, 1000.0, False, False), (30, 20000.0, 1000.0, False, False)]


def test_32bit_wrap_is_added_back(store, write, tmp_path):
    # 2^32 - 1000 then 500: the counter wrapped after 1500 bytes
    write("b/c.csv", csv_samples([(0, "leaf-1", "swp1", "rx_bytes", 2**32 - 1000),
                                  (10, "leaf-1", "swp1", "rx_bytes", 500)]))
    ingest_bundle(store, tmp_path / "b")
    assert rates(store) == [(10, 1500.0, 150.0, True, False)]


# writer3's clear (seed 600 w3_020, agg-p1-03:swp1 tx_packets): a 64-bit counter at 3.6e9,
# counting 1.5e8 a read, cleared at 16:11:04.9 and read 3.2 s later
CLEARED = [3161517012, 3312883537, 3457651028, 3608752626, 23221030, 179267607, 333038645]


def test_a_counter_cleared_below_2_to_the_32_is_a_clear_not_a_wrap(store, write, tmp_path):
    # at its pace the counter was 4.5 steps short of 2^32: it cannot have wrapped in one read
    # (read as a wrap: 7.09e8, 4.7x the interval's increase)
    write("b/c.csv", csv_samples([(30 * k, "leaf-1", "swp1", "tx_packets", v)
                                  for k, v in enumerate(CLEARED)]))
    ingest_bundle(store, tmp_path / "b")
    got = rates(store, counter="tx_packets")
    assert got[3] == (120, None, None, False, True)
    assert [r[1] for r in got[4:]] == [CLEARED[5] - CLEARED[4], CLEARED[6] - CLEARED[5]]


def test_a_32bit_counter_wrapping_at_its_pace_is_added_back(store, write, tmp_path):
    # the same pace, but a 32-bit counter one step from its top: it wrapped
    steps = [2**32 - 4 * 150_000_000 + 150_000_000 * k for k in range(6)]
    write("b/c.csv", csv_samples([(30 * k, "leaf-1", "swp1", "tx_packets", v % 2**32)
                                  for k, v in enumerate(steps)]))
    ingest_bundle(store, tmp_path / "b")
    got = rates(store, counter="tx_packets")
    assert [r[1] for r in got] == [150_000_000.0] * 5
    assert [r[3] for r in got] == [False, False, False, True, False]


def test_64bit_wrap_is_added_back(store, write, tmp_path):
    write("b/c.csv", csv_samples([(0, "leaf-1", "swp1", "rx_bytes", 2**64 - 2**20),
                                  (10, "leaf-1", "swp1", "rx_bytes", 2**20)]))
    ingest_bundle(store, tmp_path / "b")
    ((t, delta, rate, wrapped, reset),) = rates(store)
    assert (t, wrapped, reset) == (10, True, False)
    assert delta == pytest.approx(2**21, rel=1e-3)  # doubles near 2^64 keep ~4 KB resolution


def test_counter_reset_after_reboot_yields_no_rate(store, write, tmp_path):
    # a 64-bit counter far from its wrap point falls to near zero: a reboot, not a wrap
    write("b/c.csv", csv_samples([(0, "leaf-1", "swp1", "rx_bytes", 5e12),
                                  (10, "leaf-1", "swp1", "rx_bytes", 5.001e12),
                                  (20, "leaf-1", "swp1", "rx_bytes", 300),
                                  (30, "leaf-1", "swp1", "rx_bytes", 1300)]))
    ingest_bundle(store, tmp_path / "b")
    got = rates(store)
    assert got[1] == (20, None, None, False, True)
    assert got[2] == (30, 1000.0, 100.0, False, False)
    assert all(r[2] is None or 0 <= r[2] < 1e12 for r in got)


def test_32bit_counter_reset_low_in_range_is_a_reset_not_a_wrap(store, write, tmp_path):
    # previous value in the lower half of the 32-bit range: falling to 10 is a reset
    write("b/c.csv", csv_samples([(0, "leaf-1", "swp1", "rx_bytes", 1_000_000),
                                  (10, "leaf-1", "swp1", "rx_bytes", 10)]))
    ingest_bundle(store, tmp_path / "b")
    assert rates(store) == [(10, None, None, False, True)]


def test_duplicate_sample_times_do_not_make_infinite_rates(store, write, tmp_path):
    write("b/c.csv", csv_samples([(0, "leaf-1", "swp1", "rx_bytes", 0),
                                  (0, "leaf-1", "swp1", "rx_bytes", 0),
                                  (10, "leaf-1", "swp1", "rx_bytes", 100)]))
    ingest_bundle(store, tmp_path / "b")
    assert [r[2] for r in rates(store)] == [10.0]


def test_port_rates_view_is_wide_per_port(store, write, tmp_path):
    write("b/c.csv", csv_samples([(0, "leaf-1", "swp1", "rx_bytes", 0), (0, "leaf-1", "swp1", "tx_bytes", 0),
                                  (10, "leaf-1", "swp1", "rx_bytes", 800), (10, "leaf-1", "swp1", "tx_bytes", 80)]))
    ingest_bundle(store, tmp_path / "b")
    row = store.con.execute("SELECT rx_bytes_per_s, tx_bytes_per_s FROM port_rates").fetchall()
    assert row == [(80.0, 8.0)]


def test_link_state_intervals_fold_events_and_oper_status(store, write, tmp_path):
    write("b/e.csv", "ts,device,ifname,kind,message\n"
          f"{T0 + 5},leaf-1,swp1,link_down,carrier lost\n{T0 + 65},leaf-1,swp1,link_up,\n")
    write("b/s.csv", csv_samples([(0, "leaf-1", "swp1", "oper_status", 1),
                                  (10, "leaf-1", "swp1", "oper_status", 2),
                                  (70, "leaf-1", "swp1", "oper_status", 1)]))
    ingest_bundle(store, tmp_path / "b")
    got = store.con.execute(
        "SELECT state, epoch(start)::BIGINT - ?, duration_s FROM link_state_intervals "
        "WHERE port_id = 'leaf-1:swp1' ORDER BY start", [T0]).fetchall()
    assert got == [("up", 0, 5.0), ("down", 5, 60.0), ("up", 65, None)]


def test_ingest_twice_adds_nothing(store, write, tmp_path):
    write("b/c.csv", csv_samples([(0, "leaf-1", "swp1", "rx_bytes", 0)]))
    write("b/c2.csv.gz", csv_samples([(5, "leaf-1", "swp2", "rx_bytes", 0)]), gz=True)
    first = ingest_bundle(store, tmp_path / "b")
    second = ingest_bundle(store, tmp_path / "b")
    assert [f.status for f in first.files] == ["loaded", "loaded"]
    assert [f.status for f in second.files] == ["unchanged", "unchanged"]
    assert store.con.execute("SELECT count(*) FROM samples").fetchone()[0] == 2
    assert store.con.execute("SELECT count(*) FROM files").fetchone()[0] == 2


def test_accounting_and_rejects_are_kept_with_line_and_raw(store, write, tmp_path):
    write("b/c.csv", csv_samples([(0, "leaf-1", "swp1", "rx_bytes", 1)]) + "garbage,row\n"
          f"{T0},leaf-1,swp1,rx_bytes,not-a-number\n")
    summary = ingest_bundle(store, tmp_path / "b")
    (f,) = summary.files
    assert (f.records_read, f.loaded, f.rejected) == (3, 1, 2)
    rows = store.con.execute("SELECT path, line, raw FROM rejects ORDER BY line").fetchall()
    assert rows == [("c.csv", 3, "garbage,row"), ("c.csv", 4, f"{T0},leaf-1,swp1,rx_bytes,not-a-number")]
    assert f.first_reject.startswith("c.csv:3: ")


def test_unrecognized_file_is_listed_as_skipped(store, write, tmp_path):
    write("b/notes.bin", "\x00\x01 nothing a parser knows\n")
    summary = ingest_bundle(store, tmp_path / "b")
    assert [(f.path, f.status) for f in summary.files] == [("notes.bin", "skipped")]
    assert store.con.execute("SELECT path, status FROM files").fetchall() == [("notes.bin", "skipped")]


def test_truncated_gzip_keeps_what_decompressed_and_counts_the_damage(store, write, tmp_path):
    good = gzip.compress(csv_samples([(i, "leaf-1", "swp1", "rx_bytes", i) for i in range(20000)]).encode())
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "a.csv.gz").write_bytes(good[: len(good) // 2])  # truncated stream
    write("b/b.csv", csv_samples([(0, "leaf-2", "swp1", "rx_bytes", 0)]))
    summary = ingest_bundle(store, tmp_path / "b")
    a = next(f for f in summary.files if f.path == "a.csv.gz")
    assert a.status == "loaded" and a.rejected >= 1 and a.loaded > 1000
    assert a.records_read == a.loaded + a.rejected
    # every complete line that decompressed is read; the broken one is the one reject
    complete = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(good[: len(good) // 2]).count(b"\n")
    # the CSV header is no record; the broken line is one
    assert (a.loaded, a.rejected, a.records_read) == (complete - 1, 1, complete)
    line, reason = store.con.execute(
        "SELECT line, reason FROM rejects WHERE path = 'a.csv.gz'").fetchone()
    assert line == complete + 1
    assert reason.startswith("compressed stream is truncated")
    assert f"the {complete} complete lines before it were read" in reason
    assert store.con.execute("SELECT count(DISTINCT device) FROM samples").fetchone()[0] == 2


def test_parser_crash_rolls_back_the_whole_file(store, write, tmp_path):
    from collectors.core.source import SourceFile

    class Exploding:
        name, family, priority = "exploding", "test", 50

        def parse(self, src, sink):
            for i in range(10):
                sink.sample(i, "leaf-9", "swp1", "rx_bytes", 1.0)
                sink.accept()
            sink.close()  # rows reach the store inside the transaction...
            raise RuntimeError("parser bug")  # ...and must not survive this

    p = write("b/x.txt", "x\n")
    with pytest.raises(RuntimeError):
        store.ingest_file(Exploding(), SourceFile(p, "x.txt"), "sha")
    assert store.con.execute("SELECT count(*) FROM samples").fetchone()[0] == 0
    assert store.con.execute("SELECT count(*) FROM files").fetchone()[0] == 0


def test_bad_manifest_is_a_one_line_error_naming_the_file(store, write, tmp_path):
    write("b/manifest.json", '{"name": "x",\n "timezone": }')
    with pytest.raises(BundleError, match=r"manifest\.json:2: invalid JSON"):
        ingest_bundle(store, tmp_path / "b")


def test_counter_map_rows_name_known_canonical_counters():
    known = canonical_counters()
    cmap = counter_map()
    assert all(m.canonical in known for m in cmap.values())
    assert cmap[("normalized", "rx_bytes")].canonical == "rx_bytes"  # the store's own names
    assert ("nic", "rx_bytes") not in cmap  # mlx5 software counter, not the port's bytes


def test_same_bytes_under_another_path_is_another_file(store, write, tmp_path):
    # two hosts with identical ibdev2netdev output: both must load, each for its own host
    write("b/topology/gpu-node-0001/ibdev2netdev", "mlx5_0 port 1 ==> eth0 (Up)\n")
    write("b/topology/gpu-node-0002/ibdev2netdev", "mlx5_0 port 1 ==> eth0 (Up)\n")
    summary = ingest_bundle(store, tmp_path / "b")
    assert [f.status for f in summary.files] == ["loaded", "loaded"]
    assert store.con.execute("SELECT host FROM ifmap ORDER BY 1").fetchall() == [
        ("gpu-node-0001",), ("gpu-node-0002",)]


def test_port_rates_take_one_source_per_counter(store, write, tmp_path):
    # the same host port reported by two tools: the rate must not double
    write("b/a.csv", "ts,device,ifname,counter,value\n" + "".join(
        f"{T0 + 10 * i},gpu-node-0001,eth0,rx_bytes,{1000 * i}\n" for i in range(3)))
    write("b/nic/gpu-node-0001/eth0.ethtool", "".join(
        f"{T0 + 10 * i + 1}.0\nNIC statistics:\n     rx_bytes_phy: {1000 * i}\n" for i in range(2)))
    ingest_bundle(store, tmp_path / "b")
    assert store.con.execute("SELECT count(DISTINCT metric) FROM samples").fetchone()[0] == 2
    rows = store.con.execute("SELECT rx_bytes_per_s FROM port_rates WHERE rx_bytes_per_s IS NOT NULL").fetchall()
    assert rows and all(r == (100.0,) for r in rows)


def test_big_files_commit_in_chunks_and_still_load_whole(monkeypatch, write, tmp_path):
    import collectors.store.writer as store_mod

    monkeypatch.setattr(store_mod, "COMMIT_ROWS", 1000)
    write("b/c.csv", csv_samples([(i, "leaf-1", "swp1", "rx_bytes", i) for i in range(5000)]))
    with Store.open(tmp_path / "s.duckdb") as s:
        (f,) = ingest_bundle(s, tmp_path / "b").files
        assert f.loaded == 5000
        assert s.con.execute("SELECT count(*) FROM samples").fetchone()[0] == 5000
        assert s.con.execute("SELECT status FROM files").fetchall() == [("loaded",)]


def test_an_interrupted_ingest_is_removed_on_the_next_open(write, tmp_path):
    from collectors.store.writer import StoreError, open_readonly

    db = tmp_path / "s.duckdb"
    with Store.open(db) as s:
        # what a process killed between two chunk commits leaves behind
        s.con.execute("INSERT INTO files (file_id, path, sha256, status) VALUES (99, 'x.csv', 'h', 'loading')")
        s.con.execute("INSERT INTO samples (ts, device, ifname, counter, metric, qualifier, value, "
                      "file_id, line) VALUES (TIMESTAMP '2026-01-01', 'leaf-1', 'swp1', "
                      "'rx_bytes', 'rx_bytes', '', 1, 99, 2)")
    with pytest.raises(StoreError, match="x.csv half-loaded"):
        open_readonly(db)
    with Store.open(db) as s:
        assert s.interrupted == ["x.csv"]
        assert s.con.execute("SELECT count(*) FROM samples").fetchone()[0] == 0
        assert s.con.execute("SELECT count(*) FROM files").fetchone()[0] == 0
    open_readonly(db).close()


def test_a_reopened_store_numbers_the_next_bundle_on_from_its_last_file(write, tmp_path):
    """File ids run on across store sessions (a lake numbers them so, test_lake compares the
    two), and a store an older release numbered in blocks of 1000 goes on after its highest."""
    def bundle(name: str, files: int) -> Path:
        for k in range(files):
            write(f"{name}/c{k}.csv", csv_samples([(0, f"{name}-{k}", "swp1", "rx_bytes", 1),
                                                   (10, f"{name}-{k}", "swp1", "rx_bytes", 2)]))
        return tmp_path / name

    def ids(s: Store) -> list[int]:
        return [r[0] for r in s.con.execute("SELECT file_id FROM files ORDER BY file_id").fetchall()]

    db = tmp_path / "s.duckdb"
    with Store.open(db) as s:
        ingest_bundle(s, bundle("a", 3))
    with Store.open(db) as s:
        ingest_bundle(s, bundle("b", 2))
        assert ids(s) == [1, 2, 3, 4, 5]
        # what a block of file_id_seq left: the next session's files from 1001
        s.con.execute("INSERT INTO files (file_id, path, sha256, status, reason) "
                      "VALUES (1001, 'old', '', 'skipped', 'x')")
    with Store.open(db) as s:
        ingest_bundle(s, bundle("c", 1))
        assert ids(s) == [1, 2, 3, 4, 5, 1001, 1002]


def test_open_refreshes_a_changed_counter_map_and_views_but_skips_unchanged(tmp_path):
    """Store.open rewrites the counter map and the views only when they differ from the
    package's (an old store, a new release); an unchanged store is not rewritten."""
    from collectors.store.writer import Store

    path = tmp_path / "s.duckdb"
    with Store.open(path) as s:
        n_map = s.con.execute("SELECT count(*) FROM counter_map").fetchone()[0]
        # an older release's store: one mapping missing, views of another text
        s.con.execute("DELETE FROM counter_map WHERE rowid IN (SELECT min(rowid) FROM counter_map)")
        s.con.execute("CREATE OR REPLACE VIEW links AS SELECT 1 AS stale")
        s.con.execute("COMMENT ON VIEW port_rates IS 'an older views.sql'")
    with Store.open(path) as s:
        assert s.con.execute("SELECT count(*) FROM counter_map").fetchone()[0] == n_map
        assert "stale" not in [c[0] for c in s.con.execute("DESCRIBE links").fetchall()]
        # unchanged now: a view edited without touching the mark stays (proof nothing was rerun)
        s.con.execute("CREATE OR REPLACE VIEW unmapped_metrics AS SELECT 2 AS kept")
        mark = s.con.execute("SELECT comment FROM duckdb_views() WHERE view_name = 'port_rates'").fetchone()[0]
        assert mark.startswith("fabtwin views.sql sha256 ")
    with Store.open(path) as s:
        assert [c[0] for c in s.con.execute("DESCRIBE unmapped_metrics").fetchall()] == ["kept"]

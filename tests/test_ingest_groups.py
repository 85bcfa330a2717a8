"""Small files share a transaction: same rows and accounting as one transaction per file, and
still all or nothing per file (a failing file, a killed process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import collectors.store.writer as store_mod
from collectors.core.source import SourceFile
from collectors.registry import recognize
from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
HOSTS = ("gpu-node-0001", "gpu-node-0002", "gpu-node-0003")
SYSFS = ("/sys/class/infiniband/mlx5_2/ports/1/hw_counters/np_cnp_sent:{n}\n"
         "/sys/class/infiniband/mlx5_2/ports/1/hw_counters/rp_cnp_handled:{m}\n")


def make_bundle(root: Path) -> Path:
    """Hosts whose RDMA counters need the netdev their ibdev2netdev file gives (a lookup a
    grouped file must see from a file earlier in the same transaction), plus a normalized CSV
    with a bad line and a file no parser knows."""
    for k, host in enumerate(HOSTS):
        (root / "topology" / host).mkdir(parents=True)
        (root / "topology" / host / "ibdev2netdev").write_text(f"mlx5_2 port 1 ==> eth{k} (Up)\n")
        (root / "nic" / host).mkdir(parents=True)
        (root / "nic" / host / "mlx5_2.hw_counters").write_text("".join(
            f"{T0 + 10 * i}.0\n" + SYSFS.format(n=100 * i + k, m=7 * i) for i in range(4)))
    (root / "c.csv").write_text("ts,device,ifname,counter,value\n" + "".join(
        f"{T0 + t},leaf-1,swp1,rx_bytes,{1000 * t}\n" for t in range(5)) + "garbage\n")
    (root / "notes.bin").write_bytes(b"\x00\x01\x02")
    return root


def dump(store: Store) -> dict[str, list]:
    """Every table a bundle fills, ordered, file ids included."""
    q = {
        "files": "SELECT file_id, path, status, parser, records_read, loaded, rejected, "
                 "rows_written, reason FROM files ORDER BY file_id",
        "samples": "SELECT * FROM samples ORDER BY file_id, line, metric",
        "ifmap": "SELECT * FROM ifmap ORDER BY file_id",
        "rejects": "SELECT * FROM rejects ORDER BY file_id, line",
    }
    return {k: store.con.execute(v).fetchall() for k, v in q.items()}


def rows_per_file(store: Store) -> list[tuple]:
    """(file_id, (rows_written, rejected), the rows and rejects found) for every loaded file."""
    rows = " + ".join(f"(SELECT count(*) FROM {t} WHERE file_id = f.file_id)"
                      for t in ("samples", "ifmap"))
    return store.con.execute(
        f"SELECT file_id, (rows_written, rejected), ({rows}, (SELECT count(*) FROM rejects r "
        "WHERE r.file_id = f.file_id)) FROM files f WHERE status = 'loaded' ORDER BY 1").fetchall()


@pytest.mark.parametrize(("commit_rows", "pending_rows"), [(1_000_000, 200_000), (7, 200_000),
                                                           (1_000_000, 3)])
def test_grouped_files_load_like_one_transaction_each(tmp_path, monkeypatch, commit_rows,
                                                      pending_rows):
    # commits in chunks (7 rows) and small batches of deferred rows (3) change nothing either
    bundle = make_bundle(tmp_path / "b")
    monkeypatch.setattr(store_mod, "COMMIT_ROWS", commit_rows)
    monkeypatch.setattr(store_mod, "PENDING_ROWS", pending_rows)
    with Store.open(tmp_path / "grouped.duckdb") as s:
        grouped = ingest_bundle(s, bundle)
        got = dump(s)
        counts = rows_per_file(s)
    assert counts and all(written == found for _, written, found in counts)
    monkeypatch.setattr(store_mod, "GROUP_FILES", 1)
    with Store.open(tmp_path / "alone.duckdb") as s:
        alone = ingest_bundle(s, bundle)
        want = dump(s)
    assert got == want
    assert grouped.as_json()["files"] == alone.as_json()["files"]
    # the netdev came from the ibdev2netdev file loaded just before, in the same transaction
    assert {r[2] for r in got["samples"] if r[0] is not None and r[1] in HOSTS} == {
        "eth0", "eth1", "eth2"}
    assert got["rejects"] and got["files"][-1][2] == "skipped"


def test_a_failing_file_rolls_back_alone_and_the_group_loads_again(tmp_path):
    bundle = make_bundle(tmp_path / "b")
    csv = SourceFile(bundle / "c.csv", "c.csv")
    ibdev = SourceFile(bundle / "topology" / HOSTS[0] / "ibdev2netdev",
                       f"topology/{HOSTS[0]}/ibdev2netdev")

    class Failing:
        name, family, priority = "failing", "test", 50

        def parse(self, src, sink):
            sink.sample(T0 * 10**9, "leaf-9", "swp1", "rx_bytes", 1.0)
            sink.accept()
            sink.close()
            raise OSError("disk went away")

    with Store.open(tmp_path / "s.duckdb") as s:
        first = s.ingest_file(recognize(csv.path.read_text(), csv.rel), csv, "h1", group=True)
        second = s.ingest_file(recognize(ibdev.path.read_text(), ibdev.rel), ibdev, "h2", group=True)
        with pytest.raises(OSError, match="disk went away"):
            s.ingest_file(Failing(), SourceFile(bundle / "notes.bin", "notes.bin"), "h3", group=True)
        files = s.con.execute("SELECT path, status, records_read, loaded, rejected FROM files "
                              "ORDER BY path").fetchall()
        assert files == [("c.csv", "loaded", first.records_read, first.loaded, first.rejected),
                         (ibdev.rel, "loaded", second.records_read, second.loaded, second.rejected)]
        assert first.loaded == 5 and first.rejected == 1
        assert s.con.execute("SELECT count(*) FROM samples").fetchone()[0] == 5
        assert s.con.execute("SELECT count(*) FROM ifmap").fetchone()[0] == 1
        assert s.con.execute("SELECT count(*) FROM rejects").fetchone()[0] == 1


KILL = """
import os, sys
from collectors.registry import recognize
from collectors.core.source import SourceFile
from collectors.store.writer import Store
from pathlib import Path
s = Store.open(sys.argv[1])
for rel in sys.argv[2:]:
    src = SourceFile(Path(rel), rel)
    s.ingest_file(recognize(src.path.read_text(), rel), src, rel, group=True)
os._exit(3)  # killed before the group commits
"""


def test_a_killed_process_leaves_no_part_of_the_open_group(tmp_path):
    bundle = make_bundle(tmp_path / "b")
    db = tmp_path / "s.duckdb"
    with Store.open(db) as s:  # one file committed before
        ingest_bundle(s, bundle / "c.csv")
    rels = [f"topology/{HOSTS[0]}/ibdev2netdev", f"nic/{HOSTS[0]}/mlx5_2.hw_counters"]
    run = subprocess.run([sys.executable, "-c", KILL, str(db), *rels], cwd=bundle,
                         capture_output=True, text=True)
    assert (run.returncode, run.stderr) == (3, "")
    with Store.open(db) as s:
        assert s.con.execute("SELECT path, status FROM files").fetchall() == [("c.csv", "loaded")]
        assert s.con.execute("SELECT count(*) FROM samples").fetchone()[0] == 5
        assert s.con.execute("SELECT count(*) FROM ifmap").fetchone()[0] == 0


KILL_AT_CHUNK = """
import os, sys
import collectors.store.writer as store_mod
from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store
store_mod.COMMIT_ROWS = 7
commit_chunk = store_mod.Store._commit_chunk
def commit_and_die(self):
    commit_chunk(self)
    os._exit(3)  # killed just after the first chunk commit
store_mod.Store._commit_chunk = commit_and_die
with Store.open(sys.argv[1]) as s:
    ingest_bundle(s, sys.argv[2])
"""


def test_a_chunk_commit_inside_a_group_commits_whole_files_only(tmp_path):
    # a small file (2 rows, less than a chunk) whose rows wait to be inserted with the next
    # file's, then a file whose 8 rows make a chunk commit
    bundle = tmp_path / "b"
    (bundle / "nic" / HOSTS[0]).mkdir(parents=True)
    (bundle / "c.csv").write_text("ts,device,ifname,counter,value\n"
                                  f"{T0},leaf-1,swp1,rx_bytes,1\n{T0 + 1},leaf-1,swp1,rx_bytes,2\nx\n")
    (bundle / "nic" / HOSTS[0] / "mlx5_2.hw_counters").write_text("".join(
        f"{T0 + 10 * i}.0\n" + SYSFS.format(n=i, m=i) for i in range(4)))
    db = tmp_path / "s.duckdb"
    run = subprocess.run([sys.executable, "-c", KILL_AT_CHUNK, str(db), str(bundle)],
                         capture_output=True, text=True)
    assert (run.returncode, run.stderr) == (3, "")
    with Store.open(db) as s:
        # the file being loaded at the chunk commit is removed; the one before it is whole
        assert s.interrupted == [f"nic/{HOSTS[0]}/mlx5_2.hw_counters"]
        assert rows_per_file(s) == [(1, (2, 1), (2, 1))]

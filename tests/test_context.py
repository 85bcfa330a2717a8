"""Context a file does not carry (issue 22): its host and collection time from the manifest
(bundle-wide or per file/folder pattern), from `ingest --host/--time`, from a file or folder named
after a device the bundle knows, and as a last resort the file's modification time, which
`files.time_source` and the summary name."""

from __future__ import annotations

import json
import os

import duckdb
import pytest
from click.testing import CliRunner

from collectors.core.source import Manifest, known_host_of
from collectors.core.timeparse import parse_iso
from collectors.store.ingest import BundleError, ingest_bundle, read_manifest
from collectors.store.writer import Store
from fabtwin.cli import main

ETHTOOL = "NIC statistics:\n     rx_bytes_phy: 100\n     tx_bytes_phy: 200\n"
SCRAPE = '# TYPE node_network_up gauge\nnode_network_up{device="eth0"} 1\n'
IBDEV = "mlx5_0 port 1 ==> eth0 (Up)\n"
LLDP = json.dumps({"lldp": [{"interface": [{"name": "eth0", "chassis": [{"name": [
    {"value": "leaf-01"}]}], "port": [{"id": [{"type": "ifname", "value": "swp1"}]}]}]}]})
T = "2026-03-01T10:00:00Z"
T_NS = parse_iso(T)


def manifest(root, doc: dict | str) -> None:
    (root / "manifest.json").write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=2))


def ingest(tmp_path, root, **kw):
    store = Store.open(tmp_path / "s.duckdb")
    return store, ingest_bundle(store, root, workers=1, **kw)


def rows(store: Store, sql: str) -> list[tuple]:
    return store.con.execute(sql).fetchall()


def test_manifest_rules_give_host_interface_and_time_later_rules_winning(tmp_path, write):
    write("b/pasted/ethtool-S.txt", ETHTOOL)
    write("b/pasted/other/ethtool-S.txt", ETHTOOL)
    write("b/prom/node.prom", SCRAPE)
    manifest(tmp_path / "b", {
        "timezone": "+02:00", "host": "gpu-node-01", "collected_at": "2026-03-01 12:00:00",
        "context": {
            "pasted": {"interface": "eth2"},                      # a folder, at any depth
            "pasted/other/*": {"host": "gpu-node-02", "collected_at": 1772359200.5},
        }})
    store, summary = ingest(tmp_path, tmp_path / "b")
    assert summary.totals["rejects"] == 0
    assert sorted(rows(store, "SELECT DISTINCT f.path, device, ifname, epoch_ns(ts) FROM samples "
                              "JOIN files f USING (file_id)")) == [
        ("pasted/ethtool-S.txt", "gpu-node-01", "eth2", T_NS),     # 12:00 at +02:00
        ("pasted/other/ethtool-S.txt", "gpu-node-02", "eth2", T_NS + 500_000_000),
        ("prom/node.prom", "gpu-node-01", "eth0", T_NS)]
    assert set(rows(store, "SELECT time_source FROM files")) == {("manifest",)}


@pytest.mark.parametrize(("doc", "where"), [
    ('{\n  "context": {\n    "nic/*": {"collected_at": "yesterday"}\n  }\n}', ":3: 'collected_at' "
     "(context entry 'nic/*') is not a time"),
    ('{\n  "collected_at": "2026-03-01 10:00:00"\n}', ":2: 'collected_at' is not a time: "
     "timestamp without a timezone"),
    ('{\n  "context": {\n    "nic/*": {"hots": "h1"}\n  }\n}', ":3: 'hots' (context entry "
     "'nic/*') is not a context key"),
    ('{"context": {"nic/*": "h1"}}', ":1: each entry of 'context' needs a 'path' pattern"),
    ('{"host": ""}', ":1: 'host' must be a non-empty string"),
])
def test_a_bad_manifest_is_refused_naming_file_line_and_key(tmp_path, doc, where):
    manifest(tmp_path, doc)
    with pytest.raises(BundleError) as err:
        read_manifest(tmp_path)
    assert str(err.value).startswith(f"{tmp_path / 'manifest.json'}{where}"), str(err.value)


def test_generate_s_list_of_files_is_not_context(tmp_path):
    """`fabtwin generate` writes "files" (the files it wrote): no context rules."""
    manifest(tmp_path, {"generator": "fabtwin generate", "files": ["a", "b"]})
    assert read_manifest(tmp_path).files == ()


def test_the_modification_time_is_a_last_resort_said_so(tmp_path, write):
    path = write("b/prom/gpu-node-01.prom", SCRAPE)
    os.utime(path, ns=(T_NS, T_NS))
    write("b/prom/timed.prom", 'up{instance="leaf-01:9100"} 1 1772359200000\n')
    out = CliRunner().invoke(main, ["ingest", str(tmp_path / "b"), "--db", str(tmp_path / "s.db")])
    assert out.exit_code == 0, out.output
    assert ("guessed  1 file timed by its modification time (no time in the file, the manifest "
            "or --time): prom/gpu-node-01.prom") in out.output
    con = duckdb.connect(str(tmp_path / "s.db"), read_only=True)
    assert sorted(con.execute("SELECT path, time_source FROM files").fetchall()) == [
        ("prom/gpu-node-01.prom", "mtime"), ("prom/timed.prom", "sample")]
    assert con.execute("SELECT epoch_ns(ts) FROM samples WHERE device = 'gpu-node-01'"
                       ).fetchall() == [(T_NS,)]
    con.close()
    js = CliRunner().invoke(main, ["ingest", str(tmp_path / "b"), "--db", str(tmp_path / "j.db"),
                                   "--json"])
    doc = json.loads(js.output)
    assert doc["timed_by_mtime"] == ["prom/gpu-node-01.prom"]
    assert {f["path"]: f["time_source"] for f in doc["files"]}["prom/timed.prom"] == "sample"


def test_a_bare_ethtool_s_without_manifest_is_never_silently_timed(tmp_path, real_samples):
    """The real mlx5 `ethtool -S` pasted alone, no manifest: without its host every record is a
    reject saying how to give it (nothing loaded, nothing timed); with --host and --interface
    but no time it is timed by its modification time, and files and the summary say so."""
    bare = tmp_path / "ethtool-S.txt"
    bare.write_bytes((real_samples / "ethtool" / "mlx5-ethtool-S-nonzero-kernel5.15-bpf-list.txt")
                     .read_bytes())
    os.utime(bare, ns=(T_NS, T_NS))
    out = CliRunner().invoke(main, ["ingest", str(bare), "--db", str(tmp_path / "a.db")])
    assert out.exit_code == 0 and "records  101 read = 0 loaded + 101 rejected" in out.output
    assert ("first: ethtool-S.txt:2: cannot tell which host and device this file is from: name it "
            "<host>__<dev>.<kind>, put it under nic/<host>/<dev>.<kind>, or say it: 'host' and "
            "'interface' in manifest.json, or `fabtwin ingest FILE --host H --interface I`") in out.output
    assert "guessed" not in out.output
    out = CliRunner().invoke(main, ["ingest", str(bare), "--db", str(tmp_path / "b.db"),
                                    "--host", "xdp-host", "--interface", "ens1f0np0"])
    assert out.exit_code == 0 and "records  101 read = 101 loaded + 0 rejected" in out.output
    assert ("guessed  1 file timed by its modification time (no time in the file, the manifest "
            "or --time): ethtool-S.txt") in out.output
    with duckdb.connect(str(tmp_path / "b.db"), read_only=True) as con:
        assert con.execute("SELECT time_source FROM files").fetchall() == [("mtime",)]
        assert con.execute("SELECT DISTINCT device, ifname, epoch_ns(ts) FROM samples").fetchall() == [
            ("xdp-host", "ens1f0np0", T_NS)]


def test_ingest_one_file_with_host_and_time(tmp_path, write):
    """`fabtwin ingest FILE --host H --time T`: a `rdma statistic show` pasted into a ticket,
    after that host's ibdev2netdev (which maps its RDMA device to the netdev)."""
    path = write("ticket/rdma.txt", "link mlx5_0/1 out_of_buffer 135 np_cnp_sent 7 \n")
    ib = write("ticket/ibdev.txt", IBDEV)
    db = str(tmp_path / "s.db")
    runner = CliRunner()
    out = runner.invoke(main, ["ingest", str(ib), "--db", db, "--host", "gpu-node-07", "-q"])
    assert out.exit_code == 0, out.output
    out = runner.invoke(main, ["ingest", str(path), "--db", db, "--host", "gpu-node-07",
                               "--time", "2026-03-01T11:00:00+01:00", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert (doc["loaded"], doc["rejected"]) == (1, 0)
    assert doc["files"][0]["time_source"] == "cli" and doc["timed_by_mtime"] == []
    con = duckdb.connect(db, read_only=True)
    assert sorted(con.execute("SELECT device, ifname, metric, value, epoch_ns(ts) FROM samples"
                              ).fetchall()) == [("gpu-node-07", "eth0", "np_cnp_sent", 7, T_NS),
                                                ("gpu-node-07", "eth0", "out_of_buffer", 135, T_NS)]
    assert con.execute("SELECT host, netdev FROM ifmap").fetchall() == [("gpu-node-07", "eth0")]
    con.close()
    bad = runner.invoke(main, ["ingest", str(path), "--db", db, "--time", "noon"])
    assert bad.exit_code == 2 and "--time" in bad.output


def test_the_cli_host_beats_the_manifest(tmp_path, write):
    write("b/x/ibdev.txt", IBDEV)
    manifest(tmp_path / "b", {"host": "from-manifest"})
    store, _ = ingest(tmp_path, tmp_path / "b", host="from-cli", collected_at=T_NS)
    assert rows(store, "SELECT host FROM ifmap") == [("from-cli",)]


def test_a_file_or_folder_named_after_a_known_device(tmp_path, write):
    """The bundle's LLDP names leaf-01 and the host's own LLDP file names gpu-node-01: files
    named after them take them as their host."""
    write("b/topology/gpu-node-01/lldp.json", LLDP)
    write("b/ethtool/leaf-01/ibdev2netdev.txt", IBDEV)          # a folder named after it
    write("b/ethtool/gpu-node-01-ibdev2netdev.txt", IBDEV)      # a name starting with it
    write("b/ethtool/somehost-ibdev2netdev.txt", IBDEV)         # a device nobody names
    store, summary = ingest(tmp_path, tmp_path / "b")
    assert sorted(rows(store, "SELECT f.path, host FROM ifmap JOIN files f USING (file_id)")) == [
        ("ethtool/gpu-node-01-ibdev2netdev.txt", "gpu-node-01"),
        ("ethtool/leaf-01/ibdev2netdev.txt", "leaf-01")]
    first = {f.path: f.first_reject for f in summary.files}
    assert "cannot tell which host" in first["ethtool/somehost-ibdev2netdev.txt"]
    assert known_host_of("a/gpu-node-01.x_y.txt", {"gpu-node-01", "gpu-node-01.x"}) == "gpu-node-01.x"
    assert known_host_of("a/gpu-node-011.txt", {"gpu-node-01"}) is None
    # the file's own name first, then the nearest folder
    assert known_host_of("leaf-01/h1/h2.log", {"leaf-01", "h1", "h2"}) == "h2"
    assert known_host_of("leaf-01/h1/x.log", {"leaf-01", "h1"}) == "h1"


def test_an_old_store_gets_the_time_source_column(tmp_path, write):
    db = tmp_path / "old.duckdb"
    with Store.open(db):
        pass
    con = duckdb.connect(str(db))
    con.execute("ALTER TABLE files DROP COLUMN time_source")
    con.close()
    write("b/prom/gpu-node-01.prom", SCRAPE)
    manifest(tmp_path / "b", {"collected_at": T})
    with Store.open(db) as store:
        ingest_bundle(store, tmp_path / "b", workers=1)
        assert rows(store, "SELECT time_source FROM files") == [("manifest",)]


def test_empty_files_say_so(tmp_path, write):
    write("b/empty.txt", "")
    write("b/blank.log", "\n  \n")
    _, summary = ingest(tmp_path, tmp_path / "b")
    assert {f.path: f.reason for f in summary.skipped} == {
        p: "empty file (nothing but blank space): nothing to load" for p in ("empty.txt", "blank.log")}


def test_for_file_without_rules_is_the_manifest_itself():
    m = Manifest(host="h", files=(("a/*", (("host", "x"),)),))
    assert m.for_file("b/c").host == "h" and m.for_file("a/c").host == "x"
    assert m.for_file("a/c").files == m.files  # rules kept: for_file is idempotent


def test_a_lake_written_before_time_source_takes_new_files(tmp_path, write):
    """A lake whose `files` Parquet predates the column: ingest appends, old rows read NULL."""
    from collectors.store.lake import export, open_for_ingest
    from collectors.store.lakeread import lake_connection

    db = tmp_path / "old.duckdb"
    write("a/prom/gpu-node-01.prom", SCRAPE)
    with Store.open(db) as store:
        ingest_bundle(store, tmp_path / "a", workers=1)
        store.con.execute("ALTER TABLE files DROP COLUMN time_source")
    export(db, tmp_path / "lake")
    write("b/prom/gpu-node-02.prom", SCRAPE)
    manifest(tmp_path / "b", {"collected_at": T})
    with open_for_ingest(str(tmp_path / "lake")) as store:
        ingest_bundle(store, tmp_path / "b", workers=1)
    con = lake_connection(tmp_path / "lake")
    assert sorted(con.execute("SELECT path, time_source FROM files").fetchall()) == [
        ("prom/gpu-node-01.prom", None), ("prom/gpu-node-02.prom", "manifest")]


def test_plain_dmesg_beside_an_uptime_file(tmp_path, write):
    """`uptime -s > uptime.txt; dmesg > dmesg.log` in a host's folder: placed, said so."""
    write("b/syslog/gpu-node-09/uptime.txt", "2026-03-01 09:59:50\n")
    write("b/syslog/gpu-node-09/dmesg.log", "[   10.000000] mlx5_core 0000:01:00.0 eth2: Link down\n")
    write("b/other/dmesg.log", "[   10.000000] mlx5_core 0000:01:00.0 eth2: Link down\n")
    manifest(tmp_path / "b", {"context": {"other/": {"host": "h2"}}})
    store, summary = ingest(tmp_path, tmp_path / "b")
    assert rows(store, "SELECT device, ifname, kind, epoch_ns(ts) FROM events") == [
        ("gpu-node-09", "eth2", "link_down", T_NS)]
    assert rows(store, "SELECT path, time_source FROM files WHERE status = 'loaded' "
                       "ORDER BY path") == [("other/dmesg.log", "sample"),
                                            ("syslog/gpu-node-09/dmesg.log", "boot_time")]
    assert "the boot time of the plain dmesg files beside it" in summary.skipped[0].reason
    other = {f.path: f for f in summary.files}["other/dmesg.log"]
    assert other.rejected == 1 and "boot time is unknown" in other.first_reject


def test_a_file_with_no_valid_modification_time_gets_no_time(tmp_path, write):
    """Unpacked with mtime 0 and no collection time given: rejected, never placed in 1970."""
    from collectors.formats.nic import NO_TS
    from collectors.formats.prom.parser import NO_TIMESTAMP

    for rel, text in [("b/prom/gpu-node-01.prom", SCRAPE),
                      ("b/nic/gpu-node-01/eth2.ethtool", ETHTOOL)]:
        os.utime(write(rel, text), ns=(0, 0))
    store, summary = ingest(tmp_path, tmp_path / "b")
    assert summary.totals["samples"] == 0
    assert sorted(r for (r,) in rows(store, "SELECT DISTINCT reason FROM rejects")) == sorted(
        [NO_TIMESTAMP, NO_TS])
    assert rows(store, "SELECT count(*) FROM files WHERE time_source = 'mtime'") == [(0,)]


def test_a_bundle_wide_host_never_relabels_files_named_after_their_host(tmp_path, write):
    """`--host` on a folder (or a bundle-wide manifest host and interface) is for the files that
    name no host: `nic/h1/eth0.ethtool` and `h2__eth1.ethtool` keep theirs, so two hosts'
    counters never merge into one series; a file named after nothing takes the given host."""
    snap = "2026-03-01T10:00:00Z\n" + ETHTOOL
    write("b/nic/h1/eth0.ethtool", snap)
    write("b/nic/h2/eth0.ethtool", snap)
    write("b/h3__eth1.ethtool", snap)
    write("b/pasted/ethtool-S.txt", snap)
    manifest(tmp_path / "b", {"interface": "eth9"})
    store, summary = ingest(tmp_path, tmp_path / "b", host="from-cli")
    assert summary.as_json()["rejected"] == 0
    assert sorted(rows(store, "SELECT DISTINCT device, ifname FROM samples")) == [
        ("from-cli", "eth9"), ("h1", "eth0"), ("h2", "eth0"), ("h3", "eth1")]

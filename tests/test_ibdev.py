"""ibdev2netdev: plain, verbose and old-style lines, host from the file name, writer, real samples."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import pytest
from conftest import run_parser
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from collectors.core.source import GZIP_MAGIC, Sink, SourceFile
from collectors.formats.ibdev import NO_HOST, NOT_A_LINE, PARSERS, match_line, write_ibdev2netdev

PARSER = PARSERS[0]
HOST = "gpu-node-0001"

PLAIN = """\
mlx5_0 port 1 ==> eth0 (Up)
mlx5_1 port 1 ==> eth1 (Down)
mlx5_2 port 1 ==> eth2 (Up)
"""

# `ibdev2netdev -v` as mlnx-tools prints it: printf "%-6s" pads the IB state, "%-15s" the VPD
# description; a device without VPD prints an empty description, one not found on PCI no address.
VERBOSE = (
    "0000:3b:00.0 mlx5_0 (MT4119 - MT_0000000008) CX516A - ConnectX-5 QSFP28 fw 16.27.2008 "
    "port 1 (ACTIVE) ==> ens4f0 (Up)\n"
    "0000:3b:00.1 mlx5_1 (MT4119 - MT_0000000008) CX516A - ConnectX-5 QSFP28 fw 16.27.2008 "
    "port 1 (DOWN  ) ==> ens4f1 (Down)\n"
    "0000:b1:00.0 mlx5_5 (MT4123 - MCX654105A-HCAT) ConnectX-6 VPI adapter card, HDR IB "
    "(200Gb/s) and 200GbE, single-port QSFP56, Socket Direct" + " " * 92
    + "fw 20.30.1004 port 1 (ACTIVE) ==> ib0 (Up)\n"
    "0000:4b:00.1 mlx5_6 (MT4120 - NA)  fw 16.27.1016 port 1 (DOWN  ) ==> ens6f1 (Down)\n"
    " mlx5_7 (NA - NA)  fw 16.27.1016 port 1 (NA) ==> ens6f2 ()\n"
)

OLD_STYLE = "mlx4_0 port 1 <===> eth2\nmlx4_0 port 2 <===> eth3\n"


def ifmaps(sink: Sink) -> list[tuple]:
    return [(r["host"], r["ibdev"], r["port"], r["netdev"], r["state"], r["line"])
            for r in sink.collected("ifmap")]


def test_plain_lines_map_rdma_devices_to_netdevs(write):
    path = write(f"topology/{HOST}/ibdev2netdev", PLAIN)
    parser, sink = run_parser(path, rel=f"topology/{HOST}/ibdev2netdev")
    assert parser is PARSER
    assert ifmaps(sink) == [
        (HOST, "mlx5_0", 1, "eth0", "Up", 1),
        (HOST, "mlx5_1", 1, "eth1", "Down", 2),
        (HOST, "mlx5_2", 1, "eth2", "Up", 3),
    ]
    assert (sink.loaded, sink.rejected) == (3, 0)
    assert sink.netdev(HOST, "mlx5_2") == "eth2"


def test_verbose_lines_with_padding_empty_description_and_no_pci(write):
    path = write(f"{HOST}.ibdev2netdev", VERBOSE)
    parser, sink = run_parser(path, rel=f"{HOST}.ibdev2netdev")
    assert parser is PARSER
    assert [r[1:5] for r in ifmaps(sink)] == [
        ("mlx5_0", 1, "ens4f0", "Up"),
        ("mlx5_1", 1, "ens4f1", "Down"),
        ("mlx5_5", 1, "ib0", "Up"),
        ("mlx5_6", 1, "ens6f1", "Down"),
        ("mlx5_7", 1, "ens6f2", ""),
    ]
    assert sink.rejected == 0


def test_verbose_match_keeps_the_description_and_firmware():
    m = match_line(VERBOSE.splitlines()[2])
    assert m["pci"] == "0000:b1:00.0" and m["fw"] == "20.30.1004"
    assert m["desc"].startswith("ConnectX-6 VPI adapter card, HDR IB (200Gb/s)")
    assert m["desc"].endswith("Socket Direct")
    assert match_line(VERBOSE.splitlines()[3])["desc"] == ""


def test_old_style_lines_have_no_state(write):
    path = write(f"{HOST}__ibdev2netdev.txt", OLD_STYLE)
    _, sink = run_parser(path, rel=f"{HOST}__ibdev2netdev.txt")
    assert [r[1:5] for r in ifmaps(sink)] == [("mlx4_0", 1, "eth2", ""), ("mlx4_0", 2, "eth3", "")]


@pytest.mark.parametrize("ibdev,netdev", [
    ("mlx5_an0", "eth1"), ("mlx5_ib7", "ib7"), ("rocep1s0f0", "enp1s0f0np0"),
    ("roceP2p1s0f1", "enP2p1s0f1np1"), ("mlx5_bond_0", "bond0"), ("irdma0", "ens801f0"),
])
def test_device_names_other_than_mlx5_n(write, ibdev, netdev):
    path = write(f"topology/{HOST}/ibdev2netdev", f"{ibdev} port 1 ==> {netdev} (Up)\n")
    _, sink = run_parser(path, rel=f"topology/{HOST}/ibdev2netdev")
    assert sink.netdev(HOST, ibdev) == netdev


@pytest.mark.parametrize("rel,host", [
    ("gpu-node-0001.ibdev2netdev", "gpu-node-0001"),
    ("topology/gpu-node-0002.ibdev2netdev.gz", "gpu-node-0002"),
    ("gpu-node-0003__ibdev2netdev.txt", "gpu-node-0003"),
    ("topology/gpu-node-0004/ibdev2netdev", "gpu-node-0004"),
    ("topology/gpu-node-0005/ibdev2netdev.txt", "gpu-node-0005"),
])
def test_host_comes_from_the_file_name(write, rel, host):
    path = write(rel, PLAIN, gz=rel.endswith(".gz"))
    _, sink = run_parser(path, rel=rel)
    assert {r[0] for r in ifmaps(sink)} == {host}
    assert sink.loaded == 3


@pytest.mark.parametrize("rel", [
    "ibdev2netdev", "ibdev2netdev.txt", "topology/ibdev2netdev", "topology/ibdev2netdev-v.txt",
    "ibdev2netdev-mixed-cx4-cx5-cx6.txt", "topology/x/y/IBDEV2NETDEV.out",
])
def test_unknown_host_rejects_every_line(write, rel):
    path = write(rel, PLAIN + "\n")
    parser, sink = run_parser(path, rel=rel)
    assert parser is PARSER
    assert sink.loaded == 0 and sink.collected("ifmap") == []
    assert [(n, why) for n, why, _ in sink.rejects] == [(1, NO_HOST), (2, NO_HOST), (3, NO_HOST)]
    assert sink.rejects[0][2] == "mlx5_0 port 1 ==> eth0 (Up)"


def test_lines_that_are_not_ibdev2netdev_are_rejected(write):
    text = PLAIN + "\n$ ibdev2netdev\nmlx5_3 port one ==> eth3 (Up)\n"
    path = write(f"topology/{HOST}/ibdev2netdev", text)
    _, sink = run_parser(path, rel=f"topology/{HOST}/ibdev2netdev")
    assert sink.loaded == 3
    assert [(n, why) for n, why, _ in sink.rejects] == [(5, NOT_A_LINE), (6, NOT_A_LINE)]


@pytest.mark.parametrize("head", [
    "NIC statistics:\n     rx_bytes_phy: 1\n",
    "2026-11-30T07:12:13,123456789+00:00\nNIC statistics:\n",
    "link mlx5_0/1 rx_write_requests 0 np_cnp_sent 0\n",
    "<165>Feb  6 09:42:36 veos01 Ebra: %LINEPROTO-5-UPDOWN: Line protocol on Interface\n",
    "# HELP node_network_up x\n# TYPE node_network_up gauge\nnode_network_up 1\n",
    '{"lldp": {}}\n', "", "\n\n", "\x00\xff garbage",
])
def test_sniff_refuses_other_formats(head):
    assert not PARSER.sniff(head, "topology/h/ibdev2netdev")


def test_sniff_accepts_each_form():
    for text in (PLAIN, VERBOSE, OLD_STYLE, "\n\n" + PLAIN):
        assert PARSER.sniff(text, "whatever.txt")


def test_writer_round_trip(write):
    rows = [("mlx5_0", 1, "eth0", "Up"), ("roceP2p1s0f1", 1, "enP2p1s0f1np1", "Down"),
            ("mlx5_ib3", 1, "ib3", "Up")]
    fh = io.StringIO()
    write_ibdev2netdev(rows, fh)
    assert fh.getvalue().splitlines()[0] == "mlx5_0 port 1 ==> eth0 (Up)"
    path = write(f"topology/{HOST}/ibdev2netdev", fh.getvalue())
    _, sink = run_parser(path, rel=f"topology/{HOST}/ibdev2netdev")
    assert [r[1:5] for r in ifmaps(sink)] == rows


LINES = st.sampled_from(PLAIN.splitlines() + VERBOSE.splitlines() + OLD_STYLE.splitlines()
                        + ["", "  ", "mlx5_0 port", "==> eth0 (Up)", "\t"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(LINES, st.text(max_size=40)), max_size=30), st.binary(max_size=60))
def test_arbitrary_text_never_raises_and_every_line_is_counted(lines, tail):
    data = "\n".join(lines).encode("utf-8", "surrogatepass") + tail
    assume(data[:2] != GZIP_MAGIC)  # that would be a (broken) gzip file, not text
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ibdev2netdev"
        path.write_bytes(data)
        sink = Sink()
        PARSER.parse(SourceFile(path, f"topology/{HOST}/ibdev2netdev"), sink)
    text = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace")
    records = sum(1 for line in text if line.rstrip("\r\n").strip())
    assert sink.loaded + sink.rejected == records
    assert len(sink.collected("ifmap")) == sink.loaded


# -- conformance: ../shared/real-samples/ethtool/ibdev2netdev-* ---------------------------------
REAL = {
    "ibdev2netdev-mlx5-eth01-04.txt": [
        ("mlx5_0", "eth01", "Up"), ("mlx5_1", "eth02", "Down"), ("mlx5_2", "eth03", "Up"),
        ("mlx5_3", "eth04", "Up")],
    "ibdev2netdev-azure-h100-ib-after-up.txt": [("mlx5_an0", "eth1", "Up")] + [
        (f"mlx5_ib{i}", f"ib{i}", "Up") for i in range(8)],
    "ibdev2netdev-dgx-spark-roce.txt": [
        ("rocep1s0f0", "enp1s0f0np0", "Down"), ("rocep1s0f1", "enp1s0f1np1", "Up"),
        ("roceP2p1s0f0", "enP2p1s0f0np0", "Down"), ("roceP2p1s0f1", "enP2p1s0f1np1", "Up")],
    "ibdev2netdev-mixed-cx4-cx5-cx6.txt": [
        ("mlx5_0", "ens4f0", "Down"), ("mlx5_1", "ens4f1", "Down"), ("mlx5_2", "ens6", "Up"),
        ("mlx5_3", "ens14f0", "Up"), ("mlx5_4", "ens14f1", "Down"), ("mlx5_5", "ib0", "Up"),
        ("mlx5_6", "ens6f1", "Down"), ("mlx5_7", "ens6f2", "Down")],
}
REAL["ibdev2netdev-v-mixed-cx4-cx5-cx6.txt"] = REAL["ibdev2netdev-mixed-cx4-cx5-cx6.txt"]


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_sample_under_its_own_name_is_rejected_for_want_of_a_host(real_samples, name):
    path = real_samples / "ethtool" / name
    parser, sink = run_parser(path)
    assert parser is PARSER
    assert sink.loaded == 0
    assert sink.rejected == len(REAL[name])
    assert {why for _, why, _ in sink.rejects} == {NO_HOST}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_sample_under_topology_host_maps_as_documented(real_samples, write, name):
    rel = f"topology/{HOST}/ibdev2netdev"
    path = write(rel, (real_samples / "ethtool" / name).read_text())
    parser, sink = run_parser(path, rel=rel)
    assert parser is PARSER
    assert (sink.loaded, sink.rejected) == (len(REAL[name]), 0)
    assert [(r[1], r[3], r[4]) for r in ifmaps(sink)] == REAL[name]
    assert {r[0] for r in ifmaps(sink)} == {HOST} and {r[2] for r in ifmaps(sink)} == {1}


def test_real_verbose_sample_has_the_92_space_run(real_samples):
    text = (real_samples / "ethtool" / "ibdev2netdev-v-mixed-cx4-cx5-cx6.txt").read_text()
    cx6 = next(line for line in text.splitlines() if "mlx5_5" in line)
    assert " " * 92 in cx6
    assert match_line(cx6)["netdev"] == "ib0"

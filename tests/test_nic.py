"""NIC snapshots: ethtool -S (mlx5 and Cumulus), RDMA hw_counters in four printed forms,
timestamp framing, file-name hints, writers, the counter map and the real samples."""

from __future__ import annotations

import csv
import io
import re
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import REPO, run_parser
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from collectors.core.schema import canonical_counters, counter_map
from collectors.core.source import GZIP_MAGIC, Manifest, Sink, SourceFile
from collectors.core.timeparse import NS
from collectors.formats.ibdev import PARSERS as IBDEV_PARSERS
from collectors.formats.nic import (
    CM_COUNTERS,
    NO_HOST,
    NO_TS,
    PARSERS,
    QP_COUNTERS,
    UNKNOWN_LINE,
    date_ins,
    is_timestamp_line,
    qualifier,
    write_ethtool_snapshots,
    write_rdma_statistic,
)

PARSER = PARSERS[0]
HOST = "gpu-node-0001"
T0 = int(datetime(2026, 11, 30, 7, 12, 13, tzinfo=UTC).timestamp()) * NS
TS0 = "2026-11-30T07:12:13,123456789+00:00"  # date -Ins
TS1 = "2026-11-30T07:12:14,200000000+00:00"

# ethtool -S on a RoCE host (mlx5): ethtool prints "     %s: %llu" under "NIC statistics:"
MLX5 = """\
NIC statistics:
     rx_packets: 1200
     rx_bytes: 96000
     rx_out_of_buffer: 3
     rx_bytes_phy: 123456789
     tx_bytes_phy: 987654321
     rx_discards_phy: 7
     link_down_events_phy: 1
     rx_pcs_symbol_err_phy: 0
     rx_corrected_bits_phy: 12
     rx_prio3_pause: 42
     tx_prio3_pause: 17
     rx_prio3_pause_duration: 840
     tx_pause_storm_warning_events: 2
     tx_pause_storm_error_events: 0
     rx0_packets: 600
     ch0_events: 5
     rx_err_lane_1_phy: 4
"""
MLX5_COUNT = 17

CUMULUS = """\
NIC statistics:
     HwIfInOctets: 51883086875273
     HwIfInUcastPkts: 7669711571
     HwIfInDiscards: 1439
     HwIfInBufferDrops: 1439
     HwIfInErrors: 15682741
     HwIfInPausePkt: 0
     HwIfInPfc3Pkt: 311
     HwIfOutOctets: 10590370555531
     HwIfOutQDrops: 0
     HwIfOutQ3WredDrops: 9
""" + "     HwIfOutQLen: 0 \n"  # the real output keeps this trailing space

RDMA_LINE = (
    "link mlx5_2/1 rx_write_requests 0 out_of_buffer 5 out_of_sequence 2 packet_seq_err 1 "
    "local_ack_timeout_err 3 rp_cnp_handled 40 np_ecn_marked_roce_packets 77 np_cnp_sent 76 \n"
    "link mlx5_3/1 rx_write_requests 0 out_of_buffer 0 out_of_sequence 0 packet_seq_err 0 "
    "local_ack_timeout_err 0 rp_cnp_handled 0 np_ecn_marked_roce_packets 0 np_cnp_sent 9 \n"
)

RDMA_PRETTY = (
    "link mlx5_2/1 \n\trx_write_requests 0 \n\tout_of_buffer 5 \n\tnp_cnp_sent 76 \n"
    "\trp_cnp_handled 40 \n"
)

SYSFS = """\
/sys/class/infiniband/mlx5_2/ports/1/hw_counters/lifespan:10
/sys/class/infiniband/mlx5_2/ports/1/hw_counters/np_cnp_sent:123
/sys/class/infiniband/mlx5_2/ports/1/hw_counters/rp_cnp_handled:45
/sys/class/infiniband/mlx5_2/ports/1/counters/port_rcv_data:1000
/sys/class/infiniband/mlx5_2/hw_counters/rx_icrc_encapsulated:0
"""

SHOW_COUNTERS = """\
Port 1 hw counters:
duplicate_request: 0
lifespan: 10
np_cnp_sent: 1052612505
out_of_sequence: 1811101
Port 1 cm counters:
req: 0
rep: 3
"""

IFMAPS = {(HOST, "mlx5_2", 1): "eth2", (HOST, "mlx5_bond_0", 1): "bond0"}


def samples(sink: Sink) -> dict[tuple[int, str, str, str], tuple[float, str]]:
    """(ts, device, ifname, metric) -> (value, qualifier), with no duplicates."""
    rows = sink.collected("samples")
    out = {(r["ts"], r["device"], r["ifname"], r["metric"]): (r["value"], r["qualifier"])
           for r in rows}
    assert len(out) == len(rows)
    return out


def parse_text(write, rel: str, text: str, sink: Sink | None = None,
               manifest: Manifest | None = None, gz: bool = False) -> Sink:
    path = write(rel, text, gz=gz)
    parser, sink = run_parser(path, rel=rel, manifest=manifest, sink=sink)
    assert parser is PARSER
    return sink


# -- ethtool -S ------------------------------------------------------------------------------
def test_mlx5_ethtool_blocks_one_record_per_counter(write):
    text = f"{TS0}\n{MLX5}{TS1}\n{MLX5.replace('rx_bytes_phy: 123456789', 'rx_bytes_phy: 123999999')}"
    sink = parse_text(write, f"nic/{HOST}/eth2.ethtool", text)
    assert (sink.loaded, sink.rejected) == (2 * MLX5_COUNT, 0)
    got = samples(sink)
    t0, t1 = T0 + 123456789, T0 + NS + 200000000
    assert got[(t0, HOST, "eth2", "rx_bytes_phy")] == (123456789.0, "")
    assert got[(t1, HOST, "eth2", "rx_bytes_phy")] == (123999999.0, "")
    assert got[(t0, HOST, "eth2", "rx_prio3_pause")] == (42.0, "priority=3")
    assert got[(t0, HOST, "eth2", "tx_prio3_pause")] == (17.0, "priority=3")
    assert got[(t0, HOST, "eth2", "tx_pause_storm_warning_events")] == (2.0, "")
    assert got[(t0, HOST, "eth2", "rx0_packets")] == (600.0, "queue=0")
    assert got[(t0, HOST, "eth2", "ch0_events")] == (5.0, "channel=0")
    assert got[(t0, HOST, "eth2", "rx_err_lane_1_phy")] == (4.0, "lane=1")
    line = {r["metric"]: r["line"] for r in sink.collected("samples") if r["ts"] == t1}
    assert line["rx_packets"] == MLX5_COUNT + 5  # after 2 ts lines, 2 headers, 17 counters


def test_cumulus_switch_ethtool(write):
    sink = parse_text(write, "leaf-p0-03__swp17.ethtool", f"{TS0}\n{CUMULUS}")
    got = samples(sink)
    ts = T0 + 123456789
    assert got[(ts, "leaf-p0-03", "swp17", "HwIfInOctets")] == (51883086875273.0, "")
    assert got[(ts, "leaf-p0-03", "swp17", "HwIfInErrors")] == (15682741.0, "")
    assert got[(ts, "leaf-p0-03", "swp17", "HwIfInPfc3Pkt")] == (311.0, "priority=3")
    assert got[(ts, "leaf-p0-03", "swp17", "HwIfOutQ3WredDrops")] == (9.0, "queue=3")
    assert got[(ts, "leaf-p0-03", "swp17", "HwIfOutQLen")] == (0.0, "")  # trailing space
    assert (sink.loaded, sink.rejected) == (11, 0)


def test_ethtool_file_named_after_an_rdma_device_is_mapped(write):
    sink = parse_text(write, f"{HOST}__mlx5_2.ethtool", f"{TS0}\n{MLX5}", Sink(ifmaps=IFMAPS))
    assert {r["ifname"] for r in sink.collected("samples")} == {"eth2"}


# -- RDMA hw counters ------------------------------------------------------------------------
def test_rdma_statistic_one_line_per_link_mapped_to_netdevs(write):
    sink = parse_text(write, f"nic/{HOST}/mlx5_2.rdma", f"{TS0}\n{RDMA_LINE}",
                      Sink(ifmaps={(HOST, "mlx5_2", 1): "eth2"}))
    assert (sink.loaded, sink.rejected) == (2, 0)
    got = samples(sink)
    ts = T0 + 123456789
    assert got[(ts, HOST, "eth2", "np_cnp_sent")] == (76.0, "")
    assert got[(ts, HOST, "eth2", "np_ecn_marked_roce_packets")] == (77.0, "")
    assert got[(ts, HOST, "eth2", "out_of_buffer")] == (5.0, "")
    assert got[(ts, HOST, "mlx5_3", "np_cnp_sent")] == (9.0, "")  # not in the ifmap
    assert len(got) == 16
    assert {r["line"] for r in sink.collected("samples")} == {2, 3}


def test_rdma_pretty_output_one_record_per_counter(write):
    sink = parse_text(write, f"nic/{HOST}/mlx5_2.rdma", f"{TS0}\n{RDMA_PRETTY}", Sink(ifmaps=IFMAPS))
    assert (sink.loaded, sink.rejected) == (4, 0)
    got = samples(sink)
    assert got[(T0 + 123456789, HOST, "eth2", "rp_cnp_handled")] == (40.0, "")
    assert [r["line"] for r in sink.collected("samples")] == [3, 4, 5, 6]


def test_sysfs_grep_form_with_lifespan_as_text(write):
    sink = parse_text(write, f"nic/{HOST}/mlx5_2.hw_counters", f"{TS0}\n{SYSFS}", Sink(ifmaps=IFMAPS))
    assert (sink.loaded, sink.rejected) == (5, 0)
    got = samples(sink)
    ts = T0 + 123456789
    assert got[(ts, HOST, "eth2", "np_cnp_sent")] == (123.0, "")
    assert got[(ts, HOST, "eth2", "port_rcv_data")] == (1000.0, "")
    assert got[(ts, HOST, "eth2", "rx_icrc_encapsulated")] == (0.0, "")
    assert (ts, HOST, "eth2", "lifespan") not in got
    text = sink.collected("text_samples")
    assert [(r["metric"], r["value"], r["ifname"]) for r in text] == [("lifespan", "10", "eth2")]


def test_show_counters_hw_section_loads_and_cm_section_is_refused(write):
    sink = parse_text(write, f"nic/{HOST}/mlx5_bond_0.hw_counters", f"{TS0}\n{SHOW_COUNTERS}",
                      Sink(ifmaps=IFMAPS))
    got = samples(sink)
    ts = T0 + 123456789
    assert got[(ts, HOST, "bond0", "np_cnp_sent")] == (1052612505.0, "")
    assert got[(ts, HOST, "bond0", "out_of_sequence")] == (1811101.0, "")
    assert len(got) == 3
    assert [r["value"] for r in sink.collected("text_samples")] == ["10"]
    assert sink.loaded == 4
    assert [(n, why) for n, why, _ in sink.rejects] == [(8, CM_COUNTERS), (9, CM_COUNTERS)]


def test_ports_other_than_one_are_not_given_port_ones_netdev(write):
    sink = parse_text(write, f"nic/{HOST}/mlx4_0.rdma",
                      f"{TS0}\nlink mlx4_0/2 out_of_sequence 4 \n",
                      Sink(ifmaps={(HOST, "mlx4_0"): "eth2"}))
    assert {r["ifname"] for r in sink.collected("samples")} == {"mlx4_0/2"}


def test_qp_counters_and_malformed_rdma_lines_are_rejected(write):
    text = (f"{TS0}\n"
            "link mlx5_2/1 cntn 4 qp-type RC pid 30485 comm ib_send_bw rx_write_requests 0\n"
            "link mlx5_2/1 out_of_sequence\n"
            "link mlx5_3/1 out_of_sequence x1\n"
            "link mlx5_4/1 out_of_sequence -1 \n")
    sink = parse_text(write, f"nic/{HOST}/mlx5_2.rdma", text)
    assert sink.loaded == 0
    reasons = [why for _, why, _ in sink.rejects]
    assert reasons[0] == QP_COUNTERS
    assert reasons[1].startswith("odd number of fields after 'link mlx5_2/1'")
    assert reasons[2] == "value 'x1' of out_of_sequence is not a number"
    assert reasons[3] == "value '-1' of out_of_sequence is negative: a counter cannot be"


def test_bad_ethtool_values_reject_only_their_line(write):
    text = (f"{TS0}\nNIC statistics:\n     rx_bytes_phy: 12\n     tx_bytes_phy: n/a\n     : 3\n"
            f"     rx_packets_phy: {2**64 * 10}\n$ ethtool -S eth2\n")
    sink = parse_text(write, f"nic/{HOST}/eth2.ethtool", text)
    assert sink.loaded == 1
    assert [(n, why) for n, why, _ in sink.rejects] == [
        (4, "value 'n/a' of tx_bytes_phy is not a number"), (5, "counter line without a name"),
        (6, f"value '{2**64 * 10}' of rx_packets_phy is out of range (beyond 2^64 - 1)"), (7, UNKNOWN_LINE)]
    assert sink.rejects[0][2] == "     tx_bytes_phy: n/a"


# -- timestamp framing -----------------------------------------------------------------------
@pytest.mark.parametrize("line,ns", [
    ("2026-11-30T07:12:13,123456789+00:00", T0 + 123456789),      # date -Ins
    ("2026-11-30T08:12:13,123456789+01:00", T0 + 123456789),
    ("2026-11-30T07:12:13+00:00", T0),                            # date -Iseconds
    ("2026-11-30T02:12:13-0500", T0),
    ("2026-11-30 07:12:13.123456789+00:00", T0 + 123456789),      # date --rfc-3339=ns
    ("2026-11-30T07:12:13.5Z", T0 + 500_000_000),
    (f"{T0 // NS}.123456789", T0 + 123456789),                    # date +%s.%N
    (f"{T0 // NS}", T0),                                          # date +%s
])
def test_timestamp_line_variants(write, line, ns):
    sink = parse_text(write, f"nic/{HOST}/eth2.ethtool", f"{line}\n{MLX5}")
    assert {r["ts"] for r in sink.collected("samples")} == {ns}
    assert sink.loaded == MLX5_COUNT


def test_timestamp_without_zone_takes_the_manifest_zone(write):
    sink = parse_text(write, f"nic/{HOST}/eth2.ethtool", f"2026-11-30 09:12:13\n{MLX5}",
                      manifest=Manifest(timezone="+02:00"))
    assert {r["ts"] for r in sink.collected("samples")} == {T0}


def test_timestamp_without_zone_and_no_manifest_zone_rejects_its_block(write):
    text = f"2026-11-30 07:12:13\n{MLX5}{TS1}\n{MLX5}"
    sink = parse_text(write, f"nic/{HOST}/eth2.ethtool", text)
    assert sink.loaded == MLX5_COUNT and sink.rejected == MLX5_COUNT
    assert {why for _, why, _ in sink.rejects} == {
        "timestamp line '2026-11-30 07:12:13' has no timezone: set 'timezone' in manifest.json "
        "or print it with `date -Ins`"}


def test_bare_snapshot_takes_the_collection_time_a_second_is_rejected(write):
    """A pasted `ethtool -S`: the manifest's collection time; a second snapshot in the same
    file without a timestamp line cannot share it."""
    sink = parse_text(write, f"nic/{HOST}/eth2.ethtool", MLX5 + MLX5,
                      manifest=Manifest(collected_at=T0))
    assert sink.loaded == MLX5_COUNT and sink.rejected == MLX5_COUNT
    assert {r["ts"] for r in sink.collected("samples")} == {T0}
    assert {why for _, why, _ in sink.rejects} == {NO_TS}
    assert NO_TS == "no timestamp line before this snapshot (expected what `date -Ins` prints)"
    assert [n for n, _, _ in sink.rejects] == list(range(MLX5_COUNT + 3, 2 * MLX5_COUNT + 3))


def test_second_snapshot_after_one_timestamp_is_rejected(write):
    sink = parse_text(write, f"nic/{HOST}/eth2.ethtool", f"{TS0}\n{MLX5}{MLX5}{TS1}\n{MLX5}")
    assert sink.loaded == 2 * MLX5_COUNT and sink.rejected == MLX5_COUNT
    assert {n for n, _, _ in sink.rejects} == set(range(MLX5_COUNT + 4, 2 * MLX5_COUNT + 4))
    sink = parse_text(write, f"nic/{HOST}/r.rdma", f"{TS0}\n{RDMA_LINE}{RDMA_LINE}")
    assert (sink.loaded, sink.rejected) == (2, 2)


def test_impossible_timestamp_rejects_its_block(write):
    sink = parse_text(write, f"nic/{HOST}/eth2.ethtool", f"2026-13-45T07:12:13+00:00\n{MLX5}")
    assert sink.loaded == 0
    assert next(iter({why for _, why, _ in sink.rejects})).startswith("bad timestamp line")


# -- file names ------------------------------------------------------------------------------
@pytest.mark.parametrize("rel,host,ifname", [
    ("nic/gpu-node-0001/eth2.ethtool", "gpu-node-0001", "eth2"),
    ("gpu-node-0002__eth3.ethtool", "gpu-node-0002", "eth3"),
    ("nic/anything/gpu-node-0003__ens4f0.txt", "gpu-node-0003", "ens4f0"),
    ("bundle/nic/leaf-p1-02/swp31.ethtool.gz", "leaf-p1-02", "swp31"),
])
def test_host_and_device_come_from_the_file_name(write, rel, host, ifname):
    sink = parse_text(write, rel, f"{TS0}\n{MLX5}", gz=rel.endswith(".gz"))
    assert {(r["device"], r["ifname"]) for r in sink.collected("samples")} == {(host, ifname)}
    assert sink.loaded == MLX5_COUNT


@pytest.mark.parametrize("rel", ["eth2.ethtool", "gpu-node-0001.ethtool", "nic/eth2.txt",
                                 "mlx5-ethtool-S.txt"])
def test_file_name_without_host_and_device_rejects(write, rel):
    sink = parse_text(write, rel, f"{TS0}\n{MLX5}")
    assert sink.loaded == 0
    assert {why for _, why, _ in sink.rejects} == {NO_HOST}


def test_gzip_is_transparent(write):
    sink = parse_text(write, f"nic/{HOST}/eth2.ethtool.gz", f"{TS0}\n{MLX5}", gz=True)
    assert sink.loaded == MLX5_COUNT
    assert samples(sink)[(T0 + 123456789, HOST, "eth2", "rx_bytes_phy")][0] == 123456789.0


# -- sniffing --------------------------------------------------------------------------------
@pytest.mark.parametrize("text", [MLX5, CUMULUS, RDMA_LINE, RDMA_PRETTY, SYSFS, SHOW_COUNTERS])
def test_sniff_recognizes_each_kind_with_or_without_timestamp(text):
    assert PARSER.sniff(text, "x")
    assert PARSER.sniff(f"{TS0}\n\n{text}", "x")
    assert PARSER.sniff(f"{T0 // NS}.000000001\n{text}", "x")


@pytest.mark.parametrize("head", [
    "<165>Feb  6 09:42:36 veos01 Ebra: %LINEPROTO-5-UPDOWN: Line protocol on Interface",
    "2019-02-22T10:57:30.359427+00:00 leaf01 switchd[19517]: nic_set_carrier: swp51: down",
    f"{TS0}\n2019-02-22T10:57:30+00:00 leaf01 switchd[1]: link up\n",
    "[    5.189354] mlx5_core 0000:01:00.0 enp1s0np0: Link down",
    "# HELP node_ethtool_rx_bytes x\n# TYPE node_ethtool_rx_bytes untyped\n",
    'node_network_up{device="eth0"} 1 1700000000000\n',
    "mlx5_2 port 1 ==> eth2 (Up)\n", '{"source": "leaf:57400", "updates": []}\n',
    "rx_bytes_phy: 12\n", "", f"{TS0}\n{TS0}\n{TS0}\nNIC statistics:\n", "\x00\x01\xff",
])
def test_sniff_refuses_other_formats(head):
    assert not PARSER.sniff(head, "nic/h/eth2.ethtool")


def test_registry_routes_each_kind_to_this_parser(write):
    for i, text in enumerate((MLX5, CUMULUS, RDMA_LINE, RDMA_PRETTY, SYSFS, SHOW_COUNTERS)):
        path = write(f"nic/{HOST}/dev{i}.x", f"{TS0}\n{text}")
        parser, _ = run_parser(path, rel=f"nic/{HOST}/dev{i}.x")
        assert parser is PARSER


def test_is_timestamp_line_and_qualifier():
    assert is_timestamp_line(TS0) and is_timestamp_line(" 1796022733.5 ")
    assert not is_timestamp_line("12345") and not is_timestamp_line("rx_bytes_phy: 1")
    assert qualifier("tx_prio7_pause_duration") == "priority=7"
    assert qualifier("rx_bytes_phy") == "" and qualifier("HwIfOutQDrops") == ""


# -- writers ---------------------------------------------------------------------------------
def test_date_ins_prints_what_date_ins_prints():
    assert date_ins(T0 + 123456789) == TS0
    assert date_ins(T0) == "2026-11-30T07:12:13,000000000+00:00"


def test_ethtool_writer_round_trip(write):
    blocks = [(T0 + 5, {"rx_bytes_phy": 10, "rx_prio3_pause": 2, "HwIfInOctets": 2**40}),
              (T0 + NS, {"rx_bytes_phy": 20, "rx_prio3_pause": 4, "HwIfInOctets": 2**40 + 1})]
    fh = io.StringIO()
    write_ethtool_snapshots(blocks, fh)
    lines = fh.getvalue().splitlines()
    assert lines[:3] == ["2026-11-30T07:12:13,000000005+00:00", "NIC statistics:",
                         "     rx_bytes_phy: 10"]
    sink = parse_text(write, f"nic/{HOST}/eth2.ethtool", fh.getvalue())
    assert samples(sink) == {(ts, HOST, "eth2", k): (float(v), qualifier(k))
                             for ts, c in blocks for k, v in c.items()}
    assert sink.rejected == 0


def test_rdma_writer_round_trip(write):
    blocks = [(T0, {("mlx5_2", 1): {"np_cnp_sent": 1, "rp_cnp_handled": 2},
                    ("mlx5_3", 1): {"np_cnp_sent": 3, "rp_cnp_handled": 4}}),
              (T0 + NS, {("mlx5_2", 1): {"np_cnp_sent": 5, "rp_cnp_handled": 6},
                         ("mlx5_3", 1): {"np_cnp_sent": 7, "rp_cnp_handled": 8}})]
    fh = io.StringIO()
    write_rdma_statistic(blocks, fh)
    assert fh.getvalue().splitlines()[1] == "link mlx5_2/1 np_cnp_sent 1 rp_cnp_handled 2 "
    sink = parse_text(write, f"nic/{HOST}/mlx5_2.rdma", fh.getvalue(), Sink(ifmaps=IFMAPS))
    assert samples(sink) == {(ts, HOST, IFMAPS.get((HOST, dev, 1), dev), k): (float(v), "")
                             for ts, links in blocks for (dev, _), c in links.items()
                             for k, v in c.items()}
    assert (sink.loaded, sink.rejected) == (4, 0)


def test_writers_refuse_values_a_counter_cannot_have():
    with pytest.raises(ValueError):
        write_ethtool_snapshots([(T0, {"x": -1})], io.StringIO())
    with pytest.raises(ValueError):
        write_rdma_statistic([(T0, {("mlx5_0", 1): {"x": 1.5}})], io.StringIO())


# -- property tests --------------------------------------------------------------------------
_FRAMING = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|\d{9,19}(?:\.\d{1,9})?|NIC statistics:|link\s+[^\s/]+/\d+|Port\s+\d+\s+(?:hw|cm)\s+counters:")


def expected_records(data: bytes) -> int:
    """Non-blank lines that are not timestamps or tool headers: each is loaded or rejected."""
    text = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace")
    return sum(1 for line in text
               if (t := line.rstrip("\r\n").strip()) and not _FRAMING.fullmatch(t))


def parse_bytes(data: bytes, rel: str = f"nic/{HOST}/eth2.ethtool") -> Sink:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f"
        path.write_bytes(data)
        sink = Sink(ifmaps=dict(IFMAPS))
        PARSER.parse(SourceFile(path, rel), sink)
    return sink


FRAGMENTS = st.sampled_from(
    [TS0, "1796022733.5", "2026-11-30 07:12:13", "NIC statistics:", "link mlx5_2/1",
     "Port 1 hw counters:", "Port 2 cm counters:", "lifespan: 10", "\tnp_cnp_sent 3", "", " "]
    + MLX5.splitlines() + RDMA_LINE.splitlines() + SYSFS.splitlines() + CUMULUS.splitlines())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(FRAGMENTS, st.text(max_size=50)), max_size=40), st.binary(max_size=40))
def test_arbitrary_text_never_raises_and_keeps_the_accounting(lines, tail):
    data = "\n".join(lines).encode() + tail
    assume(data[:2] != GZIP_MAGIC)
    sink = parse_bytes(data)
    assert sink.loaded + sink.rejected == expected_records(data)
    assert sink.rejected == len(sink.rejects)
    assert all(r["ts"] is not None for r in sink.collected("samples"))


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=4000))
def test_truncated_valid_file_never_raises_and_keeps_the_accounting(cut):
    data = f"{TS0}\n{MLX5}{TS1}\n{RDMA_LINE}{TS1}\n{SYSFS}".encode()[:cut]
    sink = parse_bytes(data)
    assert sink.loaded + sink.rejected == expected_records(data)


# -- counter map -----------------------------------------------------------------------------
MAP_FILE = REPO / "collectors" / "core" / "data" / "counter_map_nic.csv"


def nic_map() -> dict[str, dict]:
    with MAP_FILE.open() as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["vendor_name", "canonical", "scale", "source"]
    names = [r["vendor_name"] for r in rows]
    assert len(names) == len(set(names)), "a vendor name appears twice"
    return {r["vendor_name"]: r for r in rows}


def test_counter_map_rows_name_known_canonicals():
    known = canonical_counters()
    rows = nic_map()
    assert all(r["canonical"] in known and float(r["scale"]) > 0 and r["source"]
               for r in rows.values())
    merged = counter_map()  # raises if another family maps one of these names too
    assert all(merged[("nic", name)].canonical == r["canonical"] for name, r in rows.items())


@pytest.mark.parametrize("vendor,canonical", [
    ("rx_bytes_phy", "rx_bytes"), ("tx_bytes_phy", "tx_bytes"), ("rx_discards_phy", "rx_discards"),
    ("rx_prio3_pause", "rx_pause"), ("tx_prio3_pause", "tx_pause"), ("tx_global_pause", "tx_pause"),
    ("link_down_events_phy", "link_down_events"), ("rx_pcs_symbol_err_phy", "symbol_errors"),
    ("rx_corrected_bits_phy", "corrected_bits"), ("rx_crc_errors_phy", "rx_fcs_errors"),
    ("tx_pause_storm_warning_events", "pause_storm_warnings"),
    ("tx_pause_storm_error_events", "pause_storm_errors"),
    ("rx_out_of_buffer", "rx_out_of_buffer"), ("out_of_buffer", "rx_out_of_buffer"),
    ("np_cnp_sent", "cnp_sent"), ("rp_cnp_handled", "cnp_handled"),
    ("np_ecn_marked_roce_packets", "ecn_marked_roce"), ("rx_icrc_encapsulated", "rx_icrc_errors"),
    ("local_ack_timeout_err", "local_ack_timeout_err"), ("HwIfInOctets", "rx_bytes"),
    ("HwIfOutOctets", "tx_bytes"), ("HwIfInUcastPkts", "rx_packets"),
    ("HwIfInErrors", "rx_errors"), ("HwIfInDiscards", "rx_discards"),
    ("HwIfInPausePkt", "rx_pause"), ("HwIfOutPfc3Pkt", "tx_pause"),
])
def test_counter_map_names(vendor, canonical):
    assert nic_map()[vendor]["canonical"] == canonical


@pytest.mark.parametrize("vendor", [
    "rx_bytes", "tx_packets",  # mlx5 software counters: would double the _phy ones
    "tx_pause_ctrl_phy", "rx_pause_ctrl_phy",  # the same global pauses as *_global_pause
    "rx_prio0_discards",  # part of rx_discards_phy
    "HwIfInBufferDrops", "HwIfInDot3FrameErrors", "HwIfOutQDrops",  # parts of Discards/Errors
])
def test_counters_that_would_count_twice_are_left_unmapped(vendor):
    assert vendor not in nic_map()


# `ethtool eth2` on a ConnectX-7 host, as ethtool prints its settings (dump_link_usettings):
# tab-indented, wrapped link-mode lists, `Speed: Unknown!` while the link is down
ETHTOOL_SETTINGS = """\
Settings for eth2:
\tSupported ports: [ Backplane ]
\tSupported link modes:   1000baseKX/Full
\t                        100000baseCR4/Full
\t                        400000baseCR4/Full
\tSupported pause frame use: Symmetric
\tSpeed: {speed}
\tDuplex: Full
\tAuto-negotiation: on
\tPort: Direct Attach Copper
\tLink detected: {link}
"""


def test_ethtool_settings_give_speed_and_link_state(write):
    text = (f"{TS0}\n" + ETHTOOL_SETTINGS.format(speed="100000Mb/s", link="yes")
            + f"{TS1}\n" + ETHTOOL_SETTINGS.format(speed="Unknown!", link="no"))
    sink = parse_text(write, f"nic/{HOST}/eth2.ethtool", text)
    assert (sink.loaded, sink.rejected) == (20, 0)  # every line but the header a record
    got = samples(sink)
    t0, t1 = T0 + 123456789, T0 + NS + 200000000
    assert got[(t0, HOST, "eth2", "Speed")] == (100000.0, "")  # Mb/s, as printed
    assert got[(t0, HOST, "eth2", "Link detected")] == (1.0, "")
    assert got[(t1, HOST, "eth2", "Link detected")] == (0.0, "")
    assert (t1, HOST, "eth2", "Speed") not in got  # Unknown! is no speed
    texts = {(r["ts"], r["metric"]): r["value"] for r in sink.collected("text_samples")}
    assert texts[(t1, "Speed")] == "Unknown!" and texts[(t0, "Duplex")] == "Full"
    assert nic_map()["Speed"]["canonical"] == "port_speed_bps"
    assert float(nic_map()["Speed"]["scale"]) == 1e6  # Mb/s -> b/s
    assert nic_map()["Link detected"]["canonical"] == "link_up"
    assert PARSER.sniff(f"{TS0}\nSettings for eth2:\n", "nic/h/eth2.ethtool")


# -- conformance: ../shared/real-samples/ethtool/ --------------------------------------------
COUNTER_FILES = {
    "mlx5-ethtool-S-nonzero-kernel5.15-bpf-list.txt": 101,
    "cumulus-switch-ethtool-S-swp1-HwIf-counters.txt": 25,
    "rdma-statistic-show-4links.txt": 4,
    "rdma-stat-show-p-mlx5_0.txt": 21,
    "show_counters-mlx5_bond_0-hw-counters.txt": 30,
}


def test_every_real_sample_file_is_covered(real_samples):
    names = {p.name for p in (real_samples / "ethtool").iterdir()}
    assert set(COUNTER_FILES) <= names
    assert all(n in COUNTER_FILES or n.startswith("ibdev2netdev") for n in names)


@pytest.mark.parametrize("name", sorted(COUNTER_FILES))
def test_real_sample_without_context_is_rejected_then_loads_with_it(real_samples, name):
    """As published (no host in the name): rejected saying so; with the manifest's host,
    interface and collection time, every record loads at that time."""
    parser, sink = run_parser(real_samples / "ethtool" / name)
    assert parser is PARSER
    assert sink.loaded == 0 and sink.rejected == COUNTER_FILES[name]
    assert {why for _, why, _ in sink.rejects} == {NO_HOST}
    ctx = Manifest(host=HOST, interface="mlx5_bond_0" if "bond" in name else "eth2",
                   collected_at=T0)
    parser, sink = run_parser(real_samples / "ethtool" / name, manifest=ctx)
    assert sink.rejected == 0 and sink.loaded == COUNTER_FILES[name]
    rows = sink.collected("samples") + sink.collected("text_samples")
    assert {(r["ts"], r["device"]) for r in rows} == {(T0, HOST)}


def stamped(real_samples: Path, write, name: str, rel: str, sink: Sink | None = None) -> Sink:
    text = (real_samples / "ethtool" / name).read_text()
    sink = parse_text(write, rel, f"{TS0}\n{text}", sink)
    assert (sink.loaded, sink.rejected) == (COUNTER_FILES[name], 0)
    return sink


def test_real_mlx5_ethtool_values(real_samples, write):
    sink = stamped(real_samples, write, "mlx5-ethtool-S-nonzero-kernel5.15-bpf-list.txt",
                   f"nic/{HOST}/eth2.ethtool")
    got = {m: v for (_, d, i, m), v in samples(sink).items() if (d, i) == (HOST, "eth2")}
    assert len(got) == 101
    for metric, value in [
        ("rx_bytes_phy", 6211329423080), ("tx_bytes_phy", 357657403514),
        ("rx_packets_phy", 97052087562), ("rx_discards_phy", 58591428329),
        ("tx_discards_phy", 0), ("rx_out_of_buffer", 990473555), ("tx_pause_ctrl_phy", 5745055),
        ("tx_global_pause", 5745042), ("tx_global_pause_duration", 771103810),
    ]:
        assert got[metric] == (float(value), ""), metric
    assert got["rx_prio0_discards"] == (58591314012.0, "priority=0")
    assert got["ch0_poll"] == (146981606.0, "channel=0")
    assert got["rx0_xdp_drop"] == (3753342954.0, "queue=0")
    assert not any("prio3" in m for m in got)


def test_real_cumulus_switch_values(real_samples, write):
    sink = stamped(real_samples, write, "cumulus-switch-ethtool-S-swp1-HwIf-counters.txt",
                   "leaf-01__swp1.ethtool")
    got = {m: v for (_, d, i, m), (v, _) in samples(sink).items() if (d, i) == ("leaf-01", "swp1")}
    assert got["HwIfInOctets"] == 51883086875273 and got["HwIfOutOctets"] == 10590370555531
    assert got["HwIfInErrors"] == 15682741 and got["HwIfInDiscards"] == 1439
    assert got["HwIfInBufferDrops"] == 1439 and got["HwIfInAclDrops"] == 115
    assert got["HwIfOutQDrops"] == 0 and got["HwIfOutQLen"] == 0


def ifmap_from_real_ibdev2netdev(real_samples: Path, write) -> dict:
    """mlx5_0..3 -> eth01..04 on HOST, from the real ibdev2netdev sample, as ingest would."""
    rel = f"topology/{HOST}/ibdev2netdev"
    path = write(rel, (real_samples / "ethtool" / "ibdev2netdev-mlx5-eth01-04.txt").read_text())
    sink = Sink()
    IBDEV_PARSERS[0].parse(SourceFile(path, rel), sink)
    return sink.ifmaps


def test_real_rdma_statistic_four_links(real_samples, write):
    maps = ifmap_from_real_ibdev2netdev(real_samples, write)
    sink = stamped(real_samples, write, "rdma-statistic-show-4links.txt",
                   f"nic/{HOST}/rdma.stat", Sink(ifmaps=maps))
    got = samples(sink)
    assert {i for (_, _, i, _) in got} == {"eth01", "eth02", "eth03", "eth04"}
    eth01 = {m: v for (_, _, i, m), (v, _) in got.items() if i == "eth01"}
    nonzero = {"out_of_buffer": 135, "resp_cqe_error": 1009, "req_cqe_error": 22,
               "resp_cqe_flush_error": 998, "req_cqe_flush_error": 11}
    assert {m: v for m, v in eth01.items() if v} == nonzero
    assert {"out_of_sequence", "packet_seq_err", "local_ack_timeout_err", "rp_cnp_handled",
            "np_ecn_marked_roce_packets", "np_cnp_sent", "rx_icrc_encapsulated"} <= set(eth01)
    assert len(eth01) == 29 and len(got) == 4 * 29


def test_real_rdma_stat_show_pretty(real_samples, write):
    maps = ifmap_from_real_ibdev2netdev(real_samples, write)
    sink = stamped(real_samples, write, "rdma-stat-show-p-mlx5_0.txt", f"nic/{HOST}/mlx5_0.rdma",
                   Sink(ifmaps=maps))
    got = {m: v for (_, _, i, m), (v, _) in samples(sink).items() if i == "eth01"}
    assert len(got) == 21 and set(got.values()) == {0.0}
    assert "rx_write_requests" in got and "np_cnp_sent" in got


def test_real_show_counters(real_samples, write):
    sink = stamped(real_samples, write, "show_counters-mlx5_bond_0-hw-counters.txt",
                   f"nic/{HOST}/mlx5_bond_0.hw_counters", Sink(ifmaps=IFMAPS))
    got = {m: v for (_, _, i, m), (v, _) in samples(sink).items() if i == "bond0"}
    for metric, value in [("np_cnp_sent", 1052612505), ("np_ecn_marked_roce_packets", 21278189006),
                          ("out_of_sequence", 1811101), ("resp_cqe_error", 3293504),
                          ("resp_cqe_flush_error", 3211234), ("rx_write_requests", 2402134794),
                          ("rp_cnp_handled", 0), ("local_ack_timeout_err", 0)]:
        assert got[metric] == value, metric
    assert "lifespan" not in got and len(got) == 29
    assert [(r["metric"], r["value"]) for r in sink.collected("text_samples")] == [("lifespan", "10")]

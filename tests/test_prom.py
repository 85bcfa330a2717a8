"""Prometheus text exposition / OpenMetrics: grammar edge cases, time lines, devices, writers."""

from __future__ import annotations

import gzip
import io
import re
from pathlib import Path

import polars as pl
import pytest
from conftest import run_parser
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.core.lineblocks import line_blocks
from collectors.core.schema import canonical_counters, counter_map
from collectors.core.source import Manifest, Sink
from collectors.core.timeparse import TimeError, parse_epoch, parse_iso
from collectors.formats.prom import parser as prom
from collectors.formats.prom import writer as prom_writer
from collectors.formats.prom.parser import NO_DEVICE, NO_TIMESTAMP, PromTextParser
from collectors.registry import recognize

MS = 1_000_000
T_LINE = "2026-11-30T07:12:13,123456789+00:00"
T_NS = 1_796_022_733_123_456_789
EXACT = PromTextParser(vectorized=False)


def parse(path: Path, rel: str | None = None, sink: Sink | None = None,
          parser: PromTextParser | None = None,
          manifest: Manifest | None = None) -> tuple[Sink, list[dict]]:
    found, sink = run_parser(path, rel=rel, sink=sink, parser=parser, manifest=manifest)
    assert found is not None and found.name == "prom_text"
    rows = sorted(sink.collected("samples"), key=lambda r: (r["line"], r["metric"]))
    return sink, rows


def one(rows: list[dict], metric: str, **where) -> dict:
    found = [r for r in rows if r["metric"] == metric
             and all(r[k] == v for k, v in where.items())]
    assert len(found) == 1, (metric, where, found)
    return found[0]


def record_lines(path: Path) -> int:
    """Lines that are records: not blank, not comments, not valid timestamp lines."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    lines = text.split("\n")
    if text.endswith("\n") or not text:
        lines = lines[:-1]
    n = 0
    for line in lines:
        if re.fullmatch(r"[ \t]*(?:#.*)?", line, re.S):
            continue
        if re.fullmatch(prom._TSLINE, line):
            t = line.strip(" \t")
            try:
                ns = parse_epoch(t) if re.fullmatch(r"[0-9.]+", t) else parse_iso(t)
                if abs(ns) < 2**63:
                    continue
            except TimeError:
                pass
        n += 1
    return n


# -- the spec example and the grammar ---------------------------------------------------------
SPEC = """\
# HELP http_requests_total The total number of HTTP requests.
# TYPE http_requests_total counter
http_requests_total{method="post",code="200"} 1027 1395066363000
http_requests_total{method="post",code="400"}    3 1395066363000

# Escaping in label values:
msdos_file_access_time_seconds{path="C:\\\\DIR\\\\FILE.TXT",error="Cannot find file:\\n\\"FILE.TXT\\""} 1.458255915e9

# Minimalistic line:
metric_without_timestamp_and_labels 12.47

# A weird metric from before the epoch:
something_weird{problem="division by zero"} +Inf -3982045

# A histogram, which has a pretty complex representation in the text format:
# HELP http_request_duration_seconds A histogram of the request duration.
# TYPE http_request_duration_seconds histogram
http_request_duration_seconds_bucket{le="0.05"} 24054
http_request_duration_seconds_bucket{le="+Inf"} 144320
http_request_duration_seconds_sum 53423
http_request_duration_seconds_count 144320
"""


@pytest.mark.parametrize("parser", [None, EXACT], ids=["vectorized", "exact"])
def test_spec_example_with_a_time_line(write, parser):
    path = write("prom/leaf-01.prom", T_LINE + "\n" + SPEC)
    sink, rows = parse(path, "prom/leaf-01.prom", parser=parser)
    # the `+Inf -3982045` sample is before 2000: one reject (README "Value policy")
    assert (sink.loaded, sink.rejected, len(rows)) == (8, 1, 8)
    assert {r["device"] for r in rows} == {"leaf-01"}
    r = one(rows, "http_requests_total", qualifier="code=200,method=post")
    assert (r["value"], r["ts"], r["line"]) == (1027.0, 1395066363000 * MS, 4)
    r = one(rows, "http_requests_total", qualifier="code=400,method=post")
    assert (r["value"], r["line"]) == (3.0, 5)  # padding before the value
    r = one(rows, "msdos_file_access_time_seconds")
    assert r["qualifier"] == 'error=Cannot find file:\n"FILE.TXT",path=C:\\DIR\\FILE.TXT'
    assert (r["value"], r["ts"], r["line"]) == (1.458255915e9, T_NS, 8)
    r = one(rows, "metric_without_timestamp_and_labels")
    assert (r["value"], r["ts"], r["qualifier"], r["ifname"]) == (12.47, T_NS, "", "")
    assert sink.rejects == [(14, "time '-3982045' is outside 2000-01-01..2100-01-01 UTC",
                             'something_weird{problem="division by zero"} +Inf -3982045')]
    assert one(rows, "http_request_duration_seconds_bucket", qualifier="le=+Inf")["value"] == 144320
    assert one(rows, "http_request_duration_seconds_sum")["value"] == 53423


def test_label_set_variants(write):
    text = (T_LINE + "\n"
            'a{x="1", y="2"} 1\n'          # space after a comma
            'b{x="1",y="2",} 2\n'          # trailing comma
            'c{ x = "1" ,y="2" } 3\n'      # spaces everywhere
            "d{} 4\n"                      # empty label set
            'e{x="a}b",y="{"} 5\n'         # braces inside values
            'f{x="tab\\there"}\t6\t1796022700000\n'  # unknown escape kept, tabs as separators
            '  g{x="1"} 7\n'               # leading blanks
            'h{x="1"} NaN\n'
            'i{x="1"} -Inf\n'
            'j{x="1"} 1.5E+3 1796022700000 # {trace_id="abc"} 1.0 1000\n')  # an exemplar
    path = write("prom/leaf-01.prom", text)
    sink, rows = parse(path)
    # NaN and -Inf are no value (README "Value policy")
    assert [why for _, why, _ in sink.rejects] == ["value 'NaN' of h is not a finite number",
                                                  "value '-Inf' of i is not a finite number"]
    q = {r["metric"]: (r["qualifier"], r["value"]) for r in rows}
    assert q["a"][0] == q["b"][0] == q["c"][0] == "x=1,y=2"
    assert [q[m][1] for m in "abcdeg"] == [1, 2, 3, 4, 5, 7]
    assert q["d"] == ("", 4)
    assert q["e"] == ("x=a}b,y={", 5)
    assert q["f"] == ("x=tab\\there", 6)
    assert "h" not in q and "i" not in q
    assert one(rows, "j")["value"] == 1500 and one(rows, "j")["ts"] == 1_796_022_700_000 * MS


@pytest.mark.parametrize(("line", "reason"), [
    ('x{a="1"} abc', "value 'abc' is not a number"),
    ('x{a="1" 5', "expected ',' or '}' in the label set"),
    ('x{a="1} 5', "malformed label at column 3"),
    ('x{a="1"', "label set is not closed"),
    ('x{a="1",a="2"} 5', "duplicate label 'a'"),
    ('x{a=1} 5', "malformed label"),
    ("x 1 2 3", "expected `name{labels} value [timestamp]`"),
    ("x 1 12ab", "timestamp '12ab' is not a number"),
    ("5x 1", "not a sample line"),
    ("x", "expected `name{labels} value [timestamp]`"),
])
@pytest.mark.parametrize("parser", [None, EXACT], ids=["vectorized", "exact"])
def test_malformed_lines_are_rejected_with_a_reason(write, line, reason, parser):
    path = write("prom/leaf-01.prom", f"{T_LINE}\n# TYPE x gauge\nok 1\n{line}\nok 2\n")
    sink, rows = parse(path, parser=parser)
    assert [r["value"] for r in rows] == [1.0, 2.0]
    assert sink.loaded == 2 and sink.rejected == 1
    ln, why, raw = sink.rejects[0]
    assert (ln, raw) == (4, line) and reason in why


# -- timestamps ---------------------------------------------------------------------------------
def test_scrapes_framed_by_time_lines(write):
    text = ("up{instance=\"leaf-01:9100\"} 0\n"          # before any time line: collection time
            "2026-11-30T07:12:13,123456789+00:00\n"      # date -Ins
            "up{instance=\"leaf-01:9100\"} 1\n"
            "up{instance=\"leaf-01:9100\"} 2 1796022700000\n"  # its own timestamp wins
            "2026-11-30T07:12:23+00:00\n"                # date -Iseconds
            "\n# HELP up x\n"
            "up{instance=\"leaf-01:9100\"} 3\n"
            "1796022743.5\n"                             # date +%s.%N
            "up{instance=\"leaf-01:9100\"} 4\n"
            "2026-13-45T07:12:23+00:00\n"                # not a time: rejected, and so is ...
            "up{instance=\"leaf-01:9100\"} 5\n")         # ... what follows it
    path = write("prom/scrapes.prom", text)
    sink, rows = parse(path, manifest=Manifest(collected_at=T_NS - 10**9))
    got = [(r["line"], r["value"], r["ts"]) for r in rows]
    assert got == [(1, 0.0, T_NS - 10**9), (3, 1.0, T_NS), (4, 2.0, 1_796_022_700_000 * MS),
                   (8, 3.0, 1_796_022_743 * 10**9), (10, 4.0, 1_796_022_743_500_000_000)]
    assert {r["device"] for r in rows} == {"leaf-01"}
    assert [(ln, why) for ln, why, _ in sink.rejects] == [
        (11, "timestamp line '2026-13-45T07:12:23+00:00' is not a valid time"),
        (12, NO_TIMESTAMP)]
    assert sink.loaded + sink.rejected == record_lines(path) == 7


def test_time_lines_carry_across_blocks(write, monkeypatch):
    """Tiny blocks: time lines, line numbers and series survive block boundaries."""
    scrapes = []
    for i in range(5):
        scrapes.append(f"2026-11-30T07:12:{10 + i:02d}+00:00")
        scrapes += [f'm{{host="h{j}",interface="swp{j}"}} {i * 10 + j}' for j in range(7)]
    path = write("prom/s.prom", "\n".join(scrapes) + "\n")
    _, whole = parse(path)
    monkeypatch.setattr(prom, "BLOCK_CHARS", 50)
    sink, small = parse(path)
    assert sink.loaded == 35 and sink.rejected == 0
    assert small == whole
    r = one(small, "m", device="h3", value=23.0)
    assert r["line"] == 21 and r["ts"] == parse_iso("2026-11-30T07:12:12Z")


def test_openmetrics_seconds_timestamps(write):
    text = ("# TYPE acme_http_router_request_seconds summary\n"
            "# UNIT acme_http_router_request_seconds seconds\n"
            'acme_http_router_request_seconds_sum{path="/api/v1",method="GET"} 9036.32 1520879607.789\n'
            'acme_http_router_request_seconds_count{path="/api/v1",method="GET"} 807283 1520879607\n'
            "# EOF\n")
    path = write("prom/router-1.om", text)
    sink, rows = parse(path)
    assert [(r["value"], r["ts"]) for r in rows] == [
        (9036.32, 1_520_879_607_789_000_000), (807283.0, 1_520_879_607 * 10**9)]
    assert sink.rejected == 0 and rows[0]["device"] == "router-1"


@pytest.mark.parametrize("parser", [None, EXACT], ids=["vectorized", "exact"])
def test_raw_scrape_without_any_timestamp_takes_the_collection_time(write, parser):
    """A plain `curl host:9100/metrics`: the manifest's collection time, else the file's
    modification time, and the file says which (`time_source`)."""
    import os
    path = write("prom/leaf-01.prom", "# TYPE up gauge\nup 1\nup{job=\"x\"} 1\n")
    found, sink = run_parser(path, "prom/leaf-01.prom", Manifest(collected_at=T_NS), parser)
    rows = sink.collected("samples")
    assert [(r["line"], r["ts"], r["device"]) for r in rows] == [(2, T_NS, "leaf-01"),
                                                                  (3, T_NS, "leaf-01")]
    assert sink.loaded == 2 and sink.rejected == 0
    os.utime(path, ns=(T_NS, T_NS + 5))
    from collectors.core.source import SourceFile
    src = SourceFile(path, "prom/leaf-01.prom")
    sink = Sink()
    (parser or found).parse(src, sink)
    assert {r["ts"] for r in sink.collected("samples")} == {T_NS + 5}
    assert src.time_source == "mtime"  # a guess, said as one


# -- devices, interfaces, qualifiers --------------------------------------------------------------
def test_otel_namespace_prefix_is_stripped_and_mapped(write):
    text = (f"{T_LINE}\n"
            'cumulus_nvswitch_interface_if_in_octets{host_name="leaf-p0-03",interface="swp17",'
            'job="otel"} 1.2e+10\n'
            'nvswitch_interface_tc_tx_ecn_marked_tc{host_name="leaf-p0-03",interface="swp17",'
            'traffic_class="3"} 5\n'
            'nvswitch_interface_sp_rx_pause{host_name="leaf-p0-03",interface="swp17",'
            'switch_priority="3"} 7\n')
    _, rows = parse(write("prom/otel.prom", text))
    r = one(rows, "nvswitch_interface_if_in_octets")
    assert (r["device"], r["ifname"], r["qualifier"], r["value"]) == (
        "leaf-p0-03", "swp17", "", 1.2e10)
    assert one(rows, "nvswitch_interface_tc_tx_ecn_marked_tc")["qualifier"] == "queue=3"
    assert one(rows, "nvswitch_interface_sp_rx_pause")["qualifier"] == "priority=3"
    cmap = counter_map()
    assert cmap[("prom", "nvswitch_interface_if_in_octets")].canonical == "rx_bytes"
    assert cmap[("prom", "nvswitch_interface_tc_tx_ecn_marked_tc")].canonical == "ecn_marked"


def test_device_labels_and_their_precedence(write):
    text = (f"{T_LINE}\n"
            'a{instance="gpu-node-0042:9100",job="node"} 1\n'     # port stripped, job consumed
            'b{instance="collector:9804",source="leaf-01"} 2\n'   # gnmic behind a collector
            'c{instance="10.0.0.7:9400",Hostname="gpu-node-7"} 3\n'  # DCGM in Kubernetes
            'd{instance="10.0.0.9:9100"} 4\n'                     # mapped management address
            'e{instance="10.0.0.8:9100"} 5\n'                     # unmapped: the file's host
            'f{node="gpu-node-5",host=""} 6\n'                    # empty label = absent
            '{"g",source="leaf-02","port-id"="1/1/c1/1"} 7\n')     # UTF-8 names (quoted)
    sink = Sink(addresses={"10.0.0.9": "leaf-09"})
    _, rows = parse(write("prom/fed.prom", text), sink=sink)
    assert {r["metric"]: r["device"] for r in rows} == {
        "a": "gpu-node-0042", "b": "leaf-01", "c": "gpu-node-7", "d": "leaf-09", "e": "fed",
        "f": "gpu-node-5", "g": "leaf-02"}
    assert one(rows, "g")["ifname"] == "1/1/c1/1"
    assert one(rows, "b")["qualifier"] == ""  # instance is consumed even when not used


def test_no_device_anywhere_is_rejected(write):
    path = write("x/10.1.2.3.txt", f"{T_LINE}\n# TYPE up gauge\nup{{job=\"x\"}} 1\n")
    sink = Sink()
    PromTextParser().parse(prom.SourceFile(path, "x/10.1.2.3.txt", Manifest()), sink)
    assert sink.loaded == 0 and [r[1] for r in sink.rejects] == [NO_DEVICE]


def test_node_exporter_device_label_depends_on_the_family(write):
    text = (f"{T_LINE}\n"
            'node_network_receive_bytes_total{device="eth2",instance="gpu-node-1:9100"} 10\n'
            'node_ethtool_received_prio3_pause{device="eth2",instance="gpu-node-1:9100"} 11\n'
            'node_infiniband_port_data_received_bytes_total{device="mlx5_2",port="1",'
            'instance="gpu-node-1:9100"} 12\n'
            'node_infiniband_port_data_received_bytes_total{device="mlx4_0",port="2",'
            'instance="gpu-node-1:9100"} 13\n'
            'node_disk_read_bytes_total{device="nvme0n1",instance="gpu-node-1:9100"} 14\n'
            'DCGM_FI_DEV_SM_CLOCK{gpu="0",device="nvidia0",Hostname="gpu-node-1"} 15\n')
    sink = Sink(ifmaps={("gpu-node-1", "mlx5_2", 1): "eth2"})
    _, rows = parse(write("prom/n.prom", text), sink=sink)
    got = {(r["metric"], r["value"]): (r["device"], r["ifname"], r["qualifier"]) for r in rows}
    assert got == {
        ("node_network_receive_bytes_total", 10): ("gpu-node-1", "eth2", ""),
        ("node_ethtool_received_prio3_pause", 11): ("gpu-node-1", "eth2", "priority=3"),
        ("node_infiniband_port_data_received_bytes_total", 12): ("gpu-node-1", "eth2", ""),
        ("node_infiniband_port_data_received_bytes_total", 13): ("gpu-node-1", "mlx4_0/2", ""),
        ("node_disk_read_bytes_total", 14): ("gpu-node-1", "", "device=nvme0n1"),
        ("DCGM_FI_DEV_SM_CLOCK", 15): ("gpu-node-1", "", "device=nvidia0,gpu=0"),
    }


def test_gzip_and_crlf(write):
    text = f"{T_LINE}\r\n# TYPE up gauge\r\nup{{host=\"leaf-1\"}} 1\r\nup{{host=\"leaf-2\"}} 2\r\n"
    sink, rows = parse(write("prom/a.prom.gz", text, gz=True))
    assert [(r["device"], r["value"], r["line"]) for r in rows] == [
        ("leaf-1", 1.0, 3), ("leaf-2", 2.0, 4)]


# -- recognition ----------------------------------------------------------------------------------
@pytest.mark.parametrize("text", [
    "Mon Nov 30 07:12:13 UTC 2026\nNIC statistics:\n     rx_packets: 1\n     rx_bytes_phy: 2\n",
    f"{T_LINE}\nNIC statistics:\n     rx_prio3_pause: 5\n",
    "link mlx5_0/1 rx_write_requests 0 rx_read_requests 0 out_of_buffer 135\n",
    "/sys/class/infiniband/mlx5_2/ports/1/hw_counters/np_cnp_sent:0\n",
    "mlx5_0 port 1 ==> eth2 (Up)\nmlx5_1 port 1 ==> eth3 (Down)\n",
    "<13>Feb  6 09:42:36 leaf-01 switchd[1]: swp1: carrier down\n",
    "JobID|Account|Start|End|NodeList\n42|t|2026-01-01T00:00:00|Unknown|gpu-node-[01-02]\n",
    '{"source": "leaf-01", "timestamp": 1, "updates": []}\n',
    "np_cnp_sent 0\nrp_cnp_handled 5\n",  # name/value pairs alone are not Prometheus
])
def test_other_formats_are_not_claimed(text):
    assert not PromTextParser().sniff(text, "nic/gpu-node-01/eth2.ethtool")


@pytest.mark.parametrize("text", [
    "# HELP up x\n# TYPE up gauge\nup 1\n",
    f"{T_LINE}\nnvswitch_interface_if_in_octets{{interface=\"swp1\"}} 12\n",
    'up{instance="a:9100",job="node"} 1 1700000000000\n',
])
def test_prometheus_text_is_recognized(text):
    assert PromTextParser().sniff(text, "x/anything.txt")


def test_sniff_never_claims_other_real_samples(real_samples):
    from collectors.store.ingest import head_of
    for path in sorted(real_samples.rglob("*")):
        rel = path.relative_to(real_samples).as_posix()
        if path.is_file() and not rel.startswith("prom/") and rel != "SOURCES.md":
            assert not PromTextParser().sniff(head_of(path), rel), rel


# -- the real samples -----------------------------------------------------------------------------
REAL = ("dcgm-exporter-readme.prom", "gnmic-prometheus-output-srl-mgmt0.prom",
        "node_exporter-e2e-infiniband-block.prom", "node_exporter-e2e-network-block.prom",
        "node_exporter-ethtool-test-expected.prom", "prometheus-exposition-spec-example.prom")


@pytest.mark.parametrize("name", REAL)
def test_real_samples_as_published_take_the_collection_time(real_samples, name):
    """Exposition text as scraped carries no timestamps: its samples take the manifest's
    collection time; those with their own keep it."""
    path = real_samples / "prom" / name
    parser = recognize(path.read_text()[:16384], f"prom/{name}")
    assert parser is not None and parser.name == "prom_text"
    at = T_NS - 7 * 10**9
    sink, rows = parse(path, f"prom/{name}", manifest=Manifest(collected_at=at))
    records = record_lines(path)
    assert sink.loaded + sink.rejected == records > 0
    assert sink.loaded == len(rows) > 0
    # only the spec example has samples with their own timestamps (and the third, before 1970,
    # is out of the valid time range); DCGM's blank sentinel is no value
    own = {"prometheus-exposition-spec-example.prom": {1395066363000 * MS}}.get(name, set())
    assert {r["ts"] for r in rows} == {at} | own
    expected = {"prometheus-exposition-spec-example.prom":
                {"time '-3982045' is outside 2000-01-01..2100-01-01 UTC"},
                "dcgm-exporter-readme.prom": {"DCGM blank value"}}.get(name, set())
    assert {why for _, why, _ in sink.rejects} == expected


def stamped_copy(real_samples: Path, name: str, tmp_path: Path, host: str = "gpu-node-01") -> Path:
    out = tmp_path / "prom" / f"{host}.prom"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(T_LINE + "\n" + (real_samples / "prom" / name).read_text())
    return out


def real(real_samples, name, tmp_path, sink=None, rejects=()):
    """The rows of a real sample stamped with a time line; `rejects`: the (line, reason) of the
    records the value policy rejects."""
    path = stamped_copy(real_samples, name, tmp_path)
    sink, rows = parse(path, "prom/gpu-node-01.prom", sink=sink)
    assert [(ln, why) for ln, why, _ in sink.rejects] == list(rejects)
    assert sink.loaded == len(rows) == record_lines(path) - len(rejects)
    return rows


def test_real_dcgm(real_samples, tmp_path):
    # DCGM's blank sentinel (INT64_NOT_SUPPORTED) is no temperature: a reject, the rest loads
    rows = real(real_samples, "dcgm-exporter-readme.prom", tmp_path,
                rejects=[(10, "DCGM blank value")])
    q = "UUID=GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52,gpu=0"  # space after comma, empty labels
    assert one(rows, "DCGM_FI_DEV_SM_CLOCK", qualifier=q)["value"] == 139
    assert one(rows, "DCGM_FI_DEV_MEM_CLOCK", qualifier=q)["value"] == 405
    assert not [r for r in rows if r["metric"] == "DCGM_FI_DEV_MEMORY_TEMP"]
    assert {r["ts"] for r in rows} == {T_NS} and {r["device"] for r in rows} == {"gpu-node-01"}


def test_real_gnmic(real_samples, tmp_path):
    rows = real(real_samples, "gnmic-prometheus-output-srl-mgmt0.prom", tmp_path)
    assert len(rows) == 18
    assert {(r["device"], r["ifname"], r["qualifier"]) for r in rows} == {
        ("clab-traps-srl1", "mgmt0", "subscription_name=sub1")}  # label order does not matter
    v = {r["metric"]: r["value"] for r in rows}
    assert (v["gnmic_in_octets"], v["gnmic_out_octets"]) == (35284165, 219527024)
    assert (v["gnmic_in_error_packets"], v["gnmic_carrier_transitions"]) == (128, 1)
    assert counter_map()[("prom", "gnmic_in_octets")].canonical == "rx_bytes"


def test_real_infiniband(real_samples, tmp_path):
    sink = Sink(ifmaps={("gpu-node-01", "mlx4_0", 1): "ib0"})
    rows = real(real_samples, "node_exporter-e2e-infiniband-block.prom", tmp_path, sink)
    rx = "node_infiniband_port_data_received_bytes_total"
    assert one(rows, rx, ifname="ib0")["value"] == 18527668  # 1.8527668e+07
    assert one(rows, rx, ifname="mlx4_0/2")["value"] == 0
    assert one(rows, "node_infiniband_link_downed_total", ifname="ib0")["value"] == 0
    assert one(rows, "node_infiniband_port_discards_transmitted_total")["value"] == 5
    assert one(rows, "node_infiniband_port_transmit_wait_total")["value"] == 4294967295
    assert one(rows, "node_infiniband_state_id", ifname="i40iw0")["value"] == 4
    assert one(rows, "node_infiniband_physical_state_id", ifname="ib0")["value"] == 5
    info = one(rows, "node_infiniband_info", ifname="ib0")
    assert info["value"] == 1 and "hca_type=MT4099" in info["qualifier"]


def test_real_network(real_samples, tmp_path):
    rows = real(real_samples, "node_exporter-e2e-network-block.prom", tmp_path)
    eth0 = {r["metric"]: r for r in rows if r["ifname"] == "eth0"}
    assert eth0["node_network_carrier_changes_total"]["value"] == 2
    assert eth0["node_network_carrier_down_changes_total"]["value"] == 1
    assert eth0["node_network_carrier_up_changes_total"]["value"] == 1
    assert eth0["node_network_up"]["value"] == 1
    assert eth0["node_network_speed_bytes"]["value"] == 1.25e8
    assert "operstate=up" in eth0["node_network_info"]["qualifier"]
    # HELP/TYPE without samples: nothing, and no reject
    assert not [r for r in rows if r["metric"] == "node_network_receive_bytes_total"]
    assert counter_map()[("prom", "node_network_speed_bytes")].scale == 8


def test_real_ethtool(real_samples, tmp_path):
    rows = real(real_samples, "node_exporter-ethtool-test-expected.prom", tmp_path)
    v = {r["metric"]: r["value"] for r in rows}
    assert {r["ifname"] for r in rows} == {"eth0"}
    assert v["node_ethtool_received_packets_total"] == 1260062
    assert v["node_ethtool_transmitted_packets_total"] == 961500
    assert v["node_ethtool_port_received_dropped"] == 12028
    assert v["node_ethtool_received_missed"] == 401
    assert "driver=e1000e" in one(rows, "node_ethtool_info")["qualifier"]


def test_real_spec_example(real_samples, tmp_path):
    # a time before 2000 (and an infinite value) breaks the value policy
    rows = real(real_samples, "prometheus-exposition-spec-example.prom", tmp_path,
                rejects=[(14, "time '-3982045' is outside 2000-01-01..2100-01-01 UTC")])
    assert len(rows) == 19
    assert one(rows, "http_requests_total", qualifier="code=400,method=post")["value"] == 3
    assert not [r for r in rows if r["metric"] == "something_weird"]
    quant = one(rows, "telemetry_requests_metrics_latency_microseconds", qualifier="quantile=0.99")
    assert quant["value"] == 76656 and quant["ts"] == T_NS
    assert one(rows, "telemetry_requests_metrics_latency_microseconds_sum")["value"] == 1.7560473e7


# -- counter map ----------------------------------------------------------------------------------
def test_counter_map_rows_are_known_canonicals():
    known = canonical_counters()
    ours = {k[1]: m for k, m in counter_map().items() if k[0] == "prom"}
    assert len(ours) >= 80 and all(m.canonical in known for m in ours.values())
    assert ours["node_ethtool_received_bytes_phy"].canonical == "rx_bytes"
    assert ours["node_ethtool_transmitted_prio3_pause"].canonical == "tx_pause"
    assert ours["node_ethtool_received_pcs_symbol_err_phy"].canonical == "symbol_errors"
    assert ours["nvswitch_interface_oper_aggregate_speed"].canonical == "port_speed_bps"


# -- writers --------------------------------------------------------------------------------------
SAMPLES = [
    {"ts": T_NS, "device": "leaf-01", "ifname": "swp1", "metric": "nvswitch_interface_if_in_octets",
     "value": 123456789012.0, "qualifier": ""},
    {"ts": T_NS, "device": "leaf-01", "ifname": "swp1", "metric": "nvswitch_interface_sp_rx_pause",
     "value": 7.0, "qualifier": "priority=3"},
    {"ts": T_NS, "device": "leaf-01", "ifname": "", "metric": "weird_gauge",
     "value": -1.5e300, "qualifier": 'note=a "quoted" \\ back\nslash'},
    {"ts": T_NS + 10**10, "device": "leaf-01", "ifname": "swp1",
     "metric": "nvswitch_interface_if_in_octets", "value": 0.25, "qualifier": ""},
    {"ts": T_NS, "device": "gpu-node-1", "ifname": "eth2", "metric": "node_network_up",
     "value": 1.0, "qualifier": ""},
    {"ts": T_NS, "device": "gpu-node-1", "ifname": "eth2",
     "metric": "node_ethtool_received_prio3_pause", "value": 0.5, "qualifier": "priority=3"},
    {"ts": T_NS, "device": "gpu-node-1", "ifname": "mlx4_0/2",
     "metric": "node_infiniband_port_data_received_bytes_total", "value": 5e-324, "qualifier": ""},
]


def key(r: dict) -> tuple:
    return (r["ts"], r["device"], r["ifname"], r["metric"], r["qualifier"], r["value"])


def test_write_exposition_round_trip(write):
    buf = io.StringIO()
    assert prom_writer.write_exposition(SAMPLES, buf) == len(SAMPLES)
    text = buf.getvalue()
    assert text.count("# TYPE nvswitch_interface_if_in_octets counter\n") == 1
    assert 'node_network_up{instance="gpu-node-1",device="eth2"} 1 ' in text
    sink, rows = parse(write("prom/fed.prom", text))
    assert sink.rejected == 0
    want = [dict(s, ts=s["ts"] // MS * MS) for s in SAMPLES]  # ms on the wire
    assert sorted(map(key, rows)) == sorted(map(key, want))


def test_write_scrapes_round_trip(write):
    buf = io.StringIO()
    prom_writer.write_scrapes(SAMPLES, buf)
    text = buf.getvalue()
    assert text.startswith(T_LINE + "\n")
    sink, rows = parse(write("prom/scrapes.prom", text))
    assert sink.rejected == 0
    assert sorted(map(key, rows)) == sorted(map(key, SAMPLES))


# -- properties ----------------------------------------------------------------------------------
VALID = (T_LINE + "\n" + SPEC + "1796022743.5\n"
         'nvswitch_interface_if_in_octets{host="leaf-1",interface="swp1"} 5\n')


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(max_size=400), st.binary(max_size=400).map(lambda b: b.decode("latin-1")),
                 st.integers(0, len(VALID)).map(lambda n: VALID[:n])))
def test_any_text_never_raises_and_keeps_accounting(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("p") / "leaf-01.prom"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    sink = Sink()
    PromTextParser().parse(prom.SourceFile(path, "prom/leaf-01.prom", Manifest()), sink)
    assert sink.loaded + sink.rejected == record_lines(path)
    assert sink.loaded == len(sink.collected("samples"))
    assert sink.rejected == len(sink.rejects)


LINE_PARTS = st.lists(st.sampled_from([
    "m", "m_2", ":m", "é", "{", "}", "{}", '{a="1"}', '{a="x y"}', '{a="}"}', '{a="\\""}',
    '{a="é",b="2",}', '{"u.tf8",a="1"}', " ", "  ", "\t", "1", "-2.5e3", "+Inf", "NaN", "x",
    "1395066363000", "-3982045", "1.5", " # {t=\"1\"} 2", "#", "\"", "=", ","]), max_size=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(LINE_PARTS.map("".join), st.sampled_from(
    [T_LINE, "1796022743.5", "2026-13-45T07:12:23+00:00", "11395066363000", "# HELP m x", ""])),
    max_size=12))
def test_vectorized_and_exact_parsers_agree(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("v") / "leaf-01.prom"
    path.write_text("\n".join(lines) + "\n")
    results = []
    for parser in (PromTextParser(), EXACT):
        sink = Sink()
        parser.parse(prom.SourceFile(path, "prom/leaf-01.prom", Manifest()), sink)
        rows = sorted((r["line"], r["metric"], r["qualifier"], repr(r["value"]), r["ts"])
                      for r in sink.collected("samples"))
        results.append((rows, sorted(sink.rejects)))
    assert results[0] == results[1]


# -- series resolved in bulk, blocks read as bytes -------------------------------------------------
LABEL_NAMES = ["host", "hostname", "source", "node", "instance", "interface", "ifname", "port_id",
               "device", "port", "job", "prio", "priority", "tc", "queue", "traffic_class",
               "switch_priority", "gpu", "le", "__name__"]
LABEL_VALUES = ["", "leaf-1", "leaf-2:9100", "10.0.0.9:9100", "10.0.0.8", ":9100", "[::1]:80",
                "eth2", "mlx5_2", "mlx4_0", "1", "2", "x9", "a,b", "k=v", "{", "sp ace", "é"]
METRICS = ["m", "nvswitch_interface_if_in_octets", "cumulus_nvswitch_interface_tc_tx",
           "node_network_up", "node_ethtool_received_prio3_pause", "node_ethtool_rx_bytes",
           "node_infiniband_port_data_received_bytes_total", "node_disk_read_bytes_total"]
BULK_SINK = {"addresses": {"10.0.0.9": "leaf-09"},
             "ifmaps": {("leaf-1", "mlx5_2", 1): "eth2", ("leaf-1", "mlx4_0", 2): "ib1"}}


def _both(path: Path, rel: str) -> list:
    """Rows and rejects of the vectorized and of the exact parser, comparable."""
    results = []
    for parser in (PromTextParser(), EXACT):
        sink = Sink(**BULK_SINK)
        parser.parse(prom.SourceFile(path, rel, Manifest()), sink)
        assert sink.loaded == len(sink.collected("samples"))
        rows = sorted((r["line"], r["device"], r["ifname"], r["metric"], r["qualifier"],
                       repr(r["value"]), r["ts"]) for r in sink.collected("samples"))
        results.append((rows, sorted(sink.rejects), sink.loaded, sink.rejected))
    return results


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(series=st.lists(st.tuples(st.sampled_from(METRICS), st.lists(st.tuples(
    st.sampled_from(LABEL_NAMES), st.sampled_from(LABEL_VALUES)), max_size=5)),
    min_size=1, max_size=30),
    rel=st.sampled_from(["prom/leaf-01.prom", "x/10.1.2.3.txt"]))
def test_bulk_series_resolution_agrees_with_the_exact_resolver(tmp_path_factory, monkeypatch,
                                                               series, rel):
    """Every label set through the bulk resolver (threshold 1) gives what resolve_series gives:
    devices (addresses, ports, the file's host), interfaces per family, renamed qualifiers,
    empty values, duplicate labels, no device."""
    monkeypatch.setattr(prom, "_BULK_MIN", 1)
    lines = [T_LINE]
    for i, (metric, labels) in enumerate(series):
        body = ",".join(f'{k}="{v}"' for k, v in labels)
        lines.append(f"{metric}{{{body}}} {i}")
        lines.append(f"{metric}{{{body}}} {i + 0.5} 1796022700000")
    path = tmp_path_factory.mktemp("b") / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    vectorized, exact = _both(path, rel)
    assert vectorized == exact


@pytest.mark.parametrize("labels", [
    'host="h",tc="1",queue="2"',                       # a rename onto a label that is there
    'host="h",prio="1",priority="2"',
    'host="h",prio="1",switch_priority="2"',           # two renames onto one name: the last wins
    'host="h",switch_priority="2",prio="1"',
    'host="h",traffic_class="3",tc="4",queue=""',      # an empty label is an absent one
    'instance="10.0.0.9:9100",hostname="",node="n1",interface="",ifname="e1",port_id="p"',
    'device="eth1",port="x",host="leaf-1"',
    'job="j",instance="",le="0.5"',                    # no device: the file's host
])
@pytest.mark.parametrize("metric", ["m", "node_network_up", "node_ethtool_tx_prio2_pause",
                                    "node_infiniband_info"])
def test_bulk_resolution_of_label_sets(tmp_path, monkeypatch, labels, metric):
    monkeypatch.setattr(prom, "_BULK_MIN", 1)
    path = tmp_path / "prom" / "leaf-01.prom"
    path.parent.mkdir()
    path.write_text(f"{T_LINE}\n{metric}{{{labels}}} 1\n{metric}{{{labels}}} 2 1796022700000\n")
    vectorized, exact = _both(path, "prom/leaf-01.prom")
    assert vectorized == exact and vectorized[2] == 2


def test_many_series_are_resolved_in_bulk(write, monkeypatch):
    """Thousands of new series: resolved per label shape, not one Python call per series, and
    the same rows as the exact parser's."""
    lines = [T_LINE]
    for d in range(40):
        for p in range(30):
            lines.append(f'nvswitch_interface_if_in_octets{{instance="leaf-{d}:9100",'
                         f'interface="swp{p}",tc="{p % 3}"}} {d * p} 1796022700000')
            lines.append(f'node_network_up{{device="eth{p}",instance="10.0.0.{d}:9100",job="n",'
                         f'x=""}} 1')
            lines.append(f'node_ethtool_received_prio{p % 8}_pause{{device="eth{p}",'
                         f'host="h{d}"}} 2')
            lines.append(f'node_infiniband_info{{device="mlx5_{p}",port="1",host="leaf-1"}} 3')
            lines.append(f'up{{job="j{d}",gpu="{p}"}} 4')
    path = write("prom/leaf-01.prom", "\n".join(lines) + "\n")
    vectorized, exact = _both(path, "prom/leaf-01.prom")
    assert vectorized == exact
    assert vectorized[2] == 6000 and vectorized[3] == 0
    calls = []
    real_resolve = prom.resolve_series
    monkeypatch.setattr(prom, "resolve_series", lambda *a: calls.append(1) or real_resolve(*a))
    parse(path)
    assert len(calls) == 30  # only the InfiniBand series: their netdev is looked up one by one
    rows = {(r[3], r[1], r[2], r[4]) for r in vectorized[0]}
    assert ("nvswitch_interface_if_in_octets", "leaf-7", "swp5", "queue=2") in rows
    assert ("node_network_up", "leaf-09", "eth3", "") in rows  # a mapped address
    assert ("node_network_up", "leaf-01", "eth3", "") in rows  # unmapped: the file's host
    assert ("node_ethtool_received_prio5_pause", "h2", "eth5", "priority=5") in rows
    assert ("up", "leaf-01", "", "gpu=4") in rows


@settings(max_examples=60, deadline=None)
@given(chunks=st.lists(st.sampled_from(
    ["a", "é", "\n", "\r", "\r\n", "\n\n", "\ufeff", "x y}"]).map(str.encode) | st.binary(
    max_size=3), max_size=40), block=st.integers(1, 12), gz=st.booleans())
def test_blocks_give_the_text_the_text_stream_gives(tmp_path_factory, chunks, block, gz):
    """Blocks read as bytes: the same lines as the text stream (U+FFFD, universal newlines),
    whatever the block size cuts through."""
    data = b"".join(chunks)
    path = tmp_path_factory.mktemp("k") / "f.prom"
    path.write_bytes(gzip.compress(data) if gz else data)
    src = prom.SourceFile(path, "f.prom", Manifest())
    with src.open_text() as fh:
        text = fh.read()
    want = text[:-1].split("\n") if text.endswith("\n") else text.split("\n") if text else []
    with src.open_text() as fh:
        got = [line for b in line_blocks(fh, block) for line in b.series(newline=False)]
    assert got == want


def test_rows_reach_a_flushing_sink_in_batches(write, monkeypatch):
    """Small blocks, rows handed over in frames of OUT_ROWS or more, the last one at the end:
    the same rows and accounting as a sink that keeps everything."""
    lines = [T_LINE]
    for i in range(60):
        lines.append(f'm{{host="h{i % 7}",interface="swp{i}"}} {i}')
        if i % 9 == 0:
            lines += ["not a sample", f"1796022743.{i}", f'esc{{host="h",q="a\\"b"}} {i}']
    path = write("prom/leaf-01.prom", "\n".join(lines) + "\n")
    kept, want = parse(path, parser=PromTextParser())
    monkeypatch.setattr(prom, "OUT_ROWS", 8)
    monkeypatch.setattr(prom, "BLOCK_CHARS", 200)
    got: list[pl.DataFrame] = []
    sink = Sink(flush=lambda table, buf: got.append(buf) if table == "samples" else None)
    PromTextParser().parse(prom.SourceFile(path, "prom/leaf-01.prom", Manifest()), sink)
    sink.close()
    assert len(got) > 3 and all(f.height >= 8 for f in got[:-1])
    rows = sorted(pl.concat(got).select(Sink.TABLES["samples"]).to_dicts(),
                  key=lambda r: (r["line"], r["metric"]))
    assert rows == want and len(want) == 67
    assert (sink.loaded, sink.rejected) == (kept.loaded, kept.rejected) == (67, 7)

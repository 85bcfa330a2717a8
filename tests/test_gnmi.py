"""gnmic `json` and `event` output: shapes, key placement, value decoding, writers, real samples."""

from __future__ import annotations

import io
import json
import re
import tempfile
from pathlib import Path

import pytest
from conftest import run_parser
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.core.schema import canonical_counters, counter_map
from collectors.core.source import MAX_RECORD_BYTES, Sink, SourceFile
from collectors.formats import gnmi
from collectors.formats.gnmi import lines as gnmi_lines
from collectors.formats.gnmi import reader as gnmi_reader
from collectors.formats.gnmi import scan as gnmi_scan

TS = 1677644403153198642


def samples(sink: Sink) -> list[tuple]:
    return [(r["device"], r["ifname"], r["metric"], r["qualifier"], r["value"])
            for r in sink.collected("samples")]


def by_metric(sink: Sink) -> dict[str, float]:
    return {r["metric"]: r["value"] for r in sink.collected("samples")}


def parse_text(write, text: str, rel: str = "gnmi/leaf-01.json"):
    path = write(rel, text)
    parser, sink = run_parser(path, rel=rel)
    assert parser is not None, "not recognized"
    return parser, sink


def note(prefix: str | None, path: str, key: str, value, source: str | None = "leaf-01:9339",
         ts: int = TS) -> dict:
    obj: dict = {"timestamp": ts, "time": "2023-03-01T04:20:03.153198642Z"}
    if source is not None:
        obj = {"source": source, "subscription-name": "s", **obj}
    if prefix is not None:
        obj["prefix"] = prefix
    obj["target"] = "netq"
    obj["updates"] = [{"Path": path, "values": {key: value}}]
    return obj


def lines(*objs: dict) -> str:
    return "".join(json.dumps(o) + "\n" for o in objs)


# -- json format: shapes -----------------------------------------------------------------------
def test_json_one_object_per_line_string_counters(write):
    text = lines(
        note("interfaces/interface[name=swp1]", "state/counters/in-octets",
             "state/counters/in-octets", "1740350"),
        note("interfaces/interface[name=swp1]", "state/counters/out-pkts",
             "state/counters/out-pkts", 12),
        note("interfaces/interface[name=swp2]", "ethernet/state/counters/in-crc-errors",
             "ethernet/state/counters/in-crc-errors", "7"),
    )
    parser, sink = parse_text(write, text)
    assert parser.name == "gnmic_json"
    assert (sink.loaded, sink.rejected) == (3, 0)
    assert samples(sink) == [
        ("leaf-01", "swp1", "in-octets", "", 1740350.0),
        ("leaf-01", "swp1", "out-pkts", "", 12.0),
        ("leaf-01", "swp2", "in-crc-errors", "", 7.0),
    ]
    assert [r["line"] for r in sink.collected("samples")] == [1, 2, 3]
    assert {r["ts"] for r in sink.collected("samples")} == {TS}


def test_json_pretty_printed_concatenated_with_status_line_and_sync(write):
    obj = note("interfaces/interface[name=swp1]", "state/oper-status", "state/oper-status", "UP",
               source=None)
    text = (json.dumps({"sync-response": True}, indent=2) + "\n" + json.dumps(obj, indent=2)
            + "\nreceived sync response 'true' from '10.209.37.123:9339'\n"
            + json.dumps(obj, indent=2) + "\n")
    _, sink = parse_text(write, text, rel="gnmi/leaf-07.txt")
    assert (sink.loaded, sink.rejected) == (3, 1)
    line, reason, raw = sink.rejects[0]
    assert line == 18 and "status line" in reason and raw.startswith("received sync")
    # device falls back to the file's host; oper-status UP is IF-MIB 1
    assert samples(sink) == [("leaf-07", "swp1", "oper-status", "", 1.0)] * 2
    assert [r["line"] for r in sink.collected("samples")] == [4, 19]


def test_json_top_level_array_like_gnmic_get(write):
    arr = [note("interfaces/interface[name=swp3]", "state/counters/in-errors",
                "state/counters/in-errors", "4"),
           note(None, "interfaces/interface[name=swp4]/state/counters/out-errors",
                "interfaces/interface/state/counters/out-errors", "5")]
    _, sink = parse_text(write, json.dumps(arr, indent=2) + "\n")
    assert (sink.loaded, sink.rejected) == (2, 0)
    assert samples(sink) == [("leaf-01", "swp3", "in-errors", "", 4.0),
                             ("leaf-01", "swp4", "out-errors", "", 5.0)]
    assert [r["line"] for r in sink.collected("samples")] == [2, 18]


def test_two_objects_on_one_line_and_trailing_text(write):
    a = note("interfaces/interface[name=swp1]", "state/counters/in-octets",
             "state/counters/in-octets", "1")
    text = json.dumps(a) + json.dumps(a) + " trailing words\n"
    _, sink = parse_text(write, text)
    assert (sink.loaded, sink.rejected) == (2, 1)
    assert sink.rejects[0][1] == "text outside a JSON object"


# -- key placement -------------------------------------------------------------------------------
@pytest.mark.parametrize(("prefix", "path", "expect"), [
    ("interfaces/interface[name=swp9]", "state/counters/in-discards", ("swp9", "")),
    (None, "interfaces/interface[name=swp9]/state/counters/in-discards", ("swp9", "")),
    ("/interfaces/interface[name=swp9]", "/state/counters/in-discards", ("swp9", "")),
    ("openconfig:interfaces/interface[name=swp9]", "state/counters/in-discards", ("swp9", "")),
    ("openconfig-interfaces:interfaces/openconfig-interfaces:interface[name=swp9]",
     "state/counters/in-discards", ("swp9", "")),
    ("qos/interfaces/interface[interface-id=swp9]/output/queues/queue[name=3]",
     "state/in-discards", ("swp9", "queue=3")),
    ("qos/interfaces/interface[interface-id=swp9]",
     "switch-priority[priority=3]/state/counters/in-discards", ("swp9", "priority=3")),
    ("qos/interfaces/interface[interface-id=swp9]",
     "state/switch-priority[priority=3]/counters/in-discards", ("swp9", "priority=3")),
    ("state/port[port-id=1/1/c1/1]/statistics", "in-discards", ("1/1/c1/1", "")),
    ("interfaces/interface[name=Ethernet1/2]/subinterfaces/subinterface[index=0]",
     "state/counters/in-discards", ("Ethernet1/2", "subinterface=0")),
    ("interfaces/interface[name=a\\]b]", "state/counters/in-discards", ("a]b", "")),
])
def test_key_placement_in_prefix_or_path(write, prefix, path, expect):
    _, sink = parse_text(write, lines(note(prefix, path, "x", "9")))
    assert samples(sink) == [("leaf-01", *expect[:1], "in-discards", expect[1], 9.0)]


def test_adaptive_routing_is_device_level(write):
    _, sink = parse_text(write, lines(note(
        None, "system/adaptive-routing/state/counters/congestion-change",
        "system/adaptive-routing/state/counters/congestion-change", "17")))
    assert samples(sink) == [("leaf-01", "", "congestion-change", "", 17.0)]


def test_pfc_and_queue_qualifiers_sorted(write):
    _, sink = parse_text(write, lines(note(
        "qos/interfaces/interface[interface-id=swp2]/output/queues/queue[name=3]"
        "/switch-priority[priority=5]", "state/counters/out-pause-pkts", "x", "2")))
    assert samples(sink) == [("leaf-01", "swp2", "out-pause-pkts", "priority=5,queue=3", 2.0)]


# -- values --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("leaf", "value", "expect"), [
    ("ethernet/state/port-speed", "SPEED_1GB", 1000.0),
    ("ethernet/state/port-speed", "SPEED_400GB", 400000.0),
    ("ethernet/state/port-speed", "SPEED_2500MB", 2500.0),
    ("ethernet/state/port-speed", "openconfig-if-ethernet:SPEED_100GB", 100000.0),
    ("ethernet/state/port-speed", "100G", 100000.0),
    ("ethernet/state/port-speed", 400000, 400000.0),
    ("state/oper-status", "DOWN", 2.0),
    ("state/oper-status", "LOWER_LAYER_DOWN", 7.0),
    ("state/oper-status", "NOT_PRESENT", 6.0),
    ("state/admin-status", "TESTING", 3.0),
    ("ethernet/phy/state/effective-ber", "1.5E-12", 1.5e-12),
    ("ethernet/phy/state/effective-ber", "-3", -3.0),  # a gauge may be negative (a counter: no)
    ("state/enabled", True, 1.0),
])
def test_value_decoding(write, leaf, value, expect):
    _, sink = parse_text(write, lines(note("interfaces/interface[name=swp1]", leaf, leaf, value)))
    assert [s[-1] for s in samples(sink)] == [expect]
    assert samples(sink)[0][2] == leaf.rsplit("/", 1)[1]


def test_non_numeric_strings_are_text_samples(write):
    text = lines(
        note("interfaces/interface[name=swp1]", "state/description", "state/description",
             "to spine"),
        note("interfaces/interface[name=swp1]", "ethernet/state/port-speed",
             "ethernet/state/port-speed", "SPEED_UNKNOWN"),
        note("state/service/vpls[service-name=t]", "oper-state", "oper-state", "down"),
        note("interfaces/interface[name=swp1]", "state/ifindex-list", "x", [1, 2]),
    )
    _, sink = parse_text(write, text)
    assert samples(sink) == []
    texts = [(r["ifname"], r["metric"], r["qualifier"], r["value"])
             for r in sink.collected("text_samples")]
    assert texts == [("swp1", "description", "", "to spine"),
                     ("swp1", "port-speed", "", "SPEED_UNKNOWN"),
                     ("", "oper-state", "service-name=t", "down"),
                     ("swp1", "ifindex-list", "", "[1,2]")]


def test_container_values_are_flattened_to_leaves(write):
    container = {"openconfig-interfaces:in-octets": "10", "out-octets": 20,
                 "config": {"mtu": 9216}, "nested": {"in-errors": "3"}}
    listed = {"openconfig-interfaces:interface": [
        {"name": "swp5", "state": {"counters": {"in-pkts": "6"}}},
        {"name": "swp6", "state": {"counters": {"in-pkts": "7"}}}]}
    text = lines(note("interfaces/interface[name=swp4]", "state/counters",
                      "state/counters", container),
                 note(None, "interfaces", "interfaces", listed))
    _, sink = parse_text(write, text)
    assert (sink.loaded, sink.rejected) == (2, 0)
    assert samples(sink) == [("leaf-01", "swp4", "in-octets", "", 10.0),
                             ("leaf-01", "swp4", "out-octets", "", 20.0),
                             ("leaf-01", "swp4", "in-errors", "", 3.0),
                             ("leaf-01", "swp5", "in-pkts", "", 6.0),
                             ("leaf-01", "swp6", "in-pkts", "", 7.0)]


WJH = [{"AggCount": 283, "IngressPort": "swp8", "Hostname": "neo-switch01",
        "Reason": "Source MAC is multicast", "ReasonId": 209, "Smac": "01:00:5e:00:00:01"},
       {"AggCount": 5, "IngressPort": "", "Reason": "Blackhole route", "ReasonId": 210}]


def test_wjh_drops_need_a_second_decode(write):
    prefix = ("interfaces/interface[name=swp8]/wjh/aggregate/l2/reasons/reason"
              "[severity=error][id=209]")
    _, sink = parse_text(write, lines(note(prefix, "state/drop", "state/drop",
                                           json.dumps(WJH, separators=(",", ":")))))
    assert (sink.loaded, sink.rejected) == (1, 0)
    events = sink.collected("events")
    assert [(e["ifname"], e["kind"]) for e in events] == [("swp8", "drop"), ("swp8", "drop")]
    assert json.loads(events[0]["message"]) == WJH[0]
    assert samples(sink) == [("leaf-01", "swp8", "wjh-agg-count", "reason=209", 283.0),
                             ("leaf-01", "swp8", "wjh-agg-count", "reason=209", 5.0)]


def test_wjh_without_reason_in_path_takes_reason_id(write):
    _, sink = parse_text(write, lines(note(None, "wjh/state/drop", "wjh/state/drop",
                                           json.dumps(WJH[1:]))))
    assert samples(sink) == [("leaf-01", "", "wjh-agg-count", "reason=210", 5.0)]


# -- rejects -------------------------------------------------------------------------------------
def test_truncated_object_resynchronizes_on_next_object(write):
    good = json.dumps(note("interfaces/interface[name=swp1]", "state/counters/in-octets",
                           "state/counters/in-octets", "5"))
    text = good[:70] + "\n" + good + "\n" + json.dumps(json.loads(good), indent=2)[:90] + "\n"
    _, sink = parse_text(write, text)
    assert sink.loaded == 1 and sink.rejected == 2
    assert [r[0] for r in sink.rejects] == [1, 3]
    assert all("truncated" in r[1] for r in sink.rejects)
    assert samples(sink) == [("leaf-01", "swp1", "in-octets", "", 5.0)]


def test_invalid_json_reports_its_file_line(write):
    text = '{\n  "source": "a",\n  "timestamp": 1677644403153198642,\n  "updates": [ , ]\n}\n'
    _, sink = parse_text(write, text)
    assert (sink.loaded, sink.rejected) == (0, 1)
    assert sink.rejects[0][0] == 1 and "invalid JSON at line 4" in sink.rejects[0][1]


@pytest.mark.parametrize(("obj", "reason"), [
    ({"source": "a", "updates": [{"Path": "x", "values": {"x": 1}}]}, "no usable 'timestamp'"),
    ({"source": "a", "timestamp": TS, "updates": {"Path": "x"}}, "'updates' is not a list"),
    ({"source": "a", "timestamp": TS, "updates": [{"Path": 3, "values": {}}]}, "malformed update"),
    ({"name": "s", "timestamp": TS, "values": ["x"]}, "'values' is not an object"),
    ({"name": "s", "timestamp": "soon", "values": {"x": 1}}, "no usable 'timestamp'"),
    ({"lldp": {"interface": []}}, "neither a gnmic notification nor an event"),
])
def test_malformed_records_are_rejected_with_reason(write, obj, reason):
    marker = '{"sync-response": true}\n'  # keeps the file recognized whatever the record
    _, sink = parse_text(write, marker + json.dumps(obj) + "\n")
    assert (sink.loaded, sink.rejected) == (1, 1)
    assert reason in sink.rejects[0][1]
    assert sink.collected("samples") == []


def test_record_without_source_or_file_host_is_rejected(write):
    obj = note("interfaces/interface[name=swp1]", "state/oper-status", "state/oper-status", "UP",
               source=None)
    _, sink = parse_text(write, lines(obj), rel="gnmi/poll output.json")
    assert (sink.loaded, sink.rejected) == (0, 1)
    assert "no 'source'" in sink.rejects[0][1]


def test_non_object_array_elements_are_rejected(write):
    ev = {"name": "s", "timestamp": TS, "tags": {"source": "r1", "interface_name": "e1"},
          "values": {"/interface/statistics/in-octets": 1}}
    text = json.dumps([ev, 3, "x"], indent=2) + "\n" + json.dumps([ev, [1]]) + "\n"
    _, sink = parse_text(write, text)
    assert sink.loaded == 2 and sink.rejected == 3
    assert all("not a JSON object" in r[1] or "outside" in r[1] for r in sink.rejects)


# -- event format --------------------------------------------------------------------------------
EVENT = {"name": "sub1", "timestamp": TS,
         "tags": {"interface_interface-id": "swp3", "queue_name": "4", "source": "10.0.0.9:9339",
                  "subscription-name": "sub1"},
         "values": {"/qos/interfaces/interface/output/queues/queue/state/ecn-marked-pkts": "11",
                    "/qos/interfaces/interface/output/queues/queue/state/max-queue-len": 42}}


def test_event_one_per_line_keys_from_tags(write):
    pfc = {**EVENT, "tags": {"interface_interface-id": "swp3", "switch-priority_priority": "3",
                             "source": "leaf-02"},
           "values": {"/qos/interfaces/interface/switch-priority/state/counters/in-pause-pkts":
                      "8"}}
    port = {**EVENT, "tags": {"port_port-id": "A/1", "source": "sr1"},
            "values": {"/state/port/ethernet/statistics/in-octets": "7753940"}}
    parser, sink = parse_text(write, lines(EVENT, pfc, port), rel="gnmi/leaf-05.json")
    assert parser.name == "gnmic_event"
    assert (sink.loaded, sink.rejected) == (3, 0)
    # an unmapped address falls back to the file's host
    assert samples(sink) == [("leaf-05", "swp3", "ecn-marked-pkts", "queue=4", 11.0),
                             ("leaf-05", "swp3", "max-queue-len", "queue=4", 42.0),
                             ("leaf-02", "swp3", "in-pause-pkts", "priority=3", 8.0),
                             ("sr1", "A/1", "in-octets", "", 7753940.0)]


def test_event_pretty_single_array_and_array_per_line(write):
    single = json.dumps(EVENT, indent=4) + "\n"
    _, one = parse_text(write, single, rel="gnmi/a.json")
    arrays = json.dumps([EVENT, EVENT]) + "\n" + json.dumps([EVENT]) + "\n"
    _, many = parse_text(write, arrays, rel="gnmi/b.json")
    pretty = json.dumps([EVENT, EVENT], indent=2) + "\n"
    _, arr = parse_text(write, pretty, rel="gnmi/c.json")
    assert (one.loaded, many.loaded, arr.loaded) == (1, 3, 2)
    assert one.rejected == many.rejected == arr.rejected == 0
    assert len(one.collected("samples")) == 2 and len(many.collected("samples")) == 6
    assert [r["line"] for r in arr.collected("samples")] == [2, 2, 16, 16]
    assert {r["device"] for r in one.collected("samples")} == {"10.0.0.9"}


def test_event_address_source_mapped_through_lldp_addresses(tmp_path):
    path = tmp_path / "ev.json"
    path.write_text(json.dumps(EVENT) + "\n")
    sink = Sink(addresses={"10.0.0.9": "leaf-09"})
    gnmi.PARSERS[1].parse(SourceFile(path, "gnmi/ev.json"), sink)
    assert {r["device"] for r in sink.collected("samples")} == {"leaf-09"}


def test_event_wjh_keys_from_tags(write):
    ev = {"name": "w", "timestamp": TS,
          "tags": {"interface_name": "swp8", "reason_id": "209", "reason_severity": "error",
                   "source": "leaf-03"},
          "values": {"/interfaces/interface/wjh/aggregate/l2/reasons/reason/state/drop":
                     json.dumps(WJH[:1])}}
    _, sink = parse_text(write, lines(ev))
    assert samples(sink) == [("leaf-03", "swp8", "wjh-agg-count", "reason=209", 283.0)]
    assert [(e["device"], e["ifname"], e["kind"]) for e in sink.collected("events")] == [
        ("leaf-03", "swp8", "drop")]


# -- writers -------------------------------------------------------------------------------------
def _notes() -> list[gnmi.GnmiNotification]:
    c = gnmi.cumulus_notification
    t = 1_700_000_000_123_456_789
    return [
        c(t, "leaf-01", "counters", {"in-octets": 10**13, "out-octets": 5, "in-pkts": 7},
          ifname="swp1", target="netq"),
        c(t, "leaf-01", "state", {"oper-status": "UP"}, ifname="swp1"),
        c(t, "leaf-01", "ethernet", {"in-fcs-errors": 2, "in-mac-pause-frames": 0}, ifname="swp1"),
        c(t, "leaf-01", "ethernet-state", {"port-speed": "SPEED_400GB"}, ifname="swp1"),
        c(t, "leaf-01", "phy", {"symbol-errors": 3, "effective-ber": 1.5e-12}, ifname="swp1"),
        c(t + 1, "leaf-02", "queue", {"ecn-marked-pkts": 4, "transmit-octets": 99.0},
          ifname="swp2", queue=3),
        c(t + 1, "leaf-02", "pfc", {"in-pause-pkts": 6, "out-pause-pkts": 1}, ifname="swp2",
          priority=3),
        c(t + 2, "leaf-02", "ar", {"congestion-change": 12}),
    ]


EXPECTED = [
    ("leaf-01", "swp1", "in-octets", "", 1e13), ("leaf-01", "swp1", "out-octets", "", 5.0),
    ("leaf-01", "swp1", "in-pkts", "", 7.0), ("leaf-01", "swp1", "oper-status", "", 1.0),
    ("leaf-01", "swp1", "in-fcs-errors", "", 2.0),
    ("leaf-01", "swp1", "in-mac-pause-frames", "", 0.0),
    ("leaf-01", "swp1", "port-speed", "", 400000.0),
    ("leaf-01", "swp1", "symbol-errors", "", 3.0),
    ("leaf-01", "swp1", "effective-ber", "", 1.5e-12),
    ("leaf-02", "swp2", "ecn-marked-pkts", "queue=3", 4.0),
    ("leaf-02", "swp2", "transmit-octets", "queue=3", 99.0),
    ("leaf-02", "swp2", "in-pause-pkts", "priority=3", 6.0),
    ("leaf-02", "swp2", "out-pause-pkts", "priority=3", 1.0),
    ("leaf-02", "", "congestion-change", "", 12.0),
]


def test_write_json_round_trip_and_shape(write):
    buf = io.StringIO()
    gnmi.write_json(_notes(), buf)
    first = json.loads(buf.getvalue().splitlines()[0])
    assert list(first) == ["source", "subscription-name", "timestamp", "time", "prefix", "target",
                           "updates"]
    assert first["prefix"] == "interfaces/interface[name=swp1]"
    assert first["time"] == "2023-11-14T22:13:20.123456789Z"
    assert first["updates"][0] == {"Path": "state/counters/in-octets",
                                   "values": {"state/counters/in-octets": "10000000000000"}}
    last = json.loads(buf.getvalue().splitlines()[-1])
    assert "prefix" not in last and last["updates"][0]["Path"].startswith("system/")
    parser, sink = parse_text(write, buf.getvalue())
    assert parser.name == "gnmic_json" and (sink.loaded, sink.rejected) == (8, 0)
    assert samples(sink) == EXPECTED
    assert [r["ts"] for r in sink.collected("samples")][-1] == 1_700_000_000_123_456_791


@pytest.mark.parametrize(("split", "group", "records"), [
    (True, False, 14), (False, False, 14), (True, True, 8), (False, True, 8)])
def test_write_event_round_trip(write, split, group, records):
    buf = io.StringIO()
    gnmi.write_event(_notes(), buf, split=split, group=group)
    first = json.loads(buf.getvalue().splitlines()[0])
    ev = first if split else first[0]
    assert list(ev) == ["name", "timestamp", "tags", "values"]
    assert ev["tags"] == {"interface_name": "swp1", "source": "leaf-01",
                          "subscription-name": "fabtwin"}
    assert "/interfaces/interface/state/counters/in-octets" in ev["values"]
    parser, sink = parse_text(write, buf.getvalue())
    assert parser.name == "gnmic_event" and (sink.loaded, sink.rejected) == (records, 0)
    assert sorted(samples(sink)) == sorted(EXPECTED)


def test_write_event_numbers_unquoted_when_asked():
    buf = io.StringIO()
    gnmi.write_event(_notes()[:1], buf, strings=False)
    assert json.loads(buf.getvalue().splitlines()[1])["values"] == {
        "/interfaces/interface/state/counters/out-octets": 5}


# -- sniffing ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("head", "name"), [
    ('{"source":"a","timestamp":1,"updates":[{"Path":"x","values":{"x":1}}]}', "gnmic_json"),
    ('{\n  "sync-response": true\n}\n', "gnmic_json"),
    ("received sync response 'true' from 'x'\n{\"updates\": [", "gnmic_json"),
    ('[\n  {\n    "name": "sub1",\n    "timestamp": 1,\n    "tags": {}, "values": {"/x": 1}',
     "gnmic_event"),
    ('{"lldp": {"interface": {"swp1": {}}}}', None),
    ('{"meta": {}, "jobs": [{"job_id": 1, "time": {"start": 1}}]}', None),
    ("# TYPE x counter\nx 1 1700000000000\n", None),
    ("<13>1 2026-11-30T07:12:13Z leaf-01 switchd - - - values: {\"updates\": [", None),
    ('{"fields": {"a": 1}, "name": "cpu", "tags": {}, "timestamp": 1}', None),
])
def test_sniff_is_specific(head, name):
    got = [p.name for p in gnmi.PARSERS if p.sniff(head, "x.json")]
    assert got == ([name] if name else [])


# -- robustness ------------------------------------------------------------------------------------
def _parse_file(text: str, rel: str = "gnmi/leaf-01.json") -> Sink:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.json"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        sink = Sink()
        gnmi.PARSERS[0].parse(SourceFile(path, rel), sink)
    assert sink.rejected == len(sink.rejects)
    return sink


def _valid_pretty() -> str:
    buf = io.StringIO()
    gnmi.write_json(_notes(), buf)
    return "".join(json.dumps(json.loads(x), indent=2) + "\n" for x in buf.getvalue().splitlines())


VALID_LINES = io.StringIO()
gnmi.write_event(_notes(), VALID_LINES)
VALID_PRETTY = _valid_pretty()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(alphabet=st.sampled_from('{}[]",:\\ \nab1/=') | st.characters(),
                    max_size=300))
def test_arbitrary_text_never_raises(text):
    sink = _parse_file(text)
    last = len(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    assert all(1 <= line <= last and reason for line, reason, _ in sink.rejects)


_CLOSE = re.compile(r"\n\}(?=\n|$)")


def _expected_after_cut(text: str, pretty: bool) -> tuple[int, int]:
    """(records loaded, records rejected) for a cut of a valid file."""
    if pretty:
        ends = [m.end() for m in _CLOSE.finditer(text)]
        tail = text[ends[-1]:] if ends else text
        return len(ends), int(bool(tail.strip()))
    parts = text.split("\n")
    tail = parts[-1]
    loaded = len(parts) - 1
    try:
        json.loads(tail)
        return loaded + 1, 0
    except ValueError:
        return loaded, int(bool(tail.strip()))


@settings(max_examples=150, deadline=None)
@given(cut=st.integers(0, len(VALID_PRETTY)), pretty=st.booleans())
def test_truncations_keep_accounting(cut, pretty):
    full = VALID_PRETTY if pretty else VALID_LINES.getvalue()
    text = full[:min(cut, len(full))]
    sink = _parse_file(text)
    assert (sink.loaded, sink.rejected) == _expected_after_cut(text, pretty)
    assert all("truncated" in r[1] for r in sink.rejects)


@settings(max_examples=60, deadline=None)
@given(garbage=st.text(max_size=80).filter(lambda s: "\n" not in s and "\r" not in s and s.strip()
                                           and s.lstrip()[:1] not in "{["))
def test_garbage_line_between_objects_loses_nothing(garbage):
    text = VALID_LINES.getvalue()
    mixed = "".join(line + "\n" + garbage + "\n" for line in text.splitlines())
    sink = _parse_file(mixed)
    assert sink.loaded == 14 and sink.rejected == 14


# -- counter map -----------------------------------------------------------------------------------
def test_counter_map_rows_are_known_and_scaled():
    known = canonical_counters()
    rows = {name: row for (family, name), row in counter_map().items() if family == "gnmi"}
    assert len(rows) == 35 and all(r.canonical in known for r in rows.values())
    assert rows["wjh-agg-count"].canonical == "wjh_drops"
    assert gnmi.PARSERS[0].family == gnmi.PARSERS[1].family == "gnmi"
    assert rows["port-speed"].canonical == "port_speed_bps" and rows["port-speed"].scale == 1e6
    assert rows["in-octets"].canonical == "rx_bytes"
    assert rows["in-mac-pause-frames"].canonical == rows["in-pause-pkts"].canonical == "rx_pause"
    assert rows["in-fcs-error-packets"].canonical == "rx_fcs_errors"
    assert rows["congestion-change"].canonical == "ar_congestion_changes"
    assert rows["transmit-octets"].canonical == "tx_queue_bytes"


# -- real samples (SOURCES.md, gnmi section) -------------------------------------------------------
def _real(real_samples: Path, name: str, rel: str | None = None):
    parser, sink = run_parser(real_samples / "gnmi" / name, rel=rel or f"gnmi/{name}")
    assert parser is not None and parser.family == "gnmi", name
    return parser, sink


def _rows(sink: Sink) -> dict[tuple[str, str], tuple]:
    return {(r["ifname"], r["metric"]): (r["ts"], r["device"], r["value"])
            for r in sink.collected("samples")}


def test_real_sros_json_pretty_concatenated(real_samples):
    parser, sink = _real(real_samples, "gnmic-json-sros-port-stats.json")
    assert parser.name == "gnmic_json" and (sink.loaded, sink.rejected) == (4, 0)
    rows = _rows(sink)
    assert rows[("1/1/c1/1", "in-octets")] == (1594065873938155916, "router1.lab.com", 671552.0)
    assert rows[("1/1/c1/1", "out-octets")] == (1594065873938043848, "router1.lab.com", 370930.0)
    states = [(r["ts"], r["device"], r["value"], r["qualifier"])
              for r in sink.collected("text_samples")]
    assert states[0] == (1594065869313065895, "router2.lab.com", "down", "service-name=testvpls")
    assert states[1][1:] == ("router1.lab.com", "down", "service-name=test")


def test_real_srl_event_single_object(real_samples):
    parser, sink = _real(real_samples, "gnmic-event-srl-mgmt0-interface-stats.json",
                         rel="gnmi/srl1.json")
    assert parser.name == "gnmic_event" and (sink.loaded, sink.rejected) == (1, 0)
    rows = _rows(sink)
    ts = 1607291271894072397
    expect = {"in-octets": 65382630, "out-octets": 64721394, "in-error-packets": 0,
              "in-fcs-error-packets": 0, "out-error-packets": 0, "carrier-transitions": 1,
              "in-unicast-packets": 107154}
    for metric, value in expect.items():
        # 172.23.23.2 is not mapped: the device is the file's host
        assert rows[("mgmt0", metric)] == (ts, "srl1", float(value))
    assert len(rows) == 12


def test_real_sros_event_port(real_samples):
    _, sink = _real(real_samples, "gnmic-event-sros-port-in-octets.json", rel="gnmi/a.json")
    assert (sink.loaded, sink.rejected) == (1, 0)
    assert _rows(sink) == {("A/1", "in-octets"): (1607290633806716620, "172.17.0.100", 7753940.0)}


def test_real_srl_event_array(real_samples):
    parser, sink = _real(real_samples, "gnmic-event-array-srl-mgmt0-counters.json")
    assert parser.name == "gnmic_event" and (sink.loaded, sink.rejected) == (18, 0)
    rows = _rows(sink)
    assert len(rows) == 18
    expect = {"in-packets": 351770, "in-octets": 35284165, "in-discarded-packets": 6377,
              "in-error-packets": 128, "in-fcs-error-packets": 0, "out-octets": 219527024,
              "out-discarded-packets": 0, "out-error-packets": 0, "carrier-transitions": 1}
    for metric, value in expect.items():
        assert rows[("mgmt0", metric)] == (1710890476202665500, "clab-traps-srl1", float(value))


def test_real_cumulus_wjh(real_samples):
    _, sink = _real(real_samples, "cumulus510-gnmic-json-wjh-swp8-stream.json",
                    rel="gnmi/neo-switch01.json")
    assert (sink.loaded, sink.rejected) == (2, 0)
    events = sink.collected("events")
    assert [(e["ts"], e["device"], e["ifname"], e["kind"]) for e in events] == [
        (1677695102858146800, "neo-switch01", "swp8", "drop"),
        (1677695132988218890, "neo-switch01", "swp8", "drop")]
    drops = [json.loads(e["message"]) for e in events]
    assert [d["AggCount"] for d in drops] == [283, 287]
    assert {(d["Hostname"], d["Reason"], d["Smac"]) for d in drops} == {
        ("neo-switch01", "Source MAC is multicast", "01:00:5e:00:00:01")}
    assert samples(sink) == [("neo-switch01", "swp8", "wjh-agg-count", "reason=209", 283.0),
                             ("neo-switch01", "swp8", "wjh-agg-count", "reason=209", 287.0)]


def test_real_cumulus_port_speed(real_samples):
    _, sink = _real(real_samples, "cumulus510-gnmic-json-once-swp1-port-speed.json",
                    rel="gnmi/leaf01.json")
    assert (sink.loaded, sink.rejected) == (1, 0)
    assert _rows(sink) == {("swp1", "port-speed"): (1677256036962254134, "leaf01", 1000.0)}


def test_real_cumulus_poll_with_status_line(real_samples):
    name = "cumulus510-gnmic-json-poll-swp1-oper-status.txt"
    _, sink = _real(real_samples, name, rel="gnmi/leaf01.txt")
    assert (sink.loaded, sink.rejected) == (2, 1)
    assert sink.rejects[0][:2] == (15, "gnmic status line, not a notification")
    assert [(r["ts"], r["device"], r["ifname"], r["metric"], r["value"], r["line"])
            for r in sink.collected("samples")] == [
        (1677644403153198642, "leaf01", "swp1", "oper-status", 1.0, 1),
        (1677644403153198642, "leaf01", "swp1", "oper-status", 1.0, 16)]
    # without source and without a host in the file name, the notifications are refused
    _, bare = _real(real_samples, name, rel="gnmi/poll output.txt")
    assert (bare.loaded, bare.rejected) == (0, 3)


def test_real_cumulus_dialin_queue(real_samples):
    _, sink = _real(real_samples, "cumulus514-gnmic-json-dialin-swp1-queue1-transmit-octets.json",
                    rel="gnmi/x.json")
    assert (sink.loaded, sink.rejected) == (2, 0)  # the sync-response object loads nothing
    assert samples(sink) == [("10.188.52.108", "swp1", "transmit-octets", "queue=1", 0.0)]
    assert sink.collected("samples")[0]["ts"] == 1737725390247535267


def test_every_real_gnmi_sample_is_ours_with_exact_accounting(real_samples):
    expected = {  # file -> (records loaded, rejected), from SOURCES.md
        "gnmic-json-sros-port-stats.json": (4, 0),
        "gnmic-event-srl-mgmt0-interface-stats.json": (1, 0),
        "gnmic-event-sros-port-in-octets.json": (1, 0),
        "gnmic-event-array-srl-mgmt0-counters.json": (18, 0),
        "cumulus510-gnmic-json-wjh-swp8-stream.json": (2, 0),
        "cumulus510-gnmic-json-once-swp1-port-speed.json": (1, 0),
        "cumulus510-gnmic-json-poll-swp1-oper-status.txt": (2, 1),
        "cumulus514-gnmic-json-dialin-swp1-queue1-transmit-octets.json": (2, 0),
    }
    for path in sorted((real_samples / "gnmi").iterdir()):
        parser, sink = run_parser(path, rel=f"gnmi/{path.name}")
        assert parser is not None and parser.family == "gnmi", path.name
        assert (sink.loaded, sink.rejected) == expected.get(path.name, (sink.loaded, 0)), path.name


# -- more shapes and guards ----------------------------------------------------------------------
def test_bom_gzip_and_get_notifications_wrapper(write):
    wrapped = {"notifications": [
        note("interfaces/interface[name=swp1]", "state/counters/in-octets", "x", "1"),
        note("interfaces/interface[name=swp2]", "state/counters/in-octets", "x", "2")],
        "extensions": []}
    text = "\ufeff" + json.dumps({"sync-response": True}) + "\n" + json.dumps(wrapped) + "\n"
    path = write("gnmi/leaf-01.json.gz", text, gz=True)
    parser, sink = run_parser(path, rel="gnmi/leaf-01.json.gz")
    assert parser is not None and parser.name == "gnmic_json"
    assert (sink.loaded, sink.rejected) == (2, 0)
    assert [s[1] for s in samples(sink)] == ["swp1", "swp2"]
    bad = {"notifications": [wrapped["notifications"][0], {"source": "a", "updates": []}]}
    _, sink = parse_text(write, lines({"sync-response": True}, bad))
    assert (sink.loaded, sink.rejected) == (1, 1) and samples(sink) == []


def test_failing_record_leaves_no_samples(write, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(gnmi_reader._Reader, "value", boom)
    ev = {**EVENT, "values": {"/a/in-octets": 5, "/a/description": "text"}}
    _, sink = parse_text(write, lines(ev, EVENT))
    assert (sink.loaded, sink.rejected) == (1, 1)
    assert "could not read record" in sink.rejects[0][1]
    assert [s[2] for s in samples(sink)] == ["ecn-marked-pkts", "max-queue-len"]


def test_oversized_object_is_rejected_and_stream_continues(write, monkeypatch):
    monkeypatch.setattr(gnmi_scan, "MAX_DOC_CHARS", 450)
    big = note("interfaces/interface[name=swp1]", "state/description", "x", "y" * 600)
    small = note("interfaces/interface[name=swp1]", "state/counters/in-octets", "x", "3")
    _, sink = parse_text(write, json.dumps(big, indent=2) + "\n" + json.dumps(small, indent=2))
    assert (sink.loaded, sink.rejected) == (1, 1)
    assert "longer than 450 characters" in sink.rejects[0][1] and sink.rejects[0][0] == 1
    assert samples(sink) == [("leaf-01", "swp1", "in-octets", "", 3.0)]


def test_a_pretty_printed_record_past_the_record_size_is_one_reject(write):
    # the bound of a record over many lines is the bound of a line (8 MiB), not 64 Mi
    big = note("interfaces/interface[name=swp1]", "state/description", "x", "y" * 1000)
    big["updates"] = big["updates"] * 9000  # ~9 MB once indented
    small = note("interfaces/interface[name=swp1]", "state/counters/in-octets", "x", "3")
    text = json.dumps(big, indent=2)
    assert len(text) > gnmi_scan.MAX_DOC_CHARS == MAX_RECORD_BYTES
    _, sink = parse_text(write, text + "\n" + json.dumps(small, indent=2))
    assert (sink.loaded, sink.rejected) == (1, 1)
    assert f"longer than {MAX_RECORD_BYTES} characters" in sink.rejects[0][1]
    assert samples(sink) == [("leaf-01", "swp1", "in-octets", "", 3.0)]


def test_big_integers_and_time_only_notifications(write):
    tags = '{"source":"r1","interface_name":"e1"}'
    ev = (f'{{"name":"s","timestamp":{TS},"tags":{tags},'
          f'"values":{{"/i/in-octets":{10**25},"/i/out-octets":{10**400}}}}}\n')
    only_time = {"source": "r2", "time": "2023-03-01T04:20:03.5+01:00",
                 "updates": [{"Path": "interfaces/interface[name=e2]/state/counters/in-pkts",
                              "values": {"interfaces/interface/state/counters/in-pkts": "9"}}]}
    _, sink = parse_text(write, ev + json.dumps(only_time) + "\n")
    # a counter beyond 2^64 - 1 is a reject of its record, which leaves no row (not even the
    # text sample of the number no double holds); the rest loads
    assert (sink.loaded, sink.rejected) == (1, 1)
    assert sink.rejects[0][:2] == (1, "value '1e+25' of in-octets is out of range (beyond 2^64 - 1)")
    rows = sink.collected("samples")
    assert [(r["device"], r["metric"], r["value"]) for r in rows] == [("r2", "in-pkts", 9.0)]
    assert rows[0]["ts"] == 1677640803_500000000
    assert sink.collected("text_samples") == []


# -- the vectorized fast path ---------------------------------------------------------------------
# Records whose values are all plain numbers skip the value-by-value path and reach the sink as
# polars frames. They must give exactly what that path gives: same rows in the same order, same
# lines, same accounting, whatever the batch size and however fast and slow records interleave.
_ODD_VALUES = ["UP", "down", "SPEED_100GB", "100G", " 5", "5 ", "1_000", "inf", "-inf", "nan", "",
               "١٢", "-", "0x10", "1e400", "[1,2]", '{"in-octets":"4"}', json.dumps(WJH[:1]),
               "-3", "+5", ".5", "5.", "1.5E-12", "12345678901234567890123", 7, -7, 1.5, True,
               False, None, 2**64 - 1, [1, "2"], {"out-octets": 9},
               # status words (a sample only for an interface's status), words float() or polars
               # would read as numbers, numbers JSON and float() spell differently
               "lower-layer-down", "Testing", "NOT_PRESENT", "UPP", "INF", "NaN", "Infinity", "e5",
               "0012", "-0", -0.0, 0, 1e300, 1.5e-7, 12345678901234567, 2**63, "1e999"]
_XPATHS = ["/interfaces/interface/state/counters/in-octets",
           "/interfaces/interface/state/counters/out-octets",
           "/interfaces/interface[name=swp7]/state/counters/in-pkts",
           "/qos/interfaces/interface/output/queues/queue/state/ecn-marked-pkts",
           "/qos/interfaces/interface/switch-priority[priority=3]/state/counters/in-pause-pkts",
           "/interfaces/interface/state/oper-status",
           "/interfaces/interface/ethernet/state/port-speed",
           "/interfaces/interface/wjh/aggregate/l2/reasons/reason/state/drop"]
_LEAVES = ["state/counters/in-octets", "state/counters/out-octets", "state/oper-status",
           "switch-priority[priority=3]/state/counters/in-pause-pkts", "wjh/state/drop"]
_TIMESTAMPS = [TS, TS + 1, 1677644403, 1677644403153, 2**63 - 1, 2**63, 2**64 - 1, -1, "soon",
               "2023-03-01T04:20:03Z", 1.5e18, 10**17, 10**17 - 1, 9999999999999999999]

plain = st.integers(0, 10**15).map(str)
values = st.one_of(plain, plain, plain, st.sampled_from(_ODD_VALUES))
timestamps = st.one_of(st.just(TS), st.just(TS), st.sampled_from(_TIMESTAMPS))
sources = st.sampled_from(["leaf-01:9339", "leaf-02", "10.0.0.9:9339", "10.0.0.8", "", None, 3])
tag_sets = st.fixed_dictionaries(
    {"source": sources},
    optional={"interface_name": st.sampled_from(["swp1", "swp2"]), "queue_name": st.just("3"),
              "port_port-id": st.sampled_from(["1/1/c1", 5]), "subscription-name": st.just("s")})
events = st.fixed_dictionaries({
    "name": st.just("s"), "timestamp": timestamps,
    "tags": st.one_of(tag_sets, tag_sets, tag_sets, st.sampled_from([None, [1]])),
    "values": st.one_of(st.dictionaries(st.sampled_from(_XPATHS), values, max_size=5),
                        st.dictionaries(st.sampled_from(_XPATHS[:2]), plain, min_size=2),
                        st.sampled_from([None, ["x"]]))})
_update = lambda leaf, v: {"Path": leaf, "values": {leaf: v}}  # noqa: E731
updates = st.one_of(
    st.builds(_update, st.sampled_from(_LEAVES), values),
    st.builds(_update, st.sampled_from(_LEAVES), plain),
    st.sampled_from([{"Path": "", "values": {"x": "1"}}, {"values": {"x": "1"}},
                     {"Path": 3, "values": {"x": "1"}}, {"Path": "a/b", "values": {}},
                     {"Path": "a", "values": {"b": "1", "c": "2"}}, {"Path": "a", "values": [1]},
                     {"Path": "a"}, 5]))
notifications = st.fixed_dictionaries(
    {"timestamp": timestamps,
     "updates": st.one_of(st.lists(updates, min_size=1, max_size=4), st.sampled_from([[], {}]))},
    optional={"source": sources,
              "prefix": st.sampled_from(["interfaces/interface[name=swp1]", "", "a/b[name=x]", 4]),
              "time": st.just("2023-03-01T04:20:03.5Z"), "subscription-name": st.just("s"),
              "target": st.just("netq")})
_GNMIC_ORDER = ("source", "subscription-name", "timestamp", "time", "prefix", "target", "updates")


def _gnmic_order(obj: dict) -> dict:
    """The members in the order gnmic prints them (the vectorized pass reads only that order)."""
    return {**{k: obj[k] for k in _GNMIC_ORDER if k in obj}, **obj}


one_update = st.builds(lambda n, u: {**n, "updates": [u]}, notifications, updates)
one_value = st.fixed_dictionaries({  # the shape gnmic's split events have
    "name": st.just("s"), "timestamp": timestamps, "tags": tag_sets,
    "values": st.dictionaries(st.sampled_from(_XPATHS), values, min_size=1, max_size=1)})
documents = st.one_of(events, notifications, st.lists(events, min_size=1, max_size=3),
                      st.builds(_gnmic_order, notifications), st.builds(_gnmic_order, one_update),
                      one_value, one_value, st.builds(_gnmic_order, one_update),
                      st.sampled_from([{"sync-response": True}, {"lldp": 1}]))


def _everything(path: Path, rel: str, flushing: bool, vectorized: bool = True) -> tuple:
    """Every row, reject and count a parse gives, in order (frames turned into lists)."""
    got: dict[str, list] = {}

    def flush(table: str, buf) -> None:
        cols = buf.to_dict(as_series=False) if hasattr(buf, "to_dict") else buf
        names = ("line", "reason", "raw") if table == "rejects" else Sink.TABLES[table]
        got.setdefault(table, []).extend(zip(*(cols[c] for c in names), strict=True))

    sink = Sink(flush=flush if flushing else None, addresses={"10.0.0.9": "leaf-09"})
    gnmi.GnmicJsonParser(vectorized).parse(SourceFile(path, rel), sink)
    sink.close()
    for table, cols in Sink.TABLES.items():
        got.setdefault(table, []).extend(zip(*(sink.buffers[table][c] for c in cols), strict=True))
    got.setdefault("rejects", []).extend(sink.rejects)
    rows = {t: [tuple("NaN" if v != v else v for v in r) for r in rs] for t, rs in got.items()}
    return rows, sink.loaded, sink.rejected, sink.current_line


def _without_fast_path(path: Path, rel: str, flushing: bool) -> tuple:
    """Every record read value by value: no vectorized pass, no per-record fast path."""
    no = staticmethod(lambda *a: False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gnmi_reader._Reader, "fast_event", no)
        mp.setattr(gnmi_reader._Reader, "fast_notification", no)
        return _everything(path, rel, flushing, vectorized=False)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(documents, min_size=1, max_size=25), batch=st.sampled_from([1, 3, 200_000]),
       flushing=st.booleans(), rel=st.sampled_from(["gnmi/leaf-07.json", "gnmi/poll out.json"]),
       block=st.sampled_from([64, 1 << 22]), probe=st.booleans())
def test_fast_paths_give_exactly_what_the_value_by_value_path_gives(docs, batch, flushing, rel,
                                                                    block, probe):
    """The vectorized pass (blocks of `block` bytes; whole files or only where the probe says)
    and the per-record fast path each give what the value-by-value path gives."""
    text = "".join(json.dumps(d, separators=(",", ":")) + "\n" for d in docs)
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        path = Path(tmp) / "f.json"
        path.write_text(text)
        mp.setattr(gnmi_lines, "_BATCH", batch)
        mp.setattr(gnmi_lines, "BLOCK_BYTES", block)
        if not probe:
            mp.setattr(gnmi_lines, "_vector_file", lambda fh: True)
            mp.setattr(gnmi_lines._Lines, "worth", staticmethod(lambda b: True))
        exact = _without_fast_path(path, rel, flushing)
        assert _everything(path, rel, flushing, vectorized=False) == exact
        assert _everything(path, rel, flushing) == exact


_PLAIN = {"/interfaces/interface/state/counters/in-octets": "11",
          "/interfaces/interface/state/counters/out-octets": "12"}
_UPD = {"Path": "state/counters/in-octets", "values": {"state/counters/in-octets": "13"}}


@pytest.mark.parametrize("odd", [" 5", "\t5", "inf", "nan", "Infinity", "١٢", "1_000", "5 ", "",
                                 "-inf", "+nan", 7, 2**64 - 1, 1.5, True, None, "UP", [1]])
def test_fast_path_leaves_every_unusual_value_to_the_value_by_value_path(tmp_path, odd):
    leaf = "/interfaces/interface/state/counters/in-errors"
    docs = [
        {"name": "s", "timestamp": TS, "tags": {"interface_name": "swp1", "source": "leaf-01"},
         "values": {**_PLAIN, leaf: odd}},
        {"name": "s", "timestamp": TS, "tags": {"interface_name": "swp1", "source": "leaf-01"},
         "values": {leaf: odd, **_PLAIN}},
        {"name": "s", "timestamp": TS, "tags": {"interface_name": "swp1", "source": "leaf-01"},
         "values": {"/i/in-pkts": 7, leaf: odd}},
        note("interfaces/interface[name=swp1]", "state/counters/in-errors", "x", odd),
        {**note("interfaces/interface[name=swp1]", "x", "x", 1),
         "updates": [{"Path": "state/counters/in-errors", "values": {"x": odd}}, _UPD]},
    ]
    path = tmp_path / "leaf-01.json"
    path.write_text(lines(*docs))
    assert _everything(path, "gnmi/leaf-01.json", False) == _without_fast_path(
        path, "gnmi/leaf-01.json", False)


@pytest.mark.parametrize("odd_update", [
    {"Path": "a/b", "values": {}}, {"Path": "a/b", "values": {"b": "1", "c": "2"}},
    {"Path": "", "values": {"x": "1"}}, {"values": {"x": "1"}},
    {"Path": None, "values": {"x": "1"}},
    {"Path": "a", "values": None}, {"Path": "a", "values": [1]}, {"Path": 3, "values": {"x": "1"}},
    {"Path": "a"}, 5, "x", None])
@pytest.mark.parametrize("where", [0, 1, 2])
def test_fast_path_leaves_odd_updates_to_the_update_by_update_path(tmp_path, odd_update, where):
    ups = [_UPD, {"Path": "state/counters/out-octets", "values": {"x": "14"}}]
    ups.insert(where, odd_update)
    doc = {**note("interfaces/interface[name=swp1]", "x", "x", 1), "updates": ups}
    path = tmp_path / "leaf-01.json"
    path.write_text(lines(doc, note("interfaces/interface[name=swp2]", "a", "a", "1")))
    assert _everything(path, "gnmi/leaf-01.json", False) == _without_fast_path(
        path, "gnmi/leaf-01.json", False)


def _cumulus_lines(steps: int, odd_every: int) -> str:
    """Cumulus-style events with string counters; every `odd_every`-th one carries a status."""
    out = []
    for step in range(steps):
        for port in range(1, 5):
            values = {f"/interfaces/interface/state/counters/{c}": str(step * 10 + i)
                      for i, c in enumerate(("in-octets", "out-octets", "in-pkts"))}
            if (step * 4 + port) % odd_every == 0:
                values["/interfaces/interface/state/oper-status"] = "UP"
                values["/interfaces/interface/state/description"] = "uplink"
            out.append(json.dumps({"name": "fabric", "timestamp": TS + step, "tags": {
                "interface_name": f"swp{port}", "source": "leaf-01:9339"}, "values": values}))
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("flushing", [False, True])
def test_fast_path_batches_keep_record_order_and_lines(tmp_path, monkeypatch, flushing):
    path = tmp_path / "leaf-01.json"
    path.write_text(_cumulus_lines(50, 7))
    monkeypatch.setattr(gnmi_lines, "_BATCH", 64)
    fast = _everything(path, "gnmi/leaf-01.json", flushing)
    rows, loaded, rejected, current = fast
    assert (loaded, rejected, current) == (200, 0, 200)
    samples_ = rows["samples"]
    assert len(samples_) == 200 * 3 + 28
    assert [s[6] for s in samples_] == sorted(s[6] for s in samples_)  # file order
    assert samples_[:4] == [(TS, "leaf-01", "swp1", "in-octets", "", 0.0, 1),
                            (TS, "leaf-01", "swp1", "out-octets", "", 1.0, 1),
                            (TS, "leaf-01", "swp1", "in-pkts", "", 2.0, 1),
                            (TS, "leaf-01", "swp2", "in-octets", "", 0.0, 2)]
    status = [s for s in samples_ if s[3] == "oper-status"]
    assert len(status) == 28 and status[0][6] == 7 and status[0][5] == 1.0
    assert [t[3] for t in rows["text_samples"]] == ["description"] * 28
    assert fast == _without_fast_path(path, "gnmi/leaf-01.json", flushing)


def test_fast_path_json_notifications_and_merged_qualifiers(write):
    text = lines(
        note("interfaces/interface[name=swp1]", "state/counters/in-octets", "x", "5"),
        note("qos/interfaces/interface[interface-id=swp2]/output/queues/queue[name=3]",
             "state/transmit-octets", "x", "6"),
        {**note(None, "a", "a", "1"), "updates": [
            {"Path": "interfaces/interface[name=swp3]/state/counters/in-pkts",
             "values": {"interfaces/interface/state/counters/in-pkts": "7"}},
            {"Path": "system/adaptive-routing/state/counters/congestion-change",
             "values": {"system/adaptive-routing/state/counters/congestion-change": 8}}]},
    )
    ev = {**EVENT, "values": {
        "/qos/interfaces/interface/switch-priority[priority=5]/state/counters/in-pause-pkts": "9"}}
    _, sink = parse_text(write, text + lines(ev))
    assert (sink.loaded, sink.rejected) == (4, 0)
    assert samples(sink) == [("leaf-01", "swp1", "in-octets", "", 5.0),
                             ("leaf-01", "swp2", "transmit-octets", "queue=3", 6.0),
                             ("leaf-01", "swp3", "in-pkts", "", 7.0),
                             ("leaf-01", "", "congestion-change", "", 8.0),
                             ("leaf-01", "swp3", "in-pause-pkts", "priority=5,queue=4", 9.0)]


HUGE_TS = f"time {str(2**64 - 1)!r} is outside 2000-01-01..2100-01-01 UTC"


def test_timestamps_beyond_int64_are_rejects_next_to_fast_records(write, monkeypatch):
    monkeypatch.setattr(gnmi_lines, "_BATCH", 4)
    fast = {**EVENT, "values": {"/a/in-octets": "1", "/a/out-octets": "2"}}
    huge = {**EVENT, "timestamp": 2**64 - 1, "values": {"/a/in-pkts": "3"}}
    _, sink = parse_text(write, lines(fast, huge, fast, huge))
    assert (sink.loaded, sink.rejected) == (2, 2)
    assert [r[:2] for r in sink.rejects] == [(2, HUGE_TS), (4, HUGE_TS)]
    rows = sink.collected("samples")
    assert [(r["ts"], r["metric"], r["line"]) for r in rows] == [
        (TS, "in-octets", 1), (TS, "out-octets", 1), (TS, "in-octets", 3), (TS, "out-octets", 3)]


# -- the vectorized pass: one-value lines of gnmic's own shapes -----------------------------------
def _one_value_event(port: str, leaf: str, value, ts: int = TS) -> dict:
    return {"name": "fabric", "timestamp": ts,
            "tags": {"interface_name": port, "source": "leaf-01:9339", "subscription-name": "s"},
            "values": {f"/interfaces/interface/{leaf}": value}}


def _gnmic_note(prefix: str, path: str, value, ts: int = TS) -> dict:
    return {"source": "leaf-01", "subscription-name": "s", "timestamp": ts,
            "time": "2023-03-01T04:20:03.153198642Z", "prefix": prefix,
            "updates": [{"Path": path, "values": {path: value}}]}


def _forced(monkeypatch, block: int) -> None:
    """Make the vectorized pass read every block, in blocks of about `block` bytes."""
    monkeypatch.setattr(gnmi_lines, "BLOCK_BYTES", block)
    monkeypatch.setattr(gnmi_lines, "_vector_file", lambda fh: True)
    monkeypatch.setattr(gnmi_lines._Lines, "worth", staticmethod(lambda b: True))


@pytest.mark.parametrize("block", [64, 700, 1 << 22])
def test_vectorized_status_words_are_samples_only_for_interface_status(tmp_path, monkeypatch,
                                                                       block):
    docs = [_one_value_event("swp1", "state/counters/in-octets", "5"),
            _one_value_event("swp1", "state/oper-status", "UP"),
            _one_value_event("swp2", "state/oper-status", "lower-layer-down"),
            _one_value_event("swp2", "state/description", "UP"),  # not a status: text
            _one_value_event("swp2", "state/oper-status", "SOMETIMES"),  # no IF-MIB code: text
            _gnmic_note("interfaces/interface[name=swp3]", "state/oper-status", "DOWN"),
            _gnmic_note("system/state", "oper-status", "UP"),  # no interface: text
            _gnmic_note("interfaces/interface[name=swp3]", "state/counters/out-octets", 7)]
    path = tmp_path / "leaf-01.json"
    path.write_text("".join(json.dumps(d, separators=(",", ":")) + "\n" for d in docs))
    _forced(monkeypatch, block)
    rows, loaded, rejected, _ = got = _everything(path, "gnmi/leaf-01.json", False)
    assert (loaded, rejected) == (8, 0)
    assert [(r[2], r[3], r[5], r[6]) for r in rows["samples"]] == [
        ("swp1", "in-octets", 5.0, 1), ("swp1", "oper-status", 1.0, 2),
        ("swp2", "oper-status", 7.0, 3), ("swp3", "oper-status", 2.0, 6),
        ("swp3", "out-octets", 7.0, 8)]
    assert [(r[3], r[5]) for r in rows["text_samples"]] == [
        ("description", "UP"), ("oper-status", "SOMETIMES"), ("oper-status", "UP")]
    assert got == _without_fast_path(path, "gnmi/leaf-01.json", False)


@pytest.mark.parametrize("block", [32, 256, 1 << 22])
def test_vectorized_lines_around_multi_line_documents_and_damage(tmp_path, monkeypatch, block):
    """One-value lines next to what only the one-by-one reader reads: a pretty-printed object,
    an object cut short (the next line at column 0 resynchronizes), an array spanning lines
    with one-value lines inside it, a status line, a blank line, a record without timestamp."""
    one = json.dumps(_one_value_event("swp1", "state/counters/in-octets", "11"),
                     separators=(",", ":"))
    two = json.dumps(_gnmic_note("interfaces/interface[name=swp2]", "state/counters/in-pkts",
                                 "12"), separators=(",", ":"))
    pretty = json.dumps(_one_value_event("swp3", "state/counters/out-pkts", "13"), indent=2)
    text = "\n".join([one, pretty, two, "", '{"name": "cut", "timestamp": 1,', one,
                      "received sync response 'fabric' from 'leaf-01:9339'", "[", one + ",", two,
                      "]", two, '{"values": {"/a/in-octets": "1"}, "tags": {"source": "x"}}',
                      one]) + "\n"
    path = tmp_path / "leaf-01.json"
    path.write_text(text)
    _forced(monkeypatch, block)
    got = _everything(path, "gnmi/leaf-01.json", True)
    assert got == _without_fast_path(path, "gnmi/leaf-01.json", True)
    rows, loaded, rejected, _ = got
    # lines: 1 one, 2-13 pretty, 14 two, 15 blank, 16 cut, 17 one, 18 status, 19-22 array, ...
    assert [(r[5], r[6]) for r in rows["samples"]] == [
        (11.0, 1), (13.0, 2), (12.0, 14), (11.0, 17), (11.0, 20), (12.0, 21), (12.0, 23),
        (11.0, 25)]
    assert [r[:2] for r in rows["rejects"]] == [
        (16, "JSON object truncated: no closing brace"),
        (18, "gnmic status line, not a notification"),
        (24, "event has no usable 'timestamp' (ns)")]
    assert (loaded, rejected) == (8, 3)


def test_vectorized_lines_next_to_timestamps_beyond_int64_rejected(tmp_path, monkeypatch):
    huge = _one_value_event("swp1", "state/counters/in-pkts", "3", ts=2**64 - 1)
    fast = _one_value_event("swp1", "state/counters/in-octets", "1")
    path = tmp_path / "leaf-01.json"
    path.write_text(lines(fast, huge, fast, huge))
    _forced(monkeypatch, 1 << 22)
    rows, loaded, rejected, _ = got = _everything(path, "gnmi/leaf-01.json", True)
    assert (loaded, rejected) == (2, 2)
    assert [(r[0], r[3], r[6]) for r in rows["samples"]] == [
        (TS, "in-octets", 1), (TS, "in-octets", 3)]
    assert [r[:2] for r in rows["rejects"]] == [(2, HUGE_TS), (4, HUGE_TS)]
    assert got == _without_fast_path(path, "gnmi/leaf-01.json", True)


def test_vectorized_pass_takes_the_real_shapes(tmp_path):
    """gnmic's split events and one-update notifications of string counters go the vectorized
    way (without forcing it); records of several values are read one by one."""
    docs = [_one_value_event(f"swp{i}", "state/counters/in-octets", str(i)) for i in range(40)]
    docs += [_gnmic_note(f"interfaces/interface[name=swp{i}]", "state/counters/in-pkts", str(i))
             for i in range(40)]
    path = tmp_path / "leaf-01.json"
    path.write_text("".join(json.dumps(d, separators=(",", ":")) + "\n" for d in docs))
    with open(path) as fh:
        assert gnmi_lines._vector_file(fh)
    block = next(gnmi_lines.line_blocks(open(path)))  # noqa: SIM115 - a text stream, read once
    reader = gnmi_reader._Reader(SourceFile(path, "gnmi/leaf-01.json"), Sink())
    assert gnmi_lines._Lines.of(reader, block).taken.all()
    several = tmp_path / "several.json"
    several.write_text(lines(*[{**EVENT, "values": _PLAIN}] * 80))
    with open(several) as fh:
        assert not gnmi_lines._vector_file(fh)


@pytest.mark.parametrize("budget", [1, 512])
def test_vectorized_notifications_of_several_updates(tmp_path, monkeypatch, budget):
    """A notification of several updates gives its updates' rows in order, the same update
    twice gives two rows, a status word only for an interface's status; with a budget of one
    new plan per block the lines it could not plan are read one by one, same rows."""
    def note2(port: str, *ups: tuple[str, object]) -> dict:
        return {**_gnmic_note(f"interfaces/interface[name={port}]", "x", 0),
                "updates": [{"Path": p, "values": {p: v}} for p, v in ups]}

    docs = [note2("swp1", ("state/counters/in-octets", "1"), ("state/counters/out-octets", 2),
                  ("state/oper-status", "UP")),
            note2("swp2", ("state/counters/in-octets", "3"), ("state/counters/in-octets", "3")),
            note2("swp3", ("state/counters/in-octets", "4"), ("state/description", "UP")),
            note2("swp4", ("state/counters/in-octets", "5"), ("state/counters/in-pkts", "6"))]
    path = tmp_path / "leaf-01.json"
    path.write_text("".join(json.dumps(d, separators=(",", ":")) + "\n" for d in docs))
    _forced(monkeypatch, 1 << 22)
    monkeypatch.setattr(gnmi_lines, "_PLANS_MIN", budget)
    rows, loaded, rejected, _ = got = _everything(path, "gnmi/leaf-01.json", False)
    assert (loaded, rejected) == (4, 0)
    assert [(r[2], r[3], r[5], r[6]) for r in rows["samples"]] == [
        ("swp1", "in-octets", 1.0, 1), ("swp1", "out-octets", 2.0, 1),
        ("swp1", "oper-status", 1.0, 1), ("swp2", "in-octets", 3.0, 2),
        ("swp2", "in-octets", 3.0, 2), ("swp3", "in-octets", 4.0, 3),
        ("swp4", "in-octets", 5.0, 4), ("swp4", "in-pkts", 6.0, 4)]
    assert [(r[3], r[5]) for r in rows["text_samples"]] == [("description", "UP")]
    assert got == _without_fast_path(path, "gnmi/leaf-01.json", False)

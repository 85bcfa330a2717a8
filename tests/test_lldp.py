"""lldpctl -f json / json0 / keyvalue: both json shapes, nameless chassis, hints, writers."""

from __future__ import annotations

import io
import json
from pathlib import Path

from conftest import run_parser
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.core.source import SourceFile
from collectors.formats.lldp import (
    NO_HOST,
    PARSERS,
    LldpJsonParser,
    LldpKeyValueParser,
    LldpNeighbor,
    device_hint,
    peer_port,
    write_lldp_json,
    write_lldp_json0,
)

# `lldpctl -f json` with a single neighbor: interface is an object keyed by the ifname and the
# chassis is keyed by the neighbor's name (lldpd jsonc_cleanup of the json0 tree).
ONE_IFACE = """{
  "lldp": {
    "interface": {
      "swp1": {
        "via": "LLDP",
        "rid": "1",
        "age": "0 day, 00:10:02",
        "chassis": {
          "gpu-node-0001": {
            "id": {
              "type": "mac",
              "value": "b8:3f:d2:9f:09:42"
            },
            "descr": "Ubuntu 22.04.4 LTS Linux 5.15.0-105-generic",
            "mgmt-ip": "10.0.1.1",
            "capability": {
              "type": "Station",
              "enabled": true
            }
          }
        },
        "port": {
          "id": {
            "type": "mac",
            "value": "b8:3f:d2:9f:09:43"
          },
          "descr": "eth2",
          "ttl": "120"
        }
      }
    }
  }
}
"""

# Several neighbors: interface is a list of single-key objects; the first chassis sends no name,
# so its fields sit directly under "chassis"; the second sends two management addresses.
TWO_IFACES = """{
  "lldp": {
    "interface": [
      {
        "swp17": {
          "via": "LLDP",
          "rid": "1",
          "chassis": {
            "id": {
              "type": "mac",
              "value": "0c:42:a1:00:00:01"
            },
            "mgmt-ip": "10.0.0.9"
          },
          "port": {
            "id": {
              "type": "ifname",
              "value": "swp3"
            }
          }
        }
      },
      {
        "swp18": {
          "via": "LLDP",
          "rid": "2",
          "chassis": {
            "spine-p0-01": {
              "id": {
                "type": "mac",
                "value": "0c:42:a1:00:00:02"
              },
              "mgmt-ip": [
                "10.0.0.21",
                "fd00::21"
              ]
            }
          },
          "port": {
            "id": {
              "type": "local",
              "value": "535"
            },
            "descr": "swp31"
          }
        }
      }
    ]
  }
}
"""

JSON0 = """{
  "lldp": [
    {
      "interface": [
        {
          "name": "eth2",
          "via": "LLDP",
          "rid": "1",
          "age": "0 day, 01:48:20",
          "chassis": [
            {
              "id": [{"type": "mac", "value": "70:06:92:6e:32:64"}],
              "name": [{"value": "leaf-p0-03"}],
              "mgmt-ip": [{"value": "10.0.0.3"}, {"value": "fe80::1"}]
            }
          ],
          "port": [
            {
              "id": [{"type": "local", "value": "swp17"}],
              "descr": [{"value": "to gpu-node-0042 eth2"}],
              "ttl": [{"value": "120"}]
            }
          ]
        }
      ]
    }
  ]
}
"""

KEYVALUE = """lldp.eth0.100.via=LLDP
lldp.eth0.100.rid=1
lldp.eth0.100.chassis.mac=00:11:22:33:44:55
lldp.eth0.100.chassis.name=leaf-01
lldp.eth0.100.chassis.descr=Cumulus Linux version 5.9
second line of the description
lldp.eth0.100.chassis.mgmt-ip=192.0.2.1
lldp.eth0.100.chassis.Bridge.enabled=on
lldp.eth0.100.port.ifname=swp1
lldp.eth0.100.port.descr=swp1
lldp.eth1.via=LLDP
lldp.eth1.rid=2
lldp.eth1.chassis.mac=00:11:22:33:44:66
lldp.eth1.port.mac=00:11:22:33:44:67
lldp.eth1.port.descr=enp5s0f0np0
lldp.eth1.via=LLDP
lldp.eth1.rid=3
lldp.eth1.port.ifname=swp9
"""


def _neighbors(sink):
    return [(r["device"], r["ifname"], r["peer_device"], r["peer_ifname"], r["peer_mgmt_ip"])
            for r in sink.collected("neighbors")]


def _addresses(sink):
    return [(r["address"], r["device"]) for r in sink.collected("addresses")]


def test_one_interface_object_shape(write):
    p = write("topology/leaf-p0-03.lldp.json", ONE_IFACE)
    parser, sink = run_parser(p, rel="topology/leaf-p0-03.lldp.json")
    assert parser.name == "lldpctl_json"
    assert (sink.loaded, sink.rejected) == (1, 0)
    # a MAC port id loses to a descr that names an interface
    assert _neighbors(sink) == [("leaf-p0-03", "swp1", "gpu-node-0001", "eth2", "10.0.1.1")]
    assert _addresses(sink) == [("10.0.1.1", "gpu-node-0001")]
    assert sink.collected("neighbors")[0]["line"] == 4


def test_several_interfaces_list_shape_and_nameless_chassis(write):
    p = write("topology/leaf-p0-03__lldp.json", TWO_IFACES)
    _, sink = run_parser(p, rel="topology/leaf-p0-03__lldp.json")
    assert (sink.loaded, sink.rejected) == (2, 0)
    assert _neighbors(sink) == [
        ("leaf-p0-03", "swp17", "0c:42:a1:00:00:01", "swp3", "10.0.0.9"),
        # numeric `local` port id: the descr names the interface
        ("leaf-p0-03", "swp18", "spine-p0-01", "swp31", "10.0.0.21"),
    ]
    # no address row for the nameless chassis: it would map 10.0.0.9 to a MAC
    assert _addresses(sink) == [("10.0.0.21", "spine-p0-01"), ("fd00::21", "spine-p0-01")]
    assert [r["line"] for r in sink.collected("neighbors")] == [5, 24]


def test_json0(write):
    p = write("topology/gpu-node-0042/lldpctl.json", JSON0)
    parser, sink = run_parser(p, rel="topology/gpu-node-0042/lldpctl.json")
    assert parser.name == "lldpctl_json"
    assert _neighbors(sink) == [("gpu-node-0042", "eth2", "leaf-p0-03", "swp17", "10.0.0.3")]
    assert _addresses(sink) == [("10.0.0.3", "leaf-p0-03"), ("fe80::1", "leaf-p0-03")]
    assert sink.collected("neighbors")[0]["line"] == 6


def test_management_address_maps_gnmic_source_to_host(write):
    p = write("topology/gpu-node-0042/lldpctl.json", JSON0)
    _, sink = run_parser(p, rel="topology/gpu-node-0042/lldpctl.json")
    assert sink.device("10.0.0.3:57400") == "leaf-p0-03"


def test_empty_lldp_is_no_neighbors(write):
    for text in ('{\n  "lldp": {}\n}', '{"lldp": [{}]}', '{"lldp": {"interface": []}}'):
        p = write("topology/leaf-01.lldp.json", text)
        parser, sink = run_parser(p, rel="topology/leaf-01.lldp.json")
        assert parser.name == "lldpctl_json"
        assert (sink.loaded, sink.rejected) == (0, 0)


def test_without_host_hint_every_neighbor_is_rejected(write):
    p = write("topology/lldpctl.json", TWO_IFACES)
    _, sink = run_parser(p, rel="topology/lldpctl.json")
    assert (sink.loaded, sink.rejected) == (0, 2)
    assert {reason for _, reason, _ in sink.rejects} == {NO_HOST}
    assert [line for line, _, _ in sink.rejects] == [5, 24]
    assert sink.collected("neighbors") == []


def test_host_hints():
    def hint(rel):
        return device_hint(SourceFile(Path(rel), rel))

    assert hint("topology/leaf-p0-03.lldp.json") == "leaf-p0-03"
    assert hint("leaf-p0-03__lldp.json") == "leaf-p0-03"
    assert hint("topology/gpu-node-0042/lldpctl.json") == "gpu-node-0042"
    assert hint("topology/lldpctl.json") is None
    assert hint("topology/lldp.json.gz") is None
    assert hint("topology/lldpctl-json0-output.json") is None


def test_invalid_json_is_one_reject_with_its_line(write):
    bad = ONE_IFACE.replace('"rid": "1",', '"rid": "1"')
    p = write("topology/leaf-01.lldp.json", bad)
    _, sink = run_parser(p, rel="topology/leaf-01.lldp.json", parser=PARSERS[0])
    assert (sink.loaded, sink.rejected) == (0, 1)
    line, reason, _ = sink.rejects[0]
    assert line == 7 and "invalid JSON at line 7" in reason


def test_not_lldp_json_is_rejected(write):
    p = write("topology/leaf-01.lldp.json", '{"lldp": 5}')
    _, sink = run_parser(p, rel="topology/leaf-01.lldp.json", parser=PARSERS[0])
    assert sink.rejected == 1 and "no top-level 'lldp'" in sink.rejects[0][1]


def test_entry_without_chassis_or_port_is_rejected(write):
    doc = {"lldp": {"interface": [{"swp1": {"via": "LLDP", "port": {"id": {"type": "ifname",
                                                                            "value": "e1"}}}},
                                  {"swp2": {"chassis": {"x": {"descr": "d"}}, "port": {}}}]}}
    p = write("topology/leaf-01.lldp.json", json.dumps(doc, indent=1))
    _, sink = run_parser(p, rel="topology/leaf-01.lldp.json")
    assert (sink.loaded, sink.rejected) == (0, 2)
    assert "no chassis" in sink.rejects[0][1]
    assert "no port id" in sink.rejects[1][1]


def test_peer_port_choice():
    assert peer_port("ifname", "Ethernet1", "uplink to spine") == "Ethernet1"
    assert peer_port("local", "Ethernet120", "Ethernet120") == "Ethernet120"
    assert peer_port("local", "535", "ge-0/0/15.0") == "ge-0/0/15.0"
    assert peer_port("mac", "e8:eb:d3:93:ae:10", "enp5s0f0np0") == "enp5s0f0np0"
    assert peer_port("mac", "e8:eb:d3:93:ae:10", "") == "e8:eb:d3:93:ae:10"
    assert peer_port("local", "17", "GigabitEthernet1/0/17 Interface") == "17"


def test_keyvalue(write):
    p = write("topology/gpu-node-0001.lldp.kv", KEYVALUE)
    parser, sink = run_parser(p, rel="topology/gpu-node-0001.lldp.kv")
    assert parser.name == "lldpctl_keyvalue"
    assert (sink.loaded, sink.rejected) == (2, 1)
    assert _neighbors(sink) == [
        ("gpu-node-0001", "eth0.100", "leaf-01", "swp1", "192.0.2.1"),
        ("gpu-node-0001", "eth1", "00:11:22:33:44:66", "enp5s0f0np0", ""),
    ]
    assert [r["line"] for r in sink.collected("neighbors")] == [1, 11]
    # the second neighbor on eth1 (line 16) sends no chassis at all
    assert sink.rejects[0][0] == 16 and "neither a chassis name nor" in sink.rejects[0][1]
    assert _addresses(sink) == [("192.0.2.1", "leaf-01")]


# -- writers ------------------------------------------------------------------------------------

NEIGHBORS = [
    LldpNeighbor("eth2", "leaf-p0-03", "swp17", ("10.0.0.3",)),
    LldpNeighbor("eth3", "leaf-p1-03", "swp17", ("10.0.1.3", "fd00::3")),
    LldpNeighbor("eth4", "leaf-p2-03", "swp17", (), "", "mac"),
    LldpNeighbor("eth5", "0c:42:a1:00:00:05", "swp18", ("10.0.2.3",), "", "ifname", False),
]


def _round_trip(write, writer, neighbors):
    buf = io.StringIO()
    writer(neighbors, buf)
    p = write("topology/gpu-node-0042.lldp.json", buf.getvalue())
    parser, sink = run_parser(p, rel="topology/gpu-node-0042.lldp.json")
    assert parser.name == "lldpctl_json"
    return buf.getvalue(), sink


def test_write_json0_round_trip(write):
    text, sink = _round_trip(write, write_lldp_json0, NEIGHBORS)
    assert isinstance(json.loads(text)["lldp"], list)
    assert (sink.loaded, sink.rejected) == (4, 0)
    assert _neighbors(sink) == [
        ("gpu-node-0042", nb.local_ifname, nb.peer_device, nb.peer_ifname,
         nb.mgmt_ips[0] if nb.mgmt_ips else "") for nb in NEIGHBORS]
    assert ("fd00::3", "leaf-p1-03") in _addresses(sink)


def test_write_json_round_trip_both_shapes(write):
    text, sink = _round_trip(write, write_lldp_json, NEIGHBORS[:1])
    doc = json.loads(text)
    assert doc["lldp"]["interface"]["eth2"]["chassis"]["leaf-p0-03"]["mgmt-ip"] == "10.0.0.3"
    assert _neighbors(sink) == [("gpu-node-0042", "eth2", "leaf-p0-03", "swp17", "10.0.0.3")]

    text, sink = _round_trip(write, write_lldp_json, NEIGHBORS)
    doc = json.loads(text)
    assert isinstance(doc["lldp"]["interface"], list)
    nameless = doc["lldp"]["interface"][3]["eth5"]["chassis"]
    assert nameless["id"] == {"type": "mac", "value": "0c:42:a1:00:00:05"}
    assert _neighbors(sink)[3] == ("gpu-node-0042", "eth5", "0c:42:a1:00:00:05", "swp18",
                                   "10.0.2.3")
    assert (sink.loaded, sink.rejected) == (4, 0)


def test_write_json_empty_is_the_no_neighbor_document():
    buf = io.StringIO()
    write_lldp_json([], buf)
    assert json.loads(buf.getvalue()) == {"lldp": {}}


# -- properties -----------------------------------------------------------------------------------

@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=400))
def test_arbitrary_text_never_raises(write, text):
    for parser, prefix in ((LldpJsonParser(), '{"lldp": '), (LldpKeyValueParser(), "lldp.")):
        p = write("topology/leaf-01.lldp.json", prefix + text)
        _, sink = run_parser(p, rel="topology/leaf-01.lldp.json", parser=parser)
        assert len(sink.collected("neighbors")) == sink.loaded


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=len(TWO_IFACES)))
def test_truncated_json_keeps_accounting(write, cut):
    text = TWO_IFACES[:cut]
    p = write("topology/leaf-01.lldp.json", text)
    _, sink = run_parser(p, rel="topology/leaf-01.lldp.json", parser=LldpJsonParser())
    if text.strip() == TWO_IFACES.strip():
        assert (sink.loaded, sink.rejected) == (2, 0)
    elif text.strip():
        assert (sink.loaded, sink.rejected) == (0, 1)
    else:
        assert (sink.loaded, sink.rejected) == (0, 0)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=len(KEYVALUE)))
def test_truncated_keyvalue_keeps_accounting(write, cut):
    p = write("topology/leaf-01.lldp.kv", KEYVALUE[:cut])
    _, sink = run_parser(p, rel="topology/leaf-01.lldp.kv", parser=LldpKeyValueParser())
    assert sink.loaded + sink.rejected <= 3
    assert len(sink.collected("neighbors")) == sink.loaded


# -- conformance with real lldpctl output -----------------------------------------------------------

def _real(real_samples, name, host="gpu-host"):
    return run_parser(real_samples / "lldp" / name, rel=f"topology/{host}/lldpctl.json")


def test_real_json0_gpu_host_rails(real_samples):
    parser, sink = _real(real_samples, "lldpctl-json0-gpu-host-sonic-leaf-neighbors.json")
    assert parser.name == "lldpctl_json"
    assert (sink.loaded, sink.rejected) == (5, 0)
    assert _neighbors(sink) == [
        ("gpu-host", "ens1np0", "StorageSW", "Ethernet120", "10.193.77.211"),
        ("gpu-host", "ens841np0", "LEAF03", "Ethernet184", "10.193.77.203"),
        ("gpu-host", "ens842np0", "LEAF04", "Ethernet184", "10.193.77.204"),
        ("gpu-host", "ens110np0", "LEAF02", "Ethernet184", "10.193.77.202"),
        ("gpu-host", "ens108np0", "LEAF01", "Ethernet184", "10.193.77.201"),
    ]
    assert dict(_addresses(sink))["10.193.77.201"] == "LEAF01"


def test_real_json0_h3c_and_ubuntu(real_samples):
    _, sink = _real(real_samples, "lldpctl-json0-host-h3c-and-ubuntu-neighbors.json")
    assert (sink.loaded, sink.rejected) == (3, 0)
    assert _neighbors(sink) == [
        ("gpu-host", "enp129s0f0", "DaoCloud_ShangPu_H3C_D01_AccessSwitch",
         "GigabitEthernet1/0/17", ""),
        ("gpu-host", "enp5s0f0np0", "10-20-1-50", "enp5s0f0np0", "10.20.1.50"),
        ("gpu-host", "enp11s0f0np0", "10-20-1-50", "enp11s0f0np0", "10.20.1.50"),
    ]
    assert _addresses(sink)[:2] == [("10.20.1.50", "10-20-1-50"),
                                    ("fe80::ae1f:6bff:fe25:8664", "10-20-1-50")]


def test_real_json_single_iface_dict_shape(real_samples):
    _, sink = _real(real_samples, "sonic-dbsyncd-lldpctl-json-single-iface-dict-shape.json")
    assert (sink.loaded, sink.rejected) == (1, 0)
    # port id is type local "535"; its descr ge-0/0/15.0 is the interface name
    assert _neighbors(sink) == [("gpu-host", "eth0", "switchad11", "ge-0/0/15.0", "")]


def test_real_json_two_iface_list_shape(real_samples):
    _, sink = _real(real_samples, "sonic-dbsyncd-lldpctl-json-two-iface-list-shape.json")
    assert (sink.loaded, sink.rejected) == (2, 0)
    # Ethernet0's chassis sends no name, but the chassis id and management address that
    # Ethernet100's switch13 sends: one device (design 3), not a second one named by its MAC
    assert _neighbors(sink) == [
        ("gpu-host", "Ethernet0", "switch13", "Ethernet1", "10.3.147.196"),
        ("gpu-host", "Ethernet100", "switch13", "Ethernet26", "10.3.147.196"),
    ]
    assert _addresses(sink) == [("10.3.147.196", "switch13")]


def test_an_unnamed_chassis_nothing_else_names_keeps_its_chassis_id(real_samples, tmp_path):
    text = (real_samples / "lldp" / "sonic-dbsyncd-lldpctl-json-two-iface-list-shape.json").read_text()
    doc = json.loads(text)
    doc["lldp"]["interface"] = doc["lldp"]["interface"][:1]  # Ethernet0's entry alone
    (tmp_path / "alone.json").write_text(json.dumps(doc))
    _, sink = run_parser(tmp_path / "alone.json", rel="topology/gpu-host/lldpctl.json")
    assert [n[2] for n in _neighbors(sink)] == ["00:11:22:33:44:55"]


def test_real_json_empty(real_samples):
    parser, sink = _real(real_samples, "sonic-dbsyncd-lldpctl-json-empty.json")
    assert parser.name == "lldpctl_json"
    assert (sink.loaded, sink.rejected) == (0, 0)


def test_real_files_without_host_are_rejected_clearly(real_samples):
    path = real_samples / "lldp" / "lldpctl-json0-gpu-host-sonic-leaf-neighbors.json"
    _, sink = run_parser(path, rel="topology/lldpctl.json")
    assert (sink.loaded, sink.rejected) == (0, 5)
    assert all(reason == NO_HOST for _, reason, _ in sink.rejects)


def test_every_real_lldp_json_is_recognized(real_samples):
    files = sorted((real_samples / "lldp").glob("*.json"))
    assert len(files) == 5
    for path in files:
        parser, sink = _real(real_samples, path.name)
        assert parser is not None and parser.name == "lldpctl_json", path.name
        assert sink.rejected == 0, path.name


def test_other_families_are_not_claimed(real_samples):
    from collectors.store.ingest import head_of

    for path in sorted(real_samples.rglob("*")):
        if path.is_file() and path.parent.name not in ("lldp",) and path.suffix != ".md":
            head = head_of(path)
            assert not any(p.sniff(head, path.name) for p in PARSERS), path.name


def test_every_entry_of_a_long_json0_document_gets_its_own_line(write):
    # one pretty-printed document of many interfaces (the line of each found by a forward
    # search whose line count advances with it, not recounted from the start)
    entries = [{"name": f"swp{i}", "via": "LLDP",
                "chassis": [{"name": [{"value": f"spine-p0-{i % 8:02d}"}]}],
                "port": [{"id": [{"type": "ifname", "value": f"swp{i + 100}"}]}]}
               for i in range(300)]
    text = json.dumps({"lldp": [{"interface": entries}]}, indent=2)
    p = write("topology/leaf-p0-07.json", text)
    _, sink = run_parser(p, rel="topology/leaf-p0-07.json")
    lines = text.splitlines()
    expected = [next(n for n, line in enumerate(lines, 1) if line.strip() == f'"name": "swp{i}",')
                for i in range(300)]
    assert sink.loaded == 300
    assert [r["line"] for r in sink.collected("neighbors")] == expected

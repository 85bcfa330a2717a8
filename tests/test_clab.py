"""containerlab topologies: links become neighbors, mgmt addresses name nodes."""

from __future__ import annotations

from conftest import run_parser
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.formats.clab import PARSERS, ClabParser, link_endpoints

LAB = """# a two-plane RoCE slice
name: roce-slice

topology:
  kinds:
    nvidia_sonic:
      image: sonic-vs:latest
    linux:
      image: ghcr.io/hellt/network-multitool
  defaults:
    kind: linux
  nodes:
    leaf-p0-01:
      kind: nvidia_sonic
      mgmt-ipv4: 172.20.20.11
    leaf-p1-01:
      kind: nvidia_sonic
      mgmt-ipv4: 172.20.20.12
      mgmt-ipv6: 3fff:172:20:20::12
    gpu-node-0001:
    gpu-node-0002: {}

  links:
    # plane 0
    - endpoints: ["gpu-node-0001:eth2", "leaf-p0-01:Ethernet0"]
    - endpoints: ["gpu-node-0002:eth2", "leaf-p0-01:Ethernet4"]

    # plane 1, extended form
    - type: veth
      endpoints:
        - node: gpu-node-0001
          interface: eth3
        - node: leaf-p1-01
          interface: Ethernet0
    # to the container host: not a cable between two devices
    - endpoints: ["gpu-node-0002:eth9", "host:g2-eth9"]
    - type: mgmt-net
      endpoint:
        node: leaf-p1-01
        interface: eth5
    - endpoints: ["gpu-node-0009:eth2", "leaf-p1-01:Ethernet8"]
    - endpoints: ["gpu-node-0002:eth3"]
"""


def _neighbors(sink):
    return [(r["device"], r["ifname"], r["peer_device"], r["peer_ifname"], r["line"])
            for r in sink.collected("neighbors")]


def test_links_nodes_comments_and_kinds(write):
    p = write("topology/roce-slice.clab.yml", LAB)
    parser, sink = run_parser(p)
    assert parser.name == "containerlab"
    # 4 nodes + 7 links read; the unknown node and the one-endpoint link are rejected
    assert (sink.loaded, sink.rejected) == (9, 2)
    assert _neighbors(sink) == [
        ("gpu-node-0001", "eth2", "leaf-p0-01", "Ethernet0", 25),
        ("gpu-node-0002", "eth2", "leaf-p0-01", "Ethernet4", 26),
        ("gpu-node-0001", "eth3", "leaf-p1-01", "Ethernet0", 29),
    ]
    assert [(r["address"], r["device"], r["line"]) for r in sink.collected("addresses")] == [
        ("172.20.20.11", "leaf-p0-01", 13),
        ("172.20.20.12", "leaf-p1-01", 16),
        ("3fff:172:20:20::12", "leaf-p1-01", 16),
    ]
    assert [(line, reason) for line, reason, _ in sink.rejects] == [
        (41, "link endpoint node 'gpu-node-0009' is not in topology.nodes"),
        (42, "link needs exactly two endpoints"),
    ]


def test_mgmt_address_maps_to_node(write):
    p = write("lab.clab.yml", LAB)
    _, sink = run_parser(p)
    assert sink.device("172.20.20.12:9100") == "leaf-p1-01"


def test_invalid_yaml_is_one_reject_with_its_line(write):
    text = LAB.replace("    - endpoints: [\"gpu-node-0002:eth2\", \"leaf-p0-01:Ethernet4\"]",
                       "    - endpoints: [\"gpu-node-0002:eth2\", \"leaf-p0-01:Ethernet4\"")
    p = write("lab.clab.yml", text)
    parser, sink = run_parser(p)
    assert parser.name == "containerlab"
    assert (sink.loaded, sink.rejected) == (0, 1)
    line, reason, _ = sink.rejects[0]
    assert reason.startswith(f"invalid YAML at line {line}") and 26 <= line <= 29


def test_yaml_that_is_not_a_topology(write):
    p = write("lab.clab.yml", "name: x\ntopology: 5\n")
    _, sink = run_parser(p, parser=ClabParser())
    assert sink.rejected == 1 and "no 'topology' mapping" in sink.rejects[0][1]
    p = write("lab.clab.yml", "topology:\n  nodes: [a, b]\n  links: 3\n")
    _, sink = run_parser(p, parser=ClabParser())
    assert [r for _, r, _ in sink.rejects] == ["'topology.nodes' is not a mapping",
                                              "'topology.links' is not a list"]


def test_sniff():
    sniff = ClabParser().sniff
    assert sniff("name: a\ntopology:\n  nodes:\n    x: {}\n", "a.yml")
    assert not sniff('{"topology": {"nodes": {}}}', "a.json")
    assert not sniff("services:\n  web:\n    image: nginx\n", "docker-compose.yml")
    assert not sniff("topology:\n", "a.yml")


def test_link_endpoints_forms():
    assert link_endpoints({"endpoints": ["a:e1-1", "b:ethernet-1/1"]}) == [
        ("a", "e1-1"), ("b", "ethernet-1/1")]
    assert link_endpoints({"endpoints": [{"node": "a", "interface": "x"},
                                         {"node": "b", "interface": "y"}]}) == [
        ("a", "x"), ("b", "y")]
    assert link_endpoints({"type": "host", "endpoint": {"node": "a", "interface": "x"}}) == []
    assert "not 'node:interface'" in link_endpoints({"endpoints": ["a", "b:c"]})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=300))
def test_arbitrary_text_never_raises(write, text):
    p = write("lab.clab.yml", "topology:\n  links:\n" + text)
    _, sink = run_parser(p, parser=ClabParser())
    assert len(sink.collected("neighbors")) <= sink.loaded


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=len(LAB)))
def test_truncated_topology_keeps_accounting(write, cut):
    p = write("lab.clab.yml", LAB[:cut])
    _, sink = run_parser(p, parser=ClabParser())
    assert sink.loaded + sink.rejected <= 11
    assert len(sink.collected("neighbors")) <= 3


# -- conformance with real containerlab topologies -----------------------------------------------

def _pairs(sink):
    return {"--".join(sorted((f"{r['device']}:{r['ifname']}",
                              f"{r['peer_device']}:{r['peer_ifname']}")))
            for r in sink.collected("neighbors")}


def test_real_clos01(real_samples):
    parser, sink = run_parser(real_samples / "lldp" / "containerlab-clos01-srl-leaf-spine.clab.yml")
    assert parser.name == "containerlab"
    assert (sink.loaded, sink.rejected) == (5 + 4, 0)
    assert _pairs(sink) == {"leaf1:e1-1--spine:e1-1", "leaf2:e1-1--spine:e1-2",
                            "client1:eth1--leaf1:e1-2", "client2:eth1--leaf2:e1-2"}


def test_real_clos02_with_comments_between_links(real_samples):
    _, sink = run_parser(real_samples / "lldp" / "containerlab-clos02-srl-5stage-clos.clab.yml")
    assert (sink.loaded, sink.rejected) == (14 + 16, 0)
    assert len(_pairs(sink)) == 16
    assert "spine4:e1-3--superspine2:e1-2" in _pairs(sink)
    # the first link sits after the "# leaf to spine links POD1" comment
    assert sink.collected("neighbors")[0]["line"] == 51


def test_real_cvx03(real_samples):
    path = real_samples / "lldp" / "containerlab-cvx03-cumulus-leaf-spine-border.clab.yml"
    parser, sink = run_parser(path)
    assert parser.name == "containerlab"
    assert (sink.loaded, sink.rejected) == (7 + 16, 0)
    pairs = _pairs(sink)
    assert len(pairs) == 16
    assert "leaf-1:swp32--spine-1:swp27" in pairs
    assert {"host1:eth1--leaf-1:swp27", "host1:eth2--leaf-2:swp27"} <= pairs
    assert "border-1:swp30--border-2:swp30" in pairs


def test_other_files_are_not_claimed(real_samples):
    from collectors.store.ingest import head_of

    for path in sorted(real_samples.rglob("*")):
        if path.is_file() and not path.name.endswith(".clab.yml") and path.suffix != ".md":
            assert not PARSERS[0].sniff(head_of(path), path.name), path.name

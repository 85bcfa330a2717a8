"""`fabtwin check`: the fabric against the rail-optimized multiplane design the twin infers.

Faults are planted the way they happen: by recabling a generated bundle's LLDP (both ends, as
the devices would report the new cable) and by a Prometheus file of port speeds, in tmp_path.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner
from conftest import REPO

from fabtwin.cli import main
from replay.checks import PortCounters, cabling_findings, counter_findings, end_findings
from twin.discover import layout
from twin.synth.bundle import generate
from twin.topology import FabricSpec, build

SCENARIO = """
# 8 hosts, 2 planes, 2 NICs per host: leaves leaf-pP-01 (rail 0) and -02 (rail 1) serve
# gpu-node-0001..0004, -03 and -04 the others; eth0/eth1 are NIC 0 in planes 0/1, eth2/eth3 NIC 1
[fabric]
hosts = 8
planes = 2
nics_per_host = 2
leaf_radix = 8
spine_radix = 8
hosts_per_leaf = 4
host_speed_gbps = 400
fabric_speed_gbps = 400

[balancing]
mode = "ar"

[[jobs]]
name = "train"
collective = "allreduce_ring"
hosts = "gpu-node-[0001-0008]"
size = "1GiB"

[telemetry]
start = "2026-11-30T03:00:00Z"
duration_s = 60
sample_s = 10
"""


def _rows(fabric) -> list[tuple[str, str, str, str]]:
    return [(*fabric.cable_port_a[c].split(":", 1), *fabric.cable_port_b[c].split(":", 1))
            for c in range(fabric.n_cables)]


MULTI = FabricSpec(hosts=8, nics_per_host=2, planes=2, leaf_radix=8, spine_radix=8, hosts_per_leaf=4)


def _checks(rows) -> list[tuple[str, list[str]]]:
    return [(f.check, f.entities) for f in cabling_findings(layout(rows))]


@pytest.mark.parametrize("spec", [
    MULTI,
    FabricSpec(hosts=64, nics_per_host=2, planes=2, leaf_radix=16, spine_radix=16, hosts_per_leaf=8),
    FabricSpec(hosts=128, tiers=3, leaf_radix=8, spine_radix=8),
    FabricSpec(hosts=16, leaf_radix=8, spine_radix=8, hosts_per_leaf=4),
], ids=["8x2x2", "64x2x2", "3-tier", "1-plane"])
def test_a_fabric_built_to_the_design_has_no_finding(spec):
    assert _checks(_rows(build(spec))) == []


def _swap(rows, a: str, b: str) -> list[tuple[str, str, str, str]]:
    """The cabling with host ports `a` and `b` (device:ifname) exchanged."""
    swap = {tuple(a.split(":")): tuple(b.split(":")), tuple(b.split(":")): tuple(a.split(":"))}
    out = []
    for d, i, pd, pi in rows:
        d, i = swap.get((d, i), (d, i))
        pd, pi = swap.get((pd, pi), (pd, pi))
        out.append((d, i, pd, pi))
    return out


def test_nics_swapped_between_rails_are_both_named():
    rows = _swap(_rows(build(MULTI)), "gpu-node-0003:eth0", "gpu-node-0003:eth2")
    found = cabling_findings(layout(rows))
    assert [(f.check, f.entities[:2]) for f in found] == [
        ("rail", ["gpu-node-0003:eth2", "leaf-p0-01"]),
        ("rail", ["gpu-node-0003:eth0", "leaf-p0-02"])]
    assert found[0].evidence["leaf_rail"] == "eth0" and found[0].evidence["expected_leaf"] == "leaf-p0-02"
    assert "a leaf of rail eth0 (3 of its 4 host ports are eth0)" in found[0].summary


def test_nics_swapped_between_planes_are_named():
    rows = _swap(_rows(build(MULTI)), "gpu-node-0006:eth1", "gpu-node-0006:eth2")
    assert [(c, e[:2]) for c, e in _checks(rows)] == [
        ("rail", ["gpu-node-0006:eth1", "leaf-p0-04"]), ("rail", ["gpu-node-0006:eth2", "leaf-p1-03"])]


def test_a_nic_on_another_server_groups_leaf_is_named():
    rows = [r for r in _rows(build(MULTI)) if r[:2] != ("gpu-node-0002", "eth0")]
    rows.append(("gpu-node-0002", "eth0", "leaf-p0-03", "swp20"))
    found = cabling_findings(layout(rows))
    assert [(f.check, f.entities[:2]) for f in found] == [("rail", ["gpu-node-0002:eth0", "leaf-p0-03"])]
    assert found[0].evidence["group_leaves"] == ["leaf-p0-04", "leaf-p1-03", "leaf-p1-04"]


def test_missing_and_extra_uplinks_are_named_against_their_peers():
    rows = _rows(build(MULTI))
    gone = next(r for r in rows if r[0] == "leaf-p1-02" and r[2] == "spine-p1-03")
    rows = [r for r in rows if r != gone] + [("leaf-p0-04", "swp30", "spine-p0-01", "swp30")]
    found = cabling_findings(layout(rows))
    assert [(f.check, f.severity, f.entities) for f in found] == [
        ("extra_link", "warning", ["leaf-p0-04", "spine-p0-01"]),
        ("missing_link", "error", ["leaf-p1-02", "spine-p1-03"])]
    assert found[1].summary == ("leaf-p1-02 has 0 cable(s) to spine-p1-03 where 3 of its 3 peers "
                                "have 1: 1 missing")


def test_a_missing_agg_core_cable_is_named():
    spec = FabricSpec(hosts=128, tiers=3, leaf_radix=8, spine_radix=8)
    rows = _rows(build(spec))
    gone = next(r for r in rows if r[0].startswith("agg-p0-01") and r[2].startswith("core"))
    found = _checks([r for r in rows if r != gone])
    assert found == [("missing_link", [gone[0], gone[2]])]


def test_a_host_without_its_cable_and_a_plane_without_a_spine():
    rows = [r for r in _rows(build(MULTI)) if r[:2] != ("gpu-node-0007", "eth3")]
    assert _checks(rows) == [("missing_link", ["gpu-node-0007", "plane-1"])]
    rows = [r for r in _rows(build(MULTI)) if "spine-p1-04" not in (r[0], r[2])]
    found = cabling_findings(layout(rows))
    assert [(f.check, f.entities) for f in found] == [("plane_shape", ["plane-1"])]
    assert "spines 3 (others 4)" in found[0].summary


def test_link_ends_that_disagree():
    cables = [("a:swp1", "b:swp1"), ("a:swp2", "c:swp1"), ("a:swp3", "d:swp1")]
    speeds = {"a:swp1": 400e9, "b:swp1": 400e9, "a:swp2": 400e9, "c:swp1": 200e9, "a:swp3": 1e11}
    found = end_findings(cables, speeds, "link_speed", "speed", 1e9, "Gb/s")
    assert [(f.check, f.entities[0]) for f in found] == [("link_speed", "a:swp2--c:swp1")]
    assert found[0].summary == "a:swp2--c:swp1: a:swp2 reports speed 400 Gb/s, c:swp1 200 Gb/s"


# -- a generated bundle, recabled in tmp_path ---------------------------------------------------

@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gen")
    (root / "mp.toml").write_text(SCENARIO)
    return generate(root / "mp.toml", root / "mp", seed=7).out


def _lldp(bundle: Path, device: str) -> tuple[Path, dict]:
    path = bundle / "topology" / device / "lldpctl.json"
    return path, json.loads(path.read_text())


def _entries(doc: dict) -> list[dict]:
    return doc["lldp"][0]["interface"]


def swap_host_ports(bundle: Path, host: str, x: str, y: str) -> None:
    """Exchange host ports x and y in the LLDP of the host and of its leaves."""
    swap = {x: y, y: x}
    for path in (bundle / "topology").glob("*/lldpctl.json"):
        doc = json.loads(path.read_text())
        for e in _entries(doc):
            if path.parent.name == host and e["name"] in swap:
                e["name"] = swap[e["name"]]
            elif e["chassis"][0]["name"][0]["value"] == host:
                port = e["port"][0]
                if port["id"][0]["value"] in swap:
                    port["id"][0]["value"] = port["descr"][0]["value"] = swap[port["id"][0]["value"]]
        path.write_text(json.dumps(doc))


def uncable(bundle: Path, a: str, b: str) -> None:
    """Remove the cable a--b (device:ifname) from both ends' LLDP."""
    for here in (a, b):
        path, doc = _lldp(bundle, here.split(":")[0])
        keep = [e for e in _entries(doc) if e["name"] != here.split(":")[1]]
        assert len(keep) == len(_entries(doc)) - 1
        doc["lldp"][0]["interface"] = keep
        path.write_text(json.dumps(doc))


def test_check_finds_what_was_planted_in_a_bundle(bundle, tmp_path):
    planted = tmp_path / "mp"
    shutil.copytree(bundle, planted)
    swap_host_ports(planted, "gpu-node-0003", "eth0", "eth2")  # NIC 0 and 1 swapped on plane 0
    uncable(planted, "leaf-p1-03:swp6", "spine-p1-02:swp3")
    # port speeds as an exporter scrapes them: one end of a leaf-spine cable came up at 200G
    ts = 1796007630000  # 03:00:30Z
    lines = [f'nvswitch_interface_oper_aggregate_speed{{instance="{dev}",interface="{ifn}"}} '
             f'{200e9 if (dev, ifn) == ("spine-p0-04", "swp2") else 400e9:.0f} {ts}'
             for dev, ifn in [("leaf-p0-02", "swp8"), ("spine-p0-04", "swp2"),
                              ("leaf-p0-01", "swp8"), ("spine-p0-04", "swp1")]]
    (planted / "prom" / "speeds.prom").write_text("\n".join(lines) + "\n")
    # MTUs as gnmic streams state/mtu: jumbo on the leaf end, 1500 on the spine end
    mtus = [("leaf-p0-01", "swp5", 9216), ("spine-p0-01", "swp1", "1500"), ("leaf-p0-01", "swp6", 9216)]
    (planted / "gnmi" / "mtu.json").write_text("".join(json.dumps({
        "source": dev, "timestamp": ts * 10**6, "prefix": f"interfaces/interface[name={ifn}]",
        "updates": [{"Path": "state/mtu", "values": {"state/mtu": mtu}}]}) + "\n" for dev, ifn, mtu in mtus))
    db = tmp_path / "s.duckdb"
    out = CliRunner().invoke(main, ["check", str(planted), "--db", str(db), "--json", "-q"])
    assert out.exit_code == 5, out.output
    found = json.loads(out.output)
    assert [(f["check"], f["entities"][:2]) for f in found] == [
        ("rail", ["gpu-node-0003:eth2", "leaf-p0-01"]),
        ("rail", ["gpu-node-0003:eth0", "leaf-p0-02"]),
        ("missing_link", ["leaf-p1-03", "spine-p1-02"]),
        ("link_speed", ["leaf-p0-02:swp8--spine-p0-04:swp2", "leaf-p0-02:swp8"]),
        ("link_mtu", ["leaf-p0-01:swp5--spine-p0-01:swp1", "leaf-p0-01:swp5"])]
    assert found[-1]["summary"] == ("leaf-p0-01:swp5--spine-p0-01:swp1: leaf-p0-01:swp5 reports MTU "
                                    "9216 bytes, spine-p0-01:swp1 1500 bytes")
    assert set(found[0]) == {"check", "severity", "entities", "evidence", "summary"}
    with duckdb.connect(str(db), read_only=True) as con:
        stored = con.execute("SELECT seq, check_name, severity, entities, summary FROM check_findings "
                             "ORDER BY seq").fetchall()
    assert [(s[1], json.loads(s[3]), s[4]) for s in stored] == [
        (f["check"], f["entities"], f["summary"]) for f in found]
    # the text form: one line per finding, then again on the store alone
    text = CliRunner().invoke(main, ["check", "--db", str(db)])
    assert text.exit_code == 5
    lines = text.output.splitlines()
    assert lines[0] == "checked  63 cables in 2 plane(s); 4 ports report a speed, 3 an MTU"
    assert lines[1].startswith("error   rail         gpu-node-0003:eth2 is cabled to leaf-p0-01:swp3")
    assert len(lines) == 1 + len(found)


def test_the_generated_bundle_itself_is_clean(bundle, tmp_path):
    db = tmp_path / "s.duckdb"
    out = CliRunner().invoke(main, ["check", str(bundle), "--db", str(db), "-q"])
    assert (out.exit_code, out.output) == (0, "checked  64 cables in 2 plane(s); 0 ports report a "
                                              "speed, 0 an MTU\nclean: no finding\n")
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM check_findings").fetchone()[0] == 0


def test_usage_errors_exit_2(tmp_path):
    missing = CliRunner().invoke(main, ["check", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no such bundle" in missing.output
    no_store = CliRunner().invoke(main, ["check", "--db", str(tmp_path / "none.duckdb")])
    assert no_store.exit_code == 2 and "no such store" in no_store.output
    assert not (tmp_path / "none.duckdb").exists()


SAMPLES = sorted(p.parent.name for p in (REPO / "sample_traces").glob("*/manifest.json"))


@pytest.mark.parametrize("name", SAMPLES)
def test_the_sample_traces_pass_the_checks(name, sample_stores, tmp_path):
    """None of the gallery's bundles plants a cabling fault: each checks clean (into a copy of
    the session's store of the bundle: `check` finds its files loaded and checks them)."""
    labels = REPO / "sample_traces" / name / "labels.json"
    planted = json.loads(labels.read_text())["faults"] if labels.exists() else []
    assert all(f["kind"] in {"link_down", "link_flap", "link_degraded", "congestion", "pfc_storm",
                             "load_imbalance"} for f in planted)
    db = sample_stores.copy(sample_stores.ingested(name), tmp_path / "s.duckdb")
    out = CliRunner().invoke(main, ["check", str(REPO / "sample_traces" / name),
                                    "--db", str(db), "--json", "-q"])
    assert (out.exit_code, json.loads(out.output)) == (0, [])


# -- PFC and ECN -------------------------------------------------------------------------------

def test_a_port_whose_ecn_never_moves_among_marking_peers_is_named():
    lay = layout(_rows(build(MULTI)))
    # every leaf port facing a spine marks ECN under 300 Gb/s, but leaf-p0-02:swp7 (as busy),
    # and leaf-p1-01:swp5 (idle: nothing to mark)
    ports = {}
    for a, b in lay.cables:
        for here, there in ((a, b), (b, a)):
            if here.startswith("leaf") and there.startswith("spine"):
                quiet = here in ("leaf-p0-02:swp7", "leaf-p1-01:swp5")
                load = 1e9 if here == "leaf-p1-01:swp5" else 37.5e9
                ports[here] = PortCounters(60, 10.0, 60, 0.0 if quiet else 5e4, load, load)
    found = counter_findings(lay, ports)
    assert [(f.check, f.entities) for f in found] == [("ecn_off", ["leaf-p0-02:swp7"])]
    assert found[0].summary == (
        "leaf-p0-02:swp7 counted no ECN marks in 60 samples while 15 of its 15 peers (leaf ports "
        "to spines, plane-0) did, at 300 Gb/s against their median 300: is it enabled?")
    # two marking peers are not enough to call the others off, nor is half of them
    plane0 = sorted(p for p in ports if p.startswith("leaf-p0") and p != "leaf-p0-02:swp7")
    two = {p: ports[p] for p in [*plane0[:2], "leaf-p0-02:swp7"]}
    assert counter_findings(lay, two) == []
    half = {p: ports[p] for p in [*plane0[:3], "leaf-p0-02:swp7"]}
    half.update({p: PortCounters(60, 10.0, 60, 0.0, 37.5e9, 37.5e9) for p in plane0[3:5]})
    assert counter_findings(lay, half) == []


def test_check_names_a_port_whose_pause_counters_stay_flat_in_the_congestion_sample(tmp_path):
    """In the incast every spine port pauses or is paused; one whose exporter says 0 pauses
    all along (PFC left off) is named, and nothing else."""
    bundle = tmp_path / "congestion"
    shutil.copytree(REPO / "sample_traces" / "congestion", bundle)
    prom = bundle / "prom" / "spine-p0-02.prom.gz"
    flat = re.compile(r'^(nvswitch_interface_sp_[rt]x_pause\{[^}]*interface="swp2"\}) \d+ ', re.M)
    text, n = flat.subn(r"\1 0 ", gzip.decompress(prom.read_bytes()).decode())
    assert n == 122
    prom.write_bytes(gzip.compress(text.encode()))
    out = CliRunner().invoke(main, ["check", str(bundle), "--db", str(tmp_path / "s.duckdb"),
                                    "--json", "-q"])
    assert out.exit_code == 5, out.output
    found = json.loads(out.output)
    assert [(f["check"], f["entities"]) for f in found] == [("pfc_off", ["spine-p0-02:swp2"])]
    assert found[0]["evidence"]["peers_moving"] == 15


def test_check_on_a_lake_replaces_its_findings_and_sql_reads_them(bundle, tmp_path):
    lake = tmp_path / "lake"
    lake.mkdir()
    planted = tmp_path / "mp"
    shutil.copytree(bundle, planted)
    uncable(planted, "leaf-p0-02:swp5", "spine-p0-01:swp2")
    assert CliRunner().invoke(main, ["ingest", str(planted), "--db", str(lake), "-q"]).exit_code == 0
    for _ in range(2):
        out = CliRunner().invoke(main, ["check", "--db", str(lake), "-q"])
        assert out.exit_code == 5 and "missing_link" in out.output
    assert len(list((lake / "check_findings").glob("*.parquet"))) == 1  # the first run's went
    rows = CliRunner().invoke(main, ["sql", "SELECT check_name, entities FROM check_findings",
                                     "--db", str(lake), "--format", "csv"])
    assert rows.output.splitlines()[1:] == ['"missing_link","[""leaf-p0-02"",""spine-p0-01""]"']


def test_cabling_that_is_no_fabric_is_one_topology_finding(tmp_path):
    bundle = tmp_path / "b"
    (bundle / "topology").mkdir(parents=True)
    # a core cabled to a switch that is no agg (leaf-2 sits above nothing)
    links = [("gpu-1:eth0", "leaf-1:swp1"), ("leaf-1:swp2", "spine-1:swp1"),
             ("spine-1:swp2", "core-1:swp1"), ("core-1:swp2", "leaf-2:swp1")]
    (bundle / "topology" / "lab.clab.yml").write_text(
        "name: lab\ntopology:\n  nodes:\n"
        + "".join(f"    {n}: {{}}\n" for n in ("gpu-1", "leaf-1", "leaf-2", "spine-1", "core-1"))
        + "  links:\n" + "".join(f'    - endpoints: ["{a}", "{b}"]\n' for a, b in links))
    out = CliRunner().invoke(main, ["check", str(bundle), "--db", str(tmp_path / "s.duckdb"), "-q"])
    assert out.exit_code == 5
    assert out.output.splitlines() == [
        "checked  4 cabling rows, not a fabric; 0 ports report a speed, 0 an MTU",
        "error   topology     the cabling is not a fabric: core-1 is cabled to leaf-2: only leaf, "
        "spine/agg and core tiers are supported"]


def test_check_of_a_bundle_it_cannot_read_leaves_no_store_behind(tmp_path, monkeypatch):
    """A store `check BUNDLE` made for a bundle whose ingest failed goes again (investigate's
    rule), and one that was there before stays."""
    import json
    import shutil

    from click.testing import CliRunner

    from fabtwin.cli import main

    bundle = tmp_path / "bad"
    shutil.copytree(REPO / "sample_traces" / "two_faults", bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["context"] = {"nic/*": {"bogus": 1}}  # refused: not a context key
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(main, ["check", "-q", str(bundle)])
    assert out.exit_code == 2 and "not a context key" in out.output
    assert not list(tmp_path.glob("bad.fabtwin.duckdb*"))
    kept = tmp_path / "kept.duckdb"
    kept.write_bytes(b"")  # not a store: the check fails, and the user's file stays
    out = CliRunner().invoke(main, ["check", "-q", str(bundle), "--db", str(kept)])
    assert out.exit_code == 2 and kept.exists()


# -- the second writer's bundle, recabled ---------------------------------------------------------
# benchmarks/writer2 shares no code with twin/generate: its own names (gpu003, p0-leaf-01,
# Ethernet8, enp24s0f0np0 for plane 0 and enp41s0f0np0 for plane 1), containerlab cabling of the
# switches, json0 LLDP on the hosts, speeds from Prometheus (Cumulus) and gnmic (SONiC, EOS).

def _recable_writer2(bundle: Path) -> None:
    """Plant, at once: gpu003's two NICs swapped between the planes, gpu012's plane-1 NIC moved
    to the other server group's leaf (a free port, p1-leaf-01:swp11), the cable
    p0-leaf-02:Ethernet36--p0-spine-02:Ethernet2/1 gone; in the containerlab file and in the
    hosts' own LLDP, as the devices would report the new cabling. Then one end of two
    leaf-spine cables comes up at 200G: p1-leaf-01:swp9 (its Prometheus scrape) and
    p0-spine-01:Ethernet2/1 (its gnmic stream)."""
    import yaml

    swap = {"gpu003:enp24s0f0np0": "gpu003:enp41s0f0np0", "gpu003:enp41s0f0np0": "gpu003:enp24s0f0np0",
            "p1-leaf-02:swp4": "p1-leaf-01:swp11"}
    clab = bundle / "topology" / "fabric.clab.yml"
    doc = yaml.safe_load(clab.read_text())
    links = [{"endpoints": [swap.get(e, e) for e in link["endpoints"]]}
             for link in doc["topology"]["links"]]
    gone = ["p0-leaf-02:Ethernet36", "p0-spine-02:Ethernet2/1"]
    doc["topology"]["links"] = [link for link in links if sorted(link["endpoints"]) != gone]
    assert len(doc["topology"]["links"]) == len(links) - 1
    clab.write_text(yaml.safe_dump(doc, sort_keys=False))
    path, lldp = _lldp(bundle, "gpu003")
    for e in _entries(lldp):
        e["name"] = swap[f"gpu003:{e['name']}"].split(":")[1]
    path.write_text(json.dumps(lldp))
    path, lldp = _lldp(bundle, "gpu012")
    (e,) = [e for e in _entries(lldp) if e["name"] == "enp41s0f0np0"]
    assert e["chassis"][0]["name"][0]["value"] == "p1-leaf-02"
    e["chassis"][0]["name"][0]["value"] = "p1-leaf-01"
    e["port"][0]["id"][0]["value"] = e["port"][0]["descr"][0]["value"] = "swp11"
    path.write_text(json.dumps(lldp))
    prom = bundle / "prom" / "p1-leaf-01.prom"
    text, n = re.subn(r'(_oper_aggregate_speed\{host_name="p1-leaf-01",interface="swp9"\}) 400000000000 ',
                      r"\1 200000000000 ", prom.read_text())
    assert n > 0
    prom.write_text(text)
    gnmi = bundle / "gnmi" / "p0-spine-01.json"
    lines = gnmi.read_text().splitlines(True)
    slow = [ln.replace('"SPEED_400GB"', '"SPEED_200GB"') if "[name=Ethernet2/1]" in ln else ln
            for ln in lines]
    assert slow != lines
    gnmi.write_text("".join(slow))


def test_check_finds_what_was_planted_in_the_second_writers_bundle(tmp_path):
    from benchmarks.writer2 import write_bundle

    bundle = tmp_path / "w2"
    write_bundle(bundle, 31, "healthy", small=True)
    clean = CliRunner().invoke(main, ["check", str(bundle), "--db", str(tmp_path / "a.duckdb"), "-q"])
    assert (clean.exit_code, clean.output.splitlines()[1:]) == (0, ["clean: no finding"])
    _recable_writer2(bundle)
    out = CliRunner().invoke(main, ["check", str(bundle), "--db", str(tmp_path / "b.duckdb"),
                                    "--json", "-q"])
    assert out.exit_code == 5, out.output
    found = [(f["check"], f["entities"]) for f in json.loads(out.output)]
    assert found == [
        ("rail", ["gpu003:enp41s0f0np0", "p0-leaf-01", "gpu003:enp41s0f0np0--p0-leaf-01:Ethernet8"]),
        ("rail", ["gpu003:enp24s0f0np0", "p1-leaf-01", "gpu003:enp24s0f0np0--p1-leaf-01:swp3"]),
        # the port that moved, not its other one (whose leaf's hosts now reach another group too)
        ("rail", ["gpu012:enp41s0f0np0", "p1-leaf-01", "gpu012:enp41s0f0np0--p1-leaf-01:swp11"]),
        ("missing_link", ["p0-leaf-02", "p0-spine-02"]),
        ("link_speed", ["p0-leaf-02:Ethernet32--p0-spine-01:Ethernet2/1", "p0-leaf-02:Ethernet32",
                        "p0-spine-01:Ethernet2/1"]),
        ("link_speed", ["p1-leaf-01:swp9--p1-spine-01:Ethernet0", "p1-leaf-01:swp9",
                        "p1-spine-01:Ethernet0"])]

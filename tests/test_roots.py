"""Root versus victim for congestion and PFC storms (issue 17, design section 7), on bundles
written by benchmarks/writer2 (no code shared with the twin) with the phenomena the judged
bundles show: a storming NIC whose host exports nothing, spine victims that mark more ECN than
the root and pause upstream in turn, ECN on a receiver's other planes, two faults at once.

Each bundle is a writer2 scenario (small=True: 2 planes of 16 hosts) whose per-second counter
increments get the phenomenon added before the writer prints the files, then `investigate`
from nothing, as a user would run it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.writer2.formats import Writer
from benchmarks.writer2.scenario import draw
from replay.investigate import investigate
from replay.roots import full_pause_rate
from twin.synth import generate
from twin.synth.jobs import JOB_ID0


def _slice(fault: dict) -> slice:
    return slice(int(fault["start"]), int(fault["end"]))


def _leaf_port(sc, host_port: str) -> int:
    f = sc.fabric
    return f.ports[f.port_index(host_port)].peer


def _silence_storming_host(sc, fault: dict, rng: np.random.Generator) -> str:
    """The storming NIC's host exports nothing; its leaf port, paused, fills its queue and marks
    ECN (what the judged bundles show). Returns the leaf port's id."""
    sc.silent.add(fault["root_cause"]["id"].split(":")[0])
    leaf = _leaf_port(sc, fault["root_cause"]["id"])
    sl = _slice(fault)
    sc.run.inc["ecn"][leaf, sl] += rng.poisson(6e4, sl.stop - sl.start)
    return sc.fabric.ports[leaf].id


def _spines_pause_upstream(sc, fault: dict, rng: np.random.Generator) -> list[str]:
    """A congestion's spine victims (paused by the leaf, marking ECN) pause the other leaves
    feeding them in turn, as a lossless fabric propagates back-pressure. Returns the victims."""
    f, sl = sc.fabric, _slice(fault)
    n = sl.stop - sl.start
    leaf = f.ports[f.port_index(fault["root_cause"]["id"])].device
    victims = []
    for u in (i for i in f.by_dev[leaf] if f.ports[i].role == "leaf_up"):
        d = f.ports[u].peer  # the spine's port towards the congested leaf
        victims.append(f.ports[d].id)
        for k in f.by_dev[f.ports[d].device]:
            if k != d:
                pauses = rng.poisson(2500, n)
                sc.run.inc["tx_pause"][k, sl] += pauses
                sc.run.inc["rx_pause"][f.ports[k].peer, sl] += pauses
    return victims


def _write(tmp: Path, sc) -> Path:
    out = tmp / "bundle"
    Writer(sc, out).write()
    return out


def _incidents(bundle: Path, tmp: Path) -> list[dict]:
    return investigate(bundle, tmp / "store.duckdb")["incidents"]


def _named(incs: list[dict], kind: str, root: str) -> dict:
    hits = [i for i in incs if i["kind"] == kind and i["root_cause"]["id"] == root]
    assert hits, f"no {kind} at {root}: {[(i['kind'], i['root_cause']['id']) for i in incs]}"
    return hits[0]


def _roots_above_half(incs: list[dict]) -> set[str]:
    return {i["root_cause"]["id"] for i in incs if i["score"] > 0.5}


def _evidence_ports(inc: dict) -> set[str]:
    return {e.get("port") for e in inc["evidence"]}


@pytest.fixture(scope="module")
def silent_storm(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("silent_storm")
    sc = draw(5, "pfc_storm", small=True)
    fault = sc.faults[0]
    leaf = _silence_storming_host(sc, fault, np.random.default_rng(0))
    return fault, leaf, _incidents(_write(tmp, sc), tmp)


def test_a_silent_storming_nic_is_the_root_not_its_leaf_port(silent_storm):
    fault, leaf, incs = silent_storm
    host_port = fault["root_cause"]["id"]
    assert incs[0]["kind"] == "pfc_storm" and incs[0]["root_cause"]["id"] == host_port
    # the leaf port facing it is paused (rx_pause high, tx collapsed) and marks ECN: a victim
    assert leaf not in _roots_above_half(incs)
    assert not [i for i in incs if i["kind"] == "congestion" and i["score"] > 0.5]
    assert leaf in incs[0]["impact"]["paused_ports"]
    root = incs[0]["evidence"][0]
    assert root["port"] == host_port and leaf in root["seen_as"]  # seen through its leaf only
    # the storm pauses its leaf's sender at least half the time at the link's line rate
    assert root["tx_pause_per_s_peak"] > 0.5 * full_pause_rate(400e9)


def test_a_healthy_bundle_with_stray_pauses_and_ecn_bursts_has_no_incident(tmp_path):
    sc = draw(3, "healthy", small=True)
    noisy = sc.run.inc["tx_pause"].sum() + sc.run.inc["ecn"].sum()
    assert noisy > 0  # writer2 plants stray pause frames and ECN microbursts
    assert not [i for i in _incidents(_write(tmp_path, sc), tmp_path) if i["score"] > 0.5]


@pytest.fixture(scope="module")
def loud_victims(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("loud_victims")
    sc = draw(1, "loud_victims", small=True)
    fault = sc.faults[0]
    rng = np.random.default_rng(1)
    spines = _spines_pause_upstream(sc, fault, rng)
    # the receiver's other plane marks ECN too (below line rate: no overload there)
    f = sc.fabric
    host = f.ports[f.port_index(fault["root_cause"]["id"])].peer
    other = next(i for i in f.by_dev[f.ports[host].device] if i != host)
    sl = _slice(fault)
    sc.run.inc["ecn"][f.ports[other].peer, sl] += rng.poisson(3000, sl.stop - sl.start)
    return fault, spines, f.ports[f.ports[other].peer].id, _incidents(_write(tmp, sc), tmp)


def test_congestion_root_is_the_leaf_port_not_the_louder_paused_spines(loud_victims):
    fault, spines, other_plane, incs = loud_victims
    root = fault["root_cause"]["id"]
    assert other_plane < root  # the lexicographic pick would name the wrong plane
    assert incs[0]["kind"] == "congestion" and incs[0]["root_cause"]["id"] == root
    assert not set(spines) & _roots_above_half(incs)
    assert other_plane not in _roots_above_half(incs)
    inc = _named(incs, "congestion", root)
    # the spines it pauses are its victims, in its impact and evidence
    assert set(spines) <= set(inc["impact"]["paused_ports"]) and set(spines) <= _evidence_ports(inc)
    assert [i["kind"] for i in incs if i["score"] > 0.5] == ["congestion"]


@pytest.fixture(scope="module")
def two_congestions(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("two_congestions")
    sc = draw(9, "two:congestion,congestion", small=True)
    return sc.faults, _incidents(_write(tmp, sc), tmp)


def test_two_incasts_on_one_leaf_are_two_incidents(two_congestions):
    faults, incs = two_congestions
    a, b = (f["root_cause"]["id"] for f in faults)
    assert a.split(":")[0] == b.split(":")[0] and a != b  # one leaf, two receivers, same time
    assert faults[0]["start"] < faults[1]["end"] and faults[1]["start"] < faults[0]["end"]
    top = [(i["kind"], i["root_cause"]["id"]) for i in incs[:2]]
    assert sorted(top) == sorted([("congestion", a), ("congestion", b)])
    assert _roots_above_half(incs) == {a, b}


@pytest.fixture(scope="module")
def storm_and_congestion(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("storm_and_congestion")
    sc = draw(9, "two:congestion,pfc_storm", small=True)
    cong, storm = sc.faults
    leaf = _silence_storming_host(sc, storm, np.random.default_rng(2))
    return cong, storm, leaf, _incidents(_write(tmp, sc), tmp)


def test_a_silent_storm_beside_a_congestion_on_the_same_leaf(storm_and_congestion):
    cong, storm, leaf, incs = storm_and_congestion
    assert cong["root_cause"]["id"].split(":")[0] == leaf.split(":")[0]  # one switch, both faults
    top = {(i["kind"], i["root_cause"]["id"]) for i in incs[:2]}
    assert top == {("congestion", cong["root_cause"]["id"]), ("pfc_storm", storm["root_cause"]["id"])}
    assert leaf not in _roots_above_half(incs)
    assert leaf in _named(incs, "pfc_storm", storm["root_cause"]["id"])["impact"]["paused_ports"]


# the project's generator (its twin propagates pauses along the flows): an incast into
# gpu-node-0002 and a storming NIC on gpu-node-0003, both behind leaf 1 of plane 0, at once,
# in the job on hosts 1-8 (another job runs on hosts 9-16).
# The leaf pauses the storming NIC too (the incast's back-pressure), and its pauses towards
# gpu-node-0002 are the storm's (the ring sends 0002 -> 0003): neither makes the other a victim.
TWO_ON_ONE_LEAF = """
[fabric]
hosts = 16
planes = 2
leaf_radix = 8
spine_radix = 8
hosts_per_leaf = 4

[balancing]
mode = "ar"

[[jobs]]
name = "train"
collective = "allreduce_ring"
hosts = "gpu-node-[0001-0008]"
size = "1GiB"

[[jobs]]
name = "other"
collective = "allreduce_ring"
hosts = "gpu-node-[0009-0016]"
size = "1GiB"

[telemetry]
start = "2026-11-30T03:00:00Z"
duration_s = 300
sample_s = 10

[[faults]]
kind = "congestion"
host = "gpu-node-0002"
senders = 6
at_s = 60
duration_s = 150

[[faults]]
kind = "pfc_storm"
host = "gpu-node-0003"
at_s = 100
duration_s = 120
"""


@pytest.fixture(scope="module")
def project_two(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("project_two")
    (tmp / "s.toml").write_text(TWO_ON_ONE_LEAF)
    generate(tmp / "s.toml", tmp / "bundle", seed=0)
    truth = json.loads((tmp / "bundle" / "labels.json").read_text())["faults"]
    return truth, _incidents(tmp / "bundle", tmp)


def test_project_storm_and_incast_behind_one_leaf_are_both_roots(project_two):
    truth, incs = project_two
    cong, storm = truth
    top = {(i["kind"], i["root_cause"]["id"]) for i in incs[:2]}
    assert top == {("congestion", cong["root_cause"]["id"]), ("pfc_storm", storm["root_cause"]["id"])}
    assert len([i for i in incs if i["score"] > 0.5]) == 2
    s = _named(incs, "pfc_storm", storm["root_cause"]["id"])
    assert "leaf-p0-01:swp3" in s["impact"]["paused_ports"]  # the leaf port it pauses
    assert "leaf-p0-01:swp2" in s["impact"]["pausing_ports"]  # relaying it to gpu-node-0002
    c = _named(incs, "congestion", cong["root_cause"]["id"])
    assert "leaf-p1-01:swp2" in c["impact"]["victim_ports"]  # the incast's other plane
    # the jobs hit are those with a host on the tree, not every job running at the time
    assert s["impact"]["jobs"] == c["impact"]["jobs"] == [str(JOB_ID0)]  # "train", the first


@pytest.fixture(scope="module")
def ecn_off(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ecn_off")
    sc = draw(1, "congestion", small=True)
    sc.run.inc["ecn"][:] = 0  # a fabric with ECN marking off (or counters that never move)
    return sc.faults[0], _incidents(_write(tmp, sc), tmp)


def test_congestion_without_ecn_is_found_from_pauses_and_line_rate(ecn_off):
    fault, incs = ecn_off
    root = fault["root_cause"]["id"]
    inc = _named(incs, "congestion", root)
    assert incs[0] is inc and inc["score"] > 0.5
    assert "no ECN counter" in inc["summary"]
    # the twin tests it on the pauses alone and explains part of the residual with it
    assert inc["explanation"]["role"] == "root" and inc["explanation"]["share"] > 0
    assert not [i for i in incs if i["kind"] == "pfc_storm" and i["score"] > 0.5]


def test_a_healthy_bundle_without_ecn_has_no_incident(tmp_path):
    sc = draw(3, "healthy", small=True)
    sc.run.inc["ecn"][:] = 0
    assert not [i for i in _incidents(_write(tmp_path, sc), tmp_path) if i["score"] > 0.5]

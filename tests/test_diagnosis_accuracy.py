"""Issue 17's accuracy cases, each a phenomenon in a small bundle written by the project's
generator or writer2 and diagnosed from nothing with the real parsers: victims are evidence of
their root, never rival roots; noise is no incident. A few seconds per bundle."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.writer2 import write_bundle
from replay.investigate import investigate
from twin.synth import generate

FABRIC32 = """[fabric]
hosts = 32
planes = 1
leaf_radix = 8
spine_radix = 8
hosts_per_leaf = 4

[balancing]
mode = "ar"

[[jobs]]
name = "train"
collective = "{job}"
hosts = "all"
size = "1GiB"

[telemetry]
start = "2026-11-30T03:00:00Z"
duration_s = 120
sample_s = 10
skew_ms = 1000
vendors = ["cumulus"]
counters = "full"
noise = true
jitter = "read"
"""
SLOW = "leaf-p0-02:swp6--spine-p0-02:swp2"


def fault(kind: str, **keys) -> str:
    """A `[[faults]]` table (JSON's strings, numbers and booleans are TOML's)."""
    return "\n[[faults]]\n" + "".join(f"{k} = {json.dumps(v)}\n"
                                      for k, v in {"kind": kind, **keys}.items())


def _investigated(tmp_path: Path, text: str, seed: int = 11) -> tuple[list[dict], list[dict]]:
    (tmp_path / "s.toml").write_text(text)
    generate(tmp_path / "s.toml", tmp_path / "b", seed=seed)
    labels = json.loads((tmp_path / "b" / "labels.json").read_text())["faults"]
    return labels, investigate(tmp_path / "b", tmp_path / "s.duckdb")["incidents"]


def test_a_slower_link_is_the_root_and_the_uplinks_it_starves_are_its_evidence(tmp_path):
    """A fabric link negotiated at 200G among 400G peers: adaptive routing sends less over it
    and over the cables into its spine, so its own leaf's and another leaf's uplinks look
    uneven. Those imbalances are the slow link's victims (its evidence and impact), not
    load_imbalance roots ranked beside it."""
    text = FABRIC32.format(job="allreduce_ring") + fault(
        "link_degraded", link=SLOW, at_s=0, duration_s=1000, speed_gbps=200)
    _, incs = _investigated(tmp_path, text)
    assert (incs[0]["kind"], incs[0]["root_cause"]["id"]) == ("link_degraded", SLOW)
    assert not [i for i in incs if i["kind"] == "load_imbalance"], \
        [(i["kind"], i["root_cause"]["id"], i["score"]) for i in incs]
    victims = [(e["kind"], e["root_cause"]["id"]) for e in incs[0]["evidence"]
               if str(e.get("role", "")).startswith("victim")]
    assert ("load_imbalance", "leaf-p0-02") in victims
    assert victims == [(v["kind"], v["id"]) for v in incs[0]["impact"]["victim_incidents"]]


FABRIC64 = FABRIC32.replace("hosts = 32", "hosts = 64").replace(
    "leaf_radix = 8\nspine_radix = 8\nhosts_per_leaf = 4",
    "leaf_radix = 16\nspine_radix = 16\nhosts_per_leaf = 8").replace("skew_ms = 1000", "skew_ms = 2000")
DOWN = "leaf-p0-06:swp14--spine-p0-06:swp6"


def test_two_faults_keep_both_roots_and_the_congestion_they_cause_is_their_evidence(tmp_path):
    """A leaf hashing its uplinks (adaptive routing off) under an all-to-all, and a link down
    elsewhere from the middle of the bundle: the hash piles flows on some uplinks, which run
    full and mark ECN, and so do the spine ports those flows converge on. Both faults rank
    first (the imbalance is measured in the windows the outage leaves whole: the twin's
    expectation holds the link down), and the congestion is the imbalance's evidence."""
    text = FABRIC64.format(job="alltoall") + fault("link_down", at_s=60, duration_s=60, link=DOWN) \
        + fault("load_imbalance", at_s=0, duration_s=120, device="leaf-p0-04")
    _, incs = _investigated(tmp_path, text, seed=1021)
    top = {(i["kind"], i["root_cause"]["id"]) for i in incs[:2]}
    assert top == {("link_down", DOWN), ("load_imbalance", "leaf-p0-04")}, \
        [(i["kind"], i["root_cause"]["id"], i["score"]) for i in incs[:4]]
    assert all(i["score"] <= 0.5 for i in incs if i["kind"] == "congestion")
    imbalance = next(i for i in incs if i["kind"] == "load_imbalance")
    victims = {e["root_cause"]["id"] for e in imbalance["evidence"] if e.get("kind") == "congestion"}
    assert "leaf-p0-04:swp13" in victims  # one of its own uplinks, full from the start


THREE_TIERS = FABRIC32.replace("hosts = 32\nplanes = 1\nleaf_radix = 8\nspine_radix = 8\n"
                               "hosts_per_leaf = 4", "hosts = 16\nplanes = 1\ntiers = 3\n"
                               "leaf_radix = 4\nspine_radix = 4")


def test_at_three_tiers_the_hashing_leaf_is_the_root_not_the_aggregation_switches_above_it(tmp_path):
    """A leaf with adaptive routing off in a 3-tier fabric: its flows keep their hash above it,
    so the aggregation switches of its pod carry them unevenly on their own uplinks. The leaf
    is the root; the aggregation switches are its evidence, not load_imbalance roots."""
    text = THREE_TIERS.format(job="alltoall") + fault("load_imbalance", at_s=0, duration_s=120,
                                                      device="leaf-p0-03")
    _, incs = _investigated(tmp_path, text, seed=5)
    assert (incs[0]["kind"], incs[0]["root_cause"]["id"]) == ("load_imbalance", "leaf-p0-03")
    assert [i["root_cause"]["id"] for i in incs if i["kind"] == "load_imbalance"] == ["leaf-p0-03"]
    above = [e["device"] for e in incs[0]["evidence"] if "above" in str(e.get("role", ""))]
    assert above and all(d.startswith("agg-p0-") for d in above)


@pytest.mark.parametrize(("seed", "case", "leaf"), [
    (48, "mild_imbalance", "p0-leaf-02"),  # a plane of two leaves: its one peer is the other leaf
    (42, "load_imbalance", "p0-leaf-01"),  # 3 tiers, two uplinks: uneven only on the spines above
])
def test_writer2_imbalances_are_found_at_their_leaf(tmp_path, seed, case, leaf):
    labels = write_bundle(tmp_path / "b", seed, case)
    assert [f["root_cause"]["id"] for f in labels["faults"]] == [leaf]
    incs = investigate(tmp_path / "b", tmp_path / "s.duckdb")["incidents"]
    assert incs and (incs[0]["kind"], incs[0]["root_cause"]["id"]) == ("load_imbalance", leaf)

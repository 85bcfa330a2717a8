"""The twin's search decides the ranking (`replay.explain.explain(decide=True)`, issue 17 item 3)
on writer2 bundles (no code shared with the twin) with the phenomena of test_roots: a
candidate is a separate root only while its own ports still show what it predicts there, so a
quieter second fault on the same switch is found, and the loud ports a root's PFC tree and
overload explain (paused spines, the receiver's other plane, a storming NIC's leaf port) are
its victims, never roots. Each bundle is investigated once; the diagnosis then runs again on
its store in the mode under test."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pytest
from test_roots import _silence_storming_host, _slice, _spines_pause_upstream, _write

from benchmarks.writer2.scenario import draw
from replay.investigate import diagnose, investigate


def _decided(db: Path, decide: bool = True) -> list[dict]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [i.as_json(r) for r, i in enumerate(diagnose(con, decide=decide), 1)]
    finally:
        con.close()


def _investigated(tmp: Path, sc) -> Path:
    db = tmp / "store.duckdb"
    investigate(_write(tmp, sc), db)
    return db


def _above_half(incs: list[dict]) -> list[tuple[str, str]]:
    return [(i["kind"], i["root_cause"]["id"]) for i in incs if i["score"] > 0.5]


def _victims(inc: dict) -> set[str]:
    return {v["root_cause"]["id"] for v in inc["explanation"]["victims"]}


@pytest.fixture(scope="module")
def two_incasts(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("two_incasts")
    sc = draw(9, "two:congestion,congestion", small=True)
    return sc.faults, _investigated(tmp, sc)


def test_the_quieter_of_two_incasts_on_one_leaf_is_found_by_the_search(two_incasts):
    faults, db = two_incasts
    a, b = (("congestion", f["root_cause"]["id"]) for f in faults)
    incs = _decided(db)
    assert sorted(_above_half(incs)) == sorted([a, b])  # both roots, nothing else
    assert {(i["kind"], i["root_cause"]["id"]) for i in incs[:2]} == {a, b}
    for inc in incs[:2]:
        e = inc["explanation"]
        assert e["role"] == "root" and e["basis"] == "twin"
        # each names the other as a root beside it, not as its victim
        other = b if (inc["kind"], inc["root_cause"]["id"]) == a else a
        assert {"kind": other[0], "root_cause": {"type": "port", "id": other[1]}} in e["other_roots"]
        assert other[1] not in _victims(inc)
        runner = e["runner_up"]
        assert runner and runner["why"] and (runner["kind"], runner["root_cause"]["id"]) != (
            inc["kind"], inc["root_cause"]["id"])


@pytest.fixture(scope="module")
def storm_beside_incast(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("storm_beside_incast")
    sc = draw(9, "two:congestion,pfc_storm", small=True)
    cong, storm = sc.faults
    leaf = _silence_storming_host(sc, storm, np.random.default_rng(2))
    return cong, storm, leaf, _investigated(tmp, sc)


def test_an_incast_beside_a_silent_storm_on_its_leaf_is_a_root_not_the_storms_victim(
        storm_beside_incast):
    cong, storm, leaf, db = storm_beside_incast
    c = ("congestion", cong["root_cause"]["id"])
    s = ("pfc_storm", storm["root_cause"]["id"])
    incs = _decided(db)
    assert {(i["kind"], i["root_cause"]["id"]) for i in incs[:2]} == {c, s}
    assert sorted(_above_half(incs)) == sorted([c, s])
    # the storming NIC's leaf port, paused and marking ECN, is the storm's victim
    root = next(i for i in incs if (i["kind"], i["root_cause"]["id"]) == s)
    assert leaf in _victims(root)
    assert leaf not in {r for _, r in _above_half(incs)}


@pytest.fixture(scope="module")
def loud_victims(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("decide_loud_victims")
    sc = draw(1, "loud_victims", small=True)
    fault = sc.faults[0]
    rng = np.random.default_rng(1)
    spines = _spines_pause_upstream(sc, fault, rng)
    f = sc.fabric  # the receiver's other plane marks ECN too, below line rate
    host = f.ports[f.port_index(fault["root_cause"]["id"])].peer
    other = next(i for i in f.by_dev[f.ports[host].device] if i != host)
    sl = _slice(fault)
    sc.run.inc["ecn"][f.ports[other].peer, sl] += rng.poisson(3000, sl.stop - sl.start)
    return fault, spines, f.ports[f.ports[other].peer].id, _investigated(tmp, sc)


def test_a_congestions_loud_victims_and_other_plane_are_its_victims_not_roots(loud_victims):
    fault, spines, other_plane, db = loud_victims
    root = ("congestion", fault["root_cause"]["id"])
    incs = _decided(db)
    assert _above_half(incs) == [root]
    inc = incs[0]
    assert (inc["kind"], inc["root_cause"]["id"]) == root
    # the paused spines mark more ECN than the root: its tree explains them
    assert set(spines) <= _victims(inc) and other_plane in _victims(inc)
    assert inc["explanation"]["share"] > max(v["share_alone"] for v in inc["explanation"]["victims"])


def test_both_modes_agree_on_these_roots(two_incasts, storm_beside_incast, loud_victims):
    """decide=False keeps the detectors' ranking; on these bundles it names the same roots."""
    for db, n in ((two_incasts[1], 2), (storm_beside_incast[3], 2), (loud_victims[3], 1)):
        top = lambda incs, n=n: {(i["kind"], i["root_cause"]["id"]) for i in incs[:n]}  # noqa: E731
        assert top(_decided(db, False)) == top(_decided(db, True))


def test_conservation_is_not_trusted_at_the_edges_or_beside_an_unreported_window():
    """What one end sent and the other received, per window: the first and last windows and
    those beside a window either end did not report are where the ends' clocks decide."""
    from replay.explain_model import _trusted

    deficit = np.array([[5.0, 1.0, 2.0, 3.0, 4.0, 6.0],
                        [5.0, 1.0, np.nan, 3.0, 4.0, 6.0]])
    out = _trusted(deficit)
    np.testing.assert_array_equal(np.isfinite(out), [[0, 1, 1, 1, 1, 0], [0, 0, 0, 0, 1, 0]])
    assert out[0, 2] == 2.0 and out[1, 4] == 4.0

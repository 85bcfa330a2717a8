"""UEC's NSCC window over obliviously sprayed paths of uneven speed (twin.nscc_paths): the
paths it follows, the decreases that bind only when half the paths are slowed, and the
held-out rows it brings within the error bars."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import REPO

from benchmarks import htsim_calibration as harness
from benchmarks.htsim_calibration import FAT2, fabric_state, run_row
from benchmarks.htsim_heldout import REFERENCE as HELDOUT
from benchmarks.htsim_heldout import SCENARIOS as NEW
from twin import engine
from twin.nscc import Nscc
from twin.nscc_paths import sprayed_rate_caps
from twin.queueing import UEC, base_rtt
from twin.routing import FabricState, route, sprayed_paths
from twin.topology import build
from twin.workload import read_connection_matrix

PERM128B = "perm128b_4MB.cm"


def _available(name: str) -> None:
    if not (HELDOUT / NEW[name].csv_name("uec_oblivious")).is_file():
        pytest.skip(f"{name}: held-out CSV not present")


def test_sprayed_paths_are_the_hashed_split_route_loads():
    """Per flow the share of each path and its links, NIC to receiver: summed over paths they
    are the incidence that hashed spraying loads (without trimming), link by link; a flow
    within one leaf has one path, its two host links."""
    state = FabricState(build(FAT2), mode=["spray"], seed=3)
    state.spray_paths = 64
    src, dst = np.array([0, 1, 2, 9]), np.array([17, 100, 3, 60])  # 2 -> 3: one leaf
    w, links = sprayed_paths(state, src, dst)
    assert np.allclose(w.sum(axis=1), 1.0) and np.allclose(w * 64, np.round(w * 64))
    assert (links[2, 0, [0, -1]] >= 0).all() and (links[2, 0, 1:-1] == -1).all() and w[2, 0] == 1.0
    explicit = route(state, src, dst).explicit().toarray()  # links x flows
    mine = np.zeros_like(explicit)
    for f in range(len(src)):
        for p in range(w.shape[1]):
            for link in links[f, p][links[f, p] >= 0]:
                mine[link, f] += w[f, p]
    assert np.allclose(mine, explicit)


def _caps(failed: int, p: Nscc | None = None, nack_decrease: bool = True,
          recycle_share: float = 0.0) -> np.ndarray:
    """The model's mean rates (Gb/s) of perm128b_4MB's flows between leaves, with `failed`
    spines slowed at every ToR (htsim's -failed K); recycle_share: REPS' (`twin.reps`) for
    every flow, 0 oblivious spraying."""
    sc = NEW["perm128b_4MB_2tier_failed4"]
    src, dst, start, size = read_connection_matrix(HELDOUT / sc.cm)
    state = fabric_state(harness.Scenario("x", sc.cm, FAT2, failed=failed), "spray")
    state.spray_paths = UEC.paths
    w, links = sprayed_paths(state, src, dst)
    cap = state.link_capacity_bps()
    rtt = base_rtt(route(state, src, dst), cap, 1e-6, UEC)
    f = state.fabric
    rates = sprayed_rate_caps(w, links, start, size * UEC.wire_factor, rtt, cap[2 * f.ep_cable[src]],
                              cap, np.repeat(f.cable_gbps * 1e9, 2), UEC.packet_bytes,
                              UEC.queue_packets, UEC.window_bdp, p, nack_decrease,
                              recycle_share=np.full(len(src), recycle_share))
    cross = f.ep_leaf[src] != f.ep_leaf[dst]
    return rates[cross] * 8 / 1e9


def test_the_nacks_hold_the_window_with_half_the_spines_slowed_not_with_one():
    """-failed 4: a ToR's uplinks carry 4 x 400 + 4 x 100 Gb/s for 8 flows (250 each, what
    trimming delivers); each NACK of the slow paths takes its bytes off the one window, which
    holds the flows far under that (measured: median 133 Gb/s), and without that decrease they
    rise by more than half (217). -failed 1: few trims, the decrease changes little (332 ->
    356). The multiplicative decrease does not fire here: gamma 0 gives the same rates."""
    if not (HELDOUT / PERM128B).is_file():
        pytest.skip("held-out .cm not present")
    four, four_free = _caps(4), _caps(4, nack_decrease=False)
    one, one_free = _caps(1), _caps(1, nack_decrease=False)
    assert np.median(four) < 0.7 * 250
    assert np.median(four_free) > 1.5 * np.median(four)
    assert np.median(one_free) < 1.1 * np.median(one)
    assert np.median(one) > 2 * np.median(four)
    assert np.allclose(_caps(4, Nscc(gamma=0.0)), four)


def test_no_slowed_link_no_cap():
    """On a fabric at full speed the engine takes no cap: every other row stays as it was."""
    sc = NEW["perm128b_4MB_2tier"]
    if not (HELDOUT / sc.cm).is_file():
        pytest.skip("held-out .cm not present")
    src, dst, start, size = read_connection_matrix(HELDOUT / sc.cm)
    state = fabric_state(sc, "spray")
    run = engine._Run(state, engine.Flows(src, dst, size, start), [], engine._Timing(0.05, 0.0, np.inf),
                      None, None, UEC, 1e-6)
    assert run.path_caps is None


@pytest.mark.parametrize("name", ["perm128b_4MB_2tier_failed4", "perm128b_4MB_2tier_failed1"])
def test_slowed_spines_oblivious_rows_meet_the_bars(name):
    """Held-out rows that missed before this model (failed4: median -40%, p99 -52%; failed1:
    p99 -28%) meet median within 15% and p99 within 25%; without it they miss again."""
    _available(name)
    row = run_row(NEW[name], "uec_oblivious", HELDOUT, {})
    assert row.meets(), row
    assert not run_row(NEW[name], "uec_oblivious", HELDOUT, {}, without=("paths",)).meets()


def test_failed2_oblivious_still_meets_the_bars():
    """The calibration set's slowed scenario (2 of 8 spines) keeps within the bars (measured
    +9.6% / +14.7%, from -2.4% / -16.8% without the model)."""
    shared = REPO.parent / "shared" / "reference" / "htsim"
    sc = harness.SCENARIOS["perm128_2MB_2tier_failed2"]
    if not (shared / sc.csv_name("uec_oblivious")).is_file():
        pytest.skip("../shared/reference/htsim not present")
    assert run_row(sc, "uec_oblivious", shared, {}).meets()


def test_a_scenario_with_slowed_links_gets_the_caps(tmp_path):
    """`fabtwin simulate` slows the links with a fault at t = 0 and sends transfers: on one
    plane the engine caps them as the harness does (within 2% per flow)."""
    from twin.scenario import load, run

    toml = (REPO / "scenarios" / "htsim_perm128_2tier_failed2_uec_reps.toml").read_text()
    toml = toml.replace('mode = "ar"', 'mode = "spray"').replace(
        "../tests/data/htsim/perm128_2MB.cm", str(REPO / "tests" / "data" / "htsim" / "perm128_2MB.cm"))
    assert 'mode = "spray"' in toml
    path = tmp_path / "obl.toml"
    path.write_text(toml)
    out = run(load(path))
    fct = out.result.fct * 1e6
    want = harness.twin_fct_us(harness.SCENARIOS["perm128_2MB_2tier_failed2"], "uec_oblivious",
                               REPO / "tests" / "data" / "htsim")
    assert np.allclose(fct, want, rtol=0.02)
    free = harness.twin_fct_us(harness.SCENARIOS["perm128_2MB_2tier_failed2"], "uec_oblivious",
                               REPO / "tests" / "data" / "htsim", without=("paths",))
    assert np.median(fct) > 1.05 * np.median(free)

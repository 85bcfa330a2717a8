"""UEC's NSCC window over obliviously sprayed paths of uneven speed (twin.nscc_paths): the
paths it follows, the decreases that bind only when half the paths are slowed, and the
held-out rows it brings within the error bars."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import REPO

from benchmarks import htsim_calibration as harness
from benchmarks.htsim_calibration import FAT2, fabric_state, run_row
from benchmarks.htsim_heldout import REFERENCE as HELDOUT
from benchmarks.htsim_heldout import SCENARIOS as NEW
from benchmarks.htsim_heldout7 import REFERENCE as HELDOUT7
from twin import engine
from twin.nscc import Nscc
from twin.nscc_paths import sprayed_rate_caps
from twin.queueing import UEC, base_rtt
from twin.routing import FabricState, route, sprayed_paths
from twin.topology import FabricSpec, build
from twin.workload import read_connection_matrix

PERM128B = "perm128b_4MB.cm"
PERM162 = "perm162_2MB_local12.cm"


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
          recycle_share: float = 0.0, folder: Path = HELDOUT, cm: str = PERM128B,
          spec: FabricSpec = FAT2) -> np.ndarray:
    """The model's mean rates (Gb/s) of a .cm's flows between leaves (default perm128b_4MB on
    FAT2), with `failed` spines slowed at every ToR (htsim's -failed K); recycle_share: REPS'
    (`twin.reps`) for every flow, 0 oblivious spraying."""
    src, dst, start, size = read_connection_matrix(folder / cm)
    state = fabric_state(harness.Scenario("x", cm, spec, failed=failed), "spray")
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
    356). The multiplicative decrease hardly matters here (400 Gb/s: a slowed queue's delay is
    short against the target): gamma 0 moves the median by under 3%."""
    if not (HELDOUT / PERM128B).is_file():
        pytest.skip("held-out .cm not present")
    four, four_free = _caps(4), _caps(4, nack_decrease=False)
    one, one_free = _caps(1), _caps(1, nack_decrease=False)
    assert np.median(four) < 0.7 * 250
    assert np.median(four_free) > 1.5 * np.median(four)
    assert np.median(one_free) < 1.1 * np.median(one)
    assert np.median(one) > 2 * np.median(four)
    assert abs(np.median(_caps(4, Nscc(gamma=0.0))) / np.median(four) - 1) < 0.03


def test_the_multiplicative_decrease_binds_at_100g_not_at_400g():
    """htsim_heldout7's perm162_local12 with 3 of 9 spines slowed, sprayed obliviously. A slowed
    queue of 25 packets at 25 Gb/s waits 33 us against NSCC's 7 us target, so its marked ACKs
    come with delays over the target and htsim's windows lose more to multiplicative decreases
    than to NACKs (its per-flow counters multi_dec / nack_dec: 170 / 99 KB); at 400 Gb/s the
    same queue waits 8 us and the NACKs do it all (6 / 432 KB). The model's windows decrease
    alike: without the decrease (gamma 0) its flows run faster at 100 Gb/s, not at 400."""
    if not (HELDOUT7 / PERM162).is_file():
        pytest.skip("heldout7 .cm not present")
    for gbps, lo, hi in ((100, 1.05, np.inf), (400, 0.99, 1.01)):
        spec = harness.htsim_fat_tree(162, 2, gbps)
        with_md = _caps(3, folder=HELDOUT7, cm=PERM162, spec=spec)
        without = _caps(3, Nscc(gamma=0.0), folder=HELDOUT7, cm=PERM162, spec=spec)
        assert lo < np.median(without) / np.median(with_md) < hi, gbps


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
    -2.4% / +2.2%; +9.6% / +14.7% before the last-packet wait and the fed downlinks of UEC18,
    -2.4% / -16.8% without the model)."""
    shared = REPO.parent / "shared" / "reference" / "htsim"
    sc = harness.SCENARIOS["perm128_2MB_2tier_failed2"]
    if not (shared / sc.csv_name("uec_oblivious")).is_file():
        pytest.skip("../shared/reference/htsim not present")
    assert run_row(sc, "uec_oblivious", shared, {}).meets()


def test_a_scenario_with_slowed_links_gets_the_caps(tmp_path):
    """`fabtwin simulate` slows the links with a fault at t = 0 and sends transfers: on one
    plane the engine caps them as the harness does (within 2% per flow), and the model shapes
    the tail (its last-packet waits and caps: p99 101 us against 82 without it, htsim 98.9)."""
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
    assert np.percentile(fct, 99) > 1.1 * np.percentile(free, 99)


# htsim's 2-tier 200-host fabric at 100 Gb/s (K = 20: 20 ToRs of 10 hosts, 10 spines)
FAT2_200 = harness.htsim_fat_tree(200, 2, 100)


def _slowed_run(src: np.ndarray, dst: np.ndarray, size: float, failed: int = 1) -> np.ndarray:
    """FCTs (us) of UEC oblivious spraying on the 200-host fabric, `failed` spines slowed."""
    sc = harness.Scenario("x", "x.cm", FAT2_200, failed=failed)
    flows = engine.Flows(np.asarray(src), np.asarray(dst), np.full(len(src), size), np.zeros(len(src)))
    res = engine.simulate(fabric_state(sc, "spray"), flows, hop_latency_s=1e-6, idle_tail=False,
                          transport=UEC)
    return res.fct * 1e6


def test_a_port_after_a_trimming_one_is_fed_what_it_sends():
    """Ten 100 Gb/s senders into a 25 Gb/s port (a slowed uplink) and on through a second 25
    Gb/s port (the slowed spine's downlink): the first fills and trims, the second is fed only
    what the first sends (its speed), so its queue stays empty. Forwarding what the first
    accepted into its queue while it fills (the old step) overran the second with the fill,
    and a port at exactly its load never drains: it stayed full, a second full wait."""
    from twin.nscc_paths import _Paths

    n = 10
    links = np.zeros((n, 1, 3), np.int64)
    links[:, 0, 0] = np.arange(n) + 2  # each sender's NIC (hop 0: not queued)
    links[:, 0, 1], links[:, 0, 2] = 0, 1
    cap = np.r_[25e9, 25e9, np.full(n, 100e9)] / 8
    nominal = np.r_[100e9, 100e9, np.full(n, 100e9)] / 8
    run = _Paths(np.ones((n, 1)), links, np.zeros(n), np.full(n, 1e7), np.full(n, 9e-6),
                 np.full(n, 100e9 / 8), cap, nominal, UEC.packet_bytes, UEC.queue_packets,
                 UEC.window_bdp, Nscc())
    for _ in range(200):
        run._network(np.full(n, 100e9 / 8 * run.dt))
    assert run.q[0] == pytest.approx(run.qmax[0])
    assert run.q[1] == 0.0


def test_last_packets_wait_a_slowed_queue_only_if_it_took_them():
    """50 flows of 512 KB from ToRs 0-4 to hosts of the other ToRs, spine 0 slowed to 25%: the
    uplinks to it trim (offered 4x), their 25-packet queues full, 33 us at 25 Gb/s; the
    downlinks after them carry a third of their speed. A flow's last packet waits that queue
    only if the port accepted one of its last packets: the gap before the end is drawn at the
    rate the path delivers the flow's packets. htsim (`-failed 1`, seed 13): FCTs min / median
    / p99 55.9 / 81.5 / 96.3 us, 58.5 median unslowed; the twin 62.1 / 86.9 / 97.9. A full
    queue's wait for every flow (the old rule) put every flow at 89.6 or more."""
    rng = np.random.default_rng(77003)
    dst = rng.choice(np.arange(50, 200), 50, replace=False)
    fct = _slowed_run(np.arange(50), dst, 512e3)
    healthy = _slowed_run(np.arange(50), dst, 512e3, failed=0)
    queue_us = UEC.queue_packets * UEC.packet_bytes * 8 / 100e9 * 1e6  # 33.2 us, in time
    assert fct.min() < np.median(healthy) + 0.5 * queue_us
    assert np.median(fct) > np.median(healthy) + 0.4 * queue_us
    assert np.percentile(fct, 99) > np.median(healthy) + 0.8 * queue_us


def test_capped_senders_leave_their_share_of_a_port_to_the_others():
    """A 12-to-1 incast of 1 MB over a fabric with a slowed spine: NSCC's caps over the
    sprayed paths bind on every sender, each in the filling as its own ceiling, so the
    receiver's port stays busy and the last sender finishes when its bytes are through (htsim:
    1,007.5 us). Capped after the max-min, the weighted shares of the incast left the port 13%
    idle: the last at 1,154 us."""
    senders = np.array([10 * t + 3 for t in range(20) if t != 6][:12])
    fct = _slowed_run(senders, np.full(12, 60), 1e6)
    through_us = 12 * 1e6 * UEC.wire_factor * 8 / 100e9 * 1e6  # 975 us at the port's speed
    assert fct.max() < 1.05 * through_us


def test_reps_last_wait_is_priced_on_the_shares_its_bytes_went_out_on(monkeypatch):
    """REPS moves each flow's shares after a step's ACKs; the last packets' wait of a flow
    finishing in that step is priced on the shares its bytes were sent on, so no path has
    delivered more than was offered to it (on the moved shares, the old call, a path could
    deliver more than it was offered and one it had left show no wait)."""
    import twin.nscc_paths as nscc_paths

    excess: list[float] = []
    priced = nscc_paths._Paths._last_wait

    def spy(self, done, x, w, sent, delivered, d_path):
        idx = np.flatnonzero(done)
        cols = (idx[:, None] * self.n_paths + np.arange(self.n_paths)[None, :]).ravel()
        offered = sent[self.flow_of[cols]] * w[cols]
        excess.append(float((delivered[cols] - offered).max() / max(sent.max(), 1.0)))
        return priced(self, done, x, w, sent, delivered, d_path)

    monkeypatch.setattr(nscc_paths._Paths, "_last_wait", spy)
    _caps(4, recycle_share=0.25)
    assert len(excess) > 10
    assert max(excess) <= 1e-9

"""The queues NIC-paced packet streams make at UEC's egress ports (`twin.paced_streams`,
`Transport.paced_streams`): the N*D/D/1 wait against a stepped queue of periodic streams, the
ports one ingress link feeds, and two packet-level runs of htsim_uec made for this change
(UEC19, 2026-12-02; not in any held-out set) that the twin priced with M/D/1's unbounded wait
at full load and now meets."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from benchmarks.htsim_calibration import FAT2, HOP_LATENCY_S, htsim_fat_tree
from twin.engine import Flows, simulate
from twin.paced_streams import PacedShares, md1_packets, superposed_packets
from twin.queueing import UEC
from twin.routing import FabricState
from twin.topology import build

FAT3_128 = htsim_fat_tree(128, 3, 200)


def _stepped_wait(n: int, rho: float, periods: int = 300, phases: int = 8, seed: int = 5) -> float:
    """Mean wait (packet times) seen by the packets of `n` periodic streams of total load
    `rho` with random phases at a FIFO serving one packet per unit of time."""
    rng = np.random.default_rng(seed)
    period, means = n / rho, []
    for _ in range(phases):
        arrivals = np.sort((rng.uniform(0, period, n)[None, :] + period * np.arange(periods)[:, None]).ravel())
        work, last, waits = 0.0, arrivals[0], []
        for a in arrivals:
            work = max(work - (a - last), 0.0)
            waits.append(work)
            work, last = work + 1.0, a
        means.append(np.mean(waits[len(waits) // 4:]))
    return float(np.mean(means))


@pytest.mark.parametrize("n", [8, 31])
def test_periodic_streams_at_full_load_queue_a_few_packets_not_the_whole_buffer(n):
    """N streams at a port's full speed: M/D/1 grows without bound (the twin then waited a
    full 100-packet queue); a stepped FIFO of N periodic streams holds 1.3 (8) and 2.6 (31)
    packets, and the Brownian-bridge mean is less than one packet above that."""
    model = superposed_packets(np.array([1.0]), np.array([float(n)]))[0]
    stepped = _stepped_wait(n, 1.0)
    assert np.isinf(md1_packets(np.array([1.0]))[0])
    assert stepped <= model <= stepped + 1.0
    assert model == pytest.approx(np.sqrt(np.pi * n / 8))


def test_many_streams_queue_as_md1_and_overload_fills_the_queue():
    """As the number of streams grows the wait tends to M/D/1's (Poisson arrivals); a port
    offered more than it serves keeps an unbounded queue (the transport's buffer bounds it)."""
    rho = np.array([0.5, 0.8, 0.9])
    assert superposed_packets(rho, np.full(3, 1e6)) == pytest.approx(md1_packets(rho), rel=2e-3)
    assert superposed_packets(rho, np.full(3, np.inf)) == pytest.approx(md1_packets(rho))
    assert np.isinf(superposed_packets(np.array([1.01]), np.array([4.0]))[0])


def _hotspot() -> Flows:
    """Every host of ToR 2 (hosts 16-23) to every host of ToR 9 (72-79), 512 KB at 0."""
    src, dst = np.divmod(np.arange(64), 8)
    return Flows(src + 16, dst + 72, np.full(64, 512_000), np.zeros(64))


def test_a_spine_port_down_to_a_tor_only_one_tor_sends_to_is_fed_by_one_link():
    """ToR 2 to ToR 9 over 8 spines: each spine's link down to ToR 9 is fed only by ToR 2's
    uplink to it (a FIFO fed at its own speed: no wait); ToR 2's uplinks are fed by 8 host
    links and ToR 9's host ports by 8 spines: they queue."""
    state = FabricState(build(FAT2), mode=["spray"])
    state.spray_paths = 64
    flows = _hotspot()
    inc = flows.incidence(state)
    f = state.fabric
    shares = PacedShares.of(inc, f, state.link_capacity_bps(), UEC.paced, UEC.paced_streams)
    loaded = inc.link_load(np.ones(len(flows))) > 0
    pos = f.link_position
    assert loaded[pos == 2].sum() == 8 and shares.passthrough[loaded & (pos == 2)].all()
    assert not shares.passthrough[loaded & (pos == 1)].any()  # ToR 2's uplinks
    assert not shares.passthrough[loaded & (pos == 3)].any()  # ToR 9's host ports
    off = PacedShares.of(inc, f, state.link_capacity_bps(), True, False)
    assert off.passthrough is None and off.streams is None


def _median_us(spec, flows: Flows, mode: str, transport=UEC) -> float:
    state = FabricState(build(spec), mode=[mode], seed=0)
    res = simulate(state, flows, hop_latency_s=HOP_LATENCY_S, idle_tail=False, transport=transport)
    return float(np.median(res.fct)) * 1e6


# htsim_uec (ultraethernet/uet-htsim 40ccb0526bb6, unpatched) on the .cm of these flows:
#   htsim_uec -tiers 2 -q 100 -linkspeed 400000 -nodes 128 -load_balancing_algo oblivious|reps
#       -paths 64 -end 20000 -tm hotspot_tor8x8_512KB_2tier.cm
# medians 95.5 (oblivious) and 93.4 us (reps); the twin with M/D/1: 115.4 / 115.3 (+21% / +23%)
@pytest.mark.parametrize(("mode", "htsim_us"), [("spray", 95.5), ("ar", 93.4)])
def test_a_tor_to_tor_hot_spot_of_paced_flows_completes_as_htsim_does(mode, htsim_us):
    twin = _median_us(FAT2, _hotspot(), mode)
    assert twin == pytest.approx(htsim_us, rel=0.10)
    mdl = _median_us(FAT2, _hotspot(), mode, dataclasses.replace(UEC, paced_streams=False))
    assert mdl > 1.15 * htsim_us


def _a2a24() -> Flows:
    """All-to-all among 24 random hosts of the 3-tier 128 at 200G, 32 KB a pair (552 flows)."""
    hosts = np.random.default_rng(19002).choice(128, 24, replace=False)
    src, dst = np.meshgrid(hosts, hosts, indexing="ij")
    pair = src != dst
    n = int(pair.sum())
    return Flows(src[pair], dst[pair], np.full(n, 32_000), np.zeros(n))


# htsim_uec -tiers 3 -q 100 -linkspeed 200000 -nodes 128 -load_balancing_algo oblivious
#     -paths 64 -end 20000 -tm a2a24_32KB_3tier128.cm: median 42.8 us (reps the same); the twin
# with M/D/1 at every receiver's port, saturated by 23 senders: 58.7 (+37%)
def test_an_all_to_all_of_short_flows_completes_as_htsim_does():
    assert _median_us(FAT3_128, _a2a24(), "spray") == pytest.approx(42.8, rel=0.05)

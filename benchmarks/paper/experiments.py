"""The published Spectrum-X results (design section 9), re-run on the twin.

Each experiment is a function returning a dict with the paper's figure, the twin's figure and
the data behind them; `scale` shrinks the fabrics for the tests (`scale=1` is the full run).
"""

from __future__ import annotations

import numpy as np

from twin.collectives import Collective
from twin.engine import LinkChange, Transfers, simulate
from twin.maxmin import max_min_rates
from twin.queueing import QueueConfig, path_latency, queue_state
from twin.routing import FabricState, route, route_transfers
from twin.topology import FabricSpec, build
from twin.workload import endpoints

LINE = 400e9
HOP_S = 1e-6  # switch + wire latency per hop; NIC and host stack latency are not modelled


def fabric64():
    """64 hosts at 400G, 8 per leaf, 8 leaves, 8 spines: non-blocking, 2 tiers."""
    return build(FabricSpec(hosts=64, leaf_radix=16, spine_radix=16, hosts_per_leaf=8,
                            host_speed_gbps=400, fabric_speed_gbps=400))


def cross_leaf_permutation(rng: np.random.Generator, hosts: int = 64, per_leaf: int = 8) -> np.ndarray:
    """A random permutation in which no host sends to its own leaf: all traffic crosses spines."""
    while True:
        perm = rng.permutation(hosts)
        if np.all(perm // per_leaf != np.arange(hosts) // per_leaf):
            return perm


def per_host_bandwidth(mode: str, seeds: int) -> np.ndarray:
    f = fabric64()
    out = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        perm = cross_leaf_permutation(rng)
        st = FabricState(f, mode=[mode], seed=seed)
        out.append(max_min_rates(route(st, endpoints(f, np.arange(64)), endpoints(f, perm)),
                                 st.link_capacity_bps()))
    return np.concatenate(out)


def e1_bandwidth(scale: float = 1.0) -> dict:
    seeds = max(5, int(50 * scale))
    ar, ecmp = per_host_bandwidth("ar", seeds), per_host_bandwidth("ecmp", seeds)
    return {"name": "1. 64 hosts, all through the spine: 1st-percentile per-host bandwidth (Gb/s)",
            "paper": {"ar": 377.0}, "twin": {"ar": float(np.percentile(ar, 1) / 1e9),
                                             "ecmp": float(np.percentile(ecmp, 1) / 1e9)},
            "data": {"ar": ar / 1e9, "ecmp": ecmp / 1e9}}


def latencies(mode: str, load: float, seeds: int, down_fraction: float = 0.0,
              pattern: str = "permutation") -> np.ndarray:
    """Per-flow path latency (s) of cross-leaf traffic offered at `load` of line rate per host:
    a permutation, or an all-to-all (each host's load spread over every other leaf's hosts)."""
    f = fabric64()
    out = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        if pattern == "permutation":
            src_h, dst_h = np.arange(64), cross_leaf_permutation(rng)
        else:
            src_h = np.repeat(np.arange(64), 64)
            dst_h = np.tile(np.arange(64), 64)
            keep = src_h // 8 != dst_h // 8
            src_h, dst_h = src_h[keep], dst_h[keep]
        st = FabricState(f, mode=[mode], seed=seed)
        if down_fraction:
            pool = np.flatnonzero(f.cable_tier == 1)
            st.cable_gbps[rng.choice(pool, int(round(down_fraction * len(pool))), replace=False)] = 0
            st.converge()
        inc = route(st, endpoints(f, src_h), endpoints(f, dst_h))
        cap = st.link_capacity_bps()
        n = len(src_h)
        demand = np.full(n, load * LINE * 64 / n)
        rates = max_min_rates(inc, cap, flow_cap=demand)
        q = queue_state(inc, rates, cap, demand, np.ones(n, bool),
                        QueueConfig(hop_latency_s=HOP_S), link_pos=f.link_position)
        out.append(path_latency(inc, q.delay_s))
    return np.concatenate(out)


def e2_latency(scale: float = 1.0) -> dict:
    seeds = max(5, int(50 * scale))
    ar, ecmp = latencies("ar", 0.75, seeds), latencies("ecmp", 0.75, seeds)
    return {"name": "2. p99 latency at 75% offered load (us)",
            "paper": {"ar": 8.5, "ecmp": 17.5},
            "twin": {"ar": float(np.percentile(ar, 99) * 1e6), "ecmp": float(np.percentile(ecmp, 99) * 1e6)},
            "data": {"ar": ar * 1e6, "ecmp": ecmp * 1e6}}


def collective_busbw(f, kind: str, hosts: np.ndarray, mode: str, size: float, seed: int = 0,
                     others: list[Collective] | None = None) -> float:
    """Bus bandwidth (GB/s) of a collective on `hosts`, alone or beside `others`."""
    coll = Collective(kind, hosts, size, seed=seed)
    parts = [coll.transfers(f.spec.nics_per_host, job=0)]
    for j, o in enumerate(others or [], 1):
        parts.append(o.transfers(f.spec.nics_per_host, job=j))
    tr = Transfers.concat(parts, entropy_base=seed * 7919)
    res = simulate(FabricState(f, mode=[mode] * f.spec.planes, seed=seed), tr)
    t = res.finish[tr.job == 0].max()
    return size / t * coll.bus_factor / 1e9


def e3_alltoall(scale: float = 1.0) -> dict:
    f = fabric64()
    seeds = max(2, int(10 * scale))
    ar = [collective_busbw(f, "alltoall", np.arange(64), "ar", 256e6, s) for s in range(seeds)]
    ecmp = [collective_busbw(f, "alltoall", np.arange(64), "ecmp", 256e6, s) for s in range(seeds)]
    return {"name": "3. all-to-all on an idle fabric, bus bandwidth (GB/s)",
            "paper": {"ar": 49.4, "ecmp": 43.0},
            "twin": {"ar": float(np.mean(ar)), "ecmp": float(np.mean(ecmp))},
            "data": {"ar": np.array(ar), "ecmp": np.array(ecmp)}}


def e4_isolation(scale: float = 1.0) -> dict:
    """16 victims (2 per leaf) run a ring all-reduce beside 48 noisy hosts running all-to-all."""
    f = fabric64()
    victims = np.array([leaf * 8 + k for leaf in range(8) for k in (0, 1)])
    noisy = np.setdiff1d(np.arange(64), victims)
    seeds = max(2, int(10 * scale))
    out = {}
    for mode in ("ar", "ecmp"):
        drops = []
        for s in range(seeds):
            alone = collective_busbw(f, "allreduce_ring", victims, mode, 64e6, s)
            beside = collective_busbw(f, "allreduce_ring", victims, mode, 64e6, s,
                                      others=[Collective("alltoall", noisy, 2e9, seed=s)])
            drops.append(beside / alone - 1)
        out[mode] = np.array(drops)
    return {"name": "4. isolation: victims' bus bandwidth beside noisy all-to-all (change, %)",
            "paper": {"ar": 0.0, "ecmp": -80.0},
            "twin": {m: float(v.mean() * 100) for m, v in out.items()}, "data": out}


def alltoall_fraction(f, down_fraction: float, seed: int) -> float:
    """Aggregate bandwidth of an all-to-all between hosts of different leaves (all traffic
    through the spine, as in the paper's setup), with `down_fraction` of fabric links down,
    relative to the healthy fabric."""
    rng = np.random.default_rng(seed)
    hosts = np.arange(f.spec.hosts)
    src = np.repeat(hosts, len(hosts) - 1)
    dst = np.array([d for s_ in hosts for d in hosts if d != s_])
    per_leaf = f.hosts_per_leaf
    cross = src // per_leaf != dst // per_leaf
    src, dst = src[cross], dst[cross]
    healthy = FabricState(f, mode=["ar"])
    inc = route_transfers(healthy, src, dst)
    base = max_min_rates(inc, healthy.link_capacity_bps()).sum()
    st = FabricState(f, mode=["ar"])
    pool = np.flatnonzero(f.cable_tier == 1)
    st.cable_gbps[rng.choice(pool, int(round(down_fraction * len(pool))), replace=False)] = 0
    st.converge()
    st.nic_notices()
    return float(max_min_rates(route_transfers(st, src, dst), st.link_capacity_bps()).sum() / base)


def e5_links_down(scale: float = 1.0) -> dict:
    f = build(FabricSpec(hosts=128, leaf_radix=32, spine_radix=32, hosts_per_leaf=16))
    seeds = max(2, int(10 * scale))
    bw = np.array([alltoall_fraction(f, 0.1, s) for s in range(seeds)])
    lat_ok = latencies("ar", 0.75, max(3, int(20 * scale)), pattern="alltoall")
    lat_down = latencies("ar", 0.75, max(3, int(20 * scale)), down_fraction=0.1, pattern="alltoall")
    p_ok, p_down = np.percentile(lat_ok, 99), np.percentile(lat_down, 99)
    return {"name": "5. 10% of fabric links down: bandwidth and p99 latency (change, %)",
            "paper": {"bandwidth": -11.2, "p99 latency": 6.6},
            "twin": {"bandwidth": float((bw.mean() - 1) * 100), "p99 latency": float((p_down / p_ok - 1) * 100)},
            "data": {"bandwidth": bw}}


def plane_failure_timeline(nic_mode: str, hosts: int = 32, until: float = 1.3, step: float = 0.0005):
    f = build(FabricSpec(hosts=hosts, planes=4, leaf_radix=16, spine_radix=16, hosts_per_leaf=8,
                         host_speed_gbps=200, fabric_speed_gbps=200))
    h = np.arange(hosts)
    tr = Transfers(h, (h + 8) % hosts, np.full(hosts, 1e13), np.zeros(hosts))
    fail = [LinkChange(0.01, int(c), 0.0) for c in np.flatnonzero(f.cable_plane == 1)]
    res = simulate(FabricState(f, mode=["ar"] * 4, nic_mode=nic_mode), tr, changes=fail,
                   sample_every=step, until=until)
    up = 2 * np.flatnonzero(f.cable_tier == 0)
    sent = res.link_bytes_at[:, up].sum(axis=1)
    bps = np.diff(sent) / np.diff(res.sample_times) * 8 / (hosts * 4 * 200e9)
    return res.sample_times[1:], bps


def e6_plane_failure(scale: float = 1.0) -> dict:
    out = {}
    for mode in ("hw", "sw"):
        t, frac = plane_failure_timeline(mode)
        after = (t > 0.0101) & (frac >= 0.75 - 1e-9)
        out[mode] = (t, frac, float(t[after][0] - 0.01) if after.any() else float("inf"))
    return {"name": "6. 1 of 4 planes fails: time back to 75% of line rate (ms)",
            "paper": {"hw": 3.0, "sw": 1100.0},
            "twin": {m: v[2] * 1e3 for m, v in out.items()}, "data": out}


def e7_convergence(scale: float = 1.0) -> dict:
    """ECMP fabric of 4096 hosts x 8 NICs (32,768 endpoints); a ring all-reduce of about 50 ms;
    a spine link under the ring fails at 10 ms; completion grows by what the control plane takes."""
    hosts = 4096 if scale >= 1 else 512
    f = build(FabricSpec(hosts=hosts, nics_per_host=8, leaf_radix=512, spine_radix=512,
                         hosts_per_leaf=min(256, hosts // 2), host_speed_gbps=400, fabric_speed_gbps=400))
    size = 50e-3 * 50e9 * 8 / (2 * 127 / 128) * (hosts / hosts)  # about 50 ms at line rate per rail
    coll = Collective("allreduce_ring", np.arange(hosts), size)
    tr = coll.transfers(8)
    base = simulate(FabricState(f, mode=["ecmp"]), tr)
    t0 = base.finish.max()
    # the fabric cable carrying the most bytes of the ring: a failure there stalls it
    fabric = np.flatnonzero(f.cable_tier == 1)
    busy = fabric[np.argmax(base.link_bytes[2 * fabric] + base.link_bytes[2 * fabric + 1])]
    out = {}
    for conv in (0.010, 0.100, 0.300):
        res = simulate(FabricState(f, mode=["ecmp"]), tr, changes=[LinkChange(0.01, int(busy), 0.0)],
                       convergence_s=conv)
        out[f"{int(conv * 1e3)} ms"] = float((res.finish.max() / t0 - 1) * 100)
    return {"name": f"7. control-plane convergence, {hosts * 8:,} endpoints: collective completion (change, %)",
            "paper": {"10 ms": 20.0, "100 ms": 53.0, "300 ms": 260.0}, "twin": out,
            "data": {"baseline_s": t0}}


ALL = (e1_bandwidth, e2_latency, e3_alltoall, e4_isolation, e5_links_down, e6_plane_failure,
       e7_convergence)


"""The published Spectrum-X results (design section 9), re-run on the twin.

Each experiment is a function returning a dict: `name`; per case the paper's figure (`paper`),
the twin's (`twin`), whether the twin's figure is an `output` of the simulation or follows from
an `input` a parameter sets (`kind`), and what it rests on or why it differs (`why`); `data`
holds what is behind them (for the plots). `scale` shrinks the runs for the tests (`scale=1` is
the full run).

Inputs the experiments set (none is fitted to a paper figure): RoCEv2 framing at MTU 4096
(`twin.latency.rocev2`: header sizes from the standards), 0.7 us per hop of switching and
propagation (`twin.latency.HopLatency`: 0.6 us port to port, 20 m of fibre), ECN thresholds of
150 KB / 1.5 MB (`twin.queueing.QueueConfig`), DCQCN's published reaction-point defaults
(`twin.dcqcn.DcqcnParams`: where it holds a saturated port's queue is an output), the PCS
alignment-marker rule of link-down detection and the QP's ACK timeout exponent and retry count
(`twin.planes`), the control-plane convergence times of the paper. Two are chosen and say so in
their rows: the ACK timeout exponent of experiment 6 (the integer nearest the paper's figure; the
paper publishes none) and the collective's length in experiment 7 (which sets its 10 ms penalty).
"""

from __future__ import annotations

import numpy as np

from twin.collectives import Collective
from twin.dcqcn import DcqcnParams
from twin.dcqcn_equilibrium import marking_probability, standing_queue_bytes
from twin.engine import Flows, LinkChange, Transfers, simulate
from twin.latency import HopLatency, md1_tail, md1_wait_survival, rocev2, snapshot_latency
from twin.maxmin import max_min_rates
from twin.planes import LinkDownDetection, PlaneBalancing, QpRetry
from twin.queueing import QueueConfig
from twin.routing import FabricState, route, route_transfers
from twin.topology import FabricSpec, build
from twin.workload import endpoints

LINE = 400e9
FRAMING = rocev2(4096)
ROCE = FRAMING.transport()  # framing and ACKed completion; PFC port sharing (`lossless`) is opt-in
HOP = HopLatency()
DCQCN = DcqcnParams()  # the published defaults (Zhu et al. 2015): inputs, not fitted


def fabric64():
    """64 hosts at 400G, 8 per leaf, 8 leaves, 8 spines: non-blocking, 2 tiers."""
    return build(FabricSpec(hosts=64, leaf_radix=16, spine_radix=16, hosts_per_leaf=8,
                            host_speed_gbps=400, fabric_speed_gbps=400))


def fabric128():
    """128 hosts at 400G, 16 per leaf, 8 leaves with 16 uplinks each to 16 spines."""
    return build(FabricSpec(hosts=128, leaf_radix=32, spine_radix=32, hosts_per_leaf=16))


def cross_leaf_permutation(rng: np.random.Generator, hosts: int = 64, per_leaf: int = 8) -> np.ndarray:
    """A random permutation in which no host sends to its own leaf: all traffic crosses spines."""
    while True:
        perm = rng.permutation(hosts)
        if np.all(perm // per_leaf != np.arange(hosts) // per_leaf):
            return perm


def spread_failures(f, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """`fraction` of the leaf-spine cables, spread so that no leaf and no spine loses more than
    one cable more than another (leaves and spines in a random order)."""
    leaves = sorted(f.leaf_up_cables)
    up = np.array([f.leaf_up_cables[leaf] for leaf in leaves])  # leaves x uplinks (one per spine)
    n = int(round(fraction * up.size))
    li, si = rng.permutation(up.shape[0]), rng.permutation(up.shape[1])
    k = np.arange(n)
    return up[li[k % up.shape[0]], si[(k + k // up.shape[1]) % up.shape[1]]]


def random_failures(f, fraction: float, rng: np.random.Generator) -> np.ndarray:
    pool = np.flatnonzero(f.cable_tier == 1)
    return rng.choice(pool, int(round(fraction * len(pool))), replace=False)


def per_flow_bandwidth(mode: str, seeds: int, size: float = 256e6) -> np.ndarray:
    """Goodput (bits/s) of each flow of cross-leaf permutations of `size`-byte transfers: its
    bytes over its completion time, run with RoCEv2's packets (framing, ACKed completion)."""
    f = fabric64()
    out = []
    for seed in range(seeds):
        perm = cross_leaf_permutation(np.random.default_rng(seed))
        fl = Flows(endpoints(f, np.arange(64)), endpoints(f, perm), np.full(64, size), np.zeros(64))
        res = simulate(FabricState(f, mode=[mode], seed=seed), fl, transport=ROCE,
                       hop_latency_s=HOP.per_hop_s)
        out.append(size * 8 / res.fct)
    return np.concatenate(out)


def e1_bandwidth(scale: float = 1.0) -> dict:
    seeds = max(5, int(50 * scale))
    ar, ecmp = per_flow_bandwidth("ar", seeds) / 1e9, per_flow_bandwidth("ecmp", seeds) / 1e9
    p1 = float(np.percentile(ar, 1))
    return {"name": "1. 64 hosts, all through the spine: 1st-percentile per-host bandwidth (Gb/s)",
            "paper": {"ar": 377.0, "ar median": 0.98 * 400},
            "twin": {"ar": p1, "ar median": float(np.median(ar)), "ecmp": float(np.percentile(ecmp, 1))},
            "kind": {"ar": "output", "ar median": "output", "ecmp": "output"},
            "why": {"ar": f"output: RoCEv2 framing at MTU 4096 (82 header bytes a packet: "
                          f"{FRAMING.efficiency:.2%} of 400G is goodput) and the completion latency "
                          f"of 256 MB transfers; the fluid adaptive routing gives every flow the same "
                          f"rate (spread {ar.max() - ar.min():.2f} Gb/s), so the twin's 1st percentile "
                          f"is its median: the paper's 4% below that is per-packet (AR's local choices "
                          f"colliding downstream, DCQCN oscillating), which a flow-level model does not have",
                    "ar median": "output: the paper's \"98% of line rate\" (392 Gb/s), read as its "
                                 "typical host: line rate less RoCEv2's headers",
                    "ecmp": "output: 5-tuple hash collisions, 2-4 flows on a spine link"},
            "data": {"ar": ar, "ecmp": ecmp}}


def offered(f, mode: str, load: float, seed: int, failed: np.ndarray | None = None,
            pattern: str = "permutation"):
    """Cross-leaf traffic offered at `load` of line rate per host, a permutation or an
    all-to-all (each host's load spread over the other leaves): (incidence, max-min rates,
    demands, capacities), rates and demands on the wire."""
    rng = np.random.default_rng(seed)
    per_leaf, hosts = f.hosts_per_leaf, f.spec.hosts
    if pattern == "permutation":
        src_h, dst_h = np.arange(hosts), cross_leaf_permutation(rng, hosts, per_leaf)
    else:
        src_h, dst_h = np.repeat(np.arange(hosts), hosts), np.tile(np.arange(hosts), hosts)
        keep = src_h // per_leaf != dst_h // per_leaf
        src_h, dst_h = src_h[keep], dst_h[keep]
    st = FabricState(f, mode=[mode], seed=seed)
    if failed is not None and len(failed):
        st.cable_gbps[failed] = 0
        st.converge()
    inc = route(st, endpoints(f, src_h), endpoints(f, dst_h))
    cap = st.link_capacity_bps()
    per_host = np.bincount(src_h, minlength=hosts)[src_h]
    demand = load * LINE / per_host
    return inc, max_min_rates(inc, cap, flow_cap=demand), demand, cap


def utilization_by_hop(f, *args) -> dict[int, tuple[float, float]]:
    """(lowest, highest) utilization of the live links at each hop position, for `offered(*args)`."""
    inc, rates, _, cap = offered(f, *args)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = inc.link_load(rates) / cap
    live = cap > 0
    return {int(p): (float(rho[live & (f.link_position == p)].min()), float(rho[live & (f.link_position == p)].max()))
            for p in np.unique(f.link_position)}


def latency_of(f, mode: str, load: float, seed: int, failed: np.ndarray | None = None,
               pattern: str = "permutation", cfg: QueueConfig | None = None,
               cc: DcqcnParams | None = DCQCN, hop: HopLatency = HOP):
    """The latency model (`twin.latency`) of `offered` traffic. Saturated ports hold DCQCN's
    fixed-point queue (`twin.dcqcn_equilibrium`); `cc=None` puts `twin.queueing`'s
    standing-queue formula there instead."""
    inc, rates, demand, cap = offered(f, mode, load, seed, failed, pattern)
    return snapshot_latency(inc, rates, demand, cap, f.link_position, FRAMING, hop, cfg, cc)


def p99_latency_us(f, mode: str, load: float, seeds: int, failures=None, pattern="permutation",
                   cfg: QueueConfig | None = None, cc: DcqcnParams | None = DCQCN,
                   hop: HopLatency = HOP) -> np.ndarray:
    """Per seed, the p99 over every packet of the latency model (us)."""
    out = []
    for seed in range(seeds):
        failed = failures(f, np.random.default_rng(1000 + seed)) if failures else None
        out.append(latency_of(f, mode, load, seed, failed, pattern, cfg, cc, hop).percentile(99) * 1e6)
    return np.array(out)


def md1_p99_wait_packets(rho: float) -> float:
    """The p99 of one M/D/1 queue's wait at utilization `rho`, in packet times (the latency
    model's per-hop tail, `twin.latency.md1_tail`)."""
    c, theta = md1_tail(np.array([rho]))
    return float(np.log(c[0] / 0.01) / theta[0])


def e2_latency(scale: float = 1.0) -> dict:
    seeds = max(5, int(50 * scale))
    f = fabric64()
    ar, ecmp = p99_latency_us(f, "ar", 0.75, seeds), p99_latency_us(f, "ecmp", 0.75, seeds)
    # sensitivities, not fits: the saturated ports' queue by twin.queueing's formula, and with
    # DCQCN's additive increase 10x the published default (a 400G NIC might scale it)
    formula = p99_latency_us(f, "ecmp", 0.75, seeds, cc=None)
    rai10 = p99_latency_us(f, "ecmp", 0.75, seeds, cc=DcqcnParams(rai_bps=10 * DCQCN.rai_bps))
    model = latency_of(f, "ar", 0.75, 0)
    fixed = float(model.fixed_s.max() * 1e6)
    pkt_us = FRAMING.wire_bytes * 8 / LINE * 1e6
    per_hop = md1_p99_wait_packets(0.75)
    held = standing_queue_bytes(np.array([2]), np.array([LINE]), FRAMING.wire_bytes, cc=DCQCN)[0]
    held10 = standing_queue_bytes(np.array([2]), np.array([LINE]), FRAMING.wire_bytes,
                                  cc=DcqcnParams(rai_bps=10 * DCQCN.rai_bps))[0]
    p_star = marking_probability(np.array([LINE / 2]), FRAMING.wire_bytes, DCQCN)[0]
    gap_lo, gap_hi = 8.0 - np.median(ar), 9.0 - np.median(ar)
    need = gap_lo / pkt_us  # packet times of extra wait the paper's AR tail would need
    twin = {"ar": float(np.median(ar)), "ecmp": float(np.median(ecmp)),
            "ecmp - ar": float(np.median(ecmp) - np.median(ar)),
            "ecmp, queue by formula": float(np.median(formula)),
            "ecmp, DCQCN R_AI x10": float(np.median(rai10)),
            "ecmp + the paper's AR gap": float(np.median(ecmp) + 8.5 - np.median(ar))}
    why = {"ar": f"{fixed:.2f} us are inputs (4 hops x {HOP.per_hop_s * 1e6:.1f} us of switching and "
                 f"propagation, store-and-forward of {FRAMING.wire_bytes}-byte packets, "
                 f"{pkt_us * 1e3:.1f} ns each); {np.median(ar) - fixed:.2f} us are M/D/1 queueing at 75% "
                 f"(output: one hop's p99 wait is {per_hop:.1f} packet times = {per_hop * pkt_us:.2f} us). "
                 f"The paper's 8-9 us leave {gap_lo:.1f}-{gap_hi:.1f} us: as queueing at 75% load that "
                 f"would be {need:.0f}+ packet times of wait, which an M/D/1 hop at 75% exceeds with "
                 f"probability {float(md1_wait_survival(np.array([0.75]), np.array([need]))[0, 0]):.0e}; "
                 f"it is the part of the paper's end-to-end probe the twin has no model of (the "
                 f"two NICs, PCIe and the host stack: `HopLatency.nic_s` = 0, no published figure)",
           "ecmp": f"colliding flows saturate their leaf uplinks and spine downlinks; DCQCN (its "
                   f"published defaults) holds the queue there at its fixed point: marking "
                   f"probability {p_star:.1e} for 2 flows, a queue of {held / 1e3:.1f} KB, "
                   f"{held * 8 / LINE * 1e6:.2f} us per saturated hop (output; Kmin = 150 KB is an "
                   f"input and sets it: p* << pmax). The paper's 13-22 us include the same "
                   f"unmodelled end-to-end part as its AR figure",
           "ecmp - ar": "output: what ECMP's collisions and DCQCN's standing queues add to the tail; "
                        "the part neither models cancels. The paper's range is 13-22 minus 8-9 us",
           "ecmp, queue by formula": "sensitivity: twin.queueing's formula Kmin + (Kmax - Kmin)(1 - 1/N) "
                                     "at saturated ports (what this experiment used before): DCQCN's "
                                     "fixed point stands far lower",
           "ecmp, DCQCN R_AI x10": f"sensitivity: p* grows with R_AI (less than R_AI^(1/3): hyper increase, R_HAI "
                                   f"unchanged, carries much of the recovery) but stays << pmax: "
                                   f"2 flows' queue {held / 1e3:.1f} -> {held10 / 1e3:.1f} KB",
           "ecmp + the paper's AR gap": "consistency check, not a result: the twin's ECMP p99 plus what "
                                        "the paper's AR figure has beyond the twin's (8.5 us less the "
                                        "twin's AR p99, an input from the paper): if that part is the "
                                        "same end-to-end latency in both, the twin's ECMP tail falls "
                                        "inside the paper's 13-22 us"}
    return {"name": "2. p99 latency at 75% offered load (us)",
            "paper": {"ar": 8.5, "ecmp": 17.5, "ecmp - ar": 9.0},
            "range": {"ar": (8.0, 9.0), "ecmp": (13.0, 22.0), "ecmp - ar": (4.0, 14.0)},
            "twin": twin,
            "kind": {"ar": "input + output", "ecmp": "input + output", "ecmp - ar": "output",
                     "ecmp, queue by formula": "sensitivity", "ecmp, DCQCN R_AI x10": "sensitivity",
                     "ecmp + the paper's AR gap": "output + paper's figure (input)"},
            "why": why,
            "data": {"ar": ar, "ecmp": ecmp, "ecmp, queue by formula": formula,
                     "dcqcn_queue_bytes": held, "dcqcn_p": p_star}}


def collective_busbw(f, kind: str, hosts: np.ndarray, mode: str, size: float, seed: int = 0,
                     others: list[Collective] | None = None) -> float:
    """Bus bandwidth (GB/s) of a collective on `hosts`, alone or beside `others`, with RoCEv2's
    packets."""
    coll = Collective(kind, hosts, size, seed=seed)
    parts = [coll.transfers(f.spec.nics_per_host, job=0)]
    for j, o in enumerate(others or [], 1):
        parts.append(o.transfers(f.spec.nics_per_host, job=j))
    tr = Transfers.concat(parts, entropy_base=seed * 7919)
    res = simulate(FabricState(f, mode=[mode] * f.spec.planes, seed=seed), tr, transport=ROCE,
                   hop_latency_s=HOP.per_hop_s)
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
            "kind": {"ar": "output", "ecmp": "output"},
            "why": {"ar": "output: line rate less RoCEv2 framing", "ecmp": "output: hash collisions"},
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
            "twin": {m: float(v.mean() * 100) for m, v in out.items()},
            "kind": {"ar": "output", "ecmp": "output"},
            "why": {"ar": "output: max-min sharing over balanced links",
                    "ecmp": "output: victims' ring flows hashed onto links the all-to-all fills"},
            "data": out}


def alltoall_bandwidth(f, failed: np.ndarray | None) -> float:
    """Per-host goodput (Gb/s) of an all-to-all between hosts of different leaves (all traffic
    through the spine, as in the paper's setup), with the `failed` cables down."""
    hosts = np.arange(f.spec.hosts)
    src, dst = np.repeat(hosts, len(hosts)), np.tile(hosts, len(hosts))
    cross = src // f.hosts_per_leaf != dst // f.hosts_per_leaf
    src, dst = src[cross], dst[cross]
    st = FabricState(f, mode=["ar"])
    if failed is not None and len(failed):
        st.cable_gbps[failed] = 0
        st.converge()
        st.nic_notices()
    rates = max_min_rates(route_transfers(st, src, dst), st.link_capacity_bps())
    return float(FRAMING.goodput_bps(rates.sum() / len(hosts)) / 1e9)


def e5_links_down(scale: float = 1.0) -> dict:
    f = fabric128()
    seeds = max(2, int(10 * scale))
    spread = lambda f_, rng: spread_failures(f_, 0.1, rng)  # noqa: E731
    rand = lambda f_, rng: random_failures(f_, 0.1, rng)  # noqa: E731
    bw_ok = alltoall_bandwidth(f, None)
    bw_down = np.array([alltoall_bandwidth(f, spread(f, np.random.default_rng(1000 + s))) for s in range(seeds)])
    bw_rand = np.array([alltoall_bandwidth(f, rand(f, np.random.default_rng(1000 + s))) for s in range(seeds)])
    lat_seeds = max(2, int(10 * scale))
    lat_ok = p99_latency_us(f, "ar", 0.75, 1, pattern="alltoall")[0]
    lat_down = p99_latency_us(f, "ar", 0.75, lat_seeds, failures=spread, pattern="alltoall")
    lat_rand = p99_latency_us(f, "ar", 0.75, lat_seeds, failures=rand, pattern="alltoall")
    # the bandwidth test's own load: every host sending at line rate
    full_ok = p99_latency_us(f, "ar", 1.0, 1, pattern="alltoall")[0]
    full_down = p99_latency_us(f, "ar", 1.0, max(1, lat_seeds // 2), failures=spread, pattern="alltoall")
    rho = 0.75 * 16 / 14  # a leaf's 14 surviving uplinks carry what 16 did
    util = utilization_by_hop(f, "ar", 1.0, 0, spread(f, np.random.default_rng(1000)), "alltoall")
    pkt_us = FRAMING.wire_bytes * 8 / LINE * 1e6
    held = standing_queue_bytes(np.array([1]), np.array([LINE]), FRAMING.wire_bytes, cc=DCQCN)[0]
    twin = {"bandwidth healthy": bw_ok, "bandwidth 10% down": float(bw_down.mean()),
            "p99 latency healthy": float(lat_ok), "p99 latency 10% down": float(np.median(lat_down)),
            "p99 latency change %": float((np.median(lat_down) / lat_ok - 1) * 100),
            "p99 latency increase (us)": float(np.median(lat_down) - lat_ok),
            "full load: p99 healthy": float(full_ok), "full load: p99 10% down": float(np.median(full_down)),
            "full load: p99 change %": float((np.median(full_down) / full_ok - 1) * 100),
            "full load: p99 increase (us)": float(np.median(full_down) - full_ok),
            "bandwidth, random 10%": float(bw_rand.mean()),
            "p99 latency, random 10%": float(np.median(lat_rand)),
            "p99 increase, random 10% (us)": float(np.median(lat_rand) - lat_ok)}
    kind = dict.fromkeys(twin, "output")
    for k in ("p99 latency healthy", "p99 latency 10% down", "full load: p99 healthy", "full load: p99 10% down"):
        kind[k] = "input + output"
    why = {"bandwidth healthy": "output: line rate less RoCEv2 framing",
           "bandwidth 10% down": f"output: capacity-proportional (13 of 128 leaf-spine cables, at most "
                                 f"2 of a leaf's 16); the paper's {335.3 / 377.8 - 1:+.1%} against the "
                                 f"twin's {bw_down.mean() / bw_ok - 1:+.1%}",
           "p99 latency healthy": f"at 75% load, as experiment 2 (the twin's earlier reading of the "
                                  f"setup): 3.13 us of inputs (hops, store-and-forward) plus "
                                  f"{lat_ok - 3.134:.2f} us of M/D/1 queueing. The paper's baseline is "
                                  f"14.97 us, not experiment 2's 8-9 us at 75%: its latency was taken "
                                  f"at another load or on another fabric (neither is given)",
           "p99 latency 10% down": "as healthy: the increase is the output",
           "p99 latency change %": f"output: the surviving uplinks of the leaves that lost 2 run at "
                                   f"{rho:.1%} instead of 75%: one hop's M/D/1 p99 wait grows from "
                                   f"{md1_p99_wait_packets(0.75):.1f} to {md1_p99_wait_packets(rho):.1f} "
                                   f"packet times ({pkt_us * 1e3:.1f} ns each); a percentage of the "
                                   f"twin's {lat_ok:.2f} us base, which lacks the paper's end-to-end part",
           "p99 latency increase (us)": "output: the queueing the failures add at 75% load, "
                                        "comparable without the fixed latency; below the paper's +0.99",
           "full load: p99 healthy": f"the setup the paper's bandwidth figures imply (hosts at line "
                                     f"rate): every fabric port runs at 100% and DCQCN holds its queue "
                                     f"at the fixed point ({held / 1e3:.1f} KB, "
                                     f"{held * 8 / LINE * 1e6:.2f} us a hop, 3 hops after the NIC) on "
                                     f"top of the 3.13 us of inputs; Kmin (an input) sets the 9 us. "
                                     f"The paper's 14.97 us leave {14.97 - full_ok:.1f} us for what the "
                                     f"twin does not model (experiment 2's AR gap is 3.7-4.7 us)",
           "full load: p99 10% down": "as full load healthy: the increase is the output",
           "full load: p99 change %": f"output: the uplinks of the leaves that lost 2 saturate and "
                                      f"hold DCQCN's queue, and hold back their hosts' flows: the other "
                                      f"ports fall below 100% (first draw: fabric links {util[1][0]:.0%}-"
                                      f"{util[1][1]:.0%}, host ports {util[3][0]:.0%}-{util[3][1]:.0%}), "
                                      f"where the latency model's M/D/1 queues (one hop's p99 wait at "
                                      f"{util[1][0]:.0%}: {md1_p99_wait_packets(util[1][0]):.0f} packet "
                                      f"times) are longer than DCQCN's at 100%. That seam (Poisson "
                                      f"packets below saturation, a controlled queue at it) makes this "
                                      f"row an upper reading",
           "full load: p99 increase (us)": "output: above the paper's +0.99 us, where 75% load is "
                                           "below it: the paper's figure lies between the two loads, "
                                           "and its load is not given",
           "bandwidth, random 10%": "output: a leaf that loses more of its uplinks limits its hosts",
           "p99 latency, random 10%": f"output, 75% load, median over {lat_seeds} random draws (worst "
                                      f"{lat_rand.max():.1f} us): a leaf that loses 4 of its 16 uplinks "
                                      f"saturates and DCQCN's standing queue sets the tail; the paper "
                                      f"does not say which links failed",
           "p99 increase, random 10% (us)": f"output, 75% load: the paper's +0.99 us lies between "
                                            f"failures spread over the leaves "
                                            f"(+{np.median(lat_down) - lat_ok:.2f}) and drawn at "
                                            f"random (median +{np.median(lat_rand) - lat_ok:.2f}); "
                                            f"which links failed decides it"}
    return {"name": "5. 10% of fabric links down: per-host bandwidth (Gb/s) and p99 latency (us)",
            "paper": {"bandwidth healthy": 377.8, "bandwidth 10% down": 335.3,
                      "p99 latency healthy": 14.97, "p99 latency 10% down": 15.96,
                      "p99 latency change %": 6.6, "p99 latency increase (us)": 0.99,
                      "full load: p99 healthy": 14.97, "full load: p99 10% down": 15.96,
                      "full load: p99 change %": 6.6, "full load: p99 increase (us)": 0.99,
                      "p99 increase, random 10% (us)": 0.99},
            "twin": twin, "kind": kind, "why": why,
            "data": {"bandwidth 10% down": bw_down, "p99 latency 10% down": lat_down,
                     "bandwidth, random 10%": bw_rand, "p99 latency, random 10%": lat_rand,
                     "full load: p99 10% down": full_down}}


def _plane_fabric(hosts: int = 32):
    return build(FabricSpec(hosts=hosts, planes=4, leaf_radix=16, spine_radix=16, hosts_per_leaf=8,
                            host_speed_gbps=200, fabric_speed_gbps=200))


def plane_failure_timeline(nic_mode: str, planes: PlaneBalancing, until: float, step: float,
                           hosts: int = 32, fail_at: float = 0.01):
    """Goodput the transfers make (% of line rate) over time when plane 1 fails at `fail_at`:
    each transfer is one stream over the planes that completes in order, so a plane stalled
    under it stalls it (go-back-N RoCE loses a quarter of its packets until the NIC masks the
    plane; a QP pinned to the dead plane holds up its collective until the transport gives up)."""
    f = _plane_fabric(hosts)
    h = np.arange(hosts)
    tr = Transfers(h, (h + 8) % hosts, np.full(hosts, 1e13), np.zeros(hosts))
    fail = [LinkChange(fail_at, int(c), 0.0) for c in np.flatnonzero(f.cable_plane == 1)]
    res = simulate(FabricState(f, mode=["ar"] * 4, nic_mode=nic_mode), tr, changes=fail,
                   sample_every=step, until=until, planes=planes)
    up = 2 * np.flatnonzero(f.cable_tier == 0)
    sent = res.link_bytes_at[:, up].sum(axis=1)
    frac = np.diff(sent) / np.diff(res.sample_times) * 8 / (hosts * 4 * 200e9)
    return res.sample_times[1:], frac


def plane_ports_timeline(until: float, step: float, hosts: int = 32, fail_at: float = 0.01):
    """What the NIC ports carry (% of line rate) when plane 1 fails: one flow per plane and
    host, the surviving planes' go on at their line rate whatever the transfers wait for."""
    f = _plane_fabric(hosts)
    h = np.arange(hosts)
    src = np.concatenate([endpoints(f, h, plane=p) for p in range(4)])
    dst = np.concatenate([endpoints(f, (h + 8) % hosts, plane=p) for p in range(4)])
    fl = Flows(src, dst, np.full(len(src), 1e13), np.zeros(len(src)))
    fail = [LinkChange(fail_at, int(c), 0.0) for c in np.flatnonzero(f.cable_plane == 1)]
    res = simulate(FabricState(f, mode=["ar"] * 4), fl, changes=fail, sample_every=step, until=until)
    up = 2 * np.flatnonzero(f.cable_tier == 0)
    sent = res.link_bytes_at[:, up].sum(axis=1)
    return res.sample_times[1:], np.diff(sent) / np.diff(res.sample_times) * 8 / (hosts * 4 * 200e9)


def recovery_ms(t: np.ndarray, frac: np.ndarray, fail_at: float = 0.01) -> float:
    """Milliseconds from the failure until the goodput is back at 75% of line rate: the first
    sample at 75%, less the share of the sample before it that already ran at that rate (a
    sample holding the recovery averages the stall and the recovered rate)."""
    after = np.flatnonzero((t > fail_at) & (frac >= 0.75 - 1e-9))
    if not after.size:
        return float("inf")
    k = after[0]
    prev = frac[k - 1] if k > 0 and t[k - 1] > fail_at else 0.0
    back = t[k - 1] - (t[k] - t[k - 1]) * prev / frac[k]
    return float((back - fail_at) * 1e3)


def e6_plane_failure(scale: float = 1.0) -> dict:
    hw = PlaneBalancing(link_down=LinkDownDetection())
    sw15 = PlaneBalancing(qp=QpRetry(ack_timeout_exponent=15, retry_count=7))
    nccl = PlaneBalancing()  # NCCL's defaults: NCCL_IB_TIMEOUT=20, NCCL_IB_RETRY_CNT=7
    step = 1e-4
    t_hw, f_hw = plane_failure_timeline("hw", hw, until=0.02, step=step)
    t_sw, f_sw = plane_failure_timeline("sw", sw15, until=1.2, step=1e-3)
    # samples aligned on the failure (10 ms): none averages the stall with the time before it
    t_nc, f_nc = plane_failure_timeline("sw", nccl, until=36.0, step=0.01)
    t_pt, f_pt = plane_ports_timeline(until=1.2, step=1e-3)
    twin = {"hw": recovery_ms(t_hw, f_hw), "sw": recovery_ms(t_sw, f_sw),
            "sw, NCCL defaults": recovery_ms(t_nc, f_nc)}
    return {"name": "6. 1 of 4 planes fails: time back to 75% of line rate (ms)",
            "paper": {"hw": 3.0, "sw": 1100.0}, "bound": {"hw": "under"},
            "twin": twin,
            "kind": {"hw": "output of inputs", "sw": "output of inputs (exponent selected)",
                     "sw, NCCL defaults": "output of inputs"},
            "why": {"hw": f"the NIC's port declares link down after 4 bad PCS alignment markers "
                          f"(IEEE 802.3 clause 82 spacing: {hw.link_down.detect_s * 1e3:.2f} ms), then "
                          f"masks the plane; the paper's figure is an upper bound (under 3 ms), the "
                          f"twin's is within it",
                    "sw": f"each QP on the dead plane waits one ACK timeout for its sending and "
                          f"one for each of its 7 retries, then goes to error: 4.096 us x 2^15 x "
                          f"(7 + 1) = {sw15.qp.give_up_s:.3f} s, and the collective moves its "
                          f"traffic. The retry count is NCCL's default; the exponent is not "
                          f"published: 15 is selected as the integer whose give-up time is nearest "
                          f"the paper's (14 gives {QpRetry(14, 7).give_up_s:.2f} s, 16 "
                          f"{QpRetry(16, 7).give_up_s:.2f} s), so the agreement within 10% is "
                          f"partly that selection",
                    "sw, NCCL defaults": f"NCCL_IB_TIMEOUT=20, NCCL_IB_RETRY_CNT=7: "
                                         f"{nccl.qp.give_up_s:.1f} s"},
            "data": {"hw": (t_hw, f_hw), "sw": (t_sw, f_sw), "sw, NCCL defaults": (t_nc, f_nc),
                     "ports": (t_pt, f_pt)}}


def e7_convergence(scale: float = 1.0) -> dict:
    """ECMP fabric of 4096 hosts x 8 NICs (32,768 endpoints); a ring all-reduce of about 50 ms;
    a spine link under the ring fails at 10 ms: the ring's flows hashed onto it stall until the
    control plane converges (the event), then rehash onto the links left."""
    hosts = 4096 if scale >= 1 else 512
    f = build(FabricSpec(hosts=hosts, nics_per_host=8, leaf_radix=512, spine_radix=512,
                         hosts_per_leaf=min(256, hosts // 2), host_speed_gbps=400, fabric_speed_gbps=400))
    size = 50e-3 * 50e9 * 8 / (2 * 127 / 128)  # about 50 ms at line rate per rail
    coll = Collective("allreduce_ring", np.arange(hosts), size)
    tr = coll.transfers(8)
    base = simulate(FabricState(f, mode=["ecmp"]), tr)
    t0 = base.finish.max()
    # the fabric cable carrying the most bytes of the ring: a failure there stalls it
    fabric = np.flatnonzero(f.cable_tier == 1)
    busy = fabric[np.argmax(base.link_bytes[2 * fabric] + base.link_bytes[2 * fabric + 1])]
    st = FabricState(f, mode=["ecmp"])
    inc = tr.incidence(st)
    through = inc.flows_touching(np.isin(np.arange(f.n_links), [2 * busy, 2 * busy + 1]))
    out, stalled = {}, {}
    for conv in (0.010, 0.100, 0.300):
        res = simulate(st, tr, changes=[LinkChange(0.01, int(busy), 0.0)], convergence_s=conv)
        key = f"{int(conv * 1e3)} ms"
        out[key] = float((res.finish.max() / t0 - 1) * 100)
        stalled[key] = float(np.median(res.finish[through] - base.finish[through]) * 1e3)
    twin = dict(out)
    twin["100 ms / 10 ms"] = out["100 ms"] / out["10 ms"]
    twin["300 ms / 10 ms"] = out["300 ms"] / out["10 ms"]
    paper = {"10 ms": 20.0, "100 ms": 53.0, "300 ms": 260.0, "100 ms / 10 ms": 53.0 / 20.0,
             "300 ms / 10 ms": 260.0 / 20.0}
    fit = convergence_models_fit(paper)
    n = int(through.sum())
    flows = f"{n} ring flow{'s' if n != 1 else ''}"
    why = {"10 ms": f"{flows} cross the failed link and stall for the 10 ms (median delay "
                    f"{stalled['10 ms']:.1f} ms), the ring waits for them: +10 ms on a collective of "
                    f"{t0 * 1e3:.1f} ms. That length is chosen (about 50 ms at line rate; the paper does "
                    f"not publish its collective), so this agreement is put in by it: an input",
           "100 ms / 10 ms": f"output, whatever the collective's length: a stall of c then a rehash "
                             f"costs c / T, linear. The paper's 2.65 and 13 are not: its three points "
                             f"imply T = c / penalty = {10 / 0.20:.0f}, {100 / 0.53:.0f} and "
                             f"{300 / 2.60:.0f} ms. A stall plus a fixed resume delay r, (c + r) / T, "
                             f"fits 2.65 with r = {fit['r_ms']:.1f} ms and then gives "
                             f"{fit['r_ratio3']:.1f}, not 13; resuming at the first RoCE ACK timeout "
                             f"after convergence (a staircase ceil(c / t) t) comes no closer than "
                             f"{fit['stair_err'] * 100:.0f}% on either ratio for any t of 0.1-1000 ms "
                             f"(best t = {fit['stair_t_ms']:.1f} ms). So the paper's figures need a setup "
                             f"it does not describe (collective size, when the failure falls, over how "
                             f"many collectives its p99 is taken) that neither stall model gives",
           "300 ms / 10 ms": "output, as the 100 ms / 10 ms ratio"}
    for k in ("100 ms", "300 ms"):
        why[k] = (f"output given the collective's length (an input): {flows} stall until the "
                  f"control plane converges (median delay {stalled[k]:.1f} ms), then rehash; the ring "
                  f"waits for them. The ratios below compare without that length")
    kind = {"10 ms": "input (collective length)", "100 ms": "output", "300 ms": "output",
            "100 ms / 10 ms": "output", "300 ms / 10 ms": "output"}
    return {"name": f"7. control-plane convergence, {hosts * 8:,} endpoints: collective completion (change, %)",
            "paper": paper, "twin": twin, "kind": kind, "why": why,
            "data": {"baseline_s": t0, "stall_ms": stalled, "flows_through": n, "fit": fit}}


def convergence_models_fit(paper: dict) -> dict:
    """How close simple stall models come to the paper's penalty ratios (100 / 10 ms and
    300 / 10 ms): a stall plus a fixed resume delay r, fitted to the first ratio; and a resume
    at the first retransmission timeout t after convergence, searched over t."""
    r2, r3 = paper["100 ms / 10 ms"], paper["300 ms / 10 ms"]
    r = (100 - 10 * r2) / (r2 - 1)  # (100 + r) / (10 + r) = r2
    t = np.geomspace(0.1, 1000, 20001)
    pen = {c: np.ceil(c / t - 1e-9) * t for c in (10, 100, 300)}
    err = np.maximum(abs(pen[100] / pen[10] / r2 - 1), abs(pen[300] / pen[10] / r3 - 1))
    k = int(np.argmin(err))
    return {"r_ms": float(r), "r_ratio3": float((300 + r) / (10 + r)), "stair_err": float(err[k]),
            "stair_t_ms": float(t[k])}


ALL = (e1_bandwidth, e2_latency, e3_alltoall, e4_isolation, e5_links_down, e6_plane_failure,
       e7_convergence)

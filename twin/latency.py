"""Bandwidth and latency as outputs: packet framing, per-hop latency and its distribution.

Framing: every packet carries `mtu` bytes of payload inside headers the wire pays for too
(RoCEv2: Ethernet, IPv4, UDP, InfiniBand BTH and ICRC, FCS, and the preamble and inter-frame
gap the PHY spends between frames), so a flow at line rate delivers `mtu / wire_bytes` of it as
goodput: 4096 / 4178 of 400 Gb/s = 392.2 Gb/s for RoCEv2 at MTU 4096. What is counted, and
what is not (one RETH per RDMA WRITE message, ACKs on the reverse path, a VLAN tag when PFC
runs on PCP instead of DSCP), is in each `Framing`.

Latency of a packet on a path: for every hop, propagation and switching (`HopLatency`, inputs
a fabric's cables and switches set), its store-and-forward serialization (the packet's wire
bytes at the link's speed) and the wait in the egress queue. The wait is what the model
produces (an output): at a switch port below saturation an M/D/1 queue of the port's
utilization, whose waiting-time tail is the Cramer-Lundberg exponential of M/G/1,
P(W > t) = min(rho, C exp(-theta t / D)) with rho (e^theta - 1) = theta and
C = (1 - rho) / (rho e^theta - 1) (D: one packet's service time); at a saturated port the
congestion control holds a standing queue (`twin.queueing.queue_state`'s `queue_bytes`, or
DCQCN's fixed point of `twin.dcqcn_equilibrium` with `snapshot_latency(cc=...)`), a fixed wait. The NIC's own egress (the first hop) is paced by its sender, not a Poisson stream: no wait.
The mean of that tail is within 2% of Pollaczek-Khinchine's rho D / (2 (1 - rho)) from 50% load
up (the mean `twin.queueing` uses). A flow split over paths takes each hop position's links in
proportion to its split; hops are independent (Kleinrock's independence approximation), so a
flow's latency distribution is the convolution of its hops', and percentiles (p99) are read
off the packet-weighted mixture of every flow's distribution (`LatencyModel.percentile`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import brentq

from twin.dcqcn import DcqcnParams
from twin.dcqcn_equilibrium import standing_queue_bytes
from twin.maxmin import Incidence
from twin.queueing import QueueConfig, Transport, queue_state


@dataclass(frozen=True)
class Framing:
    """What the wire carries around `mtu` bytes of payload: `headers` (name, bytes) per packet."""

    name: str
    mtu: int
    headers: tuple[tuple[str, int], ...]

    @property
    def overhead_bytes(self) -> int:
        return sum(b for _, b in self.headers)

    @property
    def wire_bytes(self) -> int:
        """Bytes one full packet occupies on the wire, preamble and inter-frame gap included."""
        return self.mtu + self.overhead_bytes

    @property
    def efficiency(self) -> float:
        """Payload share of the wire: goodput / line rate for a flow of full packets."""
        return self.mtu / self.wire_bytes

    def goodput_bps(self, line_bps: float | np.ndarray) -> float | np.ndarray:
        """Payload bits per second at `line_bps` on the wire."""
        return line_bps * self.efficiency

    def transport(self, acked: bool = True, lossless: bool = False) -> Transport:
        """The engine's per-run transport (`twin.queueing.Transport`) with these packets."""
        return Transport(payload_bytes=self.mtu, header_bytes=self.overhead_bytes, acked=acked,
                         lossless=lossless)


# per packet on the wire, in bytes (IEEE 802.3 preamble 7 + SFD 1, minimum inter-frame gap 12;
# Ethernet II header 14, FCS 4; IPv4 20 without options; UDP 8; InfiniBand BTH 12 and ICRC 4
# (IBTA RoCEv2 annex A17)). Not counted: the RETH (16) on the first packet of an RDMA WRITE
# message, the ACKs on the reverse path, a 802.1Q tag (4) where PFC is signalled by PCP.
_WIRE = (("preamble+SFD", 8), ("ethernet", 14))
_TAIL = (("FCS", 4), ("inter-frame gap", 12))


def rocev2(mtu: int = 4096) -> Framing:
    """RoCEv2 over IPv4 at RDMA path MTU `mtu` (Spectrum-X runs 4096)."""
    return Framing("RoCEv2", mtu, _WIRE + (("IPv4", 20), ("UDP", 8), ("BTH", 12), ("ICRC", 4)) + _TAIL)


def uec(mtu: int = 4096) -> Framing:
    """Ultra Ethernet transport over IPv4/UDP, with htsim's 64 header bytes per UEC packet
    (`twin.queueing.UEC`) read as Ethernet + IPv4 + UDP + 22 bytes of UET (PDS and SES) headers,
    plus the FCS, preamble and gap htsim does not count. UET's own headers vary by packet type."""
    return Framing("UEC", mtu, _WIRE + (("IPv4", 20), ("UDP", 8), ("UET PDS+SES", 22)) + _TAIL)


@dataclass(frozen=True)
class HopLatency:
    """Fixed latency per hop (inputs): a switch's port-to-port pipeline and the cable's
    propagation (about 5 ns/m in fibre); `nic_s` once per path for the two NICs together."""

    switch_s: float = 0.6e-6
    cable_m: float = 20.0
    ns_per_m: float = 5.0
    nic_s: float = 0.0

    @property
    def per_hop_s(self) -> float:
        return self.switch_s + self.cable_m * self.ns_per_m * 1e-9


def md1_tail(rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(C, theta) of the M/D/1 waiting-time tail P(W > t) = min(rho, C exp(-theta t/D))."""
    rho = np.asarray(rho, dtype=float)
    theta = np.zeros_like(rho)
    for i, r in enumerate(rho.ravel()):
        if 0 < r < 1:
            # rho (e^x - 1) - x has its positive root where rho e^x = 1 is passed: bracket it
            theta.ravel()[i] = brentq(lambda x, r=r: r * np.expm1(x) - x, -np.log(r) * (1 + 1e-12),
                                      max(50.0, -2 * np.log(r) + 10))
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where((rho > 0) & (rho < 1), (1 - rho) / (rho * np.exp(theta) - 1), 0.0)
    return c, theta


def md1_wait_survival(rho: np.ndarray, t_over_d: np.ndarray) -> np.ndarray:
    """P(W > t) for M/D/1 queues of utilization `rho` (one per row) at times t (in service
    times, one per column)."""
    rho = np.atleast_1d(np.asarray(rho, dtype=float))
    c, theta = md1_tail(rho)
    t = np.asarray(t_over_d, dtype=float)[None, :]
    return np.where(rho[:, None] > 0, np.minimum(rho[:, None], c[:, None] * np.exp(-theta[:, None] * t)), 0.0)


@dataclass
class LatencyModel:
    """Per-packet latency distribution of every flow of a snapshot (see the module docstring).

    Flows with the same links at every hop share one distribution: `pmf` is groups x bins of
    the queueing wait on a grid of `bin_s`, `group` each flow's row. `fixed_s` per flow is the
    rest (propagation, switching, store-and-forward, NICs); `weight` each flow's packets per
    second, for percentiles over packets."""

    fixed_s: np.ndarray
    pmf: np.ndarray
    group: np.ndarray
    bin_s: float
    weight: np.ndarray

    def mean_s(self) -> np.ndarray:
        """Mean latency per flow."""
        return self.fixed_s + (self.pmf @ (np.arange(self.pmf.shape[1]) * self.bin_s))[self.group]

    def flow_percentile(self, q: float) -> np.ndarray:
        """Per flow, the q-th percentile (0-100) of its packets' latency."""
        k = (np.cumsum(self.pmf, axis=1) < q / 100 - 1e-12).sum(axis=1)
        return self.fixed_s + k[self.group] * self.bin_s

    def percentile(self, q: float) -> float:
        """The q-th percentile (0-100) of every packet's latency, flows weighted by packets."""
        w = self.weight / max(self.weight.sum(), 1e-300)
        # every (group, fixed part) pair's distribution shifted by its fixed part onto one grid
        shift = np.rint(self.fixed_s / self.bin_s).astype(np.int64)
        key, inv = np.unique(np.stack([self.group, shift], 1), axis=0, return_inverse=True)
        wk = np.bincount(inv.ravel(), weights=w, minlength=len(key))
        total = np.zeros(self.pmf.shape[1] + int(shift.max(initial=0)) + 1)
        for (g, sh), weight in zip(key, wk, strict=True):
            total[sh:sh + self.pmf.shape[1]] += self.pmf[g] * weight
        k = int(np.searchsorted(np.cumsum(total), q / 100 - 1e-12))
        return k * self.bin_s


def _hop_wait_pmfs(rho: np.ndarray, standing_s: np.ndarray, service_s: np.ndarray,
                   bins: int, bin_s: float) -> np.ndarray:
    """Per link, the pmf of the queueing wait on the grid: M/D/1 below saturation, the
    standing queue (a point mass) at saturation."""
    edges = np.arange(bins + 1) * bin_s
    pmf = np.zeros((len(rho), bins))
    md1 = (rho > 0) & (rho < 1) & (standing_s <= 0)
    if md1.any():
        # survival at the bin edges, per distinct utilization (few: the fabric is symmetric)
        key = np.round(rho[md1], 4)
        uniq, inv = np.unique(key, return_inverse=True)
        d = service_s[md1]
        surv = np.empty((md1.sum(), bins + 1))
        for u, r in enumerate(uniq):
            rows = np.flatnonzero(inv == u)
            for dv in np.unique(d[rows]):
                sel = rows[d[rows] == dv]
                surv[sel] = md1_wait_survival(np.array([r]), edges / dv)[0]
        cdf = 1 - surv
        cdf[:, -1] = 1.0  # the tail beyond the grid lands in the last bin
        pmf[md1] = np.diff(cdf, axis=1)
        pmf[md1, 0] += cdf[:, 0]  # the atom at zero (1 - rho)
    point = ~md1
    k = np.minimum(np.rint(standing_s[point] / bin_s).astype(np.int64), bins - 1)
    pmf[np.flatnonzero(point), np.maximum(k, 0)] = 1.0
    return pmf


def latency_model(inc: Incidence, rates_bps: np.ndarray, capacity_bps: np.ndarray,
                  link_pos: np.ndarray, queue_bytes: np.ndarray, saturated: np.ndarray,
                  framing: Framing, hop: HopLatency, bins: int = 2048) -> LatencyModel:
    """The latency distribution of every flow at `rates_bps` (see the module docstring).

    queue_bytes, saturated: per link, from `twin.queueing.queue_state` (its standing queue at
    saturated ports is the congestion control's; elsewhere the M/D/1 distribution is used)."""
    cap = np.asarray(capacity_bps, dtype=float)
    load = inc.link_load(rates_bps)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(cap > 0, load / cap, 0.0)
        service = np.where(cap > 0, framing.wire_bytes * 8 / cap, 0.0)
        standing = np.where(saturated & (cap > 0), queue_bytes * 8 / cap, 0.0)
    first = link_pos == link_pos.min()
    rho = np.where(first, 0.0, rho)  # the NIC paces its own port: no Poisson queue there
    standing = np.where(first, 0.0, standing)
    # links whose waits are alike (utilization, standing queue, packet time) form one class
    key = np.stack([np.round(rho, 4), np.round(standing * 1e10), np.round(service * 1e12)], 1)
    classes, link_class = np.unique(key, axis=0, return_inverse=True)
    link_class = np.asarray(link_class).ravel()
    rep = np.array([np.flatnonzero(link_class == c)[0] for c in range(len(classes))])
    n_links, n_cls = len(cap), len(classes)
    onehot = sp.csr_matrix((np.ones(n_links), (np.arange(n_links), link_class)), shape=(n_links, n_cls))
    a = inc.explicit().tocsr()
    a.sum_duplicates()
    mixes = []  # per hop position: flows x classes, each flow's share of its packets there
    for p in np.unique(link_pos):
        rows = np.flatnonzero(link_pos == p)
        mixes.append(np.asarray((a[rows].T @ onehot[rows]).todense()))
    # flows alike at every hop (all flows under AR on a balanced fabric) share one distribution
    sig = np.round(np.hstack(mixes), 9)
    _, first_of, group = np.unique(sig, axis=0, return_index=True, return_inverse=True)
    group = np.asarray(group).ravel()
    mixes = [m[first_of] for m in mixes]
    # the grid: long enough for the worst class of every position (M/D/1 tail to 1e-6)
    c, theta = md1_tail(np.clip(rho[rep], 0, 0.999))
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = np.where(theta > 0, np.log(np.maximum(c, 1.0) / 1e-6) / theta * service[rep], 0.0)
    # a saturated port's wait is its standing queue (a point mass), not an M/D/1 tail at 0.999:
    # that tail would stretch the grid and coarsen every percentile read off it
    tail = np.where(standing[rep] > 0, 0.0, tail)
    worst = sum(float(np.max(np.where(m.sum(axis=0) > 0, np.maximum(tail, standing[rep]), 0.0),
                             initial=0.0)) for m in mixes)
    bin_s = max(worst, 1e-9) / (bins // 2)
    class_pmf = _hop_wait_pmfs(rho[rep], standing[rep], service[rep], bins, bin_s)
    spec = np.ones((len(first_of), bins + 1), dtype=complex)  # rfft of a point mass at zero
    for m in mixes:
        mix = m @ class_pmf  # groups x bins: the hop's wait, mixed over the flow's links there
        mix[:, 0] += np.maximum(1 - m.sum(axis=1), 0)  # a flow not at this position: no wait
        spec = spec * np.fft.rfft(mix, n=2 * bins, axis=1)
    waits = np.clip(np.fft.irfft(spec, n=2 * bins, axis=1)[:, :bins], 0, None)
    waits /= np.maximum(waits.sum(axis=1, keepdims=True), 1e-300)
    hops = inc.hops()
    serial = a.T @ service  # store-and-forward at every hop, the packet's wire time
    fixed = hops * hop.per_hop_s + np.asarray(serial).ravel() + hop.nic_s
    return LatencyModel(fixed, waits, group, bin_s,
                        np.asarray(rates_bps, dtype=float) / (framing.wire_bytes * 8))


def snapshot_latency(inc: Incidence, rates_bps: np.ndarray, demand_bps: np.ndarray,
                     capacity_bps: np.ndarray, link_pos: np.ndarray, framing: Framing | None = None,
                     hop: HopLatency | None = None, cfg: QueueConfig | None = None,
                     cc: DcqcnParams | None = None) -> LatencyModel:
    """`latency_model` of flows at `rates_bps` that want `demand_bps`, with the queues
    `twin.queueing.queue_state` gives. Where a port saturates, the standing queue is
    queue_state's formula by default; with `cc`, the DCQCN fixed point of
    `twin.dcqcn_equilibrium` (the flows bottlenecked there sharing the port's capacity)."""
    framing = framing or rocev2()
    cfg = cfg or QueueConfig()
    active = np.ones(inc.n_flows, dtype=bool)
    q = queue_state(inc, rates_bps, capacity_bps, demand_bps, active, cfg, link_pos=link_pos)
    saturated = q.utilization >= 1 - 1e-6
    queue = q.queue_bytes
    if cc is not None and saturated.any():
        held = standing_queue_bytes(q.bottleneck_flows[saturated], np.asarray(capacity_bps)[saturated],
                                    framing.wire_bytes, cfg, cc)
        queue = queue.copy()
        queue[saturated] = np.minimum(held, cfg.buffer_bytes)
    return latency_model(inc, rates_bps, capacity_bps, link_pos, queue, saturated, framing,
                         hop or HopLatency())

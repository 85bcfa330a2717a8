"""Egress queues on top of the max-min rates: latency, ECN marks, PFC pauses, drops.

The flow-level engine gives every directed link its carried load. This module turns a snapshot
of loads into what the queues at each link's egress port would show, under these assumptions:

- Not a bottleneck (utilization rho < 1 - 1e-6): packets arrive as a Poisson stream of
  MTU-sized packets served at line rate, an M/D/1 queue: mean occupancy
  rho^2 / (2 (1 - rho)) packets.
- A bottleneck (saturated) of N flows under ECN-based congestion control (DCQCN): the queue
  stands between the marking thresholds, higher with more flows: Kmin + (Kmax - Kmin)(1 - 1/N).
- ECN: RED marking between Kmin and Kmax (defaults 150 KB and 1.5 MB), with probability up to
  `pmax` at Kmax; marked packets per second = probability x packets per second.
- PFC (lossless ports): a port whose offered load (every crossing flow at its own line rate)
  exceeds its capacity by more than `xoff_oversubscription` has its switch pause the links that
  feed it (the hop before it on its flows) for `pfc_share` x (1 - capacity / offered) of the
  time: without congestion control that would be the whole excess; ECN-based control absorbs
  most of it after the first round trips, hence the share (default 0.1). A paused link (a NIC that keeps sending
  pause frames, a storm) stalls its flows, and pauses propagate upstream: a link whose flows
  continue through a fully paused link is itself fully paused (head-of-line blocking), to a
  fixed point, like a PFC tree. Lossy ports drop the excess instead: drops = offered - capacity.
- Latency of a path: per-hop propagation plus queueing (occupancy / line rate) at every hop.

A `Transport` brings some of this into the rates and completion times (issue 18), run by
`twin.engine` at every event: a window-based transport (UEC) is capped at window / (base RTT +
queueing delay), the queues of sprayed traffic being M/D/1 at each port's utilization
(`windowed_rates`), and a sprayed flow completes when its slowest path delivers
(`worst_path_delay`); a lossless one (RoCE with PFC) shares congested host ports among their
ingress ports, holds a paused NIC's flows together and, in the switches, the flows behind a
link that PFC pauses (`twin.hol.HolBlocking`); a trimming one makes
oblivious spraying deliver at most each path's capacity (`twin.routing`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from twin.dcqcn import DcqcnParams
from twin.maxmin import Incidence, _gather
from twin.paced_streams import md1_packets, stream_counts, superposed_packets

MTU = 4096


@dataclass(frozen=True)
class Transport:
    """What a flow's bytes cost on the wire and when its sender calls it finished.

    Packets carry `payload_bytes` of data behind `header_bytes` of headers, so the wire carries
    (payload + header) / payload of the flow's size. With `acked`, a flow completes when the ACK
    of its last packet is back at the sender (htsim's FCT): its path's propagation counts twice.
    Every switch stores a packet before forwarding it: each hop after the first adds one
    packet's serialization.
    """

    payload_bytes: float
    header_bytes: float = 0.0
    acked: bool = True
    # PFC: congested host ports share among ingress ports, a paused NIC holds all its flows
    lossless: bool = False
    # window-based congestion control (UEC's NSCC): at most `window_bdp` x the flow's
    # bandwidth-delay product in flight (base RTT x NIC rate), so queueing on its path slows it
    # (`windowed_rates`); None: no window (RoCE without end-to-end CC, DCQCN is rate based)
    window_bdp: float | None = None
    # egress queue size per port in packets at the port's nominal speed (htsim's `-q`; a
    # slowed port keeps the same queue in time, as htsim's `-failed` cuts it to 25%)
    queue_packets: float = 100.0
    # lossy with trimming (UEC): oblivious spraying delivers at most each path's capacity
    # (`twin.routing.FabricState.spray_trims`); False: RoCE
    trimming: bool = False
    # oblivious spraying over this many entropies per flow, each hashed to one path by the
    # switches (`twin.routing.FabricState.spray_paths`, htsim's `-paths`); 0: an even split
    paths: int = 0
    # UEC's NSCC windows in a synchronized incast move on their own marks, so the senders share
    # the receiver's port unequally (`twin.nscc`, weighted max-min in `twin.engine`); needs a window
    incast_windows: bool = False
    # UEC's one NSCC window over obliviously sprayed paths of uneven speed (a slowed link):
    # its NACKs and the marked, delayed ACKs of the slow paths cut the window for every path
    # (`twin.nscc_paths`, a rate cap per flow in `twin.engine`); inputs are htsim's NSCC
    # constants, marking thresholds and queue size; needs a window and hashed `paths`
    path_windows: bool = False
    # ... also on a fabric at full speed, where the ports the entropies' hash overloads trim
    # too (the oblivious tail: perm1024b_4MB p99 -26.7% -> -11.4% of htsim's), but the model's
    # steps cost 7.6 CPU s there against the closed form's 0.14: off, for the speed target
    path_windows_everywhere: bool = False
    # UEC's `ar` regime is REPS (htsim's -load_balancing_algo reps): with `path_windows`, its
    # flows spray over their hashed paths too, each unmarked ACK's entropy reused
    # (`twin.reps`: one ACK per 16 KB, so a slow path keeps much of its share); False: `ar`
    # is adaptive routing by capacity alone
    reps: bool = False
    # a flow's own packets, paced by its NIC, do not wait for each other: at each sprayed queue
    # a window-based flow waits for the share of the M/D/1 queue other flows' packets make
    # (`windowed_rates`, `own`); no input. False: every packet waits for the whole queue
    paced: bool = False
    # the queues of sprayed ports are fed by NIC-paced packet streams, one per flow, not a
    # Poisson stream: a port's wait is the N*D/D/1 queue of its flows' loads as N equal streams
    # (`superposed_packets`), at most M/D/1's; no input. False: M/D/1 at every load
    paced_streams: bool = False
    # lossless only: PFC's head-of-line blocking in the switches' FIFOs (`twin.hol.HolBlocking`):
    # a link paused behind a saturated port holds every flow through it at the held flows' pace
    hol_blocking: bool = True
    # lossless only: a port PFC pauses serves its own ingress ports round robin in turn, at
    # every tier down to the congested host port (`twin.maxmin.paused_port_fair`); no input
    paused_fair: bool = False
    # lossless only: PFC's pause/resume loop costs a port fed by few fast ingress ports part of
    # its speed (`twin.pfc_loop`: htsim's XOFF/XON thresholds and wire latency, stepped)
    pause_loop: bool = True
    # lossless only, opt-in: a congested port fed by an ingress that also carries other flows
    # shares itself by what each ingress brings, that ingress's flows at one pace
    # (`twin.ingress_share`: htsim's queue logic stepped; off: it costs perm1024's RoCE run
    # 0.06 -> 1.8 CPU s, below the >= 20x speed bar)
    ingress_share: bool = False
    # lossless only: the last ACK waits in the paused FIFOs of its way back (`twin.ack_wait`:
    # at each switch port before a held flow's first bottleneck, a paused ingress's packets per
    # ingress it backs up, over what the port carries; at the receiver's NIC, half a pause)
    ack_wait: bool = True
    # end-to-end congestion control on top of the above: "dcqcn" (RoCE's rate-based control,
    # `twin.dcqcn`: ECN marks set every flow's rate, stepped in time by the engine); None: none
    # (htsim's RoCE has none: its senders run at line rate, PFC alone holds them back)
    cc: str | None = None
    # ECN marking at every switch egress port (RED, what `cc` reacts to): no marks below
    # kmin_bytes, probability rising to pmax at kmax_bytes, every packet above. Defaults: the
    # switches' of `QueueConfig` (150 KB / 1.5 MB, design.md's setup; one set for both), inputs
    kmin_bytes: float = 150e3
    kmax_bytes: float = 1.5e6
    pmax: float = 0.2
    # DCQCN's sender and receiver parameters (`twin.dcqcn.DcqcnParams`, Zhu et al.'s defaults)
    dcqcn: DcqcnParams = DcqcnParams()

    @property
    def packet_bytes(self) -> float:
        return self.payload_bytes + self.header_bytes

    @property
    def wire_factor(self) -> float:
        """Wire bytes per byte of data."""
        return self.packet_bytes / self.payload_bytes


# htsim's packets (reference README): RoCE 4,000-byte payloads + 64-byte header; UEC 4,150-byte
# packets, about 1.6% more than the flow size, i.e. the same 64 bytes of header on 4,086 of data
# RoCE is lossless (PFC): congested host ports share among their ingress ports
# (`twin.maxmin.port_fair_rates`) and a paused NIC holds all its flows (`coupled`)
ROCE = Transport(4000, 64, lossless=True, paused_fair=True)
ROCE_PFC = ROCE  # the name of the lossless variant when it was opt-in
# NSCC: maxwnd = 1.5 x the base BDP; 64 entropies per flow, as every htsim_uec run here (`-paths 64`)
UEC = Transport(4086, 64, window_bdp=1.5, trimming=True, paths=64, incast_windows=True,
                path_windows=True, paced=True, reps=True, paced_streams=True)


@dataclass
class QueueConfig:
    kmin_bytes: float = 150e3
    kmax_bytes: float = 1.5e6
    pmax: float = 0.2
    buffer_bytes: float = 16e6
    xoff_oversubscription: float = 1.05
    lossless: bool = True
    pfc_share: float = 0.1
    hop_latency_s: float = 1e-6


@dataclass
class QueueState:
    """Per directed link: utilization, queue bytes, delay, ECN marks/s, pause fraction, drops/s."""

    utilization: np.ndarray
    queue_bytes: np.ndarray
    delay_s: np.ndarray
    ecn_marks_per_s: np.ndarray
    paused_fraction: np.ndarray  # of the time the link's sender is paused by the receiver
    drops_per_s: np.ndarray
    bottleneck_flows: np.ndarray


def queue_state(inc: Incidence, rates_bps: np.ndarray, capacity_bps: np.ndarray,
                line_rate_bps: np.ndarray, active: np.ndarray, cfg: QueueConfig | None = None,
                storms: np.ndarray | None = None, link_pos: np.ndarray | None = None,
                link_plane: np.ndarray | None = None) -> QueueState:
    """Queues at every egress port for flows at `rates_bps` (bits/s) wanting `line_rate_bps`.

    storms: directed links whose receiver keeps pausing them (a stuck NIC): fully paused, and
    the pause spreads upstream along the flows; `link_pos` orders the links of a path
    (`Fabric.link_position`) so that only the links before a paused one are blocked.
    """
    cfg = cfg or QueueConfig()
    cap = np.asarray(capacity_bps, dtype=float)
    load = inc.link_load(np.where(active, rates_bps, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(cap > 0, load / cap, 0.0)
    offered = inc.link_load(np.where(active, line_rate_bps, 0.0))
    saturated = rho >= 1 - 1e-6
    # flows bottlenecked at a saturated link: they cross it and run below their line rate
    slow = active & (rates_bps < line_rate_bps * (1 - 1e-6))
    n_bneck = np.rint(inc.link_load(slow.astype(float))).astype(np.int64)
    n_bneck = np.where(saturated, np.maximum(n_bneck, 1), 0)
    mdl = np.where(rho < 1, rho**2 / (2 * np.maximum(1 - rho, 1e-9)), 0.0) * MTU
    standing = cfg.kmin_bytes + (cfg.kmax_bytes - cfg.kmin_bytes) * (1 - 1 / np.maximum(n_bneck, 1))
    queue = np.minimum(np.where(saturated, standing, mdl), cfg.buffer_bytes)
    mark = np.clip((queue - cfg.kmin_bytes) / (cfg.kmax_bytes - cfg.kmin_bytes), 0, 1) * cfg.pmax
    mark = np.where(queue >= cfg.kmax_bytes, 1.0, mark)
    ecn = mark * load / 8 / MTU
    with np.errstate(divide="ignore", invalid="ignore"):
        over = np.where(cap > 0, offered / cap, np.where(offered > 0, np.inf, 0.0))
    pause = np.zeros_like(cap)
    drops = np.zeros_like(cap)
    congested = over > cfg.xoff_oversubscription
    if storms is not None and len(storms):
        congested[storms] = False  # a stormed link is paused, not overloaded: see below
    if cfg.lossless and congested.any():
        if link_pos is None:
            raise ValueError("PFC needs link_pos to know which links feed a congested port")
        pause = _feeder_pauses(inc, active, congested, cfg.pfc_share * (1 - 1 / np.maximum(over, 1)),
                               link_pos, link_plane)
    elif not cfg.lossless:
        drops = np.where(congested, (offered - cap) / 8 / MTU, 0.0)
    if storms is not None and len(storms):
        if link_pos is None:
            raise ValueError("storms need link_pos to know which links are upstream")
        pause[storms] = 1.0
        pause = _propagate_pauses(inc, pause, active, link_pos, link_plane)
    delay = cfg.hop_latency_s + np.where(cap > 0, queue * 8 / np.maximum(cap, 1), 0.0)
    return QueueState(rho, queue, delay, ecn, pause, drops, n_bneck)


def _feeder_pauses(inc: Incidence, active: np.ndarray, congested: np.ndarray, level: np.ndarray,
                   link_pos: np.ndarray, link_plane: np.ndarray | None = None) -> np.ndarray:
    """Pause fraction of the links one hop before each congested port on its flows (in the
    congested port's plane: a transfer spread over planes has feeders in each)."""
    a = _explicit(inc, active)
    pause = np.zeros(a.shape[0])
    for port in np.flatnonzero(congested):
        sub = a[:, a[port].indices].tocoo()
        before = link_pos[sub.row] < link_pos[port]
        if link_plane is not None:
            before &= link_plane[sub.row] == link_plane[port]
        rows, cols = sub.row[before], sub.col[before]
        if rows.size == 0:
            continue
        # on each flow, the link right before the congested port: the highest position below it
        last = np.full(sub.shape[1], -1)
        np.maximum.at(last, cols, link_pos[rows])
        feeders = np.unique(rows[link_pos[rows] == last[cols]])
        pause[feeders] = np.maximum(pause[feeders], level[port])
    return pause


def _propagate_pauses(inc: Incidence, pause: np.ndarray, active: np.ndarray,
                      link_pos: np.ndarray, link_plane: np.ndarray | None = None) -> np.ndarray:
    """Fully paused links pause the links before them on every flow that crosses them
    (head-of-line blocking), to a fixed point: a PFC tree rooted at the storm. Pauses stay in
    their plane: a transfer spread over planes is blocked there only."""
    full = pause >= 1.0
    a = _explicit(inc, active)  # links x flows, boolean
    positions = np.unique(link_pos)
    planes = np.zeros(len(full), dtype=np.int64) if link_plane is None else link_plane
    while True:
        blocked = np.zeros_like(full)
        for plane in np.unique(planes[full]):
            in_plane = planes == plane
            # each flow stops at the first fully paused link of this plane on its path
            first = np.full(a.shape[1], np.inf)
            for p in positions[::-1]:
                hit = (a.T @ (full & in_plane & (link_pos == p)).astype(float)) > 0
                first[hit] = p
            for p in positions:
                flows_p = first == p
                if flows_p.any():
                    blocked |= ((a @ flows_p.astype(float)) > 0) & (link_pos < p) & in_plane
        grown = full | blocked
        if grown.sum() == full.sum():
            return np.where(full, 1.0, pause)
        full = grown


def _explicit(inc: Incidence, active: np.ndarray, weighted: bool = False) -> sp.csr_matrix:
    a = inc.direct.copy()
    if inc.routes is not None:
        a = a + inc.routes @ inc.mix
    a = (a @ sp.diags(active.astype(float))).tocsr()
    a.eliminate_zeros()
    if not weighted:
        a.data = (a.data > 0).astype(float)
    return a


def standalone_rates(inc: Incidence, capacity_bps: np.ndarray) -> np.ndarray:
    """What each flow would get alone on the fabric: min over its links of capacity / share
    (its NIC line rate on a healthy non-blocking fabric). The offered load PFC reasons with."""
    # the incidence's own explicit form (built once per incidence, and reused by the engine's
    # slowest-path rule): every flow counts, weights kept; its min over entries is the same
    # whatever the order of the entries
    a = inc.explicit().tocsc()
    a.eliminate_zeros()
    out = np.full(inc.n_flows, np.inf)
    nonempty = np.diff(a.indptr) > 0
    if a.nnz:
        per_entry = capacity_bps[a.indices] / a.data
        starts = a.indptr[:-1][nonempty]
        out[nonempty] = np.minimum.reduceat(per_entry, starts)
    return out


def completion_latency(inc: Incidence, capacity_bps: np.ndarray, hop_latency_s: float,
                       transport: Transport | None = None) -> np.ndarray:
    """What a packet-level simulator adds to a fluid flow's last byte leaving its sender:
    propagation over the path (there and back when the transport waits for the last ACK) and,
    with a transport, one packet's store-and-forward at every hop after the first."""
    hops = inc.hops()
    if transport is None:
        return hops * hop_latency_s
    with np.errstate(divide="ignore"):
        per_hop = np.where(capacity_bps > 0, transport.packet_bytes * 8 / capacity_bps, 0.0)
    serial = path_latency(inc, per_hop)
    # the first hop's serialization is the fluid's own: drop one hop's share of the sum
    store_forward = np.where(hops > 0, serial * np.maximum(hops - 1, 0) / np.maximum(hops, 1), 0.0)
    return hops * hop_latency_s * (2 if transport.acked else 1) + store_forward


def path_latency(inc: Incidence, delay_s: np.ndarray) -> np.ndarray:
    """Mean latency of each flow's path: the sum of per-hop delays, weighted by its split."""
    return inc.path_sum(delay_s)


def base_rtt(inc: Incidence, capacity_bps: np.ndarray, hop_latency_s: float,
             transport: Transport) -> np.ndarray:
    """Each flow's unloaded round trip: propagation there and back plus one packet's
    serialization at every hop (the ACK's is negligible)."""
    with np.errstate(divide="ignore"):
        per_hop = np.where(capacity_bps > 0, transport.packet_bytes * 8 / capacity_bps, 0.0)
    return 2 * inc.hops() * hop_latency_s + path_latency(inc, per_hop)


def windowed_rates(inc: Incidence, capacity_bps: np.ndarray, rates: np.ndarray,
                   window_bytes: np.ndarray, rtt_s: np.ndarray, queued: np.ndarray,
                   transport: Transport, max_delay_s: np.ndarray | None = None,
                   full: np.ndarray | None = None, rounds: int = 10,
                   own: sp.spmatrix | None = None,
                   streams: sp.spmatrix | None = None,
                   passthrough: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rates (bytes/s) of window-limited flows, the mean queueing delay on each flow's path
    and the queueing delay at each link.

    A flow with window W and base RTT T sends at most W / (T + D), D the queueing delay on its
    path. Per-packet spraying makes every egress queue it crosses (`queued`: not the sender's
    own NIC port, which the window itself paces) a superposition of many senders' packets: an
    M/D/1 queue of the port's utilization, bounded by the queue (`max_delay_s` per link; by
    default `transport.queue_packets` at the current speed); `full` links (oblivious spraying
    offers them more than they carry, trimming the rest) sit at that bound. The fixed point between
    rates and queues (a rate no higher than the max-min `rates`) is found by bisection per
    flow: the window cap falls as the rates rise, so the answer lies between the cap at the
    max-min rates and the max-min rates. At full load this is a rate loss and a standing
    delay; at light load the caps do not bind and the rates stay max-min.
    With `own` (flows x links, each flow's share of each link squared), a flow's packets wait
    only for the part of each queue the others make, (1 - its share of the port's load) of
    the M/D/1 wait (its own packets leave its NIC paced, one after the other): a flow alone on
    its receiver's port waits there for nothing. `full` queues (trimming) are waited in whole.
    """
    with np.errstate(divide="ignore"):
        pkt_s = np.where(capacity_bps > 0, transport.packet_bytes * 8 / capacity_bps, 0.0)
    if max_delay_s is None:
        max_delay_s = transport.queue_packets * pkt_s

    def link_state(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per link: the queueing delay and the load (bytes/s)."""
        load = inc.link_load(r)
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = np.where(capacity_bps > 0, load * 8 / capacity_bps, 0.0)
            if streams is None:
                q_s = md1_packets(rho) * pkt_s
            else:  # NIC-paced streams (`twin.paced_streams`)
                q_s = superposed_packets(rho, stream_counts(streams, r, load)) * pkt_s
        if passthrough is not None:
            q_s = np.where(passthrough, 0.0, q_s)
        q_s = np.minimum(np.nan_to_num(q_s, nan=np.inf), max_delay_s)
        if full is not None:
            q_s = np.where(full, max_delay_s, q_s)
        return np.where(queued, q_s, 0.0), load

    def link_delay(r: np.ndarray) -> np.ndarray:
        return link_state(r)[0]

    def cap_and_delay(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d, load = link_state(r)
        delay = path_latency(inc, d)
        if own is not None:  # minus the share of each wait that the flow's own packets make
            per_byte = np.divide(d, load, out=np.zeros(len(d)), where=load > 0)
            if full is not None:
                per_byte = np.where(full, 0.0, per_byte)
            delay = np.maximum(delay - r * (own @ per_byte), 0.0)
        return window_bytes / (rtt_s + delay), delay

    finite = np.where(np.isfinite(rates), rates, 0.0)
    hi = finite.copy()
    lo, delay = cap_and_delay(hi)
    lo = np.minimum(lo, hi)
    if np.all(lo >= hi * (1 - 1e-9)):  # no window binds: max-min as it is
        return rates, delay, link_delay(hi)
    for _ in range(rounds):
        mid = 0.5 * (lo + hi)
        cap, _ = cap_and_delay(mid)
        up = cap >= mid
        lo = np.where(up, mid, lo)
        hi = np.where(up, hi, mid)
    _, delay = cap_and_delay(lo)
    return np.where(np.isfinite(rates), lo, rates), delay, link_delay(lo)


def worst_path_delay(explicit_csc: sp.csc_matrix, flows: np.ndarray, link_delay_s: np.ndarray,
                     link_pos: np.ndarray) -> np.ndarray:
    """Per flow of `flows`, the queueing delay of its slowest path: a sprayed flow's last
    packets leave over all its paths and it completes when the slowest delivers. Taken as the
    sum over hops (positions) of the worst link the flow loads at that hop (links x flows
    incidence `explicit_csc`); a single-path flow's is its path's delay."""
    hot = ~(link_delay_s <= 0)  # a NaN delay is kept, as a scatter of it would keep it
    if not hot.any():  # no queue on any path (a healthy fabric): nothing to take the max of
        return np.zeros(len(flows))
    # the flows' columns read off indptr (scipy's column indexing builds a matrix per call)
    rows, vals, counts = _gather(explicit_csc, flows)
    col = np.repeat(np.arange(len(flows)), counts)
    # the maximum starts at zero: links without a positive delay change nothing
    keep = (vals > 0) & hot[rows]
    rows = rows[keep]
    col = col[keep]
    n_pos = int(link_pos.max(initial=0)) + 1
    worst = np.zeros(len(flows) * n_pos)
    np.maximum.at(worst, col * n_pos + link_pos[rows], link_delay_s[rows])
    return worst.reshape(len(flows), n_pos).sum(axis=1)

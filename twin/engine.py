"""The flow-level, event-driven simulator.

Events are flow arrivals, flow completions, link state changes (down, up, degraded capacity) and
control-plane convergence. Between two events every active flow sends at its max-min fair rate
(`twin.maxmin`) over the incidence `twin.routing` gives; the rates are recomputed at each event,
vectorized over all flows. Completions that fall within a relative 1e-9 of each other are one
event, so a symmetric collective finishes in a handful of events rather than one per flow.

Outputs: per-flow completion times, per-link bytes (cumulative, for counters) and per-link
utilization sampled at the requested times.

Assumptions: fluid flows (no slow start; per-packet effects only as a `Transport` models them:
headers, ACKs, store-and-forward, a window against sprayed queues, PFC's sharing, hold and
head-of-line blocking, trimming, DCQCN's rates; see `twin.queueing`, `twin.dcqcn`), rates change instantly at events, a flow's rate is capped by its NIC port's line rate only through the host link, and a
flow whose path crosses a dead link sends nothing until routing moves it.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from twin.ack_wait import AckWait, acks_of
from twin.dcqcn import DcqcnFluid
from twin.hol import HolBlocking
from twin.ingress_share import LosslessSharing
from twin.maxmin import Incidence, max_min_rates, refill_after_departures
from twin.nscc import flow_weights
from twin.nscc_paths import fabric_caps
from twin.paced_streams import PacedShares
from twin.pfc_loop import LoopCapacity
from twin.planes import PlaneBalancing
from twin.queueing import (
    MTU,
    QueueConfig,
    Transport,
    _feeder_pauses,
    base_rtt,
    completion_latency,
    queue_state,
    standalone_rates,
    windowed_rates,
    worst_path_delay,
)
from twin.routing import FabricState, route, route_transfers

COUNTERS = ("bytes", "packets", "ecn_marked", "pause_s", "drops")

REL = 1e-9
# window-limited rates (`twin.queueing.windowed_rates`) stand for stochastic queues and differ
# between flows by their paths' loads: completions within 1% of a flow's time are one event
# (each finishes at most 1% early), or a permutation would take one event per flow (hashed
# spraying, `twin.routing._hashed_spray`, spreads the rates: perm1024 2 MB 84 events at 0.1%,
# 0.69 CPU s; at 1% 0.14 s, median and p99 within 2.5% of the 0.1% run's)
WINDOW_REL = 1e-2


@dataclass
class Flows:
    """Flows between endpoints of one plane (see `twin.workload` for transfers and planes)."""

    src: np.ndarray  # endpoint index
    dst: np.ndarray
    size: np.ndarray  # bytes
    start: np.ndarray  # seconds
    entropy: np.ndarray | None = None  # what ECMP hashes; default: the flow index
    job: np.ndarray | None = None  # job index per flow, for reporting

    def __len__(self) -> int:
        return len(self.src)

    def incidence(self, state: FabricState) -> Incidence:
        return route(state, self.src, self.dst, self.entropy)


@dataclass
class Transfers:
    """Host-to-host transfers that the NICs spread over the planes (`route_transfers`)."""

    src: np.ndarray  # host index
    dst: np.ndarray
    size: np.ndarray  # bytes
    start: np.ndarray  # seconds
    nic: np.ndarray | None = None  # NIC index on both ends (rail-aligned); default 0
    entropy: np.ndarray | None = None
    qps: int = 12  # queue pairs per transfer (software plane balancing pins each to a plane)
    job: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.src)

    def incidence(self, state: FabricState) -> Incidence:
        return route_transfers(state, self.src, self.dst, self.nic, self.qps, self.entropy)

    @classmethod
    def concat(cls, parts: list[Transfers], entropy_base: int = 0) -> Transfers:
        """One set of transfers from several (jobs, fault traffic, a flow file): NIC 0 and job -1
        where a part gives none; entropies renumbered from `entropy_base` so they stay distinct."""
        def col(name: str, default: int) -> np.ndarray:
            return np.concatenate([getattr(p, name) if getattr(p, name) is not None
                                   else np.full(len(p), default, np.int64) for p in parts])
        n = sum(len(p) for p in parts)
        return cls(np.concatenate([p.src for p in parts]), np.concatenate([p.dst for p in parts]),
                   np.concatenate([p.size for p in parts]), np.concatenate([p.start for p in parts]),
                   nic=col("nic", 0), entropy=np.arange(n) + entropy_base, job=col("job", -1))


@dataclass(order=True)
class LinkChange:
    """At `time`, cable `cable` gets capacity `gbps` (0: down; the spec's speed: up) and
    packet loss probability `loss` (a degraded optic: FCS errors)."""

    time: float
    cable: int = field(compare=False)
    gbps: float = field(compare=False)
    loss: float = field(default=0.0, compare=False)


@dataclass(order=True)
class Storm:
    """From `time` to `end`, the receiver of directed link `link` keeps pausing it (a NIC in a
    PFC storm pauses its leaf's port towards it: link = 2 * its host cable + 1)."""

    time: float
    end: float = field(compare=False)
    link: int = field(compare=False)


@dataclass
class Result:
    finish: np.ndarray  # seconds, inf when not finished by the end
    start: np.ndarray
    size: np.ndarray
    link_bytes: np.ndarray  # per directed link, total over the run
    sample_times: np.ndarray
    link_bytes_at: np.ndarray  # samples x links: cumulative bytes at each sample time
    events: int
    # with telemetry: cumulative per-link counters at each sample time (samples x links):
    # bytes, packets, ecn_marked (packets), pause_s (seconds the sender was paused), drops
    counters_at: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def fct(self) -> np.ndarray:
        """Flow completion times, seconds."""
        return self.finish - self.start


def _nic_groups(flows: Flows | Transfers) -> np.ndarray:
    """Per flow, an id of the NIC port that sends it (endpoint; host and NIC for transfers)."""
    if isinstance(flows, Transfers):
        nic = np.zeros(len(flows), np.int64) if flows.nic is None else np.asarray(flows.nic)
        return np.asarray(flows.src, np.int64) * (int(nic.max(initial=0)) + 1) + nic
    return np.asarray(flows.src, np.int64)


@dataclass(order=True)
class StormEdge:
    """At `time` a PFC storm on directed link `link` starts (`on`) or ends."""

    time: float
    link: int = field(compare=False)
    on: bool = field(compare=False)


@dataclass(order=True)
class Converged:
    """At `time` the control plane has caught up with the state of `cable` (ECMP, spraying
    reroute then); None: every cable."""

    time: float
    cable: int | None = field(default=None, compare=False)


@dataclass(order=True)
class NicNoticed:
    """At `time` the NICs' plane balancing has caught up with the state of `cable` (None:
    every cable)."""

    time: float
    cable: int | None = field(default=None, compare=False)


Event = LinkChange | StormEdge | Converged | NicNoticed


def _dcqcn_state(state: FabricState, inc: Incidence, cap: np.ndarray,
                 transport: Transport | None) -> DcqcnFluid | None:
    """DCQCN's fluid state for a run whose transport asks for it (`Transport.cc`): every flow
    at its NIC's line rate, switch ports (not the NIC's own) marking with the transport's
    thresholds and pausing their feeders (PFC) when their queue reaches its size."""
    if transport is None or transport.cc is None:
        return None
    if transport.cc != "dcqcn":
        raise ValueError(f"Transport.cc: {transport.cc!r} is not a congestion control the twin "
                         "models (\"dcqcn\" or None)")
    f = state.fabric
    line = standalone_rates(inc, cap) / 8.0
    xoff = transport.queue_packets * transport.packet_bytes * np.ones(f.n_links)
    # a flow that crosses no link (to itself) has no line rate: any finite one does
    return DcqcnFluid(inc.n_flows, f.n_links, np.where(np.isfinite(line), line, 0.0),
                      f.link_position > 0, xoff, transport.packet_bytes, transport.kmin_bytes,
                      transport.kmax_bytes, transport.pmax, transport.dcqcn, lossless=transport.lossless)


class _Sampler:
    """Cumulative per-link bytes (and telemetry counters) at every `sample_every` seconds."""

    def __init__(self, t_first: float, sample_every: float | None, n_links: int, telemetry: bool):
        self.t_first, self.every, self.n_links, self.telemetry = t_first, sample_every, n_links, telemetry
        self.k = 0
        self.next = t_first if sample_every else np.inf
        self.times: list[float] = []
        self.bytes: list[np.ndarray] = []
        self.counters: dict[str, list[np.ndarray]] = {c: [] for c in COUNTERS}

    def take(self, upto: float, until: float, link_bytes: np.ndarray, load: np.ndarray, now: float,
             totals: dict[str, np.ndarray], per_s: dict[str, np.ndarray]) -> None:
        """Samples due by `upto` (and `until`), the totals extrapolated from `now` at the
        current per-second rates."""
        while self.next <= upto * (1 + 1e-12) and self.next <= until:
            self.times.append(self.next)
            self.bytes.append(link_bytes + load * (self.next - now))
            if self.telemetry:
                for c in COUNTERS:
                    self.counters[c].append(totals[c] + per_s[c] * (self.next - now))
            self._step()

    def idle_until(self, until: float, link_bytes: np.ndarray, totals: dict[str, np.ndarray]) -> None:
        """An idle fabric keeps reporting until the end of the window."""
        while np.isfinite(until) and self.next <= until * (1 + 1e-12):
            self.times.append(self.next)
            self.bytes.append(link_bytes.copy())
            if self.telemetry:
                for c in COUNTERS:
                    self.counters[c].append(totals[c].copy())
            self._step()

    def _step(self) -> None:
        self.k += 1
        self.next = self.t_first + self.k * self.every  # type: ignore[operator]

    def arrays(self) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        n = len(self.times)
        counters = ({c: np.array(v).reshape(n, self.n_links) for c, v in self.counters.items()}
                    if self.telemetry else {})
        return np.array(self.times), np.array(self.bytes).reshape(n, self.n_links), counters


@dataclass
class _Timing:
    """When each mechanism reacts to a link change, and the run's end."""

    convergence_s: float
    nic_delay_s: float
    until: float


class _Run:
    """One simulation: its own copy of the fabric state, the flows' progress and the pending
    events. `simulate` drives it event by event."""

    def __init__(self, state: FabricState, flows: Flows | Transfers, events: list[Event],
                 timing: _Timing, sample_every: float | None, telemetry: QueueConfig | None,
                 transport: Transport | None = None, hop_latency_s: float = 0.0,
                 path_windows: bool = True):
        self.state = state.copy()  # link changes alter it: the caller's stays as it was
        self.state.spray_trims = transport is not None and transport.trimming
        self.state.spray_paths = transport.paths if transport is not None else 0
        self.flows, self.timing, self.telemetry = flows, timing, telemetry
        n = len(flows)
        # bytes still to put on the wire: the data plus its packets' headers
        self.remaining = flows.size.astype(float) * (transport.wire_factor if transport else 1.0)
        self.finish = np.full(n, np.inf)
        self.order = np.argsort(flows.start, kind="stable")
        self.next_arrival = 0
        self.active = np.zeros(n, dtype=bool)
        self.now = float(flows.start[self.order[0]]) if n else 0.0
        self.pending: list[tuple[float, int, Event]] = [(e.time, i, e) for i, e in enumerate(events)]
        heapq.heapify(self.pending)
        self.seq = len(self.pending)
        self.storming: set[int] = set()
        f = self.state.fabric
        self.link_pos = f.link_position
        self.link_plane = np.repeat(f.cable_plane, 2)
        self.totals = {c: np.zeros(f.n_links) for c in COUNTERS}
        self.per_s: dict[str, np.ndarray] = {}
        self.link_bytes = np.zeros(f.n_links)
        self.sampler = _Sampler(self.now, sample_every, f.n_links, telemetry is not None)
        self.line_rate: np.ndarray | None = None
        self.inc = flows.incidence(self.state)
        self.cap = self.state.link_capacity_bps()
        self.transport = transport
        self.hop_latency_s = hop_latency_s
        # window-based transport: per flow its window (bytes) and base RTT (s), per link
        # whether its queue counts (`windowed_rates`); recomputed after a reroute
        self.window: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self.qdelay = np.zeros(n)  # mean queueing delay on each flow's path now (s)
        self.link_qdelay = np.zeros(state.fabric.n_links)  # queueing delay per link now (s)
        self.explicit = None  # links x flows incidence (csc), for the slowest path at the end
        self.paced: PacedShares | None = None  # the flows' shares for `Transport.paced(_streams)`
        self.done_qdelay = np.zeros(n)  # slowest path's queueing delay when its last byte left
        self.port_fair = transport is not None and transport.lossless
        # lossless: the flows a NIC sends are held together when PFC pauses it (one group
        # per sending NIC port)
        self.coupled = _nic_groups(flows) if self.port_fair else None
        self.sharing = LosslessSharing()  # per routing (`twin.ingress_share`), when port fair
        self.events = 0
        self.rates = np.zeros(n)
        self.fair = np.zeros(n)  # per-flow max-min rates (the rates, unless port fair)
        # UEC's incast senders share their port by their windows (`twin.nscc`): max-min over
        # weights, `fair` = weight x level (`fair_x`); None: every weight one
        self.weights = self._incast_weights(flows, transport, hop_latency_s)
        self.inc_w: Incidence | None = None  # the incidence with each flow's column x its weight
        # UEC's window over sprayed paths of uneven speed caps each flow (`twin.nscc_paths`),
        # and that model's wait of each flow's last packet on its slowest path (s, NaN: none)
        modelled = self._path_caps(flows, transport, hop_latency_s) if path_windows else None
        self.path_caps, self.last_delay = modelled if modelled is not None else (None, None)
        self.paths_t = self.now  # a later link change leaves that model's waits behind
        self.fair_x = np.zeros(n)
        self.load = np.zeros(f.n_links)
        self.departed_rate: float | None = None  # lowest rate of the flows that just completed
        # rate-based congestion control (`Transport.cc`): DCQCN's fluid state sets the rates,
        # stepped every `DcqcnParams.step_s`, in place of max-min
        self.cc = _dcqcn_state(self.state, self.inc, self.cap, transport)
        self.hol: HolBlocking | None = None
        # lossless, greedy senders: the last ACK's wait on its way back, priced per completion
        self.ack_wait = self.port_fair and self.cc is None and getattr(transport, "ack_wait", False)
        self.ackw: AckWait | None = None
        self.done_ack = np.zeros(n)  # the last ACK's wait, per finished flow (s)
        self.eff_cap = self.cap
        self.loop = LoopCapacity()  # PFC's pause loop per lossless port (`twin.pfc_loop`)

    def holb(self) -> HolBlocking | None:
        """PFC's head-of-line blocking over the current incidence (lossless transports with
        `Transport.hol_blocking`), built once per routing."""
        if not (self.port_fair and self.transport is not None and self.transport.hol_blocking):
            return None
        if self.hol is None:
            self.hol = HolBlocking(self.inc.explicit(), self.link_pos)
        return self.hol

    def ack_waits(self, done: np.ndarray) -> np.ndarray:
        """The last ACK's wait (s) of the flows `done` (a mask), finishing now, on the state of
        the interval they finished in (`twin.ack_wait`): the flows finishing with them back up
        nothing, their last packets are out."""
        if self.ackw is None:
            self.ackw = AckWait(self.inc, acks_of(self.flows).incidence(self.state), self.link_pos,
                                np.repeat(self.state.fabric.cable_gbps, 2).astype(float))
        return self.ackw.waits(np.flatnonzero(done), self.load, self.eff_cap, self.active & ~done,
                               self.remaining)

    def push(self, event: Event) -> None:
        self.seq += 1
        heapq.heappush(self.pending, (event.time, self.seq, event))

    def admit_arrivals(self) -> None:
        """Flows whose start has come become active (and every rate is recomputed)."""
        n, start = len(self.flows), self.flows.start
        first = self.next_arrival
        while self.next_arrival < n and start[self.order[self.next_arrival]] <= self.now * (1 + REL) + 1e-15:
            self.active[self.order[self.next_arrival]] = True
            self.next_arrival += 1
        if self.next_arrival > first:
            self.departed_rate = None
            if self.cc is not None:
                self.cc.start(self.order[first:self.next_arrival])

    def compute_rates(self) -> np.ndarray:
        """Max-min rates (bytes/s) now, with paused links at zero; returns the capacity used."""
        n = len(self.flows)
        eff_cap = self.cap
        if self.storming:
            blocked = queue_state(self.inc, np.zeros(n), self.cap, np.zeros(n), self.active,
                                  storms=np.array(sorted(self.storming)), link_pos=self.link_pos,
                                  link_plane=self.link_plane)
            eff_cap = np.where(blocked.paused_fraction >= 1.0, 0.0, self.cap)
        # PFC's pause loop needs greedy senders: none under DCQCN, whose rates stop the overload
        if self.port_fair and self.cc is None and getattr(self.transport, "pause_loop", False):
            eff_cap = self.loop.capacity(self.inc, self.link_pos, self.active, eff_cap)
        self.eff_cap = eff_cap
        if self.cc is not None:  # the senders' own rates, as DCQCN set them
            self.rates = self.fair = self.cc.delivered(self.inc, eff_cap / 8.0, self.active)
            self.load = self.inc.link_load(self.rates)
            return eff_cap
        # NSCC's caps over sprayed paths (`twin.nscc_paths`) are each flow's own ceiling in the
        # filling, so that what a capped flow leaves of a shared port goes to the others (an
        # incast's senders over a slowed spine: capped after the max-min, 12 senders left 13%
        # of their receiver's port idle); bits/s per unit weight
        ceiling = None
        if self.path_caps is not None:
            ceiling = self.path_caps * 8.0 / (1.0 if self.weights is None else self.weights)
        if self.departed_rate is not None and not self.storming:
            self.fair_x = refill_after_departures(
                self.weighted(), eff_cap, self.active, self.fair_x, self.departed_rate,
                self.coupled, self.holb(), ceiling)
        else:  # bytes/s (per unit weight); head-of-line blocking only for lossless transports,
            # which carry no NSCC weights
            self.fair_x = max_min_rates(self.weighted(), eff_cap, ceiling, active=self.active,
                                        coupled=self.coupled, hol=self.holb()) / 8.0
        self.fair = self.fair_x if self.weights is None else self.fair_x * self.weights
        self.rates = self.fair
        if self.port_fair:  # lossless switches share a congested port among its ingress ports
            self.rates = self.sharing.rates(self.inc, self.link_pos, eff_cap, self.fair * 8.0,
                                            self.active, self.coupled, self.transport) / 8.0
        if self.transport is not None and self.transport.window_bdp is not None:
            self.rates, self.qdelay = self.windowed(eff_cap)
        if self.path_caps is not None:  # the lesser binds: NSCC's decreases or the closed form
            self.rates = np.minimum(self.rates, self.path_caps)
        self.load = self.inc.link_load(self.rates)
        return eff_cap

    def _incast_weights(self, flows: Flows | Transfers, transport: Transport | None,
                        hop_latency_s: float) -> np.ndarray | None:
        """Per-flow weights of the windows in synchronized incasts (`twin.nscc.flow_weights`),
        for a window-based transport that models them; flows between endpoints only."""
        if (transport is None or transport.window_bdp is None or not transport.incast_windows
                or not isinstance(flows, Flows) or len(flows) == 0):
            return None
        f = self.state.fabric
        rtt = base_rtt(self.inc, self.cap, hop_latency_s, transport)
        receiver = self.cap[2 * f.ep_cable[np.asarray(flows.dst)] + 1]
        return flow_weights(flows.src, flows.dst, flows.start, flows.size * transport.wire_factor,
                            rtt, receiver, transport.packet_bytes, transport.queue_packets,
                            self.state.seed)

    def _path_caps(self, flows: Flows | Transfers, transport: Transport | None,
                   hop_latency_s: float) -> tuple[np.ndarray, np.ndarray] | None:
        """Per-flow rate caps (bytes/s) of UEC's window over obliviously sprayed paths on a
        fabric with a slowed link (`twin.nscc_paths`), for a transport that models them
        (`Transport.path_windows`), computed once on the fabric at the start (with the link
        changes due by then: a scenario's slowed links are faults at t = 0), and each flow's
        last-packet wait in that model; None otherwise."""
        st = self.state.copy()
        for t, _, event in self.pending:
            if isinstance(event, LinkChange) and t <= self.now:
                st.cable_gbps[event.cable] = event.gbps
        f = st.fabric
        # endpoint flows, or transfers on a one-plane fabric (a transfer is then one flow)
        one_plane = isinstance(flows, Flows) or f.spec.planes == 1
        if (transport is None or transport.window_bdp is None or not transport.path_windows
                or not one_plane or len(flows) == 0 or st.spray_paths <= 0
                or not (transport.path_windows_everywhere
                        or ((st.cable_gbps > 0) & (st.cable_gbps < f.cable_gbps)).any())):
            return None
        src, dst = np.asarray(flows.src, np.int64), np.asarray(flows.dst, np.int64)
        if isinstance(flows, Transfers):  # host and NIC to endpoint, as route_transfers numbers them
            nic = np.zeros(len(flows), np.int64) if flows.nic is None else np.asarray(flows.nic, np.int64)
            src, dst = src * f.spec.nics_per_host + nic, dst * f.spec.nics_per_host + nic
        entropy = np.arange(len(flows)) if flows.entropy is None else np.asarray(flows.entropy)
        rtt = base_rtt(flows.incidence(st), st.link_capacity_bps(), hop_latency_s, transport)
        return fabric_caps(st, src, dst, flows.start, flows.size * transport.wire_factor, entropy,
                           rtt, transport)

    def weighted(self) -> Incidence:
        """The incidence max-min fills: each flow's column scaled by its weight, so that the
        levels it finds times the weights are a weighted max-min allocation."""
        if self.weights is None:
            return self.inc
        if self.inc_w is None:
            scale = sp.diags(self.weights)
            inc = self.inc
            self.inc_w = (Incidence(inc.direct @ scale) if inc.routes is None
                          else Incidence(inc.direct @ scale, inc.routes, mix=inc.mix @ scale))
        return self.inc_w

    def windowed(self, eff_cap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The window-limited rates and path queueing delays (`twin.queueing.windowed_rates`)."""
        assert self.transport is not None and self.transport.window_bdp is not None
        if self.window is None:
            rtt = base_rtt(self.inc, self.cap, self.hop_latency_s, self.transport)
            nic = standalone_rates(self.inc, self.cap) / 8.0  # bytes/s at the NIC's line rate
            window = self.transport.window_bdp * np.where(np.isfinite(nic), nic, 0.0) * rtt
            # a port's queue holds queue_packets at its nominal speed (a slowed port: the same
            # time, fewer packets)
            nominal = np.repeat(self.state.fabric.cable_gbps * 1e9, 2)
            with np.errstate(divide="ignore"):
                most = np.where(nominal > 0, self.transport.queue_packets * self.transport.packet_bytes
                                * 8 / nominal, 0.0)
            self.window = (window, rtt, self.link_pos > 0, most)
        window, rtt, queued, most = self.window
        if self.paced is None:
            t = self.transport
            self.paced = PacedShares.of(self.inc, self.state.fabric, self.cap, t.paced, t.paced_streams)
        p = self.paced
        rates, delay, self.link_qdelay = windowed_rates(
            self.inc, eff_cap, np.where(self.active, self.rates, 0.0), window, rtt, queued,
            self.transport, max_delay_s=most, full=self.state.overflowing, own=p.own,
            streams=p.streams, passthrough=p.passthrough)
        return np.where(self.active, rates, 0.0), delay

    def compute_telemetry(self, eff_cap: np.ndarray) -> None:
        """Per-second counters of the interval from the queue model."""
        if self.telemetry is None:
            return
        flows = self.flows
        if self.line_rate is None:
            # what each flow asks for: its path alone, shared with its sender's other flows
            # (an all-to-all sender splits its NIC; an incast sender does not)
            per_src = np.bincount(flows.src, minlength=int(flows.src.max()) + 1)
            self.line_rate = standalone_rates(self.inc, self.cap) / per_src[flows.src]
        q = queue_state(self.inc, self.rates * 8, eff_cap, self.line_rate, self.active, self.telemetry,
                        storms=np.array(sorted(self.storming)) if self.storming else None,
                        link_pos=self.link_pos, link_plane=self.link_plane)
        self.per_s = {"bytes": self.load, "packets": self.load / MTU, "ecn_marked": q.ecn_marks_per_s,
                      "pause_s": q.paused_fraction, "drops": q.drops_per_s}
        if self.cc is not None:  # marks and pauses of DCQCN's own queues
            self.per_s["ecn_marked"] = self.cc.marks_per_s(self.inc, eff_cap / 8.0, self.active)
            # the ports feeding a queue at its XOFF point are paused (a storm's PFC tree stays)
            level = self.cc.paused_fraction(self.inc, eff_cap / 8.0, self.active)
            fed = _feeder_pauses(self.inc, self.active, level > 0, level, self.link_pos, self.link_plane)
            self.per_s["pause_s"] = np.where(q.paused_fraction >= 1.0, 1.0, fed)

    def next_times(self) -> tuple[np.ndarray, float, float]:
        """(time left per flow at its rate, the first completion, the next event of any kind)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            t_done = np.where(self.active & (self.rates > 0), self.remaining / self.rates, np.inf)
        t_finish = self.now + t_done.min(initial=np.inf)
        n = len(self.flows)
        t_arrival = self.flows.start[self.order[self.next_arrival]] if self.next_arrival < n else np.inf
        t_change = self.pending[0][0] if self.pending else np.inf
        t_cc = self.now + self.cc.p.step_s if self.cc is not None and self.active.any() else np.inf
        return t_done, t_finish, min(t_finish, t_arrival, t_change, t_cc, self.timing.until)

    def advance(self, t_next: float, t_done: np.ndarray, t_finish: float) -> None:
        """Move to `t_next`: bytes sent, counters summed, flows that finished retired."""
        dt = t_next - self.now
        if self.cc is not None:
            self.cc.step(self.inc, self.eff_cap / 8.0, self.active, dt)
        with np.errstate(invalid="ignore"):  # a flow to itself has an infinite rate
            self.remaining = np.where(np.isinf(self.rates), 0.0, self.remaining - self.rates * dt)
        self.link_bytes += self.load * dt
        if self.telemetry is not None:
            for c in COUNTERS:
                self.totals[c] += self.per_s[c] * dt
        self.now = t_next
        self.events += 1
        self.departed_rate = None
        if t_next == t_finish:
            slack = dt * REL
            if self.window is not None:  # within 0.1% of the flow's own completion time
                slack = np.maximum(slack, WINDOW_REL * (t_next - self.flows.start))
            done = self.active & (t_done <= dt + slack + 1e-15)
            self.finish[done] = self.now
            if self.window is not None and done.any():
                if self.explicit is None:
                    self.explicit = self.inc.explicit().tocsc()
                idx = np.flatnonzero(done)
                # the slowest path through a slowed port (its queue holds the time of a
                # nominal one), else the mean over its paths: a hashed split crosses a few hot
                # ports whose mean M/D/1 waits, taken at their worst hop by hop, no last
                # packet meets
                f = self.state.fabric
                slowed = np.repeat(self.state.cable_gbps < f.cable_gbps, 2)
                slowest = worst_path_delay(
                    self.explicit, idx, np.where(slowed, self.link_qdelay, 0.0), self.link_pos)
                if self.last_delay is not None:
                    # where `twin.nscc_paths` follows the flow's hashed paths (oblivious or
                    # REPS, which sprays its fresh draws there too), the wait its queues give:
                    # a port behind a trimming one is fed only what passes, so the full queue
                    # of a slowed uplink is not waited again at the slowed downlink after it
                    known = self.last_delay[idx]
                    slowest = np.where(np.isfinite(known), known, slowest)
                self.done_qdelay[idx] = np.maximum(slowest, self.qdelay[idx])
            if self.ack_wait and done.any():
                self.done_ack[done] = self.ack_waits(done)
            self.remaining[done] = 0.0
            self.active &= ~done
            # what `refill_after_departures` needs: the departed flows' per-flow max-min rates
            self.departed_rate = float(self.fair_x[done].min()) if done.any() else None
            self.rates = np.where(done, 0.0, self.rates)
            self.fair = np.where(done, 0.0, self.fair)
            self.fair_x = np.where(done, 0.0, self.fair_x)

    def apply_events(self) -> None:
        """The link changes, storm edges and reactions due now; routes recomputed after any."""
        rerouted = False
        while self.pending and self.pending[0][0] <= self.now:
            _, _, event = heapq.heappop(self.pending)
            self.apply(event)
            rerouted = True
        if rerouted:
            self.departed_rate = None
            self.inc = self.flows.incidence(self.state)
            self.inc_w = None
            self.sharing = LosslessSharing()
            self.hol = None
            self.ackw = None
            self.cap = self.state.link_capacity_bps()
            self.line_rate = self.window = self.explicit = self.paced = None

    def apply(self, event: Event) -> None:
        if isinstance(event, StormEdge):
            (self.storming.add if event.on else self.storming.discard)(event.link)
        elif isinstance(event, LinkChange):
            if self.now > self.paths_t:  # `twin.nscc_paths` modelled the start's fabric
                self.last_delay = None
            self.state.cable_gbps[event.cable] = event.gbps
            self.state.cable_loss[event.cable] = event.loss
            # each mechanism learns of this change on its own clock: the control plane after
            # its convergence, the NIC after its port's link-down detection or the QP's timeout
            self.push(Converged(self.now + self.timing.convergence_s, event.cable))
            self.push(NicNoticed(self.now + self.timing.nic_delay_s, event.cable))
        elif isinstance(event, Converged):
            self.state.converge(None if event.cable is None else np.array([event.cable]))
        else:
            self.state.nic_notices(None if event.cable is None else np.array([event.cable]))

    def done(self) -> bool:
        return not self.active.any() and self.next_arrival >= len(self.flows) and not self.pending

    def step(self) -> bool:
        """One event; False when the run is over."""
        self.admit_arrivals()
        self.compute_telemetry(self.compute_rates())
        t_done, t_finish, t_next = self.next_times()
        self.sampler.take(t_next, self.timing.until, self.link_bytes, self.load, self.now,
                          self.totals, self.per_s)
        if not np.isfinite(t_next):
            return False
        self.advance(t_next, t_done, t_finish)
        if self.now >= self.timing.until:
            return False
        self.apply_events()
        return not self.done()


def _binding_caps(caps: np.ndarray, wire_bytes: np.ndarray, free: _Run) -> np.ndarray:
    """The rate caps (`twin.nscc_paths`) of the flows they bind over a whole life: a flow
    whose bytes take longer at its cap than without any cap (`free`, run here to its end) is
    capped; the others keep the closed form's rates (a constant cap under rates that rise as
    flows leave would slow them where neither model does)."""
    while free.step():
        pass
    took = free.finish - free.flows.start
    with np.errstate(divide="ignore"):
        at_cap = wire_bytes / caps
    return np.where(at_cap > took, caps, np.inf)


def simulate(
    state: FabricState,
    flows: Flows | Transfers,
    changes: list[LinkChange] | None = None,
    convergence_s: float = 0.05,
    until: float = np.inf,
    sample_every: float | None = None,
    hop_latency_s: float = 0.0,
    nic_hw_delay_s: float | None = None,
    nic_sw_delay_s: float | None = None,
    storms: list[Storm] | None = None,
    telemetry: QueueConfig | None = None,
    idle_tail: bool = True,
    transport: Transport | None = None,
    planes: PlaneBalancing | None = None,
) -> Result:
    """Run `flows` on the fabric of `state` until they all finish (or `until`).

    With `idle_tail` (telemetry windows), sampling goes on over the idle fabric up to a finite
    `until`; without it (what-if runs, where `until` is only a cap) the run ends with its last flow.

    `changes` alter cable capacities over time (on a copy: `state` is left as it was).
    Adaptive routing follows at once; the NIC's plane balancing after `nic_hw_delay_s`
    (hardware) or `nic_sw_delay_s` (software, when the RDMA transport gives up on the QP); by
    default these follow from `planes` (`twin.planes.PlaneBalancing`: the port's link-down
    detection, the QP's ACK timeout and retry count, NCCL's defaults unless given); ECMP and
    spraying after `convergence_s` (control plane).
    `hop_latency_s` adds the propagation delay of the flow's path (hops x latency) to its
    completion time, as a packet-level simulator's FCT includes it. A `transport`
    (`twin.queueing.Transport`) adds its headers to the bytes sent and its completion rule
    (ACK back, store-and-forward per hop) to the latency.
    `storms` pause links (PFC storms): their flows and every flow blocked behind them upstream
    (the PFC tree of `twin.queueing`) stall while the storm lasts. With `telemetry`, the queue
    model runs on every interval and `Result.counters_at` holds cumulative per-link counters.
    """
    given = nic_hw_delay_s if state.nic_mode == "hw" else nic_sw_delay_s
    nic_delay = given if given is not None else (planes or PlaneBalancing()).reaction_s(state.nic_mode)
    events: list[Event] = list(sorted(changes or []))
    for st_ in storms or []:
        events += [StormEdge(st_.time, st_.link, True), StormEdge(st_.end, st_.link, False)]
    timing = _Timing(convergence_s, nic_delay, until)
    run = _Run(state, flows, events, timing, sample_every, telemetry, transport, hop_latency_s)
    if run.path_caps is not None:
        free = _Run(state, flows, events, timing, None, None, transport, hop_latency_s, path_windows=False)
        run.path_caps = _binding_caps(run.path_caps, run.remaining, free)
    latency = completion_latency(run.inc, run.cap, hop_latency_s, transport)
    while run.step():
        pass
    if idle_tail:
        run.sampler.idle_until(until, run.link_bytes, run.totals)
    # the last packet also waits in the queues on its path (window-based transports)
    # and, lossless, the last ACK in the paused queues of its way back
    finish = run.finish + latency + run.done_qdelay + run.done_ack
    times, link_bytes_at, counters = run.sampler.arrays()
    return Result(finish, flows.start.astype(float), flows.size.astype(float), run.link_bytes,
                  times, link_bytes_at, run.events, counters)

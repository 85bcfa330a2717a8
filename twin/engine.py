"""The flow-level, event-driven simulator.

Events are flow arrivals, flow completions, link state changes (down, up, degraded capacity) and
control-plane convergence. Between two events every active flow sends at its max-min fair rate
(`twin.maxmin`) over the incidence `twin.routing` gives; the rates are recomputed at each event,
vectorized over all flows. Completions that fall within a relative 1e-9 of each other are one
event, so a symmetric collective finishes in a handful of events rather than one per flow.

Outputs: per-flow completion times, per-link bytes (cumulative, for counters) and per-link
utilization sampled at the requested times.

Assumptions: fluid flows (no slow start, no per-packet effects), rates change instantly at
events, a flow's rate is capped by its NIC port's line rate only through the host link, and a
flow whose path crosses a dead link sends nothing until routing moves it.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from twin.maxmin import Incidence, max_min_rates
from twin.queueing import MTU, QueueConfig, queue_state, standalone_rates
from twin.routing import FabricState, route, route_transfers

COUNTERS = ("bytes", "packets", "ecn_marked", "pause_s", "drops")

REL = 1e-9


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


def _after_departures(inc: Incidence, cap: np.ndarray, active: np.ndarray, rates: np.ndarray,
                      departed: float) -> np.ndarray:
    """Max-min rates after flows of rate >= `departed` (bytes/s) left, nothing else changing.

    Progressive filling reaches every level below `departed` without the departed flows (they
    were still rising there and crossed no link that saturated), so the flows slower than them
    keep their rates; only the others are refilled, in the capacity the slow ones leave.
    This is what makes ECMP runs, with their many completion times, cheap.
    """
    keep = active & (rates < departed * (1 - 1e-9))
    if not keep.any():
        return max_min_rates(inc, cap, active=active) / 8.0
    redo = active & ~keep
    if not redo.any():
        return np.where(keep, rates, 0.0)
    left = np.maximum(cap - inc.link_load(np.where(keep, rates, 0.0)) * 8.0, 0.0)
    new = max_min_rates(inc, left, active=redo) / 8.0
    return np.where(keep, rates, new)


def simulate(
    state: FabricState,
    flows: Flows | Transfers,
    changes: list[LinkChange] | None = None,
    convergence_s: float = 0.05,
    until: float = np.inf,
    sample_every: float | None = None,
    hop_latency_s: float = 0.0,
    nic_hw_delay_s: float = 1e-3,
    nic_sw_delay_s: float = 1.0,
    storms: list[Storm] | None = None,
    telemetry: QueueConfig | None = None,
) -> Result:
    """Run `flows` on the fabric of `state` until they all finish (or `until`).

    `changes` alter cable capacities over time. Adaptive routing follows at once; the NIC's
    plane balancing after `nic_hw_delay_s` (hardware) or `nic_sw_delay_s` (software, when the
    collective library notices); ECMP and spraying after `convergence_s` (control plane).
    `hop_latency_s` adds the propagation delay of the flow's path (hops x latency) to its
    completion time, as a packet-level simulator's FCT includes it.
    `storms` pause links (PFC storms): their flows and every flow blocked behind them upstream
    (the PFC tree of `twin.queueing`) stall while the storm lasts. With `telemetry`, the queue
    model runs on every interval and `Result.counters_at` holds cumulative per-link counters.
    """
    nic_delay = nic_hw_delay_s if state.nic_mode == "hw" else nic_sw_delay_s
    n = len(flows)
    remaining = flows.size.astype(float).copy()
    finish = np.full(n, np.inf)
    order = np.argsort(flows.start, kind="stable")
    next_arrival = 0
    active = np.zeros(n, dtype=bool)
    now = float(flows.start[order[0]]) if n else 0.0
    pending: list[tuple[float, int, object]] = []
    for i, ch in enumerate(sorted(changes or [])):
        heapq.heappush(pending, (ch.time, i, ch))
    seq = len(pending)
    for st_ in storms or []:
        heapq.heappush(pending, (st_.time, seq := seq + 1, ("storm", st_.link, True)))
        heapq.heappush(pending, (st_.end, seq := seq + 1, ("storm", st_.link, False)))
    storming: set[int] = set()
    link_pos = state.fabric.link_position
    link_plane = np.repeat(state.fabric.cable_plane, 2)
    totals = {c: np.zeros(state.fabric.n_links) for c in COUNTERS}
    samples_c: dict[str, list[np.ndarray]] = {c: [] for c in COUNTERS}
    line_rate = None
    link_bytes = np.zeros(state.fabric.n_links)
    samples_t: list[float] = []
    samples_b: list[np.ndarray] = []
    t_first = now
    k_sample = 0
    next_sample = now if sample_every else np.inf
    inc = flows.incidence(state)
    cap = state.link_capacity_bps()
    hops = inc.hops()
    events = 0
    rates = np.zeros(n)
    departed_rate = None  # lowest rate among the flows that just completed, if nothing else changed
    while True:
        arrived = False
        while next_arrival < n and flows.start[order[next_arrival]] <= now * (1 + REL) + 1e-15:
            active[order[next_arrival]] = True
            next_arrival += 1
            arrived = True
        if arrived:
            departed_rate = None
        eff_cap = cap
        if storming:
            blocked = queue_state(inc, np.zeros(n), cap, np.zeros(n), active,
                                  storms=np.array(sorted(storming)), link_pos=link_pos,
                                  link_plane=link_plane)
            eff_cap = np.where(blocked.paused_fraction >= 1.0, 0.0, cap)
        if departed_rate is not None and not storming:
            rates = _after_departures(inc, eff_cap, active, rates, departed_rate)
        else:
            rates = max_min_rates(inc, eff_cap, active=active) / 8.0  # bytes/s
        load = inc.link_load(rates)
        if telemetry is not None:
            if line_rate is None:
                # what each flow asks for: its path alone, shared with its sender's other flows
                # (an all-to-all sender splits its NIC; an incast sender does not)
                per_src = np.bincount(flows.src, minlength=int(flows.src.max()) + 1)
                line_rate = standalone_rates(inc, cap) / per_src[flows.src]
            q = queue_state(inc, rates * 8, eff_cap, line_rate, active, telemetry,
                            storms=np.array(sorted(storming)) if storming else None,
                            link_pos=link_pos, link_plane=link_plane)
            per_s = {"bytes": load, "packets": load / MTU, "ecn_marked": q.ecn_marks_per_s,
                     "pause_s": q.paused_fraction, "drops": q.drops_per_s}
        with np.errstate(divide="ignore", invalid="ignore"):
            t_done = np.where(active & (rates > 0), remaining / rates, np.inf)
        t_finish = now + t_done.min(initial=np.inf)
        t_arrival = flows.start[order[next_arrival]] if next_arrival < n else np.inf
        t_change = pending[0][0] if pending else np.inf
        t_next = min(t_finish, t_arrival, t_change, until)
        while next_sample <= t_next * (1 + 1e-12) and next_sample <= until:
            samples_t.append(next_sample)
            samples_b.append(link_bytes + load * (next_sample - now))
            if telemetry is not None:
                for c in COUNTERS:
                    samples_c[c].append(totals[c] + per_s[c] * (next_sample - now))
            k_sample += 1
            next_sample = t_first + k_sample * sample_every  # type: ignore[operator]
        if not np.isfinite(t_next):
            break
        dt = t_next - now
        with np.errstate(invalid="ignore"):  # a flow to itself has an infinite rate
            remaining = np.where(np.isinf(rates), 0.0, remaining - rates * dt)
        link_bytes += load * dt
        if telemetry is not None:
            for c in COUNTERS:
                totals[c] += per_s[c] * dt
        now = t_next
        events += 1
        departed_rate = None
        if t_next == t_finish:
            done = active & (t_done <= dt * (1 + REL) + 1e-15)
            finish[done] = now
            remaining[done] = 0.0
            active &= ~done
            departed_rate = float(rates[done].min()) if done.any() else None
            rates = np.where(done, 0.0, rates)
        if now >= until:
            break
        rerouted = False
        while pending and pending[0][0] <= now:
            _, _, item = heapq.heappop(pending)
            if isinstance(item, tuple):  # a storm starts or ends
                (storming.add if item[2] else storming.discard)(item[1])
            elif isinstance(item, LinkChange):
                state.cable_gbps[item.cable] = item.gbps
                state.cable_loss[item.cable] = item.loss
                heapq.heappush(pending, (now + convergence_s, seq := seq + 1, "converge"))
                heapq.heappush(pending, (now + nic_delay, seq := seq + 1, "nic"))
            elif item == "converge":
                state.converge()
            else:
                state.nic_notices()
            rerouted = True
        if rerouted:
            departed_rate = None
            inc = flows.incidence(state)
            cap = state.link_capacity_bps()
            line_rate = None
        if not active.any() and next_arrival >= n and not pending:
            break
    # an idle fabric keeps reporting until the end of the window
    while np.isfinite(until) and next_sample <= until * (1 + 1e-12):
        samples_t.append(next_sample)
        samples_b.append(link_bytes.copy())
        if telemetry is not None:
            for c in COUNTERS:
                samples_c[c].append(totals[c].copy())
        k_sample += 1
        next_sample = t_first + k_sample * sample_every  # type: ignore[operator]
    if hop_latency_s:
        finish = finish + hops * hop_latency_s
    return Result(finish, flows.start.astype(float), flows.size.astype(float), link_bytes,
                  np.array(samples_t), np.array(samples_b).reshape(len(samples_t), state.fabric.n_links),
                  events, {c: np.array(v).reshape(len(samples_t), state.fabric.n_links)
                           for c, v in samples_c.items()} if telemetry is not None else {})

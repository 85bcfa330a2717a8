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
from twin.routing import FabricState, route, route_transfers

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


@dataclass(order=True)
class LinkChange:
    """At `time`, cable `cable` gets capacity `gbps` (0: down; the spec's speed: up)."""

    time: float
    cable: int = field(compare=False)
    gbps: float = field(compare=False)


@dataclass
class Result:
    finish: np.ndarray  # seconds, inf when not finished by the end
    start: np.ndarray
    size: np.ndarray
    link_bytes: np.ndarray  # per directed link, total over the run
    sample_times: np.ndarray
    link_bytes_at: np.ndarray  # samples x links: cumulative bytes at each sample time
    events: int

    @property
    def fct(self) -> np.ndarray:
        """Flow completion times, seconds."""
        return self.finish - self.start


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
) -> Result:
    """Run `flows` on the fabric of `state` until they all finish (or `until`).

    `changes` alter cable capacities over time. Adaptive routing follows at once; the NIC's
    plane balancing after `nic_hw_delay_s` (hardware) or `nic_sw_delay_s` (software, when the
    collective library notices); ECMP and spraying after `convergence_s` (control plane).
    `hop_latency_s` adds the propagation delay of the flow's path (hops x latency) to its
    completion time, as a packet-level simulator's FCT includes it.
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
    link_bytes = np.zeros(state.fabric.n_links)
    samples_t: list[float] = []
    samples_b: list[np.ndarray] = []
    next_sample = now if sample_every else np.inf
    inc = flows.incidence(state)
    cap = state.link_capacity_bps()
    hops = inc.hops()
    events = 0
    while True:
        while next_arrival < n and flows.start[order[next_arrival]] <= now * (1 + REL) + 1e-15:
            active[order[next_arrival]] = True
            next_arrival += 1
        rates = max_min_rates(inc, cap, active=active) / 8.0  # bytes/s
        load = inc.link_load(rates)
        with np.errstate(divide="ignore", invalid="ignore"):
            t_done = np.where(active & (rates > 0), remaining / rates, np.inf)
        t_finish = now + t_done.min(initial=np.inf)
        t_arrival = flows.start[order[next_arrival]] if next_arrival < n else np.inf
        t_change = pending[0][0] if pending else np.inf
        t_next = min(t_finish, t_arrival, t_change, until)
        while next_sample <= t_next and next_sample <= until:
            samples_t.append(next_sample)
            samples_b.append(link_bytes + load * (next_sample - now))
            next_sample += sample_every  # type: ignore[operator]
        if not np.isfinite(t_next):
            break
        dt = t_next - now
        remaining -= rates * dt
        link_bytes += load * dt
        now = t_next
        events += 1
        if t_next == t_finish:
            done = active & (t_done <= dt * (1 + REL) + 1e-15)
            finish[done] = now
            remaining[done] = 0.0
            active &= ~done
        if now >= until:
            break
        rerouted = False
        while pending and pending[0][0] <= now:
            _, _, item = heapq.heappop(pending)
            if isinstance(item, LinkChange):
                state.cable_gbps[item.cable] = item.gbps
                heapq.heappush(pending, (now + convergence_s, seq := seq + 1, "converge"))
                heapq.heappush(pending, (now + nic_delay, seq := seq + 1, "nic"))
            elif item == "converge":
                state.converge()
            else:
                state.nic_notices()
            rerouted = True
        if rerouted:
            inc = flows.incidence(state)
            cap = state.link_capacity_bps()
        if not active.any() and next_arrival >= n and not pending:
            break
    if hop_latency_s:
        finish = finish + hops * hop_latency_s
    return Result(finish, flows.start.astype(float), flows.size.astype(float), link_bytes,
                  np.array(samples_t), np.array(samples_b).reshape(len(samples_t), state.fabric.n_links),
                  events)

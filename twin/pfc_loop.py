"""PFC's pause loop: the rate a lossless egress port loses to pause/resume hysteresis.

A congested lossless port is fed by ingress ports that PFC pauses and resumes in turn. Each
ingress counts the bytes it holds in the switch's queues; above the XOFF threshold it sends a
PAUSE upstream, below the XON threshold a RESUME. Both frames take a wire latency to arrive, the
upstream port finishes the packet it is sending before it stops, and a resumed sender's first
packet takes its serialization and another wire latency to arrive. When the XON threshold holds
less than what the ingress drains in that loop, the ingress runs dry before new packets come,
and when every ingress of the port runs dry together the port idles: it carries less than its
speed. At 100 Gb/s with 1 us links the 11 packets below XON outlast the loop; at 400 Gb/s two
ingresses sharing a port drain about 12.8 packets each in it, so the port loses a few percent.

`egress_efficiency` steps exactly that, packet by packet, as htsim's classes do it
(queue_lossless_input.cpp: XOFF when the ingress holds more than `high` x data packet size
bytes, XON when less than `low` x; queue_lossless_output.cpp: a paused sender completes its
packet in flight; pause frames cross the wire in the link latency, ahead of data). Inputs, each
htsim_roce's default (datacenter/main_roce.cpp): thresholds 15 / 12 packets of 4,000 bytes
(`-pfc_thresholds low high`), 4,064-byte packets on the wire (4,000 of payload + 64 of header),
1 us per hop (`-hop_latency`). The senders are greedy (RoCE without end-to-end congestion
control sends at line rate). The result is an output; nothing is fitted to FCTs.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from twin.maxmin import Incidence, IngressGroups


@dataclass(frozen=True)
class PfcLoop:
    """PFC's thresholds and the wire: htsim_roce's defaults (see the module docstring)."""

    xoff_packets: float = 15.0  # pause when an ingress holds more than this x data_bytes
    xon_packets: float = 12.0  # resume when it holds less than this x data_bytes
    data_bytes: float = 4000.0  # Packet::data_packet_size(), what the thresholds count in
    packet_bytes: float = 4064.0  # a data packet on the wire
    wire_latency_s: float = 1e-6  # per hop, for data and pause frames alike


HTSIM_ROCE = PfcLoop()


@lru_cache(maxsize=256)
def egress_efficiency(ingress: int, egress_gbps: float, ingress_gbps: float,
                      loop: PfcLoop = HTSIM_ROCE, packets: int = 3000) -> float:
    """Fraction of its speed a lossless egress port carries when `ingress` greedy upstream
    ports of `ingress_gbps` (each feeding only this port) oversubscribe it: htsim's pause
    loop stepped packet by packet over `packets` departures (the first third is warm-up).
    1.0 when the ports cannot oversubscribe it (fewer than two, or not faster together)."""
    if ingress < 2 or ingress * ingress_gbps <= egress_gbps * (1 + 1e-9):
        return 1.0
    return _step_loop(ingress, egress_gbps, ingress_gbps, loop, packets)[0]


@lru_cache(maxsize=64)
def paused_ingress(gbps: float, loop: PfcLoop = HTSIM_ROCE, packets: int = 3000) -> tuple[float, float]:
    """What an ingress that PFC keeps pausing and resuming looks like, from two greedy ports of
    `gbps` into one port of `gbps` (htsim's pause loop stepped, the last two thirds of
    `packets` departures): (bytes it holds in its switch's egress queue on average, bytes the
    egress drains of it during one of its pauses on average). Its count swings between XON,
    less what drains while a RESUME travels up, and XOFF plus what was on the wire when the
    PAUSE left: 13.5-13.9 packets held at 25-400G, 17.7 at 800G."""
    _, held, pause_s = _step_loop(2, gbps, gbps, loop, packets)
    return held, pause_s * gbps * 1e9 / 8 / 2  # each ingress drains at half the port


def _step_loop(ingress: int, egress_gbps: float, ingress_gbps: float, loop: PfcLoop,
               packets: int) -> tuple[float, float, float]:
    """(egress efficiency, mean bytes held per ingress, mean pause of a sender in s) of the
    pause loop, stepped."""
    d = loop.wire_latency_s
    size = loop.packet_bytes
    t_up, t_out = size * 8 / (ingress_gbps * 1e9), size * 8 / (egress_gbps * 1e9)
    high, low = loop.xoff_packets * loop.data_bytes, loop.xon_packets * loop.data_bytes
    # per ingress: bytes held, paused (as the switch sees it); per upstream sender: state
    held = [0.0] * ingress
    recv_paused = [False] * ingress
    send_state = ["ready"] * ingress  # ready | paused | pause_received
    sending = [False] * ingress
    fifo: list[int] = []  # the egress queue: ingress of each packet, in arrival order
    head = 0
    busy = False
    events: list[tuple[float, int, str, int]] = []
    seq = 0

    def push(t: float, kind: str, i: int) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (t, seq, kind, i))

    for i in range(ingress):  # every sender starts at once, staggered by nothing
        sending[i] = True
        push(t_up, "sent", i)
    served, t_mark, t_end = 0, 0.0, 0.0
    area, t_last = 0.0, 0.0  # held bytes x time, summed over the ingresses
    paused_at = [-1.0] * ingress  # when each sender's current pause began (-1: not paused)
    pauses: list[float] = []
    warm = packets // 3
    while served < packets:
        t, _, kind, i = heapq.heappop(events)
        if kind == "sent":  # upstream finished a packet: it is on the wire
            push(t + d, "arrive", i)
            sending[i] = False
            if send_state[i] == "pause_received":
                send_state[i] = "paused"
            if send_state[i] == "ready":
                sending[i] = True
                push(t + t_up, "sent", i)
        elif kind == "arrive":  # at the switch's ingress: counted, queued at the egress
            held[i] += size
            if held[i] > high and not recv_paused[i]:
                recv_paused[i] = True
                push(t + d, "pause", i)
            fifo.append(i)
            if not busy:
                busy = True
                push(t + t_out, "out", -1)
        elif kind == "out":  # the egress finished a packet
            if served >= warm:
                area += sum(held) * (t - t_last)
            t_last = t
            j = fifo[head]
            head += 1
            served += 1
            if served == warm:
                t_mark = t
            t_end = t
            held[j] -= size
            if held[j] < low and recv_paused[j]:
                recv_paused[j] = False
                push(t + d, "resume", j)
            busy = head < len(fifo)
            if busy:
                push(t + t_out, "out", -1)
        elif kind == "pause":
            send_state[i] = "pause_received" if sending[i] else "paused"
            paused_at[i] = t
        else:  # resume
            if paused_at[i] >= 0 and served >= warm:
                pauses.append(t - paused_at[i])
            paused_at[i] = -1.0
            send_state[i] = "ready"
            if not sending[i]:
                sending[i] = True
                push(t + t_up, "sent", i)
    carried = (packets - warm) * t_out
    return (float(min(1.0, carried / (t_end - t_mark))), float(area / (t_end - t_mark) / ingress),
            float(np.mean(pauses)) if pauses else 0.0)


def efficiency_per_link(n_ingress: np.ndarray, link_gbps: np.ndarray, feed_gbps: np.ndarray,
                        loop: PfcLoop = HTSIM_ROCE) -> np.ndarray:
    """`egress_efficiency` per link from its count of feeding ingress ports, its speed and the
    speed of the ports feeding it (one pause-loop run per distinct triple: a fabric has few)."""
    out = np.ones(len(n_ingress))
    sel = np.flatnonzero(n_ingress >= 2)
    if not sel.size:
        return out
    keys = np.stack([n_ingress[sel], link_gbps[sel], feed_gbps[sel]], axis=1)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    eff = np.array([egress_efficiency(int(k), float(e), float(f), loop) for k, e, f in uniq])
    out[sel] = eff[inverse.ravel()]
    return out


class LoopCapacity:
    """Per event, each lossless port's capacity less its pause-loop loss: the ports fed by two
    or more ingress ports carrying active single-path flows (`twin.maxmin.IngressGroups` of the
    current incidence, rebuilt when the routing changes). A port its flows do not oversubscribe
    loses nothing in htsim; here its derated capacity binds only if their load exceeds it."""

    def __init__(self, loop: PfcLoop = HTSIM_ROCE):
        self.loop = loop
        self._inc: Incidence | None = None
        self._groups: IngressGroups | None = None

    def groups(self, inc: Incidence, link_pos: np.ndarray) -> IngressGroups:
        """The (ingress, egress) groups of every switch port for `inc`, built once per routing."""
        if self._inc is not inc or self._groups is None:
            self._inc, self._groups = inc, IngressGroups.of(inc, link_pos)
        return self._groups

    def capacity(self, inc: Incidence, link_pos: np.ndarray, active: np.ndarray,
                 cap: np.ndarray) -> np.ndarray:
        """`cap` (bits/s per link) times each port's `egress_efficiency` now."""
        speeds = np.unique(cap[cap > 0]) / 1e9
        # a 2-way collision loses the most (more ingress ports drain slower each): if no pair
        # of the fabric's speeds loses there, no port loses anywhere (100G fabrics), skip
        if all(egress_efficiency(2, float(e), float(f), self.loop) >= 1.0
               for e in speeds for f in speeds):
            return cap
        g = self.groups(inc, link_pos)
        assert g.ingress is not None
        live = (g.incidence @ active.astype(np.float64)) > 0
        egress, ingress = g.egress[live], g.ingress[live]
        n = np.bincount(egress, minlength=len(cap))
        feed = np.zeros(len(cap))
        np.maximum.at(feed, egress, cap[ingress])
        return cap * efficiency_per_link(n, cap / 1e9, feed / 1e9, self.loop)

"""The last ACK's wait in a lossless fabric's paused queues (RoCE's completion time).

A RoCE flow completes when the ACK of its last packet is back at its sender. htsim's receiver
ACKs every packet (roce.cpp `RoceSink::send_ack`, 64 bytes, the data's flow id, so the switches
hash it to a path of its own); its NIC sends ACKs ahead of data (queue.cpp FairPriorityQueue:
ACKs are PRIO_HI) but not while PFC pauses it; every switch egress is one FIFO
(queue_lossless_output.cpp), so the ACK waits there behind the data queued at that port. On a
busy lossless fabric those queues are standing ones: a flow held at its first saturated port
(its first bottleneck) fills its ingress there to XOFF, which pauses the link before it, whose
queue fills its own ingress, and so on up to its NIC (the PFC tree `twin.hol` walks). So:

- a switch egress port at or before an active flow's first bottleneck holds, for each ingress
  port feeding it such a flow (and, when the port is paused from below, for every ingress
  feeding it), a paused ingress's worth of packets (`twin.pfc_loop.paused_ingress`: htsim's
  XOFF / XON loop stepped, 13.5 packets at 100-400G), or what those flows have left to deliver
  spread over the queues they back up, if less (a short flow near its end); it drains at the
  rate it carries (a saturated port at its speed, a paused one at the pace it is let through),
  so the ACK waits that backlog over that rate;
- the receiver's NIC, when its own flows are held beyond it, is paused for the share of time
  it does not send; an ACK waits the rest of a pause, half of one on average (a pause lasts
  what its ToR's ingress drains of it in one loop, `paused_ingress`, at the NIC's rate);
- the flows that finish in the same event back up nothing (their last packets are out).

Measured in a packet stepping of htsim's queue logic with ACKs (one per data packet, on their
own hashed reverse paths): the last ACK waits 0 at the median but 6.1 us on average on
htsim_heldout4's perm200_2MB_2tier100 (100G; p90 9 us at the receiver's NIC, 18 us at its ToR's
uplink) and 1.8 us at 400G (perm512_512KB), and the flows it delays most sit on the twin's
collision levels, so it moves the medians of permutations: the stepping with ACKs gives htsim's
quantiles on perm512_512KB where the stepping without them is 4-8 us low, and on htsim's own
perm128 paths its per-flow correlation with htsim is 0.998. This model's mean wait per flow is
0.7-1.2x the stepping's on the same paths (figures in `benchmarks/htsim_calibration.py`'s
docstring, ROCE18). Inputs: htsim_roce's PFC thresholds
and wire latency (`twin.pfc_loop.HTSIM_ROCE`); nothing fitted to completion times.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar

import numpy as np
import scipy.sparse as sp

from twin.maxmin import Incidence, IngressGroups
from twin.pfc_loop import HTSIM_ROCE, PfcLoop, paused_ingress

F = TypeVar("F")


def acks_of(flows: F) -> F:
    """The ACKs of `flows` (`twin.engine.Flows` or `Transfers`) as flows of their own: from
    each receiver back to its sender, on the same entropy (a switch hashes an ACK to a path of
    its own, as it would a flow the other way)."""
    entropy = getattr(flows, "entropy", None)
    if entropy is None:
        entropy = np.arange(len(flows))  # type: ignore[arg-type]
    return dataclasses.replace(flows, src=flows.dst, dst=flows.src, entropy=entropy)  # type: ignore[attr-defined,type-var]


class AckWait:
    """Per routing: each flow's forward links, its ACK's reverse path and the (ingress,
    egress) groups of every switch port, to price the last ACK's wait at a completion."""

    def __init__(self, inc: Incidence, reverse: Incidence, link_pos: np.ndarray,
                 nominal_gbps: np.ndarray, loop: PfcLoop = HTSIM_ROCE) -> None:
        self.link_pos = link_pos
        a = (inc.explicit_csc() > 0).tocoo()
        self.rows, self.cols = a.row, a.col
        self.groups = IngressGroups.of(inc, link_pos, link_pos > 0)
        self.g_coo = self.groups.incidence.tocoo()
        self.reverse = reverse
        self.on_link = sp.csr_matrix((np.ones(len(a.row)), (a.row, a.col)), shape=a.shape)
        # one stepping per link speed, indexed per link (a dead link: nothing held)
        speeds, of_link = np.unique(nominal_gbps, return_inverse=True)
        table = np.array([paused_ingress(float(g), loop) if g > 0 else (0.0, 0.0) for g in speeds])
        self.held, self.swing = table[of_link, 0], table[of_link, 1]

    def link_waits(self, load: np.ndarray, capacity: np.ndarray, active: np.ndarray,
                   remaining: np.ndarray) -> np.ndarray:
        """Seconds an ACK waits at each link now. `load` in bytes/s, `capacity` in bits/s,
        `remaining`: the bytes each flow has still to deliver."""
        pos = self.link_pos
        n_links = len(load)
        sat = (load * 8 >= capacity * (1 - 1e-6)) & (load > 0)
        live = active[self.cols]
        # each active flow's first bottleneck (the position of its first saturated link)
        hit = live & sat[self.rows]
        top = int(pos.max(initial=0)) + 1
        cut = np.full(len(active), top)
        np.minimum.at(cut, self.cols[hit], pos[self.rows[hit]])
        first = np.where(cut < top, cut, -1)
        # a link before some flow's first bottleneck is paused from below
        before = live & (pos[self.rows] < first[self.cols])
        paused = np.zeros(n_links, bool)
        paused[self.rows[before]] = True
        paused &= ~sat
        # a group backs up its port if that port is paused, or one of its flows is held there
        g_rows, g_cols = self.g_coo.row, self.g_coo.col
        eg = self.groups.egress[g_rows]
        backed_pair = active[g_cols] & (paused[eg] | (pos[eg] <= first[g_cols]) & (first[g_cols] >= 0))
        # ... with a paused ingress's worth of packets, or what its flows have left to deliver
        # spread over the switch queues they back up, if less (a short flow near its end)
        backs = np.bincount(g_cols[backed_pair], minlength=len(active))
        left = np.divide(remaining, backs, out=np.zeros(len(active)), where=backs > 0)
        group_left = np.bincount(g_rows[backed_pair], weights=left[g_cols[backed_pair]],
                                 minlength=self.groups.incidence.shape[0])
        group_q = np.minimum(group_left, self.held[self.groups.egress])
        queue = np.bincount(self.groups.egress, weights=group_q, minlength=n_links)
        wait = np.zeros(n_links)
        busy = load > 0
        # a switch port drains its queue at the rate it carries (a saturated one at its speed,
        # one paused from below at the pace it is let through)
        sw = busy & (pos > 0) & (sat | paused)
        wait[sw] = queue[sw] / load[sw]
        # the NIC sends ACKs ahead of data, but not while paused: it is for the share of time
        # it does not send, and an ACK that comes then waits the rest of the pause (half of one
        # on average: a pause lasts what its ToR's ingress drains of it in one loop)
        nic = busy & (pos == 0) & paused
        idle = 1 - np.clip(load * 8 / np.maximum(capacity, 1e-9), 0.0, 1.0)
        wait[nic] = idle[nic] * self.swing[nic] / load[nic] / 2
        return wait

    def waits(self, done: np.ndarray, load: np.ndarray, capacity: np.ndarray,
              active: np.ndarray, remaining: np.ndarray) -> np.ndarray:
        """Seconds the last ACK of each flow in `done` (indices) waits on its way back."""
        per_link = self.link_waits(load, capacity, active, remaining)
        return self.reverse.path_sum(per_link)[done]

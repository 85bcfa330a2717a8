"""UEC REPS: how a flow's packets spread over its paths when some are slower (issue 18, fidelity).

REPS (htsim's uec_mp.cpp `UecMpReps`, buffer_reps.cpp) sends a packet on an entropy taken from
a small buffer of entropies whose ACKs came back without ECN (`processEv(PATH_GOOD)`), and on a
random one of the flow's entropies when the buffer holds none. An ECN-marked ACK (`PATH_ECN`)
and a NACK of a trimmed packet (`PATH_NACK`) put nothing back. The receiver (uec.cpp
`UecSink`) ACKs a marked packet at once but unmarked ones only every `_bytes_unacked_threshold`
bytes (16,384: one ACK per 4 packets of 4,150 bytes), each ACK carrying the entropy of the
packet that triggered it. So only one unmarked packet in four hands its entropy back: the
others' sends are fresh random draws, and REPS moves a flow off its slow paths far less than a
per-packet rule would (htsim's perm128b_4MB -failed 4, counted per queue in an instrumented copy
of htsim_uec: 38.5% of the ToR uplink packets offered to the 4 slowed spines of 8 under REPS,
50.2% under oblivious spraying, where the spines' capacities alone would give 20%).

In the mean field a path's share of the next sends is then

    w'_p = g_p w_p + u_p (1 - sum_q g_q w_q),  g_p = (1 - trimmed_p)(1 - marked_p) / k,

with u the flow's hashed spread of its entropies over the paths (oblivious spraying's, the
random draw), k = ceil(ack_bytes / packet_bytes) and trimmed_p, marked_p what path p's queues
did to its packets. `twin.nscc_paths` applies it at every step of its window and queue model;
g = 0 is oblivious spraying. Left out: the buffer's 8 slots (sends follow ACKs one for one in
the window's steady state, so it rarely fills) and REPS' frozen mode (it starts only on a
retransmission timeout; htsim's runs here have none).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Reps:
    """REPS' inputs, htsim's defaults."""

    # uec.cpp `UecSink::_bytes_unacked_threshold`: the receiver ACKs unmarked data every 16 KB
    ack_bytes: float = 16384.0


def recycled_share(packet_bytes: float, p: Reps | None = None) -> float:
    """The share of a path's unmarked, delivered packets whose entropy REPS reuses: one per
    ACK, one ACK per ceil(ack_bytes / packet_bytes) packets."""
    p = p or Reps()
    return 1.0 / max(math.ceil(p.ack_bytes / packet_bytes), 1)


def recycle(w: np.ndarray, w0: np.ndarray, kept: np.ndarray, share: np.ndarray,
            flow_of: np.ndarray, n: int) -> np.ndarray:
    """One step of REPS' entropy recycling, every flow at once.

    w, w0, kept: per (flow, path) entry (flat, `flow_of` its flow): the share of the flow's
    sends on that path now, its hashed share (a random draw), the fraction of its packets
    delivered unmarked; share: per flow the share of those that return their entropy
    (`recycled_share`; 0: oblivious spraying). Returns each path's share of the next sends."""
    reused = share[flow_of] * kept * w
    fresh = 1.0 - np.bincount(flow_of, weights=reused, minlength=n)
    return reused + w0 * fresh[flow_of]


def stationary(w0: np.ndarray, kept: np.ndarray, share: float) -> np.ndarray:
    """The fixed point of `recycle` for one flow whose paths keep `kept` of their packets
    unmarked: w_p proportional to w0_p / (1 - share x kept_p)."""
    x = w0 / (1.0 - share * kept)
    return x / x.sum()

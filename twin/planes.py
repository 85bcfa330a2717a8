"""When NIC plane balancing reacts to a failed plane: derived from the settings that decide it.

Hardware plane balancing (per packet) masks a plane once the NIC's port there is declared
down. A port is declared down when its PCS loses alignment: the receiver checks an alignment
marker on every PCS lane every `marker_blocks` 66-bit blocks and drops lock after
`bad_markers` wrong ones in a row (IEEE 802.3 clause 82 for 100GBASE-R: a marker every 16,384
blocks on each of 20 lanes of 5.15625 Gb/s, lock lost after 4 bad markers: 0.84 ms), plus any
link-down debounce the port is configured with (0 by default). These are the inputs;
`LinkDownDetection.detect_s` follows from them.

Software plane balancing (per QP) learns nothing from the link: each QP stays on its plane
until the RDMA transport gives up on it. An RC QP retransmits after its local ACK timeout,
4.096 us x 2^exponent (IBTA), `retry_count` times; the last retransmission waits for its ACK
one more timeout, so the QP goes to error after (retry_count + 1) timeouts (the first sending
and each retry wait one each), and the collective library moves its traffic:
4.096 us x 2^exponent x (retry_count + 1). NCCL sets the exponent with
NCCL_IB_TIMEOUT (default 20; 18 and before that 14 in older releases) and the count with
NCCL_IB_RETRY_CNT (default 7): docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html and
NCCL's src/transport/net_ib (`NCCL_PARAM(IbTimeout, "IB_TIMEOUT", 20)`). With those defaults a
QP gives up after 34.4 s; exponent 18 gives 8.6 s, 15 gives 1.07 s, 14 gives 0.54 s.
"""

from __future__ import annotations

from dataclasses import dataclass

IB_TIMEOUT_UNIT_S = 4.096e-6  # IBTA: the local ACK timeout is 4.096 us x 2^exponent
NCCL_IB_TIMEOUT = 20  # NCCL's default exponent (env.html, src/transport/net_ib)
NCCL_IB_RETRY_CNT = 7  # NCCL's default retry count


@dataclass(frozen=True)
class LinkDownDetection:
    """How long a port takes to declare its link down once the signal is gone (inputs: the PCS
    alignment-marker spacing and lane rate of the port's standard, the markers it tolerates,
    a configured debounce)."""

    marker_blocks: int = 16384
    lane_gbps: float = 5.15625
    block_bits: int = 66
    bad_markers: int = 4
    debounce_s: float = 0.0

    @property
    def detect_s(self) -> float:
        """Seconds from the loss of signal to the port's link-down event."""
        marker_period = self.marker_blocks * self.block_bits / (self.lane_gbps * 1e9)
        return self.bad_markers * marker_period + self.debounce_s


@dataclass(frozen=True)
class QpRetry:
    """The RDMA transport's retransmission settings of a QP (NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT)."""

    ack_timeout_exponent: int = NCCL_IB_TIMEOUT
    retry_count: int = NCCL_IB_RETRY_CNT

    def __post_init__(self) -> None:
        if not 0 <= self.ack_timeout_exponent <= 31:
            raise ValueError(f"ack timeout exponent {self.ack_timeout_exponent} is not in 0..31")
        if not 0 <= self.retry_count <= 7:
            raise ValueError(f"retry count {self.retry_count} is not in 0..7 (a 3-bit field)")

    @property
    def ack_timeout_s(self) -> float:
        return IB_TIMEOUT_UNIT_S * 2 ** self.ack_timeout_exponent

    @property
    def give_up_s(self) -> float:
        """Seconds a QP on a dead path keeps retrying before it goes to error: the timeout of
        the first sending and of each of `retry_count` retransmissions."""
        return self.ack_timeout_s * (self.retry_count + 1)


@dataclass(frozen=True)
class PlaneBalancing:
    """What decides the NIC's reaction to a plane failure, per mode (`hw` | `sw`)."""

    link_down: LinkDownDetection = LinkDownDetection()
    qp: QpRetry = QpRetry()

    def reaction_s(self, nic_mode: str) -> float:
        """Seconds from a failure to the NIC moving traffic off the plane."""
        if nic_mode == "hw":
            return self.link_down.detect_s
        if nic_mode == "sw":
            return self.qp.give_up_s
        raise ValueError(f"unknown NIC plane balancing {nic_mode!r}; one of hw, sw")

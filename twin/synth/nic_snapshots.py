"""Host NIC snapshots: `ethtool -S` (mlx5 names) and `rdma statistic` blocks per port, the RDMA
hw counters 32 bits wide as on these NICs, so they wrap."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import numpy as np

from collectors.formats.nic import write_ethtool_snapshots, write_rdma_statistic
from twin.synth.files import NS, write_gz
from twin.synth.names import ETHTOOL_FULL, ETHTOOL_NAMES, RDMA_NAMES

if TYPE_CHECKING:
    from twin.synth.writer import BundleWriter

WRAP = 2**32  # RDMA hw counters are 32 bits on these NICs


def write_host(w: BundleWriter, host: str, n: int) -> None:
    """`nic/<host>/<ifname>.ethtool.gz` and `nic/<host>/<ibdev>.rdma.gz` for each NIC port."""
    ts, ports, keep = w.series(host, n)
    names = {**ETHTOOL_NAMES, **ETHTOOL_FULL} if w.full else ETHTOOL_NAMES
    for ifname, vals in ports.items():
        blocks = [(int(ts[i]), {name: vals[c][i] for c, name in names.items()}) for i in keep]
        fh = io.StringIO()
        write_ethtool_snapshots(blocks, fh)
        text = fh.getvalue()
        if w.malformed_line("nic"):
            text += f"     {ETHTOOL_NAMES['tx_bytes']}: 12abc\n"
        write_gz(w.out / "nic" / host / f"{ifname}.ethtool.gz", text)
        write_rdma(w, host, ifname, vals, ts, keep)


def write_rdma(w: BundleWriter, host: str, ifname: str, vals: dict, ts: np.ndarray,
               keep: list[int]) -> None:
    """The RDMA counters of one port: CNPs and RoCE ECN marks follow the marks of the leaf port
    facing it, timeouts the link deaths its flows crossed, reordering the plane's balancing."""
    marks = np.array(vals["ecn_marked"]) - vals["ecn_marked"][0]
    leaf = leaf_marks(w, host, ifname)
    if leaf is not None:
        marks = leaf
    timeouts = host_timeouts(w, host, (ts - w.t0) / NS)
    rx = np.array(vals["rx_packets"], dtype=float)
    oos = np.floor((rx - rx[0]) * w.reorder.get(host, 0.0))
    base = WRAP - int(w.rng.integers(1, 10**6))  # close to the top: the counters wrap soon
    ibdev = f"mlx5_{ifname.removeprefix('eth')}"
    blocks = [(int(ts[i]), {(ibdev, 1): {
        RDMA_NAMES["cnp_sent"]: (base + int(marks[i])) % WRAP,
        RDMA_NAMES["ecn_marked_roce"]: (base + int(marks[i])) % WRAP,
        RDMA_NAMES["local_ack_timeout_err"]: int(timeouts[i]),
        RDMA_NAMES["out_of_sequence"]: int(oos[i]) % WRAP}}) for i in keep]
    fh = io.StringIO()
    write_rdma_statistic(blocks, fh)
    write_gz(w.out / "nic" / host / f"{ibdev}.rdma.gz", fh.getvalue())


def leaf_marks(w: BundleWriter, host: str, ifname: str) -> np.ndarray | None:
    """ECN marks on the leaf port facing this NIC: what its RoCE receiver sees (and CNPs)."""
    c = w.cable_of.get(f"{host}:{ifname}")
    if c is None:
        return None
    return np.floor(w.res.counters_at["ecn_marked"][:, 2 * c + 1])


def host_timeouts(w: BundleWriter, host: str, t_s: np.ndarray) -> np.ndarray:
    """Transport timeouts of the host's QPs whose flows crossed a link when it died."""
    out = np.zeros(len(t_s), dtype=np.int64)
    for h, at, count in w.timeout_events:
        if h == host:
            out += (t_s >= at).astype(np.int64) * count
    return out

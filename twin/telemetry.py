"""What a real fabric would report: per-port counters, in the store's canonical names.

A directed link u->v is the egress port of u and the ingress port of v on one cable. Its bytes
and packets count as `tx_*` on u's port and `rx_*` on v's; ECN marks and drops happen at u's
egress queue; pause frames are sent by v (`tx_pause` on v's port) and received by u
(`rx_pause`). A paused sender receives pause frames at the rate a switch refreshes them:
twice per maximal pause (65535 quanta of 512 bit times) at the link's speed.

The counters are cumulative from 0 at the first sample, like a freshly booted device: the
synthesizer adds offsets, wraps and resets on top.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from twin.engine import Result
from twin.topology import Fabric

PAUSE_QUANTA_BITS = 65535 * 512


def port_table(fabric: Fabric) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(egress port index, ingress port index) per directed link, and the port ids."""
    ports = fabric.cable_port_a + fabric.cable_port_b
    c = fabric.n_cables
    a_idx = np.arange(c)
    b_idx = c + np.arange(c)
    egress = np.empty(2 * c, dtype=np.int64)
    ingress = np.empty(2 * c, dtype=np.int64)
    egress[0::2], ingress[0::2] = a_idx, b_idx  # up: a -> b
    egress[1::2], ingress[1::2] = b_idx, a_idx  # down: b -> a
    return egress, ingress, ports


def port_counters(fabric: Fabric, result: Result, t0_ns: int = 0) -> pl.DataFrame:
    """Long-form per-port counters at every sample time of a run with telemetry.

    Columns: ts (ns since the epoch, `t0_ns` + simulated seconds), device, ifname, counter
    (canonical: tx_bytes, rx_bytes, tx_packets, rx_packets, ecn_marked, tx_discards, rx_pause,
    tx_pause), value (cumulative).
    """
    if not result.counters_at:
        raise ValueError("the run has no telemetry: simulate(..., telemetry=QueueConfig())")
    egress, ingress, ports = port_table(fabric)
    n_ports = len(ports)
    c = result.counters_at
    frames_per_s = np.repeat(fabric.cable_gbps * 1e9, 2) / PAUSE_QUANTA_BITS * 2
    pause_frames = c["pause_s"] * frames_per_s[None, :]
    per_port = {
        "tx_bytes": (c["bytes"], egress), "rx_bytes": (c["bytes"], ingress),
        "tx_packets": (c["packets"], egress), "rx_packets": (c["packets"], ingress),
        "ecn_marked": (c["ecn_marked"], egress), "tx_discards": (c["drops"], egress),
        "rx_pause": (pause_frames, egress), "tx_pause": (pause_frames, ingress),
    }
    n_samples = len(result.sample_times)
    ts = (t0_ns + np.rint(result.sample_times * 1e9)).astype(np.int64)
    device = np.array([p.split(":", 1)[0] for p in ports])
    ifname = np.array([p.split(":", 1)[1] for p in ports])
    frames = []
    for name, (values, port) in per_port.items():
        acc = np.zeros((n_samples, n_ports))
        np.add.at(acc, (slice(None), port), values)  # ports get one link each way
        frames.append(pl.DataFrame({
            "ts": np.repeat(ts, n_ports), "device": np.tile(device, n_samples),
            "ifname": np.tile(ifname, n_samples), "counter": name,
            "value": np.floor(acc).ravel()}))
    return pl.concat(frames)


def port_links(fabric: Fabric, port: int) -> tuple[int, int]:
    """(egress link, ingress link) of port index `port` (a-side ports first, then b-side)."""
    c = fabric.n_cables
    return (2 * port, 2 * port + 1) if port < c else (2 * (port - c) + 1, 2 * (port - c))


def port_series(fabric: Fabric, result: Result, port: int) -> dict[str, np.ndarray]:
    """One port's cumulative canonical counters at every sample time (see `port_counters`),
    without building the whole fabric's long table: what a streaming writer wants."""
    egress, ingress = port_links(fabric, port)
    c = result.counters_at
    frames_per_s = float(fabric.cable_gbps[egress // 2]) * 1e9 / PAUSE_QUANTA_BITS * 2
    return {
        "tx_bytes": np.floor(c["bytes"][:, egress]), "rx_bytes": np.floor(c["bytes"][:, ingress]),
        "tx_packets": np.floor(c["packets"][:, egress]), "rx_packets": np.floor(c["packets"][:, ingress]),
        "ecn_marked": np.floor(c["ecn_marked"][:, egress]), "tx_discards": np.floor(c["drops"][:, egress]),
        "rx_pause": np.floor(c["pause_s"][:, egress] * frames_per_s),
        "tx_pause": np.floor(c["pause_s"][:, ingress] * frames_per_s),
    }

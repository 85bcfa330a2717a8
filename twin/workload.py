"""Who sends what: flow lists from traffic patterns and from htsim connection matrices.

Endpoints are indices into `Fabric.ep_*` (one per host, NIC and plane). Patterns here build
single-plane flows; `spread_over_planes` splits host-to-host transfers over the planes.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from twin.engine import Flows
from twin.topology import Fabric

_CM_LINE = re.compile(
    r"\s*(\d+)\s*->\s*(\d+)(?:\s+id\s+(\d+))?(?:\s+start\s+([0-9.eE+-]+))?(?:\s+size\s+(\d+))?\s*$")


class WorkloadError(ValueError):
    """A workload that cannot be built (bad file line, unknown host)."""


def read_connection_matrix(path: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """htsim's connection matrix: `SRC->DST id N start T size BYTES` per line, after the
    `Nodes N` and `Connections N` header lines. Returns (src, dst, start_s, size), hosts as
    htsim numbers them. `start` is in microseconds in htsim's files."""
    return read_connection_matrix_ids(path)[1:]


def read_connection_matrix_ids(path: str | Path) -> tuple[np.ndarray, ...]:
    """(ids, src, dst, start_s, size) of a connection matrix (`read_connection_matrix`): each
    line's `id N`, or its position among the connections (1-based) where it has none."""
    ids, src, dst, start, size = [], [], [], [], []
    with open(path) as fh:
        for number, line in enumerate(fh, 1):
            text = line.strip()
            if not text or text.startswith(("Nodes", "Connections", "#")):
                continue
            m = _CM_LINE.match(text)
            if not m or m.group(5) is None:
                raise WorkloadError(f"{path}:{number}: expected `SRC->DST id N start T size BYTES`")
            ids.append(int(m.group(3)) if m.group(3) is not None else len(ids) + 1)
            src.append(int(m.group(1)))
            dst.append(int(m.group(2)))
            start.append(float(m.group(4) or 0) * 1e-6)
            size.append(int(m.group(5)))
    return (np.array(ids, dtype=np.int64), np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64),
            np.array(start), np.array(size, dtype=float))


def endpoints(fabric: Fabric, hosts: np.ndarray, nic: int = 0, plane: int = 0) -> np.ndarray:
    """Endpoint index of NIC `nic`, plane `plane` of each host."""
    spec = fabric.spec
    # endpoints are laid out plane-major, then host, then NIC (see topology._Builder.build)
    per_plane = spec.hosts * spec.nics_per_host
    return plane * per_plane + np.asarray(hosts) * spec.nics_per_host + nic


def permutation(fabric: Fabric, size: float, seed: int = 0, hosts: np.ndarray | None = None) -> Flows:
    """Every host sends `size` bytes to another host of a random derangement (NIC 0, plane 0)."""
    rng = np.random.default_rng(seed)
    hosts = np.arange(fabric.spec.hosts) if hosts is None else np.asarray(hosts)
    while True:
        perm = rng.permutation(len(hosts))
        if not np.any(perm == np.arange(len(hosts))):
            break
    src = endpoints(fabric, hosts)
    dst = endpoints(fabric, hosts[perm])
    return Flows(src, dst, np.full(len(src), float(size)), np.zeros(len(src)))


def incast(fabric: Fabric, senders: np.ndarray, receiver: int, size: float) -> Flows:
    """`senders` each send `size` bytes to `receiver` at time 0."""
    src = endpoints(fabric, senders)
    dst = endpoints(fabric, np.full(len(src), receiver))
    return Flows(src, dst, np.full(len(src), float(size)), np.zeros(len(src)))


def ring_step(fabric: Fabric, hosts: np.ndarray, size: float, plane: int = 0) -> Flows:
    """One step of a ring collective: host i sends `size` bytes to host i+1, on every NIC
    (NCCL runs one ring per NIC rail)."""
    hosts = np.asarray(hosts)
    nics = fabric.spec.nics_per_host
    src = np.concatenate([endpoints(fabric, hosts, nic, plane) for nic in range(nics)])
    dst = np.concatenate([endpoints(fabric, np.roll(hosts, -1), nic, plane) for nic in range(nics)])
    return Flows(src, dst, np.full(len(src), float(size)), np.zeros(len(src)))

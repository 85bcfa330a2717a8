"""NCCL-like collectives as host-to-host transfers, and the bandwidths nccl-tests reports.

Rail-optimized NCCL runs one ring (or tree) per NIC rail: NIC i of every host talks to NIC i of
the others, and a collective of S bytes moves S / nics_per_host over each rail. Pipelined
collectives are modelled as one transfer per neighbour carrying the whole volume; the collective
completes when its slowest transfer does (every rank waits for its predecessor).

Volumes per rank and rail, for n ranks and S bytes (nccl-tests' PERFORMANCE.md):
- ring all-reduce: 2(n-1)/n S to the next rank; bus bandwidth = algbw * 2(n-1)/n
- all-gather, reduce-scatter: (n-1)/n S to the next rank; busbw = algbw * (n-1)/n
- all-to-all: S/n to every other rank; busbw = algbw * (n-1)/n
- tree all-reduce: S up to the parent and S down to each child of a binary tree
- permutation, incast (all to the first host), one-to-many (the first host to all): S per pair
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.engine import Transfers

COLLECTIVES = ("allreduce_ring", "allreduce_tree", "allgather", "reducescatter", "alltoall",
               "permutation", "incast", "one_to_many")


@dataclass
class Collective:
    """One collective of one job: `size` bytes per rank over `hosts` (host indices)."""

    kind: str
    hosts: np.ndarray
    size: float
    start: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in COLLECTIVES:
            raise ValueError(f"unknown collective {self.kind!r}; one of {', '.join(COLLECTIVES)}")
        self.hosts = np.asarray(self.hosts, dtype=np.int64)
        if len(self.hosts) < 2:
            raise ValueError("a collective needs at least 2 hosts")

    @property
    def bus_factor(self) -> float:
        n = len(self.hosts)
        if self.kind == "allreduce_ring" or self.kind == "allreduce_tree":
            return 2 * (n - 1) / n
        if self.kind in ("allgather", "reducescatter", "alltoall"):
            return (n - 1) / n
        return 1.0

    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(src host, dst host, bytes per rail for a 1-NIC host) of every transfer."""
        h, n, s = self.hosts, len(self.hosts), self.size
        if self.kind == "allreduce_ring":
            return h, np.roll(h, -1), np.full(n, 2 * (n - 1) / n * s)
        if self.kind in ("allgather", "reducescatter"):
            return h, np.roll(h, -1), np.full(n, (n - 1) / n * s)
        if self.kind == "alltoall":
            i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
            off = i != j
            return h[i[off]], h[j[off]], np.full(off.sum(), s / n)
        if self.kind == "allreduce_tree":
            child = np.arange(1, n)
            parent = (child - 1) // 2
            src = np.concatenate([h[child], h[parent]])
            dst = np.concatenate([h[parent], h[child]])
            return src, dst, np.full(len(src), s)
        if self.kind == "permutation":
            rng = np.random.default_rng(self.seed)
            while True:
                perm = rng.permutation(n)
                if not np.any(perm == np.arange(n)):
                    break
            return h, h[perm], np.full(n, s)
        if self.kind == "incast":
            return h[1:], np.full(n - 1, h[0]), np.full(n - 1, s)
        return np.full(n - 1, h[0]), h[1:], np.full(n - 1, s)  # one_to_many

    def transfers(self, nics_per_host: int, job: int = 0) -> Transfers:
        """The collective's transfers, one per pair and NIC rail."""
        src, dst, size = self.pairs()
        k = len(src)
        nic = np.repeat(np.arange(nics_per_host), k)
        return Transfers(
            src=np.tile(src, nics_per_host), dst=np.tile(dst, nics_per_host),
            size=np.tile(size / nics_per_host, nics_per_host), start=np.full(k * nics_per_host, self.start),
            nic=nic, entropy=np.arange(k * nics_per_host) + (job << 32),
            job=np.full(k * nics_per_host, job))


@dataclass
class CollectiveResult:
    """What nccl-tests prints for one collective."""

    kind: str
    ranks: int
    size: float
    time_s: float

    @property
    def algbw(self) -> float:
        """Algorithm bandwidth, bytes/s: size / time."""
        return self.size / self.time_s if self.time_s > 0 else float("inf")

    def busbw(self, factor: float) -> float:
        """Bus bandwidth, bytes/s: algbw times the collective's factor."""
        return self.algbw * factor

"""The queues that NIC-paced packet streams make at a sprayed fabric's egress ports (UEC).

`twin.queueing.windowed_rates` prices the wait at every switch egress port a window-based flow
crosses. Its default is M/D/1 at the port's utilization: Poisson arrivals, the limit of many
independent senders, whose mean wait grows without bound as the load nears the port's speed.
htsim's UEC NIC (`UecNIC` in uec.cpp) does not send Poisson traffic: it serves the flows of a
host round robin, one packet at a time at line rate, so each flow leaves its NIC as a periodic
stream. Two consequences, both mechanisms with no input:

- A port where flows arrive whole (not sprayed there: a receiver's host port, where every
  packet of each of its flows ends) is fed by that many periodic streams. N periodic streams
  of total load rho queue as N*D/D/1, whose tail the Brownian-bridge approximation gives,
  P(Q > x) ~ exp(-2x (x / N + 1 - rho)) (Roberts and Virtamo 1991, periodic cell streams in an
  ATM multiplexer): a mean of sqrt(pi N / 8) erfcx((1 - rho) sqrt(N / 2)) packets,
  sqrt(pi N / 8) at full load, where M/D/1's is unbounded (`superposed_packets`). The flows'
  loads count as N = (sum x)^2 / sum x^2 equal streams. Where flows are sprayed (a share of
  each per port, their entropies hashed to paths), M/D/1 stays: many small, unevenly hashed
  shares, closer to Poisson.
- A port whose every packet arrives over one ingress link no faster than itself (a spine's
  port down to a ToR that only one other ToR sends to) is a FIFO fed at most at its own speed:
  it never holds a packet waiting (`PacedShares.passthrough`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from twin.maxmin import Incidence
from twin.topology import Fabric

# Numerical Recipes' erfcc (Chebyshev fit, fractional error below 1.2e-7 for every z >= 0),
# without its exp(-z^2): erfcx(z) = exp(z^2) erfc(z), finite for any z (scipy.special's import
# would cost every run a tenth of a CPU second)
_ERFCC = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398,
          1.48851587, -0.82215223, 0.17087277)


def erfcx(z: np.ndarray) -> np.ndarray:
    """exp(z^2) erfc(z) for z >= 0."""
    t = 1.0 / (1.0 + 0.5 * z)
    poly = np.zeros_like(t)
    for c in _ERFCC[:0:-1]:
        poly = (poly + c) * t
    return t * np.exp(poly + _ERFCC[0])


def md1_packets(rho: np.ndarray) -> np.ndarray:
    """Mean M/D/1 queue (packets waiting) at utilization `rho`; inf at rho >= 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(rho < 1, rho**2 / (2 * np.maximum(1 - rho, 1e-12)), np.inf)


def superposed_packets(rho: np.ndarray, streams: np.ndarray) -> np.ndarray:
    """Mean queue (packets waiting) at a port fed by `streams` periodic packet streams of total
    utilization `rho`: the lesser of M/D/1's and N*D/D/1's Brownian-bridge mean (module
    docstring); M/D/1's where `streams` is inf. inf above rho = 1 (more offered than served).

    >>> round(float(superposed_packets(np.array([1.0]), np.array([8.0]))[0]), 3)  # sqrt(pi)
    1.772
    """
    finite = np.isfinite(streams)
    n = np.where(finite, np.maximum(streams, 1.0), 1.0)
    gap = np.clip(1.0 - rho, 0.0, None)
    bridge = np.where(finite, np.sqrt(np.pi * n / 8.0) * erfcx(gap * np.sqrt(n / 2.0)), np.inf)
    return np.where(rho > 1 + 1e-9, np.inf, np.minimum(md1_packets(rho), bridge))


def stream_counts(streams: sp.spmatrix, rates: np.ndarray, load: np.ndarray) -> np.ndarray:
    """Per link, its load as a number of equal periodic streams, (sum x)^2 / sum x^2 over the
    flows arriving whole (`streams`: links x flows, their shares squared); inf where none does."""
    paced = streams @ (rates * rates)
    return np.where(paced > 0, load**2 / np.where(paced > 0, paced, 1.0), np.inf)


@dataclass
class PacedShares:
    """What `windowed_rates` needs of the flows' shares of their links, built once per routing.

    own: flows x links, each share squared where a flow sends at least half its packets (its
    host ports, a hop it does not spray), for `Transport.paced` (the rest, 1/64 to 1/8 of a
    sprayed flow per port, would double the cost of every bisection round for a few tenths of a
    percent of its wait); streams: links x flows, the same entries, for
    `Transport.paced_streams`; passthrough: per link, fed over one ingress link no faster than
    itself by every flow it carries (over all the run's flows, so a port two ingress links ever
    feed keeps its queue)."""

    own: sp.spmatrix | None
    streams: sp.spmatrix | None
    passthrough: np.ndarray | None

    @classmethod
    def of(cls, inc: Incidence, fabric: Fabric, capacity_bps: np.ndarray, paced: bool,
           paced_streams: bool) -> PacedShares:
        """The shares a transport uses on `fabric` (its `paced` and `paced_streams`)."""
        if not (paced or paced_streams):
            return cls(None, None, None)
        e = inc.explicit().tocoo()
        big = e.data >= 0.5
        # links x flows, the entries squared: `streams` as it is, `own` its transpose
        squared = sp.csr_matrix((e.data[big] ** 2, (e.row[big], e.col[big])), shape=e.shape)
        if not paced_streams:
            return cls(squared.T.tocsr(), None, None)
        up = np.arange(fabric.n_links) % 2 == 0  # link 2c climbs cable c, cable_a to cable_b
        low, high = np.repeat(fabric.cable_a, 2), np.repeat(fabric.cable_b, 2)
        link_src, link_dst = np.where(up, low, high), np.where(up, high, low)
        passthrough = single_feeder(e.row[e.data > 0], e.col[e.data > 0], link_src, link_dst,
                                    capacity_bps)
        return cls(squared.T.tocsr() if paced else None, squared, passthrough)


def single_feeder(links: np.ndarray, flows: np.ndarray, link_src: np.ndarray, link_dst: np.ndarray,
                  capacity_bps: np.ndarray) -> np.ndarray:
    """Per link, True where every flow on it reaches the link's switch over one and the same
    ingress link, of a speed no higher than the link's (entries: the (link, flow) pairs of the
    incidence). A flow's ingress at a node is any of its links ending there; at its source, its
    NIC (one feeder per host)."""
    n_links = len(link_src)
    n_nodes = int(max(link_src.max(initial=0), link_dst.max(initial=0))) + 1
    # per (flow, node): how many of the flow's links end there, the lowest and highest of them
    into, inv = np.unique(flows * n_nodes + link_dst[links], return_inverse=True)
    count = np.bincount(inv, minlength=len(into))
    lo = np.full(len(into), n_links)
    hi = np.full(len(into), -1)
    np.minimum.at(lo, inv, links)
    np.maximum.at(hi, inv, links)
    # each entry as an egress: the flow's ingress at the link's start node
    key = flows * n_nodes + link_src[links]
    at = np.minimum(np.searchsorted(into, key), len(into) - 1)
    found = into[at] == key
    nic = -1 - link_src[links]  # a flow's first link: fed by its host's NIC
    one = np.where(found, count[at] == 1, True)
    feeder = np.where(found, lo[at], nic)
    first = np.full(n_links, np.iinfo(np.int64).max)
    last = np.full(n_links, np.iinfo(np.int64).min)
    np.minimum.at(first, links, feeder)
    np.maximum.at(last, links, np.where(found, hi[at], nic))
    every_one = np.bincount(links, weights=~one, minlength=n_links) == 0
    fed = first == last  # one feeder link (or NIC) for every flow on the link
    speed = np.where((first >= 0) & (first < n_links), capacity_bps[np.clip(first, 0, n_links - 1)], 0.0)
    return every_one & fed & (last > np.iinfo(np.int64).min) & (speed <= capacity_bps * (1 + 1e-9))

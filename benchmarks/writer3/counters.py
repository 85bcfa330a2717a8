"""Monotonic counters read at a device's own (jittered) instants from the physics' rates, the
fleet noise that real telemetry carries on top, and the link-state history of every link."""

from __future__ import annotations

import numpy as np

from .fabric import Fabric
from .physics import Rates, State


class Counters:
    """Cumulative counters per direction (or host port), read at any true time."""

    def __init__(self, fab: Fabric, state: State, rates: Rates, trans: dict[int, list], rng,
                 hot_ber: dict[int, float] | None = None):
        self.fab, self.rates = fab, rates
        n_d = rates.tx_bytes.shape[1]
        speed = state.speed[np.arange(n_d) // 2]
        ber = np.exp(rng.normal(np.log(2e-8), 1.0, n_d))
        for d, b in (hot_ber or {}).items():  # a degraded link's receiver corrects far more
            ber[d] = b
        up = state.up[:, np.arange(n_d) // 2]
        corr = speed * ber * up + rates.err_pkts * 4150 * 8 * 1e-3
        self.rate = {
            "tx_bytes": rates.tx_bytes, "rx_bytes": rates.rx_bytes, "tx_pkts": rates.tx_pkts,
            "rx_pkts": rates.rx_pkts, "err": rates.err_pkts, "ecn": rates.ecn,
            "pauses": rates.pauses, "paused_us": state.phi * 1e6, "corrected": corr,
            "symbol": corr * 2e-7 + rates.err_pkts * 3,
        }
        self.rate.update({f"nic_{k}": v for k, v in rates.nic.items()})
        self.cum = {k: np.vstack([np.zeros((1, v.shape[1])), np.cumsum(v, axis=0)])
                    for k, v in self.rate.items()}
        self.seconds = rates.tx_bytes.shape[0]
        self.trans = {link: sorted(ts) for link, ts in trans.items()}

    def at(self, name: str, col: int, t: np.ndarray) -> np.ndarray:
        idx = np.clip(np.floor(t).astype(int), 0, self.seconds - 1)
        frac = np.clip(t - idx, 0, 1)
        return self.cum[name][idx, col] + frac * self.rate[name][idx, col]

    def transitions(self, link: int, t: np.ndarray, kind: str | None = None) -> np.ndarray:
        times = np.array([x for x, k in self.trans.get(link, []) if kind is None or k == kind])
        return np.searchsorted(times, t, side="right") if len(times) else np.zeros(len(t), int)

    def is_up(self, link: int, t: np.ndarray) -> np.ndarray:
        return self.transitions(link, t, "down") == self.transitions(link, t, "up")

    def port(self, p: int, t: np.ndarray) -> dict[str, np.ndarray]:
        """Canonical counters of port p at true times t (before offsets and clears)."""
        fab = self.fab
        dt, dr = fab.tx_dir(p), fab.rx_dir(p)
        link = int(fab.port_link[p])
        return {
            "out_octets": self.at("tx_bytes", dt, t), "in_octets": self.at("rx_bytes", dr, t),
            "out_pkts": self.at("tx_pkts", dt, t), "in_pkts": self.at("rx_pkts", dr, t),
            "in_errors": self.at("err", dr, t), "in_fcs": self.at("err", dr, t),
            "out_errors": 0 * t, "in_discards": 0 * t, "out_discards": 0 * t,
            "ecn": self.at("ecn", dt, t), "q_octets": self.at("tx_bytes", dt, t) * 0.995,
            "rx_pause": self.at("pauses", dt, t), "tx_pause": self.at("pauses", dr, t),
            "rx_paused_us": self.at("paused_us", dt, t), "tx_paused_us": self.at("paused_us", dr, t),
            "corrected": self.at("corrected", dr, t), "symbol": self.at("symbol", dr, t),
            "carrier": self.transitions(link, t).astype(float),
            "carrier_down": self.transitions(link, t, "down").astype(float),
        }


def add_noise(fab: Fabric, state: State, rates: Rates, rng, avoid: set[int]) -> dict:
    """Stray FCS errors and pause frames on healthy links, ECN microbursts; what was added."""
    seconds, n_d = rates.tx_bytes.shape
    healthy = [d for d in range(n_d) if d // 2 not in avoid and state.up[:, d // 2].min() > 0]
    host_down = [fab.rx_dir(fab.nic[k]) for k in fab.nic if fab.port_link[fab.nic[k]] not in avoid]
    log = {"fcs": [], "pause": [], "ecn": []}
    for _ in range(int(rng.integers(2, 7))):
        d, t, k = int(rng.choice(healthy)), int(rng.integers(seconds)), int(rng.integers(1, 12))
        rates.err_pkts[t, d] += k
        rates.rx_pkts[t, d] = max(0.0, rates.rx_pkts[t, d] - k)
        log["fcs"].append(d)
    for _ in range(int(rng.integers(2, 7))):  # a NIC pauses its leaf port for a moment
        d, t = int(rng.choice(host_down)), int(rng.integers(seconds))
        rates.pauses[t, d] += float(rng.uniform(20, 1500))
        log["pause"].append(d)
    ports = {fab.rx_dir(p): p for p in fab.nic.values()}
    for _ in range(int(rng.integers(4, 13))):  # microbursts toward a receiver
        d, t = int(rng.choice(host_down)), int(rng.integers(seconds))
        burst = min(float(rng.uniform(200, 20000)), rates.tx_pkts[t, d])
        rates.ecn[t, d] += burst
        rates.nic["np_ecn"][t, ports[d]] += burst
        rates.nic["cnp_sent"][t, ports[d]] += 0.6 * burst
        log["ecn"].append(d)
    return log

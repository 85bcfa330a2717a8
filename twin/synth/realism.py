"""What real fleets add to the twin's counters, and the hard cases of issue 17, for the writer.

Each piece is off unless the scenario asks for it (`[telemetry]` keys, fault keys: see
twin/synth/__init__.py), and draws no random number when off, so bundles of scenarios that
ask for none stay byte for byte what they were:
- vendors: a switch's OS names its interfaces (Cumulus `swp5`, SONiC `Ethernet16`, EOS
  `Ethernet5/1`), picks its collector and its syslog phrasing;
- noise: a few FCS and symbol errors on healthy ports, stray pause bursts from healthy NICs,
  ECN microbursts on switch ports, one switch whose counters are cleared mid-bundle, and 1% of
  the samples read twice (`BundleWriter.series`);
- full counters: carrier transitions (switches), link-down events (NICs), port speed gauges;
- hard cases: silent loss (the receiver counts fewer packets than the peer sent, no error
  counter moves), a lower negotiated speed (the port speed gauge says so), victims louder than
  the root (the upstream ports the congested leaf pauses mark more ECN than the root).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from twin.engine import Result
    from twin.faults import Fault
    from twin.topology import Fabric

# the collector a non-Cumulus switch streams through (NVIDIA's Prometheus names are Cumulus'):
# SONiC's gNMI server through gnmic's event output, EOS's OpenConfig through gnmic json
VENDOR_COLLECTOR = {"sonic": "gnmi_event", "eos": "gnmi_json"}
VENDOR_SYSLOG = {"sonic": "sonic", "eos": "rfc3164"}  # EOS logs links as %LINEPROTO-5-UPDOWN
_SWP = re.compile(r"swp(\d+)")


def vendor_ifname(vendor: str, ifname: str) -> str:
    """A switch port's name on its OS: Cumulus swpN, SONiC Ethernet{4(N-1)} (lanes of four),
    EOS EthernetN/1."""
    m = _SWP.fullmatch(ifname)
    if vendor == "cumulus" or not m:
        return ifname
    n = int(m.group(1))
    return f"Ethernet{4 * (n - 1)}" if vendor == "sonic" else f"Ethernet{n}/1"


def vendors_of(switches: list[str], vendors: list[str]) -> dict[str, str]:
    """Each switch's OS, by turns of three switches (so Cumulus switches keep all three of
    their collectors when vendors are mixed)."""
    return {s: vendors[(i // 3) % len(vendors)] for i, s in enumerate(switches)}


# -- fleet noise -----------------------------------------------------------------------------

Noise = dict[str, list[tuple[str, int, float]]]  # port id -> [(counter, sample, increment)]


def pick_noise(rng: np.random.Generator, f: Fabric, collector: dict[str, str], exporting: list[str],
               n_samples: int) -> tuple[Noise, dict | None]:
    """The healthy fleet's noise, and the switch (of `exporting`, streamed by gnmic) whose
    counters are cleared at a sample; drawn only when `[telemetry] noise = true`."""
    noise: Noise = {}
    ports = sorted(f.cable_port_a + f.cable_port_b)
    for _ in range(int(rng.integers(1, 4))):  # a few FCS errors on a healthy link
        port = ports[int(rng.integers(len(ports)))]
        noise.setdefault(port, []).extend([
            ("rx_fcs_errors", int(rng.integers(n_samples)), float(rng.integers(1, 4))),
            ("symbol_errors", int(rng.integers(n_samples)), float(rng.integers(1, 10)))])
    host_cables = [c for c in range(f.n_cables) if f.cable_tier[c] == 0]
    for _ in range(int(rng.integers(1, 4))):  # a stray burst of pause frames from a NIC
        c = host_cables[int(rng.integers(len(host_cables)))]
        i, k = int(rng.integers(n_samples)), float(rng.integers(5, 300))
        noise.setdefault(f.cable_port_a[c], []).append(("tx_pause", i, k))
        noise.setdefault(f.cable_port_b[c], []).append(("rx_pause", i, k))
    switch_ports = [p for p in ports if p.split(":", 1)[0] in collector]
    for _ in range(int(rng.integers(1, 4))):  # an ECN microburst: a second or two of marks
        port = switch_ports[int(rng.integers(len(switch_ports)))]
        noise.setdefault(port, []).append(
            ("ecn_marked", int(rng.integers(n_samples)), float(rng.integers(1000, 20000))))
    cands = [s for s in exporting if collector.get(s, "prom") != "prom"]
    clear = None
    if cands and n_samples > 10:  # someone cleared a switch's counters
        dev = cands[int(rng.integers(len(cands)))]
        clear = {"device": dev, "sample": int(rng.integers(n_samples // 4, 3 * n_samples // 4))}
    return noise, clear


def add_noise(noise: Noise, port_id: str, vals: dict[str, np.ndarray]) -> None:
    """The port's noise increments, cumulative from their sample on."""
    for counter, i, amount in noise.get(port_id, []):
        vals[counter][i:] += amount


def restart(vals: dict[str, np.ndarray], sample: int, gauges: tuple[str, ...]) -> None:
    """Counters restart from zero at `sample` (a reboot, a `clear counters`); gauges do not."""
    for c in vals:
        if c not in gauges:
            vals[c] = np.concatenate([vals[c][:sample], vals[c][sample:] - vals[c][sample]])


# -- full counters ---------------------------------------------------------------------------

def carrier_counts(faults: list[Fault], port_id: str, t_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(carrier transitions, link-down events) of a port at its sample times: every down
    period of its link faults is a transition down and, if it ends, one up; one down event.
    Both count from the link's first up at boot, before the bundle."""
    carrier = np.ones(len(t_s))
    downs = np.zeros(len(t_s))
    for f in faults:
        if f.kind in ("link_down", "link_flap") and port_id in f.root_id.split("--"):
            for a, b in f.downs:
                carrier += (t_s >= a).astype(float) + (t_s >= b)
                downs += t_s >= a
    return carrier, downs


def port_speed(fabric: Fabric, faults: list[Fault], port_id: str, port: int,
               t_s: np.ndarray) -> np.ndarray:
    """The negotiated speed of a port (b/s) at its sample times: its cable's, or a degraded
    link's lower one while the fault lasts."""
    c = port if port < fabric.n_cables else port - fabric.n_cables
    out = np.full(len(t_s), float(fabric.cable_gbps[c]) * 1e9)
    for f in faults:
        if f.kind == "link_degraded" and port_id in f.root_id.split("--"):
            speed = min((ch.gbps for ch in f.changes if ch.gbps > 0), default=0.0)
            inside = (t_s >= f.start_s) & (t_s < f.end_s)
            out = np.where(inside, np.minimum(out, speed * 1e9), out)
    return out


# -- hard cases ------------------------------------------------------------------------------

def silent_loss(faults: list[Fault], port_id: str, raw: dict[str, np.ndarray], t_s: np.ndarray) -> None:
    """A link losing packets silently: what this port receives while the fault lasts is what
    its peer sent times (1 - loss), and no error counter moves (see `BundleWriter.fcs_errors`)."""
    for f in faults:
        if f.kind == "link_degraded" and not f.counted and port_id in f.root_id.split("--"):
            inside = (t_s >= f.start_s) & (t_s < f.end_s)
            for c in ("rx_packets", "rx_bytes"):
                step = np.diff(raw[c], prepend=raw[c][0]) * inside
                raw[c] = raw[c] - np.floor(np.cumsum(step * f.loss))


def louder_victims(fabric: Fabric, res: Result, faults: list[Fault]) -> None:
    """Congestion with `victim_marks`: the links down into the root's leaf (the ports it
    pauses) mark that many times the root port's ECN marks, in the twin's counters."""
    marks = res.counters_at["ecn_marked"] if res.counters_at else None
    for ft in faults:
        if ft.kind != "congestion" or not ft.victim_marks or marks is None:
            continue
        c = fabric.cable_port_b.index(ft.root_id)  # the leaf's end of the receiver's cable
        root = marks[:, 2 * c + 1].copy()
        for u in (int(u) for u in fabric.leaf_up_cables[int(fabric.cable_b[c])] if u >= 0):
            marks[:, 2 * u + 1] += ft.victim_marks * root


def paused_upstream(fabric: Fabric, ft: Fault) -> set[str]:
    """The upstream ports a congested leaf pauses (victims of `louder_victims`)."""
    leaf = int(fabric.cable_b[fabric.cable_port_b.index(ft.root_id)])
    return {fabric.cable_port_b[int(u)] for u in fabric.leaf_up_cables[leaf] if u >= 0}

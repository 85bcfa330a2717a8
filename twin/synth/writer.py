"""The bundle writer's state: the twin's per-port counters with a fleet's realism on top (clock
skew, sampling jitter, missing samples, a reboot), and the ground truth (`labels.json`).

Each telemetry family is written by a module of its own (switch_counters, nic_snapshots,
topology_files, syslog_events, jobs); `BundleWriter.write` calls them in a fixed order, since
they draw from one random generator and the same scenario and seed give byte-identical files.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from collectors.core.timeparse import ns_to_iso
from twin.faults import Fault
from twin.scenario import Scenario, TelemetryTable
from twin.synth import realism
from twin.synth.files import NS, write_text
from twin.synth.names import GAUGES, SWITCH_COUNTERS
from twin.telemetry import port_series
from twin.topology import Fabric

GENERATOR = "fabtwin generate"  # manifest.json's "generator": the bundles generate may replace
MAX_MALFORMED = 3  # malformed lines per bundle, at most one per collector family


class BundleWriter:
    """Turns the twin's per-port counters into a bundle of real-format files."""

    def __init__(self, out: Path, fabric: Fabric, sc: Scenario, faults: list[Fault],
                 rng: np.random.Generator, t0: int, step: float, duration: float,
                 name: str = "", tel: TelemetryTable | None = None) -> None:
        tel = tel or TelemetryTable()
        self.tel = tel
        self.out, self.f, self.sc, self.faults, self.rng = out, fabric, sc, faults, rng
        self.t0, self.step, self.duration = t0, step, duration
        self.files = 0
        self.name = name or out.name
        self.malformed = 0
        self.malformed_kinds: set[str] = set()  # one malformed line per collector family
        self.timeout_events: list[tuple[str, float, int]] = []  # (host, time, count), effects
        self.reorder: dict[str, float] = {}  # out-of-sequence share per host, effects
        self.reboot: dict | None = None
        self.clear: dict | None = None  # noise: a switch whose counters are cleared
        self.noise: realism.Noise = {}  # port -> [(counter, sample, increment)]
        names = fabric.node_name
        self.switches = [n for i, n in enumerate(names) if fabric.node_kind[i] > 0]
        self.hosts = [n for i, n in enumerate(names) if fabric.node_kind[i] == 0]
        # collectors as fleets mix them: a third of the switches each way
        self.collector = {s: ("gnmi_json", "gnmi_event", "prom")[i % 3] for i, s in enumerate(self.switches)}
        self.vendor = realism.vendors_of(self.switches, tel.vendors)
        for s_, v in self.vendor.items():
            self.collector[s_] = realism.VENDOR_COLLECTOR.get(v, self.collector[s_])
        self.silent = set(tel.silent) | {f.silent_device for f in faults if f.silent_device}
        # carrier, link-down and speed counters: asked for, or what a fault shows only through
        self.full = tel.counters == "full" or any(
            not f.logged or "low_speed" in f.hard_cases for f in faults)
        c = fabric.n_cables
        self.ports_of: dict[str, list[tuple[str, int]]] = {}
        for p_, port in enumerate(fabric.cable_port_a + fabric.cable_port_b):
            dev, ifn = port.split(":", 1)
            self.ports_of.setdefault(dev, []).append((ifn, p_))
        self.cable_of = {fabric.cable_port_a[i]: i for i in range(c)}
        self.skew_ns = {d: int(rng.integers(-tel.skew_ms, tel.skew_ms + 1)) * 1_000_000 for d in names}

    # -- names -----------------------------------------------------------------------------------
    def ifname(self, device: str, ifname: str) -> str:
        """The interface's name as the device's OS reports it."""
        return realism.vendor_ifname(self.vendor[device], ifname) if device in self.vendor else ifname

    def name_of(self, entity: str) -> str:
        """A device, port or link id as the bundle names it (its devices' interface names)."""
        if "--" in entity:
            return "--".join(sorted(self.name_of(p) for p in entity.split("--")))
        if ":" in entity:
            dev, ifn = entity.split(":", 1)
            return f"{dev}:{self.ifname(dev, ifn)}"
        return entity

    # -- time and state ------------------------------------------------------------------------
    def sample_times(self, device: str, n: int) -> np.ndarray:
        """Sample times of a device: its clock skew plus jitter of up to 5% of the interval."""
        jitter = self.rng.uniform(-0.05, 0.05, n) * self.step * NS
        return (self.t0 + np.arange(n) * int(self.step * NS) + self.skew_ns[device] + jitter).astype(np.int64)

    def fcs_errors(self, port: str, rx_packets: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """Frames a degraded link corrupts: its loss rate times the packets received meanwhile."""
        out = np.zeros(len(rx_packets))
        t_s = (ts - self.t0) / NS
        for f in self.faults:
            if f.kind == "link_degraded" and f.counted and port in f.root_id.split("--"):
                loss = f.loss
                inside = (t_s >= f.start_s) & (t_s < f.end_s)
                per_step = np.diff(rx_packets, prepend=rx_packets[0]) * inside
                out += np.cumsum(per_step * loss)
        return np.floor(out)

    def symbol_errors(self, port_id: str, port: int, ts: np.ndarray) -> np.ndarray:
        """Physical-layer symbol errors of a dirty optic: they follow the line rate, not the
        traffic, so an idle degraded link shows them too (loss x symbols per second)."""
        out = np.zeros(len(ts))
        t_s = (ts - self.t0) / NS
        c = port if port < self.f.n_cables else port - self.f.n_cables
        symbols_per_s = float(self.f.cable_gbps[c]) * 1e9 / 66  # 64b/66b blocks
        for f in self.faults:
            if f.kind == "link_degraded" and f.counted and port_id in f.root_id.split("--"):
                loss = f.loss
                inside = np.clip(np.minimum(t_s, f.end_s) - f.start_s, 0, None)
                # a lost frame is many corrupted symbols, most of them caught by FEC: scale down
                out += np.floor(inside * symbols_per_s * loss * 1e-3)
        return out

    def port_down(self, port: str, t_s: np.ndarray) -> np.ndarray:
        """Per sample: is the port's cable down (a link fault)?"""
        down = np.zeros(len(t_s), dtype=bool)
        for f in self.faults:
            if f.kind in ("link_down", "link_flap") and port in f.root_id.split("--"):
                for a, b in f.downs:
                    down |= (t_s >= a) & (t_s < b)
        return down

    def malformed_line(self, family: str) -> bool:
        """Whether this family's file gets the bundle's next malformed line (then counted)."""
        if self.malformed >= MAX_MALFORMED or family in self.malformed_kinds:
            return False
        self.malformed_kinds.add(family)
        self.malformed += 1
        return True

    # -- the bundle ------------------------------------------------------------------------------
    def start(self, res) -> int:
        """Begin the bundle from the twin's result `res`: its manifest, and the reboot it
        plants; returns the number of samples. The families' modules then write their files
        (twin.synth.bundle, so that they import this module and not the other way round)."""
        self.res = res
        self.out.mkdir(parents=True, exist_ok=True)
        write_text(self.out / "manifest.json", json.dumps({
            "name": self.name, "description": "synthetic bundle written by fabtwin generate",
            "generator": GENERATOR, "timezone": "UTC", "year": int(ns_to_iso(self.t0)[:4])},
            indent=2) + "\n")
        n_samples = len(res.sample_times)
        self.pick_reboot(n_samples)
        if self.tel.noise:
            exporting = [s for s in self.switches if s not in self.silent]
            self.noise, self.clear = realism.pick_noise(self.rng, self.f, self.collector, exporting,
                                                        n_samples)
        return n_samples

    def finish(self) -> None:
        """Count the files written (labels.json comes after)."""
        self.files = sum(1 for p in self.out.rglob("*") if p.is_file())

    def pick_reboot(self, n_samples: int) -> None:
        """One Prometheus-scraped switch reboots mid-window (its counters restart from zero)."""
        prom = [s for s in self.switches if self.collector[s] == "prom" and s not in self.silent]
        if prom and n_samples > 10:
            dev = prom[int(self.rng.integers(len(prom)))]
            self.reboot = {"device": dev, "sample": int(self.rng.integers(n_samples // 3, 2 * n_samples // 3))}

    def series(self, device: str, n: int) -> tuple[np.ndarray, dict, list[int]]:
        """(sample times, {ifname: {counter: values}}, kept sample indices) with realism applied."""
        ts = self.sample_times(device, n)
        t_true = (ts - self.skew_ns[device] - self.t0) / NS  # when, by a true clock, it read them
        keep = [i for i in range(n) if self.rng.random() > 0.01 or i in (0, n - 1)]  # 1% missing
        if self.tel.noise:  # and 1% read twice (a collector retrying): the same sample again
            keep = sorted(keep + [i for i in keep if self.rng.random() < 0.01])
        ports: dict[str, dict[str, np.ndarray]] = {}
        for ifname, port in sorted(self.ports_of[device]):
            base = {c: float(self.rng.integers(1, 10**9)) for c in SWITCH_COUNTERS}
            base["rx_fcs_errors"] = float(self.rng.integers(0, 5))
            base["symbol_errors"] = float(self.rng.integers(0, 5))
            port_id = f"{device}:{ifname}"
            raw = port_series(self.f, self.res, port)
            if self.tel.jitter == "read":  # the counters as read at that instant, not the nominal one
                raw = {c: np.floor(np.interp(t_true, self.res.sample_times, v)) for c, v in raw.items()}
            raw["rx_fcs_errors"] = self.fcs_errors(port_id, raw["rx_packets"], ts)
            raw["symbol_errors"] = self.symbol_errors(port_id, port, ts)
            realism.silent_loss(self.faults, port_id, raw, t_true)
            vals = {c: raw[c] + base[c] for c in SWITCH_COUNTERS}
            if self.full:
                vals["carrier_transitions"], vals["link_down_events"] = realism.carrier_counts(
                    self.faults, port_id, t_true)
                vals["port_speed_bps"] = realism.port_speed(self.f, self.faults, port_id, port, t_true)
            realism.add_noise(self.noise, port_id, vals)
            for event in (self.reboot, self.clear):  # counters restart from zero
                if event and event["device"] == device:
                    realism.restart(vals, event["sample"], GAUGES)
            # Python ints: the writers index them per sample, and numpy scalars are slow there
            ports[ifname] = {c: v.astype(np.int64).tolist() for c, v in vals.items()}
        return ts, ports, keep

    def labels(self, seed: int, scenario: str) -> dict:
        """Ground truth, with the fields of `investigate --json`."""
        faults = []
        for f in self.faults:
            end = min(f.end_s, self.duration)
            faults.append({"kind": f.kind, "root_cause": {"type": f.root_type, "id": self.name_of(f.root_id)},
                           "start": ns_to_iso(self.t0 + int(f.start_s * NS)),
                           "end": ns_to_iso(self.t0 + int(end * NS)),
                           "victims": sorted(self.name_of(v) for v in f.victims)})
            if f.hard_cases:  # only then: labels of bundles without them stay as they were
                faults[-1]["hard_case"] = "+".join(f.hard_cases)
        out = {"scenario": scenario, "seed": seed,
               "window": {"start": ns_to_iso(self.t0), "end": ns_to_iso(self.t0 + int(self.duration * NS))},
               "faults": faults, "malformed_lines": self.malformed, "reboot": self.reboot,
               "clock_skew_ms": {d: s // 1_000_000 for d, s in sorted(self.skew_ns.items())}}
        extra = {"counter_clear": self.clear, "silent_devices": sorted(self.silent),
                 "vendors": {d: v for d, v in sorted(self.vendor.items()) if v != "cumulus"}}
        return out | {k: v for k, v in extra.items() if v}

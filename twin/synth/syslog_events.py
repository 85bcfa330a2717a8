"""Syslog events of the faults: link down/up from both ends of a link (SONiC, Cumulus and mlx5
kernel phrasings, by the device's platform) and PFC watchdog storms at the storming NIC's leaf."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import numpy as np

from collectors.formats.syslog import LogEvent
from collectors.formats.syslog import write_syslog as write_log
from twin.synth.files import NS, write_text
from twin.synth.names import PFC_PRIORITY
from twin.synth.realism import VENDOR_SYSLOG

if TYPE_CHECKING:
    from twin.synth.writer import BundleWriter


def write_syslog(w: BundleWriter) -> None:
    """`syslog/<device>.log` for each device that logged a fault."""
    logs: dict[tuple[str, str], list[LogEvent]] = {}
    for f in w.faults:
        if f.kind in ("link_down", "link_flap") and f.logged:
            for port in f.root_id.split("--"):
                dev, ifn = w.name_of(port).split(":", 1)
                style = "kernel" if dev in w.hosts else VENDOR_SYSLOG.get(w.vendor[dev]) or (
                    "rfc5424" if w.collector.get(dev) == "gnmi_json" else "cumulus")
                for a, b in f.downs:
                    skew = w.skew_ns[dev]
                    logs.setdefault((dev, style), []).append(
                        LogEvent(w.t0 + int(a * NS) + skew, dev, ifn, "link_down"))
                    if np.isfinite(b) and b < w.duration:
                        logs[(dev, style)].append(LogEvent(w.t0 + int(b * NS) + skew, dev, ifn, "link_up"))
        elif f.kind == "pfc_storm":
            leaf_port = next(w.f.cable_port_b[c] for c in range(w.f.n_cables)
                             if w.f.cable_port_a[c] == f.root_id)
            dev, ifn = w.name_of(leaf_port).split(":", 1)
            skew = w.skew_ns[dev]
            style = "sonic" if w.vendor[dev] == "sonic" else "rfc5424"  # EOS: no watchdog phrasing
            logs.setdefault((dev, style), []).extend([
                LogEvent(w.t0 + int(f.start_s * NS) + skew, dev, ifn, "pfc_storm", queue=PFC_PRIORITY),
                LogEvent(w.t0 + int(f.end_s * NS) + skew, dev, ifn, "pfc_storm_restored",
                         queue=PFC_PRIORITY)])
    written: set[str] = set()
    for (dev, style), events in logs.items():
        if dev in w.silent:
            continue
        fh = io.StringIO()
        write_log(sorted(events), fh, style)
        # a device that logs in two phrasings (a flap in switchd's, a storm's watchdog lines):
        # a second file, not one written over the other
        name = f"{dev}.log" if dev not in written else f"{dev}.{style}.log"
        written.add(dev)
        write_text(w.out / "syslog" / name, fh.getvalue())

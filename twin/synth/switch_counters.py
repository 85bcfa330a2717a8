"""Switch port counters as the fleet's collectors write them: gnmic `json` and `event` lines
(Cumulus paths) and Prometheus exposition (NVIDIA switch names), with duplicated gnmic lines
and one line cut short per family."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import numpy as np

from collectors.formats.gnmi import cumulus_notification, write_event, write_json
from collectors.formats.prom import write_exposition
from twin.synth.files import NS, write_gz
from twin.synth.names import (
    GNMI_CARRIER,
    GNMI_LEAVES,
    GNMI_OPER_STATUS,
    GNMI_PORT_SPEED,
    PFC_PRIORITY,
    PROM_FULL,
    PROM_NAMES,
    PROM_OPER_STATE,
)

if TYPE_CHECKING:
    from twin.synth.writer import BundleWriter

IF_MIB_UP, IF_MIB_DOWN = 1.0, 2.0  # ifOperStatus codes


def write_switch(w: BundleWriter, device: str, n: int) -> None:
    """The counter file of one switch, through the collector the fleet gives it."""
    ts, ports, keep = w.series(device, n)
    t_s = (ts - w.t0) / NS
    down = {ifname: w.port_down(f"{device}:{ifname}", t_s) for ifname in ports}
    if w.collector[device] == "prom":
        write_prom(w, device, ts, ports, keep, down)
    else:
        write_gnmi(w, device, ts, ports, keep, down)


def write_prom(w: BundleWriter, device: str, ts: np.ndarray, ports: dict, keep: list[int],
               down: dict[str, np.ndarray]) -> None:
    """`prom/<device>.prom.gz`: every counter and the oper state of every port, per sample."""
    rows = []
    names = {**PROM_NAMES, **PROM_FULL} if w.full else PROM_NAMES
    for ifn, vals in ports.items():
        ifname = w.ifname(device, ifn)
        for i in keep:
            for c, name in names.items():
                rows.append({"ts": int(ts[i]), "device": device, "ifname": ifname, "metric": name,
                             "value": float(vals[c][i]), "qualifier": ""})
            rows.append({"ts": int(ts[i]), "device": device, "ifname": ifname,
                         "metric": PROM_OPER_STATE,
                         "value": IF_MIB_DOWN if down[ifn][i] else IF_MIB_UP, "qualifier": ""})
    fh = io.StringIO()
    write_exposition(rows, fh)
    text = fh.getvalue()
    if w.malformed_line("prom"):  # a sample line whose label set is never closed
        text += PROM_NAMES["rx_bytes"] + '{instance="' + device + '",interface="swp1" 17\n'
    write_gz(w.out / "prom" / f"{device}.prom.gz", text)


def write_gnmi(w: BundleWriter, device: str, ts: np.ndarray, ports: dict, keep: list[int],
               down: dict[str, np.ndarray]) -> None:
    """`gnmi/<device>.<json|event>.jsonl.gz`: one notification per Cumulus group, port and
    sample, in time order; a few lines written twice and the last one cut short."""
    kind = w.collector[device]
    notes = []
    for ifn, vals in ports.items():
        ifname = w.ifname(device, ifn)
        for i in keep:
            t = int(ts[i])
            for group, leaves in GNMI_LEAVES.items():
                extra = ({"queue": PFC_PRIORITY} if group == "queue"
                         else {"priority": PFC_PRIORITY} if group == "pfc" else {})
                values = {leaf: vals[c][i] for c, leaf in leaves.items()}
                if w.full and group == "counters":
                    values[GNMI_CARRIER] = vals["carrier_transitions"][i]
                notes.append(cumulus_notification(t, device, group, values, ifname=ifname, **extra))
            notes.append(cumulus_notification(t, device, "state", {
                GNMI_OPER_STATUS: "DOWN" if down[ifn][i] else "UP"}, ifname=ifname))
            if w.full:  # OpenConfig's speed enum, in whole Gb/s
                notes.append(cumulus_notification(t, device, "ethernet-state", {
                    GNMI_PORT_SPEED: f"SPEED_{vals['port_speed_bps'][i] // 10**9}GB"}, ifname=ifname))
    notes.sort(key=lambda x: x.ts)
    fh = io.StringIO()
    (write_json if kind == "gnmi_json" else write_event)(notes, fh)
    lines = fh.getvalue().splitlines(keepends=True)
    for k in sorted(w.rng.choice(len(lines), size=max(1, len(lines) // 500), replace=False))[::-1]:
        lines.insert(int(k), lines[int(k)])  # a collector that wrote a few lines twice
    text = "".join(lines)
    if w.malformed_line("gnmi"):
        text += lines[-1][: len(lines[-1]) // 2] + "\n"  # the collector died mid-line
    write_gz(w.out / "gnmi" / f"{device}.{kind.split('_')[1]}.jsonl.gz", text)

"""Prometheus exposition writers, for round trips and generated bundles."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import IO

from collectors.core.schema import canonical_counters, counter_map
from collectors.core.timeparse import NS, ns_to_iso
from collectors.formats.prom.lines import _PRIO, IBDEV_FAMILY, NETDEV_FAMILIES


# -- writers ----------------------------------------------------------------------------------
def format_value(v: float) -> str:
    """A value as Prometheus prints it, exact on round trip (`+Inf`, `NaN`, `1027`, `0.25`)."""
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _label_text(row: Mapping) -> str:
    metric = row["metric"]
    pairs = [("instance", row["device"])]
    ifname = row.get("ifname") or ""
    quals = [q.partition("=")[::2] for q in (row.get("qualifier") or "").split(",") if q]
    if metric.startswith(IBDEV_FAMILY) and ifname:
        ibdev, _, port = ifname.partition("/")  # Sink.netdev names unmapped ports `mlx4_0/2`
        pairs += [("device", ibdev), ("port", port or "1")]
    elif ifname:
        pairs.append(("device" if metric.startswith(NETDEV_FAMILIES) else "interface", ifname))
    prio = _PRIO.search(metric) if metric.startswith("node_ethtool_") else None
    for k, v in quals:
        if not (prio and k == "priority" and v == prio[1]):  # node_exporter puts it in the name
            pairs.append((k, v))
    return ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)


def _family_header(metric: str) -> str:
    m = counter_map().get(("prom", metric))
    if m is None:
        return f"# HELP {metric} {metric}\n# TYPE {metric} untyped\n"
    c = canonical_counters()[m.canonical]
    kind = "counter" if c.kind == "counter" else "gauge"
    return f"# HELP {metric} {c.description}\n# TYPE {metric} {kind}\n"


def write_exposition(samples: Iterable[Mapping], fh: IO[str], with_timestamps: bool = True) -> int:
    """Write samples (mappings with ts, device, ifname, metric, value, qualifier) as one text
    exposition: families grouped, HELP/TYPE once each, labels `instance` and `interface` (node
    exporter's `device`/`port` for its own families), ms timestamps. Returns the sample count."""
    families: dict[str, list[str]] = {}
    n = 0
    for row in samples:
        line = f"{row['metric']}{{{_label_text(row)}}} {format_value(row['value'])}"
        if with_timestamps:
            line += f" {int(row['ts']) // 1_000_000}"
        families.setdefault(row["metric"], []).append(line)
        n += 1
    for metric, lines in families.items():
        fh.write(_family_header(metric))
        fh.write("\n".join(lines))
        fh.write("\n")
    return n


def date_ins(ns: int) -> str:
    """`date -Ins -u` for a time in ns: `2026-11-30T07:12:13,123456789+00:00`."""
    return ns_to_iso(ns)[:19] + f",{ns % NS:09d}+00:00"


def write_scrapes(samples: Iterable[Mapping], fh: IO[str]) -> int:
    """Write samples as a series of scrapes, one per distinct ts, each preceded by the line
    `date -Ins` prints, as `while :; do date -Ins; curl -s host:9100/metrics; done` would."""
    by_ts: dict[int, list[Mapping]] = {}
    for row in samples:
        by_ts.setdefault(int(row["ts"]), []).append(row)
    n = 0
    for ts in sorted(by_ts):
        fh.write(date_ins(ts) + "\n")
        n += write_exposition(by_ts[ts], fh, with_timestamps=False)
    return n

"""The exact Prometheus/OpenMetrics line parser: labels, values, timestamps, and a series' device,
interface and qualifier (`resolve_series`); it also words every reject reason."""

from __future__ import annotations

import re
from decimal import Decimal

from collectors.core.source import Sink
from collectors.core.timeparse import NS, time_problem

NO_TIMESTAMP = ("sample has no timestamp: precede each scrape with a `date -Ins` line "
                "or export with timestamps")
NO_DEVICE = ("no device: the sample has no host, hostname, source, node or instance label "
             "and the file name names no host")

# labels naming the device, most specific first: `instance` is often an exporter or collector
# endpoint (gnmic, an OTEL collector, a DCGM pod), so explicit host labels win over it
DEVICE_LABELS = ("host", "hostname", "Hostname", "host_name", "source", "node", "instance")
IF_LABELS = ("interface", "ifname", "interface_name", "if_name", "ifName", "port_id", "port-id")
ALWAYS_CONSUMED = frozenset(("job", "instance", "__name__"))
# node_exporter families whose `device` label is the netdev (or the RDMA device)
NETDEV_FAMILIES = ("node_network_", "node_ethtool_")
IBDEV_FAMILY = "node_infiniband_"
# sub-port dimensions under the names the rest of the store uses
LABEL_RENAMES = {"switch_priority": "priority", "prio": "priority",
                 "traffic_class": "queue", "tc": "queue"}

_PORT = re.compile(r"[0-9]{1,5}")
_PRIO = re.compile(r"_prio([0-9])(?:_|$)")
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(
    r'([a-zA-Z_][a-zA-Z0-9_]*|"(?:[^"\\]|\\.)*")[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)"', re.S)
# the common label set: plain names, values without escapes (checked whole, then split)
_SIMPLE_SET = re.compile(r'\{(?:[ \t]*[a-zA-Z_][a-zA-Z0-9_]*[ \t]*=[ \t]*"[^"\\]*"[ \t]*,)*'
                         r'(?:[ \t]*[a-zA-Z_][a-zA-Z0-9_]*[ \t]*=[ \t]*"[^"\\]*"[ \t]*)?\}')
_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"([^"\\]*)"')
_QSTRING = re.compile(r'"((?:[^"\\]|\\.)*)"', re.S)
_REST = re.compile(r"[ \t]+(\S+)(?:[ \t]+([^ \t#]\S*))?[ \t]*(?:#[ \t]*\{.*)?")
_VALUE = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                    r"|(?i:inf(?:inity)?|nan))")
_INT = re.compile(r"-?[0-9]+")
_SECONDS = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_UNESCAPE = re.compile(r"\\(.)", re.S)
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}
_OM_MARK = re.compile(r"^# (?:EOF[ \t]*$|UNIT |TYPE \S+ (?:unknown|info|stateset|gaugehistogram))",
                      re.M)
_TS_ISO = re.compile(r"[ \t]*[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}"
                     r"(?:[.,][0-9]+)?[ \t]*(?:Z|[+-][0-9]{2}:?[0-9]{2})?[ \t]*")
_TS_EPOCH = re.compile(r"[ \t]*[0-9]{9,19}(?:\.[0-9]+)?[ \t]*")
_SNIFF_META = re.compile(r"#[ \t]*(?:HELP|TYPE|UNIT)[ \t]+\S|# EOF[ \t]*$")

# comments/blank lines and timestamp lines, for polars (Rust regex)
_SKIP = r"^[ \t]*(?:#.*)?$"
_TSLINE = (r"^[ \t]*(?:[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?"
           r"[ \t]*(?:Z|[+-][0-9]{2}:?[0-9]{2})?|[0-9]{9,19}(?:\.[0-9]+)?)[ \t]*$")

class BadLine(ValueError):
    """A sample line that cannot be understood; the message is the reject reason."""


# -- the exact line grammar -------------------------------------------------------------------
def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    return _UNESCAPE.sub(lambda m: _ESCAPES.get(m[1], "\\" + m[1]), text)


def _skip_ws(s: str, i: int) -> int:
    while i < len(s) and s[i] in " \t":
        i += 1
    return i


def parse_labels(s: str, i: int) -> tuple[list[tuple[str, str]], int, str | None]:
    """Parse the label set opening at `s[i] == '{'`: (labels, index after '}', quoted name).

    Accepts spaces around items and a trailing comma; a bare quoted string as the first item
    is a (UTF-8) metric name. BadLine on anything else.
    """
    simple = _SIMPLE_SET.match(s, i)
    if simple:
        labels = _PAIR.findall(s, i, simple.end())
        if len({k for k, _ in labels}) == len(labels):
            return labels, simple.end(), None
    labels = []
    seen: set[str] = set()
    qname: str | None = None
    i += 1
    while True:
        i = _skip_ws(s, i)
        if i >= len(s):
            raise BadLine("label set is not closed with '}'")
        if s[i] == "}":
            return labels, i + 1, qname
        m = _LABEL.match(s, i)
        if m:
            key = m[1] if m[1][0] != '"' else _unescape(m[1][1:-1])
            if key in seen:
                raise BadLine(f"duplicate label {key!r}")
            seen.add(key)
            labels.append((key, _unescape(m[2])))
        elif not labels and qname is None and (q := _QSTRING.match(s, i)):
            qname, m = _unescape(q[1]), q
        else:
            raise BadLine(f"malformed label at column {i + 1}: {s[i:i + 30]!r}")
        i = _skip_ws(s, m.end())
        if i >= len(s):
            raise BadLine("label set is not closed with '}'")
        if s[i] == ",":
            i += 1
        elif s[i] != "}":
            raise BadLine(f"expected ',' or '}}' in the label set at column {i + 1}")


def parse_line(line: str) -> tuple[str, list[tuple[str, str]], str, str | None]:
    """One sample line to (name, labels, value token, timestamp token or None); BadLine if not."""
    s = line.lstrip(" \t")
    m = _NAME.match(s)
    name = m[0] if m else ""
    pos = m.end() if m else 0
    labels: list[tuple[str, str]] = []
    if s[pos:pos + 1] == "{":
        labels, pos, qname = parse_labels(s, pos)
        if qname is not None:
            if name:
                raise BadLine("metric name given twice")
            name = qname
    if not name:
        raise BadLine("not a sample line: expected `name{labels} value [timestamp]`")
    r = _REST.fullmatch(s, pos)
    if not r:
        raise BadLine("expected `name{labels} value [timestamp]` after the metric name")
    return name, labels, r[1], r[2]


def parse_value(token: str) -> float:
    """A sample value (`12.47`, `1.8e+07`, `+Inf`, `NaN`); BadLine if not a number."""
    if not _VALUE.fullmatch(token):
        raise BadLine(f"value {token[:40]!r} is not a number")
    return float(token)


def parse_sample_ts(token: str, openmetrics: bool) -> int:
    """A sample's own timestamp to ns: integer ms (Prometheus) or seconds (OpenMetrics, or any
    timestamp with a fraction)."""
    if len(token) > 40:  # also keeps int() away from its digit limit
        raise BadLine(f"timestamp {token[:40]!r}... is out of range")
    if _INT.fullmatch(token) and not openmetrics:
        ns = int(token) * 1_000_000
    elif _SECONDS.fullmatch(token):
        try:
            ns = int(Decimal(token) * NS)
        except ArithmeticError as exc:  # decimal's InvalidOperation, Overflow
            raise BadLine(f"timestamp {token[:40]!r} is out of range") from exc
    else:
        raise BadLine(f"timestamp {token[:40]!r} is not a number")
    why = time_problem(ns, token)
    if why is not None:
        raise BadLine(why)
    return ns


def strip_namespace(name: str) -> str:
    """`cumulus_nvswitch_interface_if_in_octets` -> `nvswitch_interface_if_in_octets`."""
    i = name.find("_nvswitch_")
    return name[i + 1:] if i >= 0 else name


# -- series: device, interface, metric, qualifier ----------------------------------------------
def resolve_series(name: str, labels: list[tuple[str, str]], sink: Sink, host_hint: str | None,
                   devices: dict[str, str] | None = None) -> tuple[str, str, str, str] | str:
    """(device, ifname, metric, qualifier) of one series, or the reason it has no device.

    `devices` memoizes `sink.device()` (an address check per call) across the series of a file.
    """
    metric = strip_namespace(name)
    d = {k: v for k, v in labels if v != ""}  # an empty label value is an absent label
    used = set(ALWAYS_CONSUMED)
    dev_name = next((k for k in DEVICE_LABELS if k in d), None)
    if dev_name:
        used.add(dev_name)
        raw = d[dev_name]
        device = devices.get(raw) if devices is not None else None
        if device is None:
            device = sink.device(raw, fallback=host_hint)
            if devices is not None:
                devices[raw] = device
    else:
        device = host_hint or ""
    if not device:
        return NO_DEVICE
    ifname = ""
    if_label = next((k for k in IF_LABELS if k in d), None)
    if if_label:
        used.add(if_label)
        ifname = d[if_label]
    elif "device" in d and metric.startswith(NETDEV_FAMILIES):
        used.add("device")
        ifname = d["device"]
    elif "device" in d and metric.startswith(IBDEV_FAMILY):
        used.add("device")
        port = d.get("port", "1")
        if _PORT.fullmatch(port):
            used.add("port")
            ifname = sink.netdev(device, d["device"], int(port))
        else:
            ifname = sink.netdev(device, d["device"])
    qual: dict[str, str] = {}
    for k, v in d.items():
        if k not in used:
            key = LABEL_RENAMES.get(k, k)
            qual[key if key not in d or key == k else k] = v
    if metric.startswith("node_ethtool_") and (p := _PRIO.search(metric)):
        qual.setdefault("priority", p[1])
    return device, ifname, metric, ",".join(f"{k}={v}" for k, v in sorted(qual.items()))


# -- the parser -------------------------------------------------------------------------------

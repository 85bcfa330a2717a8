"""One way to write a rate, for the TUI, the report and the command line alike.

Link rates (byte counters) are written in Gb/s, the unit of link speeds (a 400G port, 13.3 GB/s
of traffic is 106.7 Gb/s); every other rate (packets, ECN marks, pauses, discards, errors) is
per second with thousands separators (25,217/s), never in scientific notation. Which one a value
takes is read from its name, the store's column names (`tx_bytes_per_s`, `ecn_marked_per_s`,
`tx_pause_per_s_peak`, `capacity_lost_gbps`).
"""

from __future__ import annotations

from typing import TypeVar

Number = TypeVar("Number")  # a float, or a numpy / polars array of them

BITS_PER_BYTE = 8
GIGA = 1e9


def gbps(bytes_per_s: Number) -> Number:
    """Bytes per second in Gb/s; works element-wise on arrays (the report's figures)."""
    return bytes_per_s * BITS_PER_BYTE / GIGA  # type: ignore[operator]


def link_rate(bytes_per_s: float | None) -> str:
    """A byte rate as a link rate: `106.7 Gb/s`; `-` for none."""
    if bytes_per_s is None:
        return "-"
    return gbps_text(gbps(bytes_per_s))


def gbps_text(value: float) -> str:
    """A rate already in Gb/s: one decimal, three below 0.1 so a trickle is not `0.0`."""
    return f"{value:,.1f} Gb/s" if abs(value) >= 0.1 or value == 0 else f"{value:.3f} Gb/s"


def count(value: float) -> str:
    """A count or a count rate's number: `25,217`, `3.5`, `0.012`, never `2.522e+04`."""
    if abs(value) >= 100 or value == int(value):
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) >= 0.001 else f"{value:.1e}"


def per_second(value: float | None) -> str:
    """A count rate: `25,217/s`; `-` for none."""
    return "-" if value is None else f"{count(value)}/s"


def is_byte_rate(name: str) -> bool:
    """Whether the column `name` holds bytes per second (`rx_bytes_per_s`, `..._peak`)."""
    return "bytes_per_s" in name


def rate(name: str, value: float | None) -> str:
    """The value of the rate column `name`, in its unit (Gb/s for bytes, else per second)."""
    return link_rate(value) if is_byte_rate(name) else per_second(value)


def unit_of(name: str) -> str:
    """The unit the rate column `name` is written in: `Gb/s` or `per s`."""
    return "Gb/s" if is_byte_rate(name) else "per s"


def axis_number(name: str, value: float) -> str:
    """A plot's y-axis label for the rate `name`, in unit_of(name) without the unit (the
    legend says it): `106.7`, `25,217`."""
    return f"{gbps(value):,.1f}" if is_byte_rate(name) else count(value)


def field(key: str, value: object) -> str:
    """One evidence or impact field as text: rates in their unit by the key's name, lists cut
    after six items, other numbers without scientific notation."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int | float):
        if key.endswith("_gbps"):
            return gbps_text(float(value))
        if "per_s" in key:
            return rate(key, float(value))
        return count(float(value))
    if isinstance(value, list):
        head = ", ".join(field(key, v) for v in value[:6])
        return head + (f", +{len(value) - 6} more" if len(value) > 6 else "")
    return str(value)


def byte_size(value: float) -> str:
    """An amount of bytes (a queue's depth), decimal prefixes: `1.5 MB`, `812 B`."""
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}B"
    return f"{value:.3g} B"


def replay_value(counter: str, value: float | None) -> str:
    """A value of the replay's counter `counter` (expected_counters' C, the explanation's
    cells) in its unit: bytes/s and bits/s (`port_speed`) as Gb/s, `down_fraction` as a share,
    `link_down_events` as a count, `queue_depth` in bytes, the rest per second."""
    if value is None:
        return "-"
    if counter == "queue_depth":
        return byte_size(value)
    if counter == "port_speed":
        return gbps_text(value / GIGA)
    if counter == "down_fraction":
        return f"{value:.0%}"
    if counter == "link_down_events":
        return count(value)
    return link_rate(value) if "bytes" in counter else per_second(value)

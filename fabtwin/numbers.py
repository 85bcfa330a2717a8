"""Numbers for people: SI prefixes (k, M, G, T) at a few significant digits, one rule for the
TUI, the ticket export and the explanation text."""

from __future__ import annotations


def si(value: float, digits: int = 3) -> str:
    """1234567 -> `1.23M` (digits=3); below 1000 the value itself at `digits` digits."""
    for scale, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g}{suffix}"
    return f"{value:.{digits}g}"

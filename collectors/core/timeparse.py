"""Timestamps as telemetry tools print them, to integer nanoseconds since the epoch (UTC).

Accepted: epoch seconds / milliseconds / nanoseconds (`date +%s.%N`, Prometheus ms, gnmic ns),
ISO-8601 with `T` or space, `.` or `,` before the fraction, any number of fraction digits, and
`Z`, `+HH:MM`, `+HHMM` or no zone (`date -Ins` prints `2026-11-30T07:12:13,123456789+00:00`),
and RFC 3164's `Feb  6 09:42:36` given a year and a zone.

Every time a parser reads must fall in `[TS_MIN_NS, TS_MAX_NS)` (2000-01-01 .. 2100-01-01 UTC,
the README's "Value policy"): a fixed range, so that the same bundle loads the same way whenever
it is ingested. Outside it, the `parse_*` functions raise TimeError naming the value, which every
parser counts as a reject of that record; `time_problem` and `out_of_range` check times the
vectorized paths compute themselves.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

NS = 1_000_000_000

_ISO = re.compile(
    r"(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})[T ](?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
    r"(?:[.,](?P<frac>\d{1,9}))?\s*(?P<tz>Z|[+-]\d{2}:?\d{2})?"
)
_MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# The valid time range (README "Value policy"). 2000: older than any RoCE fabric's telemetry, and
# a clock reset to 1970 (a host without NTP after a reboot) is caught; 2100: far enough ahead for
# any real clock, near enough that a garbage value (9999-12-31, 1e30 ns) is caught, and well
# inside int64 nanoseconds (which end in 2262), so no time ever wraps.
TS_MIN_NS = 946_684_800 * 1_000_000_000  # 2000-01-01T00:00:00Z
TS_MAX_NS = 4_102_444_800 * 1_000_000_000  # 2100-01-01T00:00:00Z, excluded
TIME_RANGE = "2000-01-01..2100-01-01 UTC"


class TimeError(ValueError):
    """A timestamp that cannot be placed in time."""


def time_problem(ns: int | float, shown: object = None) -> str | None:
    """Why `ns` (nanoseconds since the epoch) is not a valid time, naming `shown` (the value as
    the file wrote it; default: `ns` itself); None when it is in range."""
    if TS_MIN_NS <= ns < TS_MAX_NS:
        return None
    return f"time {str(ns if shown is None else shown)[:40]!r} is outside {TIME_RANGE}"


def checked(ns: int, shown: object = None) -> int:
    """`ns` if it is a valid time; TimeError naming `shown` (or `ns`) otherwise."""
    if TS_MIN_NS <= ns < TS_MAX_NS:
        return ns
    raise TimeError(time_problem(ns, shown))


def out_of_range(ns: np.ndarray) -> np.ndarray:
    """The vectorized paths' check: True where int64 nanoseconds are not a valid time."""
    return (ns < TS_MIN_NS) | (ns >= TS_MAX_NS)


def tz_from_name(name: str | None) -> tzinfo | None:
    """`UTC`, `Europe/Paris` or `+02:00` to a tzinfo; None for None; TimeError if unknown."""
    if name is None:
        return None
    m = re.fullmatch(r"([+-])(\d{2}):?(\d{2})", name.strip())
    if m:
        sign = 1 if m.group(1) == "+" else -1
        return timezone(sign * timedelta(hours=int(m.group(2)), minutes=int(m.group(3))))
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise TimeError(f"unknown timezone {name!r}") from exc


def _to_ns(dt: datetime, frac: str | None) -> int:
    whole = dt.replace(microsecond=0) - _EPOCH
    ns = (whole.days * 86400 + whole.seconds) * NS
    if frac:
        ns += int(frac.ljust(9, "0")[:9])
    return ns


def parse_iso(text: str, default_tz: tzinfo | None = UTC) -> int:
    """ISO-8601 to ns. A value without a zone takes `default_tz` (TimeError if that is None)."""
    m = _ISO.match(text.strip())
    if not m:
        raise TimeError(f"not an ISO-8601 timestamp: {text[:40]!r}")
    tzs = m.group("tz")
    if tzs == "Z":
        tz: tzinfo | None = UTC
    elif tzs:
        tz = tz_from_name(tzs)
    else:
        tz = default_tz
    if tz is None:
        raise TimeError(f"timestamp without a timezone and none given: {text[:40]!r}")
    try:
        dt = datetime(int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]),
                      int(m["s"]), tzinfo=tz)
    except ValueError as exc:
        raise TimeError(f"impossible date {text[:40]!r}") from exc
    return checked(_to_ns(dt.astimezone(UTC), m.group("frac")), text.strip())


def parse_epoch(text: str) -> int:
    """Epoch seconds (`1700000000.123456789`), ms (13 digits) or ns (19 digits) to ns."""
    t = text.strip()
    if not re.fullmatch(r"\d{9,19}(\.\d{1,9})?", t):
        raise TimeError(f"not an epoch timestamp: {t[:40]!r}")
    return checked(_epoch_ns(t), t)


def _epoch_ns(t: str) -> int:
    whole, _, frac = t.partition(".")
    n = int(whole)
    if len(whole) >= 18:  # ns
        return n
    if len(whole) >= 15:  # us
        return n * 1000
    if len(whole) >= 12:  # ms
        return n * 1_000_000 + int(frac.ljust(6, "0")[:6] or 0) if frac else n * 1_000_000
    return n * NS + (int(frac.ljust(9, "0")[:9]) if frac else 0)


def parse_any(text: str, default_tz: tzinfo | None = UTC) -> int:
    """An epoch number or an ISO-8601 timestamp to ns."""
    t = text.strip()
    if t[:1].isdigit() and ("-" not in t[:5]):
        return parse_epoch(t)
    return parse_iso(t, default_tz)


def parse_bsd(month: str, day: str, clock: str, year: int | None, tz: tzinfo | None) -> int:
    """RFC 3164 `Feb  6 09:42:36[.123]`: year and zone must come from the bundle manifest."""
    if year is None or tz is None:
        raise TimeError("RFC 3164 timestamp has no year/zone: set 'year' and 'timezone' in manifest.json")
    mon = _MONTHS.get(month[:3].title())
    if mon is None:
        raise TimeError(f"unknown month {month!r}")
    hms, _, frac = clock.partition(".")
    h, mi, s = (int(x) for x in hms.split(":"))
    try:
        dt = datetime(year, mon, int(day), h, mi, s, tzinfo=tz)
    except ValueError as exc:
        raise TimeError(f"impossible date {month} {day} {clock}") from exc
    return checked(_to_ns(dt.astimezone(UTC), frac or None), f"{year} {month} {day} {clock}")


def ns_to_iso(ns: int) -> str:
    """ns since the epoch to `2026-11-30T07:12:13.123456Z` (microsecond precision)."""
    dt = _EPOCH + timedelta(microseconds=ns // 1000)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

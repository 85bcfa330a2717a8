"""gnmic paths and tags: keyed path parsing, a path's interface, qualifier and metric, event tag
roles, speeds and timestamps."""

from __future__ import annotations

import re
from collections.abc import Iterable
from operator import itemgetter
from typing import Any

import polars as pl

from collectors.core.timeparse import TS_MAX_NS, TS_MIN_NS, TimeError, parse_any, time_problem

FAMILY = "gnmi"

# IF-MIB ifOperStatus / ifAdminStatus codes for the OpenConfig (and SR Linux) enum spellings
IFMIB = {"UP": 1, "DOWN": 2, "TESTING": 3, "UNKNOWN": 4, "DORMANT": 5, "NOT_PRESENT": 6,
         "LOWER_LAYER_DOWN": 7}
STATUS_METRICS = frozenset({"oper-status", "admin-status", "oper-state", "admin-state"})
_SPEED_UNIT = {"MB": 1.0, "GB": 1e3, "TB": 1e6, "M": 1.0, "G": 1e3, "T": 1e6}
_OC_SPEED = re.compile(r"(?:[\w.-]+:)?SPEED_(\d+(?:\.\d+)?)(MB|GB|TB)")
_SRL_SPEED = re.compile(r"(\d+(?:\.\d+)?)([MGT])")  # SR Linux spells port-speed "100G"

_IF_ELEMS = frozenset({"interface", "port"})
_IF_KEYS = frozenset({"name", "interface-id", "port-id"})
_LIST_KEYS = ("name", "interface-id", "port-id", "index", "id", "priority", "queue-id")
_NUMSTART = frozenset("0123456789-+.")
_NO_DEVICE = "no 'source' in the record and the file name names no device"
_CACHE_MAX = 200_000
_ID_SPAN = 1 << 24  # series id: (reset count mod _EPOCHS, context id, template row), 24 bits each
_EPOCHS = 1 << 13
_TS_NS = 100_000_000_000_000_000  # an int timestamp at least this large is already ns
_I64 = 2**63 - 1
_TWO64 = float(1 << 64)
_NUMTYPES = frozenset({int, float, bool})
_FIRST = itemgetter(0)
_GET_PATH = itemgetter("Path")
_GET_VALUES = itemgetter("values")
_dict_values = dict.values
Rows = pl.DataFrame | tuple[list, ...] | None  # samples: a frame, or column lists (huge ts)



# -- paths ------------------------------------------------------------------------------------
def split_path(path: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """`a/b[k=v]/c` -> [(a, []), (b, [(k, v)]), (c, [])], module prefixes and origin dropped.

    Key values may hold `/` (`port-id=1/1/c1/1`) and `\\]` escapes; `openconfig:` origins and
    `srl_nokia-interfaces:` module prefixes are stripped from element names.
    """
    elems: list[tuple[str, list[tuple[str, str]]]] = []
    name: list[str] = []
    keys: list[tuple[str, str]] = []
    i, n = 0, len(path)
    while i < n:
        c = path[i]
        if c == "/":
            _close_elem(elems, name, keys)
            name, keys = [], []
            i += 1
        elif c == "[":
            eq = path.find("=", i)
            if eq < 0:
                break
            key = path[i + 1:eq].rpartition(":")[2]
            i = eq + 1
            value: list[str] = []
            while i < n and path[i] != "]":
                if path[i] == "\\" and i + 1 < n:
                    i += 1
                value.append(path[i])
                i += 1
            keys.append((key, "".join(value)))
            i += 1
        else:
            name.append(c)
            i += 1
    _close_elem(elems, name, keys)
    return elems


def _close_elem(elems: list, name: list[str], keys: list[tuple[str, str]]) -> None:
    bare = "".join(name).strip().rpartition(":")[2]
    if bare or keys:
        elems.append((bare, keys))


def _key_role(elem: str, key: str) -> str | None:
    """'' when the key names the interface, a qualifier name, or None to ignore it."""
    if not elem:
        return key or None
    if elem in _IF_ELEMS and key in _IF_KEYS:
        return ""
    if elem == "reason" and key == "severity":  # WJH: the reason id implies its severity
        return None
    return elem if key in ("name", "id", "index") else key


def _qual(parts: Iterable[tuple[str, str]]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(parts))


# (ifname, qualifier parts, qualifier, metric) for a path, cached: a stream repeats its paths
PathInfo = tuple[str, tuple[tuple[str, str], ...], str, str]
_PATHS: dict[str, PathInfo] = {}


def path_info(path: str) -> PathInfo:
    """The ifname, qualifier and metric (leaf name) a gNMI path addresses."""
    info = _PATHS.get(path)
    if info is None:
        info = _classify(path)
        if len(_PATHS) >= _CACHE_MAX:
            _PATHS.clear()
        _PATHS[path] = info
    return info


def _classify(path: str) -> PathInfo:
    ifname = ""
    parts: dict[str, str] = {}
    elems = split_path(path)
    for elem, keys in elems:
        for key, value in keys:
            role = _key_role(elem, key)
            if role == "" and not ifname:
                ifname = value
            elif role is not None:
                parts.setdefault(role or elem, value)
    metric = elems[-1][0] if elems else ""
    tparts = tuple(sorted(parts.items()))
    return ifname, tparts, _qual(tparts), metric


def _tag_role(tag: str) -> str | None:
    """Event tags are `<elem>_<key>` for path keys (gnmic); anything else is metadata."""
    role = _TAG_ROLES.get(tag, _UNSET)
    if role is _UNSET:
        elem, sep, key = tag.partition("_")
        if not sep or elem == "meta":
            role = None
        else:
            role = _key_role(elem.rpartition("/")[2].rpartition(":")[2], key)
        if len(_TAG_ROLES) >= _CACHE_MAX:
            _TAG_ROLES.clear()
        _TAG_ROLES[tag] = role
    return role


_UNSET: Any = object()
_TAG_ROLES: dict[str, str | None] = {}


def _merge(a: tuple[tuple[str, str], ...], b: tuple[tuple[str, str], ...]) -> str:
    merged = dict(a)
    merged.update(b)
    return _qual(merged.items())


def _speed_mbps(value: str, metric: str) -> float | None:
    """OpenConfig `SPEED_400GB` (any leaf) or SR Linux `100G` (port-speed) in Mb/s."""
    m = _OC_SPEED.fullmatch(value)
    if m is None and metric == "port-speed":
        m = _SRL_SPEED.fullmatch(value)
    return float(m.group(1)) * _SPEED_UNIT[m.group(2)] if m else None


def _ts(value: Any) -> int | None:
    """gnmic timestamps are ns; seconds/ms/us (set by event processors) are scaled up. None
    when it is no time, or not a valid one (`timeparse.TS_MIN_NS`..)."""
    n = _ts_any(value)
    return n if n is not None and TS_MIN_NS <= n < TS_MAX_NS else None


def _ts_reason(value: Any, what: str) -> str:
    """Why a record's timestamp `value` is not usable: out of range (naming it), or no time."""
    n = _ts_any(value)
    why = time_problem(n, value) if n is not None else None
    return why or f"{what} has no usable 'timestamp' (ns)"


def _ts_any(value: Any) -> int | None:
    t = type(value)
    if t is int:
        n = value
    elif t is float:
        if value != value or value in (float("inf"), float("-inf")):
            return None
        n = int(value)
    elif t is str:
        try:
            return parse_any(value)
        except TimeError as exc:
            return TS_MAX_NS if "outside" in str(exc) else None  # any time out of range
        except (ValueError, OverflowError):
            return None
    else:
        return None
    if n >= 100_000_000_000_000_000:
        return n
    if n >= 100_000_000_000_000:
        return n * 1000
    if n >= 100_000_000_000:
        return n * 1_000_000
    return n * 1_000_000_000 if n > 0 else None


def _plain(floats: list[float]) -> bool:
    """Whether a record's values all pass the value policy whatever their kind: finite, in
    0..2^64 (three C loops; a NaN or an infinity makes the sum times 0 NaN). The others are read
    value by value, where `_value_reason` decides."""
    return min(floats) >= 0 and max(floats) < _TWO64 and (sum(floats) * 0 == 0)

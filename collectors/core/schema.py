"""The normalized model: canonical counters, event kinds, and the vendor-name map.

The map is data (`collectors/core/data/counter_map_<family>.csv`, one file per parser family, columns
`vendor_name,canonical,scale,source`), not code: adding a vendor's name is one CSV row.
`scale` converts the vendor's unit to the canonical one (Mb/s -> b/s is 1e6). The map is keyed
by (family, vendor name): mlx5's `ethtool -S` has software counters literally named `rx_bytes`,
which must not be taken for the canonical `rx_bytes` that `rx_bytes_phy` maps to. Canonical
names map to themselves only for the `normalized` family (the store's own schema).
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from importlib import resources

import numpy as np

EVENT_KINDS = (
    "link_down",          # carrier / oper state went down
    "link_up",
    "admin_down",         # administratively shut (not a fault by itself)
    "admin_up",
    "pfc_storm",          # PFC watchdog detected a storm on a port/queue
    "pfc_storm_restored",
    "drop",               # a drop report (What Just Happened and the like)
)


@dataclass(frozen=True)
class Canonical:
    name: str
    kind: str  # counter | gauge | state
    unit: str
    description: str


@dataclass(frozen=True)
class MapRow:
    family: str  # the parser family whose samples use this vendor name
    vendor_name: str
    canonical: str
    scale: float
    source: str


def _data_files(prefix: str) -> list:
    root = resources.files("collectors.core") / "data"
    return sorted((f for f in root.iterdir() if f.name.startswith(prefix) and f.name.endswith(".csv")),
                  key=lambda f: f.name)


@cache
def canonical_counters() -> dict[str, Canonical]:
    """Every canonical counter, by name."""
    (path,) = _data_files("canonical_counters")
    with path.open() as fh:
        return {r["canonical"]: Canonical(r["canonical"], r["kind"], r["unit"], r["description"])
                for r in csv.DictReader(fh)}


@cache
def counter_map() -> dict[tuple[str, str], MapRow]:
    """(family, vendor name) -> canonical mapping, merged from every `counter_map_<family>.csv`.

    Raises ValueError on a row naming an unknown canonical counter or a name mapped twice.
    """
    known = canonical_counters()
    out: dict[tuple[str, str], MapRow] = {}
    for path in _data_files("counter_map_"):
        family = path.name.removeprefix("counter_map_").removesuffix(".csv")
        with path.open() as fh:
            for i, r in enumerate(csv.DictReader(fh), 2):
                where = f"{path.name}:{i}"
                if r["canonical"] not in known:
                    raise ValueError(f"{where}: unknown canonical counter {r['canonical']!r}")
                key = (family, r["vendor_name"])
                if key in out:
                    raise ValueError(f"{where}: {r['vendor_name']!r} is mapped twice")
                out[key] = MapRow(family, r["vendor_name"], r["canonical"],
                                  float(r["scale"] or 1), r["source"])
    for name in known:  # the store's own schema names its counters canonically
        out[("normalized", name)] = MapRow("normalized", name, name, 1.0, "canonical")
    return out


@cache
def vendor_names(family: str, canonical: str, source: str) -> tuple[str, ...]:
    """The vendor names that `family`'s parser maps to `canonical` in rows of `source` (the
    map's `source` column, exactly), in file order: the map inverted, for writers.

    Raises ValueError when there is none, naming the map file.
    """
    names = tuple(m.vendor_name for m in counter_map().values()
                  if m.family == family and m.canonical == canonical and m.source == source)
    if not names:
        raise ValueError(f"counter_map_{family}.csv: no vendor name for canonical counter "
                         f"{canonical!r} from source {source!r}")
    return names


def vendor_name(family: str, canonical: str, source: str) -> str:
    """The one vendor name of `canonical` in `source`'s rows of `family`'s map (see
    `vendor_names`); ValueError when there is none or several (pick from `vendor_names`)."""
    names = vendor_names(family, canonical, source)
    if len(names) > 1:
        raise ValueError(f"counter_map_{family}.csv: {len(names)} vendor names for canonical "
                         f"counter {canonical!r} from source {source!r}: {', '.join(names)}")
    return names[0]


# -- the value policy (README "Value policy") ---------------------------------------------------
# One rule for every parser: a value is a finite number; a counter's is also within 0..2^64 - 1
# (what a 64-bit counter holds); DCGM's blank sentinels (dcgmvalue.h: each *_BLANK and the
# NOT_FOUND, NOT_SUPPORTED and NOT_PERMISSIONED values just above it) are no value. A value that
# breaks it is a reject of its record naming the value, never a row. The column is DOUBLE: a
# count above 2^53 is stored as the nearest double (relative error below 2^-53), which rates
# cannot tell apart; rejecting those would drop real byte counters after a day at 800G.
U64_MAX = (1 << 64) - 1
DCGM_BLANK = "DCGM blank value"
_INT32_BLANK = 0x7FFFFFF0
_INT64_BLANK = 0x7FFFFFFFFFFFFFF0
_FP64_BLANK = 140737488355328.0  # 2^47
_DCGM_INTS = frozenset([*range(_INT32_BLANK, _INT32_BLANK + 4),
                        *range(_INT64_BLANK, _INT64_BLANK + 4)])
# as doubles (the int64 ones all round to 2^63)
_DCGM_FLOATS = np.array(sorted({float(v) for v in _DCGM_INTS}
                               | {_FP64_BLANK + k for k in range(4)}), dtype=np.float64)
_TWO64 = float(1 << 64)


def is_dcgm(metric: str) -> bool:
    """A DCGM field (dcgm-exporter's `DCGM_FI_DEV_GPU_TEMP`, maybe behind a namespace)."""
    return "DCGM_" in metric


@cache
def is_counter(family: str, metric: str) -> bool:
    """Whether `metric` of a parser family is a monotonic counter: its canonical counter's kind,
    else a Prometheus `_total` name (the naming convention of counters); NIC snapshot values are
    all counters, and so are node_exporter's copies of them (`node_ethtool_*`)."""
    row = counter_map().get((family, metric))
    if row is not None:
        return canonical_counters()[row.canonical].kind == "counter"
    return family == "nic" or metric.endswith("_total") or metric.startswith("node_ethtool_")


def value_problem(value: float, counter: bool, metric: str = "", text: object = None) -> str | None:
    """Why `value` breaks the value policy (a reject reason naming it), None when it is valid.

    `text` is the value as the file wrote it, when there is one: a count is compared with 2^64 - 1
    exactly (a double cannot tell 2^64 - 1 from 2^64 + 1)."""
    shown = repr(str(value if text is None else text).strip()[:40]) + (f" of {metric}" if metric else "")
    if value != value or value in (np.inf, -np.inf):
        return f"value {shown} is not a finite number"
    if counter and value < 0:
        return f"value {shown} is negative: a counter cannot be"
    if counter and value >= _TWO64 and not _fits(value, text):
        return f"value {shown} is out of range (beyond 2^64 - 1)"
    if metric and is_dcgm(metric) and _dcgm_blank(value, text):
        return DCGM_BLANK
    return None


def _fits(value: float, text: object) -> bool:
    """A count that rounds to 2^64 as a double: in range only if it is exactly within."""
    if isinstance(text, int):
        return text <= U64_MAX
    if isinstance(text, str):
        try:
            return Decimal(text.strip()) <= U64_MAX
        except ArithmeticError:
            return False
    return False


def _dcgm_blank(value: float, text: object) -> bool:
    if isinstance(text, str | int):
        try:
            exact = Decimal(str(text).strip())
        except ArithmeticError:
            exact = None
        if exact is not None and exact == exact.to_integral_value() and abs(exact) > 1 << 53:
            return int(exact) in _DCGM_INTS  # beyond 2^53 only the exact integer tells
    return bool(np.isin(value, _DCGM_FLOATS))


def suspects(values: np.ndarray) -> np.ndarray:
    """Vectorized prefilter of the policy: True where a value may break it (not finite, negative,
    beyond 2^64, or equal to a DCGM blank as a double). Only these rows need `value_problem`, so
    the fast paths pay a few numpy passes per batch, not Python per row."""
    with np.errstate(invalid="ignore"):
        return ~(np.isfinite(values) & (values >= 0) & (values < _TWO64)) | np.isin(values, _DCGM_FLOATS)


def screen(values: np.ndarray, family: str, metric_at: Callable[[np.ndarray], list[str]],
           text_at: Callable[[np.ndarray], list] | None = None) -> dict[int, str]:
    """The rows of `values` that break the policy, with their reject reasons: `metric_at(rows)`
    and `text_at(rows)` give the metric names and value texts of the suspect rows only."""
    rows = np.flatnonzero(suspects(values))
    if not len(rows):
        return {}
    metrics = metric_at(rows)
    texts = text_at(rows) if text_at is not None else [None] * len(rows)
    out = {}
    for i, m, t in zip(rows.tolist(), metrics, texts, strict=True):
        why = value_problem(float(values[i]), is_counter(family, m), m, t)
        if why is not None:
            out[i] = why
    return out

"""The normalized model: canonical counters, event kinds, and the vendor-name map.

The map is data (`collectors/data/counter_map_<family>.csv`, one file per parser family, columns
`vendor_name,canonical,scale,source`), not code: adding a vendor's name is one CSV row.
`scale` converts the vendor's unit to the canonical one (Mb/s -> b/s is 1e6). The map is keyed
by (family, vendor name): mlx5's `ethtool -S` has software counters literally named `rx_bytes`,
which must not be taken for the canonical `rx_bytes` that `rx_bytes_phy` maps to. Canonical
names map to themselves only for the `normalized` family (the store's own schema).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from importlib import resources

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
    root = resources.files("collectors") / "data"
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

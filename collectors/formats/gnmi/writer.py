"""gnmic `json` and `event` writers, for round trips and generated bundles."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any

import orjson

from collectors.formats.gnmi.paths import split_path


# -- writers ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class GnmiNotification:
    """One gNMI notification as the writers take it.

    `prefix` is a keyed path (`interfaces/interface[name=swp1]`, '' for none); `leaves` maps
    paths relative to it (`state/counters/in-octets`, keys allowed) to values. Build the Cumulus
    shapes of design section 4 with `cumulus_notification`.
    """

    ts: int  # ns since the epoch
    source: str  # the device (hostname, or `address:port` as gnmic prints it)
    prefix: str
    leaves: dict[str, Any]
    subscription: str = "fabtwin"
    target: str = ""


# group -> (prefix template, leaf path under it), as Cumulus Linux streams them
CUMULUS_GROUPS: dict[str, tuple[str, str]] = {
    "counters": ("interfaces/interface[name={ifname}]", "state/counters/"),
    "state": ("interfaces/interface[name={ifname}]", "state/"),
    "ethernet": ("interfaces/interface[name={ifname}]", "ethernet/state/counters/"),
    "ethernet-state": ("interfaces/interface[name={ifname}]", "ethernet/state/"),
    "phy": ("interfaces/interface[name={ifname}]", "ethernet/phy/state/"),
    "queue": ("qos/interfaces/interface[interface-id={ifname}]/output/queues/queue[name={queue}]",
              "state/"),
    "pfc": ("qos/interfaces/interface[interface-id={ifname}]/switch-priority[priority={priority}]",
            "state/counters/"),
    "ar": ("", "system/adaptive-routing/state/counters/"),
}


def cumulus_notification(ts: int, device: str, group: str, leaves: dict[str, Any],
                         ifname: str = "", queue: int | str | None = None,
                         priority: int | str | None = None, target: str = "") -> GnmiNotification:
    """A notification of one CUMULUS_GROUPS group: `leaves` maps leaf names to values."""
    prefix_tpl, under = CUMULUS_GROUPS[group]
    prefix = prefix_tpl.format(ifname=ifname, queue=queue, priority=priority)
    return GnmiNotification(ts, device, prefix, {under + k: v for k, v in leaves.items()},
                            target=target)


def _rfc3339nano(ns: int) -> str:
    """Go's time.RFC3339Nano in UTC: trailing zeros of the fraction dropped."""
    secs, frac = divmod(ns, 1_000_000_000)
    stamp = datetime.fromtimestamp(secs, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    tail = f".{frac:09d}".rstrip("0") if frac else ""
    return f"{stamp}{tail}Z"


def _as_value(v: Any, strings: bool) -> Any:
    if not strings or type(v) is str or type(v) is bool:
        return v
    if type(v) is float and v.is_integer() and abs(v) < 2**53:
        return str(int(v))
    return str(v) if type(v) is int else repr(v) if type(v) is float else v


@functools.lru_cache(maxsize=1 << 16)
def _keyless(path: str) -> str:
    return "/".join(name for name, _ in split_path(path))


def write_json(notifications: Iterable[GnmiNotification], fh: IO[str],
               strings: bool = True) -> None:
    """gnmic `json` format, one object per line (a file output without `multiline`).

    Each leaf is one update whose `values` is keyed by its path without keys, as gnmic does;
    `strings=True` writes numbers as JSON strings, the way Cumulus Linux streams counters.
    """
    for n in notifications:
        obj: dict[str, Any] = {"source": n.source, "subscription-name": n.subscription,
                               "timestamp": n.ts, "time": _rfc3339nano(n.ts)}
        if n.prefix:
            obj["prefix"] = n.prefix
        if n.target:
            obj["target"] = n.target
        obj["updates"] = [{"Path": rel, "values": {_keyless(rel): _as_value(v, strings)}}
                          for rel, v in n.leaves.items()]
        fh.write(orjson.dumps(obj).decode())
        fh.write("\n")


def _event_tags(path: str) -> dict[str, str]:
    return dict(_event_tag_items(path))


@functools.lru_cache(maxsize=1 << 16)
def _event_tag_items(path: str) -> tuple[tuple[str, str], ...]:
    return tuple((f"{name}_{k}", v) for name, keys in split_path(path) for k, v in keys)


def write_event(notifications: Iterable[GnmiNotification], fh: IO[str], strings: bool = True,
                split: bool = True, group: bool = False) -> None:
    """gnmic `event` format: one event per update, tags from the path keys (Go sorts map keys).

    `split=True` writes one event object per line (file output `split-events: true`), else one
    JSON array per notification per line (gnmic's default). `group=True` merges the events of
    a notification sharing the same tags, as the `event-group-by` processor does.
    """
    for n in notifications:
        events: list[dict[str, Any]] = []
        for rel, v in n.leaves.items():
            full = f"{n.prefix}/{rel}" if n.prefix else rel
            tags = _event_tags(full)
            tags["source"] = n.source
            tags["subscription-name"] = n.subscription
            tags = dict(sorted(tags.items()))
            value = {"/" + _keyless(full): _as_value(v, strings)}
            if group and events and events[-1]["tags"] == tags:
                events[-1]["values"] = dict(sorted({**events[-1]["values"], **value}.items()))
                continue
            events.append({"name": n.subscription, "timestamp": n.ts, "tags": tags,
                           "values": value})
        if split:
            for ev in events:
                fh.write(orjson.dumps(ev).decode())
                fh.write("\n")
        elif events:
            fh.write(orjson.dumps(events).decode())
            fh.write("\n")

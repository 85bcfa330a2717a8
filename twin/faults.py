"""Fault kinds (design section 7), one declaration each: its name, the type of its root-cause
entity, the schema of its `[[faults]]` table, the function that injects it into the twin and the
canonical counter that shows it. `fabtwin simulate`, `fabtwin generate` and `fabtwin sweep` read
faults through these; replay's detectors and the app's styles are keyed by `FAULT_KINDS`.

Adding a kind: a params struct (tag = its name), an injector, one `FaultKind` in `KINDS`; then a
detector in replay and a style in the app (tests check that every kind has both).

The `[[faults]]` keys, per kind (times take `_s` or `_ms`, not both; `kind` defaults to link_down):
- every kind: `at_s`/`at_ms` (default 0), `duration_s`/`duration_ms`; `silent_root = true`
  (generate): the device at the root exports nothing (a link's upper end, a port's device, the
  device itself), so the fault shows only through its neighbours' ends.
- link_down, link_flap, link_degraded: which links, one of `link = "a--b"`, `links = [...]`,
  `fraction = 0.1` (of the fabric links, drawn with the scenario's seed), `plane = N`, or a
  selector table `links = {leaf_uplinks_to_first_spines = 2}` / `links = {fraction = 0.1,
  per_tier = true, seed = 1}` (`twin.schema.LinkSelector`, resolved by `twin.selectors`);
  a generated bundle takes `link` only (labels.json names one root cause per fault).
  link_down stays down in a generated bundle; in a what-if, back up after its duration if given.
  link_flap: `repeat` (default 1) down periods of `duration`, every `period_s`/`period_ms`
  (default twice the duration); `logged = false` (generate): no syslog line and no sample sees
  it down when it is shorter than a sample, only the carrier_transitions / link_down_events
  counters move. link_degraded: `speed_gbps` and/or `loss` (in [0, 1)); `counted = false`
  (generate): silent loss, no FCS or symbol error counted, the receiver just counts fewer packets
  than the sender sent.
- pfc_storm: `host`, `nic` and `plane` (default 0): that NIC keeps pausing its leaf port.
- congestion: `host` (the incast receiver), `senders` (default 8) send to it at line rate;
  `victim_marks = 2.0` (generate): the upstream ports the leaf pauses mark that many times the
  root's ECN marks (victims louder than the root).
- load_imbalance: `device`, a leaf left in ECMP (adaptive routing off); or, with
  `weights_cv = 0.2`, splitting over its uplinks by fixed weights of that coefficient of
  variation (a mild imbalance, no hash collisions).
Without a duration a fault lasts 60 s in a generated bundle and to the end in a what-if.

Only msgspec and the standard library are imported at the top: the TUI and replay read the
declarations, and the twin's engine (numpy, scipy, networkx) costs most of a second to import.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

import msgspec

from twin.schema import (
    Count,
    Index,
    LinkSelector,
    NonNegative,
    Positive,
    ScenarioError,
    Share,
    Source,
)

if TYPE_CHECKING:
    import numpy as np

    from twin.engine import LinkChange, Storm, Transfers
    from twin.routing import FabricState
    from twin.topology import Fabric

Loss = Annotated[float, msgspec.Meta(ge=0, lt=1)]


class FaultParams(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, tag_field="kind"):
    """Keys every kind takes: when it starts and how long it lasts."""

    at_s: NonNegative | None = None
    at_ms: NonNegative | None = None
    duration_s: Positive | None = None
    duration_ms: Positive | None = None
    silent_root: bool = False  # generate: the root's device writes no file


class LinkParams(FaultParams):
    """Which links: exactly one of link, links (a list of ids, or a `twin.schema.LinkSelector`
    table), fraction, plane."""

    link: str | None = None
    links: list[str] | LinkSelector | None = None
    fraction: Share | None = None
    plane: Index | None = None


class LinkDown(LinkParams, tag="link_down"):
    pass


class LinkFlap(LinkParams, tag="link_flap"):
    repeat: Count = 1
    period_s: Positive | None = None
    period_ms: Positive | None = None
    logged: bool = True  # generate: false writes no syslog line for it


class LinkDegraded(LinkParams, tag="link_degraded"):
    speed_gbps: Positive | None = None
    loss: Loss | None = None
    counted: bool = True  # generate: false is silent loss (no error counter moves)


class PfcStorm(FaultParams, tag="pfc_storm"):
    host: str
    nic: Index = 0
    plane: Index = 0


class Congestion(FaultParams, tag="congestion"):
    host: str
    senders: Count = 8
    victim_marks: Positive | None = None  # generate: paused upstream ports' ECN / the root's


class LoadImbalance(FaultParams, tag="load_imbalance"):
    device: str
    weights_cv: Annotated[float, msgspec.Meta(gt=0, le=1)] | None = None  # fixed uplink weights


@dataclass
class Fault:
    """A fault as the twin sees it: capacity changes, storms, extra traffic, an ECMP leaf; and
    its ground truth (kind, root entity, start, end, victims)."""

    kind: str
    root_type: str
    root_id: str
    start_s: float
    end_s: float
    changes: list[LinkChange] = field(default_factory=list)
    storms: list[Storm] = field(default_factory=list)
    extra_traffic: Transfers | None = None
    ecmp_leaf: int | None = None
    downs: list[tuple[float, float]] = field(default_factory=list)  # link down intervals
    victims: list[str] = field(default_factory=list)
    weighted_leaf: int | None = None  # load_imbalance with weights_cv: the leaf, and its
    uplink_weights: np.ndarray | None = None  # split over its uplinks
    silent_device: str | None = None  # generate: the device that exports nothing
    logged: bool = True  # generate: link events written to syslog
    counted: bool = True  # generate: a lossy link's errors counted (False: silent loss)
    loss: float = 0.0  # link_degraded: the share of packets lost
    victim_marks: float | None = None  # generate: congestion's upstream ECN, times the root's
    hard_cases: list[str] = field(default_factory=list)  # issue 17's hard cases it is (labels)

    def apply(self, state: FabricState) -> None:
        """What the fault does to the switches' configuration (capacity changes and storms are
        the engine's events): a leaf left in ECMP, or one splitting by fixed weights."""
        if self.ecmp_leaf is not None:
            state.ecmp_switches.add(self.ecmp_leaf)
        if self.uplink_weights is not None and self.weighted_leaf is not None:
            state.weighted_switches[self.weighted_leaf] = self.uplink_weights


@dataclass
class Context:
    """Where a fault is injected: the fabric, and the defaults of the command reading it."""

    fabric: Fabric
    source: Source
    index: int  # position in [[faults]], for errors
    rng: np.random.Generator  # draws `fraction` of the links
    generated: bool  # a generated bundle: one root per fault, finite default duration

    @property
    def default_duration_s(self) -> float | None:
        return 60.0 if self.generated else None

    def error(self, key: str | None, message: str) -> ScenarioError:
        return self.source.error(["faults", self.index, *([key] if key else [])], message)

    def seconds(self, params: msgspec.Struct, name: str, default: float | None) -> float | None:
        """`name_s`, or `name_ms` in seconds, or `default`; both given is an error."""
        s, ms = getattr(params, f"{name}_s"), getattr(params, f"{name}_ms")
        if s is not None and ms is not None:
            raise self.error(f"{name}_ms", f"give {name}_s or {name}_ms, not both")
        return s if s is not None else ms / 1e3 if ms is not None else default

    def node(self, key: str, name: str, kind: int, what: str) -> int:
        """The node index of `name`, which must be of `kind` (0 host, 1 leaf)."""
        names = self.fabric.node_name
        n = names.index(name) if name in names else -1
        if n < 0 or int(self.fabric.node_kind[n]) != kind:
            raise self.error(key, f"{name!r} is not {what} of this fabric")
        return n


def _cables(p: LinkParams, ctx: Context) -> tuple[list[int], str]:
    """The cables a link fault names, and the first one's link id (its root)."""
    import numpy as np

    f = ctx.fabric
    given = [k for k in ("link", "links", "fraction", "plane") if getattr(p, k) is not None]
    if len(given) != 1:
        raise ctx.error(None, 'say which links, once: link = "a--b", links = [...] or {...}, '
                              "fraction = 0.1 or plane = N")
    key = given[0]
    if ctx.generated and key != "link":
        raise ctx.error(key, 'a generated bundle takes link = "a--b" (labels.json names one root cause)')
    if isinstance(p.links, LinkSelector) or key == "fraction":
        from twin.selectors import select_links

        chosen = p.links if isinstance(p.links, LinkSelector) else LinkSelector(fraction=p.fraction)
        try:
            cables = select_links(f, chosen, ctx.rng)
        except ValueError as exc:
            raise ctx.error(key, str(exc)) from None
    elif key in ("link", "links"):
        ids = {f.link_id(c): c for c in range(f.n_cables)}
        wanted = [p.link] if key == "link" else p.links or []
        missing = [x for x in wanted if x not in ids]
        if not wanted:
            raise ctx.error(key, "names no link")
        if missing:
            raise ctx.error(key, f"no link {missing[0]!r} in this fabric")
        cables = [int(ids[x]) for x in wanted]
    else:
        if p.plane >= f.spec.planes:
            raise ctx.error("plane", f"plane {p.plane} is not one of the fabric's {f.spec.planes}")
        cables = [int(c) for c in np.flatnonzero(f.cable_plane == p.plane)]
    return cables, f.link_id(cables[0]) if cables else ""


def _down(kind: str, p: LinkParams, ctx: Context, downs: list[tuple[float, float]]) -> Fault:
    """The link(s) down in each interval of `downs`, back at full speed after a finite one."""
    from twin.engine import LinkChange

    cables, root = _cables(p, ctx)
    out = Fault(kind, "link", root, downs[0][0], downs[-1][1], downs=downs)
    for start, end in downs:
        for c in cables:
            out.changes.append(LinkChange(start, c, 0.0))
            if math.isfinite(end):
                out.changes.append(LinkChange(end, c, float(ctx.fabric.cable_gbps[c])))
    return out


def inject_link_down(p: LinkDown, ctx: Context) -> Fault:
    """Down at `at`; in a what-if back up after `duration` when given. In a generated bundle it
    stays down (design section 7: a link that comes back is a flap), whatever the duration."""
    at = ctx.seconds(p, "at", 0.0)
    dur = None if ctx.generated else ctx.seconds(p, "duration", None)
    return _down("link_down", p, ctx, [(at, at + dur if dur else math.inf)])


def inject_link_flap(p: LinkFlap, ctx: Context) -> Fault:
    """`repeat` down periods of `duration` (a what-if's default 10 ms), every `period`."""
    at = ctx.seconds(p, "at", 0.0)
    dur = ctx.seconds(p, "duration", 60.0 if ctx.generated else 0.01)
    period = ctx.seconds(p, "period", 2 * dur)
    out = _down("link_flap", p, ctx, [(at + k * period, at + k * period + dur) for k in range(p.repeat)])
    out.logged = p.logged
    if not p.logged:
        out.hard_cases.append("short_flap")
    return out


def inject_link_degraded(p: LinkDegraded, ctx: Context) -> Fault:
    """The link(s) keep `speed_gbps` and/or lose `loss` of their packets for `duration`."""
    from twin.engine import LinkChange

    if p.speed_gbps is None and p.loss is None:
        raise ctx.error(None, "link_degraded needs speed_gbps or loss")
    cables, root = _cables(p, ctx)
    at = ctx.seconds(p, "at", 0.0)
    dur = ctx.seconds(p, "duration", ctx.default_duration_s)
    out = Fault("link_degraded", "link", root, at, at + dur if dur else math.inf, counted=p.counted,
                loss=float(p.loss or 0.0))
    # silent loss in a bundle: adaptive routing reacts to queues, not to drops nobody counts, so
    # the link keeps its share of the traffic; the writer drops `loss` of it at the receiver
    engine_loss = 0.0 if ctx.generated and not p.counted else out.loss
    for c in cables:
        full = float(ctx.fabric.cable_gbps[c])
        out.changes.append(LinkChange(at, c, float(p.speed_gbps or full), engine_loss))
        if dur:
            out.changes.append(LinkChange(at + dur, c, full))
    if p.loss and not p.counted:
        out.hard_cases.append("silent_loss")
    if cables and p.speed_gbps is not None and p.speed_gbps < float(ctx.fabric.cable_gbps[cables[0]]):
        out.hard_cases.append("low_speed")
    return out


def inject_pfc_storm(p: PfcStorm, ctx: Context) -> Fault:
    """The NIC's port pauses its leaf port (the cable's downward direction) for `duration`."""
    import numpy as np

    from twin.engine import Storm
    from twin.workload import endpoints

    f = ctx.fabric
    h = ctx.node("host", p.host, 0, "a host")
    if p.nic >= f.spec.nics_per_host or p.plane >= f.spec.planes:
        raise ctx.error("nic" if p.nic >= f.spec.nics_per_host else "plane",
                        f"the fabric's hosts have {f.spec.nics_per_host} NIC(s) on {f.spec.planes} plane(s)")
    cable = int(f.ep_cable[int(endpoints(f, np.array([h]), p.nic, p.plane)[0])])
    at = ctx.seconds(p, "at", 0.0)
    end = at + (ctx.seconds(p, "duration", ctx.default_duration_s) or 1e9)  # 1e9 s: for ever
    return Fault("pfc_storm", "port", f.cable_port_a[cable], at, end,
                 storms=[Storm(at, end, 2 * cable + 1)])


def inject_congestion(p: Congestion, ctx: Context) -> Fault:
    """An incast: `senders` hosts send the receiver its line rate between them for `duration`;
    the root is the leaf port facing the receiver, where the queue builds."""
    import numpy as np

    from twin.engine import Transfers

    f = ctx.fabric
    h = ctx.node("host", p.host, 0, "a host")
    others = [x for x in range(f.spec.hosts) if x != h][: p.senders]
    if len(others) < p.senders:
        raise ctx.error("senders", f"{p.senders} senders, the fabric has {len(others)} other hosts")
    dur = ctx.seconds(p, "duration", ctx.default_duration_s)
    if dur is None:
        raise ctx.error(None, "congestion needs duration_s or duration_ms (how much it sends)")
    at = ctx.seconds(p, "at", 0.0)
    cable = int(f.ep_cable[int(np.flatnonzero(f.ep_host == h)[0])])
    n, line = len(others), f.cable_gbps[cable] * 1e9 / 8
    out = Fault("congestion", "port", f.cable_port_b[cable], at, at + dur,
                victim_marks=p.victim_marks, hard_cases=["loud_victims"] if p.victim_marks else [])
    out.extra_traffic = Transfers(np.array(others), np.full(n, h), np.full(n, line / n * dur),
                                  np.full(n, at), job=np.full(n, -2))
    return out


def inject_load_imbalance(p: LoadImbalance, ctx: Context) -> Fault:
    """The leaf runs ECMP (adaptive routing off) for the whole run; with `weights_cv`, it splits
    over its uplinks by fixed weights instead (mean 1, that coefficient of variation)."""
    n = ctx.node("device", p.device, 1, "a leaf")
    at = ctx.seconds(p, "at", 0.0)
    dur = ctx.seconds(p, "duration", ctx.default_duration_s)
    out = Fault("load_imbalance", "device", p.device, at, at + dur if dur else math.inf)
    if p.weights_cv is None:
        out.ecmp_leaf = n
        return out
    z = ctx.rng.standard_normal(len(ctx.fabric.leaf_up_cables[n]))
    z = (z - z.mean()) / z.std() if z.std() > 0 else z
    out.weighted_leaf = n
    out.hard_cases.append("mild_imbalance")
    out.uplink_weights = (1 + p.weights_cv * z).clip(0.05, None)  # clipped only when cv is large
    return out


def _root_device(fabric: Fabric, fault: Fault) -> str:
    """The device a `silent_root` fault silences: a link's upper end (the switch of a host link,
    the spine of a leaf-spine link), a port's device, or the device itself."""
    if fault.root_type == "device":
        return fault.root_id
    ports = fault.root_id.split("--")
    kind = dict(zip(fabric.node_name, fabric.node_kind, strict=True))
    return max((p.split(":", 1)[0] for p in ports), key=lambda d: int(kind[d]))


@dataclass(frozen=True)
class FaultKind:
    """One kind of fault: everything the packages need to know about it."""

    name: str
    root_type: str  # link | port | device: the entity an incident of this kind names
    params: type[FaultParams]  # its [[faults]] table (msgspec tag = name)
    inject: Callable[[Any, Context], Fault]
    signal: str  # the canonical counter (collectors/core/data/canonical_counters.csv) that shows it


KINDS: dict[str, FaultKind] = {k.name: k for k in (
    FaultKind("link_down", "link", LinkDown, inject_link_down, "tx_bytes"),
    FaultKind("link_flap", "link", LinkFlap, inject_link_flap, "tx_bytes"),
    FaultKind("link_degraded", "link", LinkDegraded, inject_link_degraded, "rx_fcs_errors"),
    FaultKind("congestion", "port", Congestion, inject_congestion, "ecn_marked"),
    FaultKind("pfc_storm", "port", PfcStorm, inject_pfc_storm, "tx_pause"),
    FaultKind("load_imbalance", "device", LoadImbalance, inject_load_imbalance, "tx_bytes"),
)}
FAULT_KINDS = tuple(KINDS)
_KIND_OF = {k.params: k for k in KINDS.values()}
# the [[faults]] entry: msgspec picks the struct by its `kind`
FaultSpec = functools.reduce(operator.or_, (k.params for k in KINDS.values()))


def kind_of(params: FaultParams) -> FaultKind:
    """The declaration of a parsed fault."""
    return _KIND_OF[type(params)]


def inject(fabric: Fabric, faults: list[FaultParams], source: Source, seed: int,
           generated: bool) -> list[Fault]:
    """The faults of a scenario as the twin applies them (`generated`: for a bundle with labels)."""
    if not faults:  # no generator either: numpy.random is 20 ms of a small run's start-up
        return []
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for i, p in enumerate(faults):
        fault = kind_of(p).inject(p, Context(fabric, source, i, rng, generated))
        if p.silent_root:
            fault.silent_device = _root_device(fabric, fault)
            fault.hard_cases.insert(0, "silent_device")
        out.append(fault)
    return out

"""Diagnosis by explanation: each candidate fault is injected into the twin, and a root cause is
the smallest set of faults whose prediction explains what the counters show.

The residual is `observed - healthy` of the replay's `expected_counters` (the healthy fabric:
every cable up at its peers' speed, for the observed demand), per port, window and counter, in
units of that counter's noise on this bundle (`replay.counters`), plus one conservation law per
cable direction: what a port received against what its peer sent (`rx_deficit_*`: silent loss
shows there and nowhere else). A residual counts beyond a dead zone of DEAD_ZONE noise units,
then with a Huber loss, so that a storm's millions of pause frames weigh as evidence without
drowning every other cell.

Candidates are the detectors' incidents and, for each, the alternatives that compete for the
same residual (the port at the other end, the other planes' ports showing the same counter, the
other kinds at the same link). Each is a set of templates over cells, the twin's prediction of
what the fault changes (`Hypothesis`): a reroute around a link down or at a lower speed (the
twin's routing, no free parameter), a loss rate on a link (the receiver's deficit), pause frames
a port emits and the PFC tree they grow, ECN marks at an overloaded egress and pauses to its
feeders, uneven shares of a switch's uplinks (ECMP). Amplitudes are fitted, never negative. A
greedy search adds the fault that explains most beyond its penalty (BIC: half the log of the
number of cells per fitted template), up to MAX_FAULTS. A candidate whose residual the chosen
faults explain is evidence of that root (a victim), not a root.

Scores follow the explanation: a chosen root scores above 0.5, more the larger its share of the
residual and its margin over the penalty; a candidate that explains nothing beyond noise scores
at most 0.5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

import duckdb
import numpy as np

from replay.counters import COUNTERS, Grid, load_grid, nominal_fabric
from replay.stored import Incident
from replay.stored import iso as _iso
from twin.topology import TopologyError

DEAD_ZONE = 3.0  # noise units a residual may reach before it needs explaining (3 sigma)
HUBER = 1.345  # the Huber loss' corner (95% efficiency under Gaussian noise)
MAX_FAULTS = 3
VICTIM = 0.5  # a candidate the chosen faults leave less than this share of its gain is a victim
ALTERNATIVES = 6  # competing candidates per counter read from the residual around an incident
# cells of the conservation law per cable direction, after the grid's counters
DERIVED = ("rx_deficit_bytes", "rx_deficit_packets")
NAMES = COUNTERS + DERIVED
KI = {name: i for i, name in enumerate(NAMES)}


def _near(span: np.ndarray) -> np.ndarray:
    """The windows of a span and one either side."""
    on = np.pad(span > 0, 1)
    return on[:-2] | on[1:-1] | on[2:]


def loss(z: np.ndarray) -> np.ndarray:
    """Huber loss of a residual beyond the dead zone (noise units)."""
    e = np.maximum(np.abs(z) - DEAD_ZONE, 0.0)
    return np.where(e <= HUBER, 0.5 * e * e, HUBER * (e - 0.5 * HUBER))


@dataclass
class Template:
    """One predicted change over cells: `raw` (counter units) per unit of amplitude at flat cell
    indices `idx`; fitted (amplitude >= 0, at most `amax`) unless `fixed` (amplitude 1)."""

    name: str
    idx: np.ndarray
    raw: np.ndarray
    fixed: bool = False
    amax: float = np.inf
    required: bool = False  # the fault's signature: without it the hypothesis explains nothing


@dataclass
class Hypothesis:
    """A candidate fault: what it is, where, when, and the templates of its prediction."""

    kind: str
    root_type: str
    root_id: str
    start: datetime | None
    end: datetime | None
    incident: Incident | None  # the detector's, or None for an alternative
    templates: list[Template] = field(default_factory=list)
    extra_params: int = 0  # fitted inside a fixed template (uplink shares)
    root_ports: list[int] = field(default_factory=list)
    amps: list[float] = field(default_factory=list)
    search_cost: float = 0.0  # log of the candidates it was picked among, unless a detector named it

    @property
    def key(self) -> tuple[str, str]:
        return self.kind, self.root_id

    def params(self, amps: list[float] | None = None) -> float:
        """Fitted parameters: the fault itself, each template whose amplitude is not zero, and
        a hundredth per template offered (of two hypotheses that explain as much, the one that
        claims fewer cells wins)."""
        amps = self.amps if amps is None else amps
        used = sum(1 for t, a in zip(self.templates, amps, strict=False) if not t.fixed and a > 0)
        return 1 + used + self.extra_params + 0.01 * len(self.templates)


class Model:
    """The residual of a grid, the cell layout, and the fabric's neighbourhoods."""

    def __init__(self, con: duckdb.DuckDBPyConnection, grid: Grid) -> None:
        self.con, self.grid = con, grid
        f = grid.fabric
        self.fabric, self.c = f, f.n_cables
        k0, self.n_p, self.n_w = grid.observed.shape
        obs = np.concatenate([grid.observed, np.full((len(DERIVED), self.n_p, self.n_w), np.nan)])
        healthy = np.concatenate([grid.healthy, np.zeros((len(DERIVED), self.n_p, self.n_w))])
        noise = np.concatenate([grid.noise, np.ones((len(DERIVED), self.n_p))])
        peer = self.peer(np.arange(self.n_p))
        cap = np.tile(f.cable_gbps * 1e9 / 8, 2)
        tier = np.tile(f.cable_tier, 2)
        for d, (tx, rx) in zip(DERIVED, (("tx_bytes", "rx_bytes"), ("tx_packets", "rx_packets")),
                               strict=True):
            k = KI[d]
            obs[k] = obs[KI[tx]][peer] - obs[KI[rx]]  # what the peer sent that this port missed
            with np.errstate(invalid="ignore", divide="ignore"):
                size = np.nanmedian(grid.observed[KI["tx_bytes"]] / grid.observed[KI["tx_packets"]])
            unit = cap if d.endswith("bytes") else cap / (size if np.isfinite(size) and size > 1 else 4096)
            for t in np.unique(tier):
                sel = tier == t
                rel = (obs[k, sel] / unit[sel, None]).ravel()
                rel = rel[np.isfinite(rel)]
                mad = 1.4826 * float(np.median(np.abs(rel - np.median(rel)))) if rel.size else 0.0
                # counters of one link agree up to sampling skew: a tenth of the bytes floor
                noise[k, sel] = max(1e-4, mad) * unit[sel]
        self.obs, self.healthy, self.noise = obs, healthy, noise
        self.mask = np.isfinite(obs)
        # queue depth is kept in the table where reported, not scored: devices report a
        # watermark since the last read, not the window's queue
        self.mask[KI["queue_depth"]] = False
        z = np.where(self.mask, (obs - healthy) / noise[:, :, None], 0.0)
        self.z0 = z.ravel()
        self.total = float(loss(self.z0).sum())
        self.n_cells = int(self.mask.sum())
        self.penalty_unit = 0.5 * math.log(max(self.n_cells, 2))
        del k0
        ports = grid.ports
        self.index = {p: i for i, p in enumerate(ports)}
        self.device = [p.split(":", 1)[0] for p in ports]
        self.ports_of: dict[str, list[int]] = {}
        for i, d in enumerate(self.device):
            self.ports_of.setdefault(d, []).append(i)
        self.hosts = {f.node_name[h] for h in np.flatnonzero(f.node_kind == 0)}
        self.plane = np.tile(f.cable_plane, 2)
        self.tier = tier
        self._router: Router | None = None

    # --- layout -----------------------------------------------------------------------------
    def peer(self, p):
        return np.where(p < self.c, p + self.c, p - self.c) if isinstance(p, np.ndarray) else (
            p + self.c if p < self.c else p - self.c)

    def flat(self, k: int, p: int, w: np.ndarray) -> np.ndarray:
        return (k * self.n_p + p) * self.n_w + w

    def profile(self, start: datetime | None, end: datetime | None) -> np.ndarray:
        """Per window, the share of it inside [start, end] (end None: to the end)."""
        b = self.grid.bounds
        out = np.zeros(self.n_w)
        t0 = start or b[0]
        t1 = end or b[-1]
        for w in range(self.n_w):
            lo, hi = max(b[w], t0), min(b[w + 1], t1)
            width = (b[w + 1] - b[w]).total_seconds()
            if width > 0 and hi > lo:
                out[w] = (hi - lo).total_seconds() / width
        if not out.any() and t0 <= b[-1]:  # an instant (one sample): its window
            w = int(np.searchsorted(np.array(b[1:]), t0))
            out[min(w, self.n_w - 1)] = 1.0
        return out

    def course(self, span: np.ndarray, cells: list[tuple[str, int]]) -> np.ndarray:
        """A fault's time course: the excess of its key cells over the healthy twin, in the
        windows of its span and one either side (a detector's span is a few samples off the
        truth, and a PFC tree outlives its root by a sample), scaled to peak 1; the span's
        shares where the key cells show nothing."""
        near = _near(span)
        z = self.z0.reshape(len(NAMES), self.n_p, self.n_w)
        excess = np.zeros(self.n_w)
        for counter, p in cells:
            k = KI[counter]
            excess += np.where(self.mask[k, p], np.maximum(self.obs[k, p] - self.healthy[k, p], 0), 0) * (
                loss(z[k, p]) > 0)
        excess = np.where(near, excess, 0.0)
        return excess / excess.max() if excess.max() > 0 else span

    def template(self, name: str, cells: list[tuple[str, int, np.ndarray]], fixed: bool = False,
                 amax: float = np.inf, required: bool = False) -> Template | None:
        """A template from (counter, port, per-window values in counter units) triples."""
        idx, raw = [], []
        for counter, p, values in cells:
            w = np.flatnonzero(np.abs(values) > 0)
            k = KI[counter]
            w = w[self.mask[k, p, w]]
            if w.size:
                idx.append(self.flat(k, p, w))
                raw.append(values[w])
        if not idx:
            return None
        idx_a, raw_a = np.concatenate(idx), np.concatenate(raw)
        idx_a, first = np.unique(idx_a, return_index=True)
        return Template(name, idx_a, raw_a[first], fixed, amax, required)

    def noise_at(self, idx: np.ndarray) -> np.ndarray:
        k, rest = np.divmod(idx, self.n_p * self.n_w)
        return self.noise[k, rest // self.n_w]

    # --- fitting ----------------------------------------------------------------------------
    def fit(self, h: Hypothesis, resid: np.ndarray) -> tuple[float, np.ndarray, list[float]]:
        """Fit h's amplitudes on `resid` (flat, noise units): (gain, its prediction in noise
        units at h's cells, as a flat sparse pair folded into a dense array, amplitudes)."""
        r = resid.copy()
        amps = []
        touched = []
        for t in h.templates:
            v = t.raw / self.noise_at(t.idx)
            cur = r[t.idx]
            a = 1.0 if t.fixed else self._amplitude(cur, v, t.amax)
            if t.required and a == 0:
                return 0.0, np.zeros_like(resid), [0.0] * len(h.templates)
            r[t.idx] = cur - a * v
            amps.append(a)
            touched.append(t.idx)
        idx = np.unique(np.concatenate(touched)) if touched else np.zeros(0, np.int64)
        gain = float(loss(resid[idx]).sum() - loss(r[idx]).sum())
        pred = np.zeros_like(resid)
        pred[idx] = resid[idx] - r[idx]
        return gain, pred, amps

    @staticmethod
    def _amplitude(cur: np.ndarray, v: np.ndarray, amax: float) -> float:
        """The amplitude >= 0 that lowers the loss of `cur - a v` most, of two estimates: least
        squares (right for a pattern seen everywhere), and the median of the cells' own ratios
        (robust where the pattern is right on most cells and wrong on a few); 0 if neither
        helps (least squares ignores the dead zone)."""
        vv = float(v @ v)
        if vv <= 0:
            return 0.0
        on = v != 0
        tries = {float(np.clip((cur @ v) / vv, 0.0, amax)),
                 float(np.clip(np.median(cur[on] / v[on]), 0.0, amax))}
        best, best_loss = 0.0, float(loss(cur).sum())
        for a in sorted(tries):
            lo = float(loss(cur - a * v).sum())
            if a > 0 and lo < best_loss:
                best, best_loss = a, lo
        return best

    def penalty(self, h: Hypothesis, amps: list[float] | None = None) -> float:
        """BIC's half log of the cells per fitted parameter, plus the log of the number of
        candidates it was found among (a fault no detector named was looked for everywhere:
        the best of many looks better than it is)."""
        return self.penalty_unit * h.params(amps) + h.search_cost

    # --- the twin's routing, for reroutes ----------------------------------------------------
    @property
    def router(self) -> Router:
        if self._router is None:
            self._router = Router(self.con, self.grid)
        return self._router


class Router:
    """The replay's traffic on the healthy fabric, rerouted around one cable's fault."""

    def __init__(self, con: duckdb.DuckDBPyConnection, grid: Grid) -> None:
        from replay.expected import _groups, _host_demand, traffic  # the replay's own model

        self.fabric = nominal_fabric(grid.fabric)
        obs_tx = grid.observed[KI["tx_bytes"]]
        obs_rx = grid.observed[KI["rx_bytes"]]
        n_win = obs_tx.shape[1]
        groups = _groups(con, self.fabric, grid.bounds[0], grid.window_s, n_win)
        demand_tx, demand_rx = _host_demand(self.fabric, obs_tx, obs_rx)
        self.traffic = traffic(self.fabric, demand_tx, demand_rx, groups, obs_tx, obs_rx)
        self.routing = _routing(con)

    def loads(self, cable: int, down: np.ndarray | None = None,
              gbps: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Expected tx, rx bytes/s per port and window with `cable` down for the share `down`
        of each window, or at `gbps`."""
        from dataclasses import replace

        from replay.expected import _route_windows, port_loads

        f = self.fabric
        if gbps is not None:
            speeds = f.cable_gbps.copy()
            speeds[cable] = gbps
            f = replace(f, cable_gbps=speeds)
        n_win = self.traffic.demand.shape[1]
        up = np.ones((f.n_cables, n_win))
        if down is not None:
            up[cable] = 1.0 - down
        t = self.traffic
        return port_loads(f, t, _route_windows(f, up, t.src_ep, t.dst_ep, t.demand, self.routing))


def _routing(con: duckdb.DuckDBPyConnection) -> str:
    rows = con.execute("SELECT routing FROM replay_runs").fetchall()
    row = rows[0] if rows else None
    return row[0] if row and row[0] else "ar"


# --- hypotheses ------------------------------------------------------------------------------

def _span(m: Model, inc: Incident) -> np.ndarray:
    return m.profile(inc.start, inc.end)


def _link_cable(m: Model, link: str) -> int | None:
    if "--" not in link:
        return None
    a, b = link.split("--", 1)
    p = m.index.get(a, m.index.get(b))
    return None if p is None else p % m.c


def _reroute_templates(m: Model, name: str, tx: np.ndarray, rx: np.ndarray,
                       windows: np.ndarray) -> Template | None:
    """A fixed template: the change of every port's bytes and packets from healthy."""
    h = m.healthy
    size = np.where(h[KI["tx_packets"]] > 0, h[KI["tx_bytes"]] / np.maximum(h[KI["tx_packets"]], 1e-12),
                    np.nan)
    size = np.nanmedian(size, axis=1)
    size = np.where(np.isfinite(size) & (size > 0), size, np.nanmedian(size) if np.isfinite(size).any() else 4096)
    cells = []
    on = windows > 0
    for counter, new in (("tx_bytes", tx), ("rx_bytes", rx)):
        delta = np.where(on[None, :], new - h[KI[counter]], 0.0)
        moved = np.flatnonzero(np.abs(delta).max(axis=1) > 1e-9 * np.maximum(np.abs(new).max(axis=1), 1))
        pk = counter.replace("bytes", "packets")
        for p in moved:
            cells.append((counter, int(p), delta[p]))
            cells.append((pk, int(p), delta[p] / size[p]))
    return m.template(name, cells, fixed=True)


def link_hypothesis(m: Model, kind: str, link: str, start, end, inc: Incident | None) -> Hypothesis | None:
    """link_down / link_flap: the cable's observed down share, its down events, the reroute."""
    c = _link_cable(m, link)
    if c is None:
        return None
    h = Hypothesis(kind, "link", link, start, end, inc, root_ports=[c, c + m.c])
    span = m.profile(start, end)
    near = _near(span)  # a window of slack either side
    down = np.where(near, np.nan_to_num(m.obs[KI["down_fraction"], c]), 0.0)
    events = np.where(near, np.nanmax(np.nan_to_num(m.obs[KI["link_down_events"], [c, c + m.c]]), axis=0), 0)
    if not events.any():
        events = np.maximum(np.diff(np.concatenate([[0.0], down])), 0) > 0
    h.templates += [t for t in (
        m.template("down share", [("down_fraction", c, down), ("down_fraction", c + m.c, down)],
                   fixed=True),
        m.template("down events", [("link_down_events", c, events.astype(float)),
                                   ("link_down_events", c + m.c, events.astype(float))]),
    ) if t is not None]
    if down.any() and m.fabric.cable_tier[c] > 0:
        tx, rx = m.router.loads(c, down=down)
        t = _reroute_templates(m, "reroute", tx, rx, down)
        if t is not None:
            h.templates.append(t)
    return h if h.templates else None


def degraded_hypothesis(m: Model, link: str, start, end, inc: Incident | None) -> Hypothesis | None:
    """link_degraded: a loss rate each way (the receiver's deficit, its error counters) and a
    lower speed than its peers (reported: the capacity the twin routes by)."""
    c = _link_cable(m, link)
    if c is None:
        return None
    span = m.profile(start, end)
    h = Hypothesis("link_degraded", "link", link, start, end, inc, root_ports=[c, c + m.c])
    for r in (c, c + m.c):
        s = m.peer(r)
        cells_b = [("rx_deficit_bytes", r, np.nan_to_num(m.obs[KI["tx_bytes"], s]) * span)]
        cells_p = [("rx_deficit_packets", r, np.nan_to_num(m.obs[KI["tx_packets"], s]) * span)]
        t = m.template(f"loss into {m.grid.ports[r]}", cells_b + cells_p, amax=1.0)
        if t is not None:
            h.templates.append(t)
    for r in (c, c + m.c):  # the receiver of the corrupted direction counts them
        t = m.template(f"errors at {m.grid.ports[r]}", [("errors", r, span)])
        if t is not None:
            h.templates.append(t)
    reported = np.nanmin(m.obs[KI["port_speed"], [c, c + m.c], 0]) if np.isfinite(
        m.obs[KI["port_speed"], [c, c + m.c], 0]).any() else np.nan
    nominal = m.healthy[KI["port_speed"], c, 0]
    if np.isfinite(reported) and reported < 0.99 * nominal:
        whole = np.ones(m.n_w)
        h.templates.append(m.template("speed", [("port_speed", c, (reported - nominal) * whole),
                                                ("port_speed", c + m.c, (reported - nominal) * whole)],
                                      fixed=True))
        if m.fabric.cable_tier[c] > 0:
            tx, rx = m.router.loads(c, gbps=reported / 1e9)
            t = _reroute_templates(m, "reroute at the lower speed", tx, rx, whole)
            if t is not None:
                h.templates.append(t)
    h.templates = [t for t in h.templates if t is not None]
    return h if h.templates else None


def _pause_tree(m: Model, device: str, plane: int, skip: set[int], span: np.ndarray,
                h: Hypothesis) -> None:
    """The PFC tree a device grows when one of its egress ports cannot drain: it pauses the
    ports that feed it (weighted by what each brings in, healthy), whose queues then fill (ECN
    at their senders), and their switches pause theirs in turn."""
    ports = [q for q in m.ports_of.get(device, []) if q not in skip and m.plane[q] == plane]
    # each port of the tree its own amplitude: how hard a feeder is paused depends on how much
    # of its traffic heads for the blocked port, which the counters say and the twin does not
    for q in ports:
        peer = int(m.peer(q))
        for name, cells in ((f"pauses {m.grid.ports[q]} sends", [("tx_pause", q, span),
                                                                 ("rx_pause", peer, span)]),
                            (f"ECN at paused {m.grid.ports[peer]}", [("ecn_marked", peer, span)])):
            t = m.template(name, cells)
            if t is not None:
                h.templates.append(t)
        nxt = m.device[peer]
        if nxt in m.hosts or nxt == device:
            continue
        for r in m.ports_of.get(nxt, []):
            if m.device[int(m.peer(r))] != device and m.plane[r] == plane:
                t = m.template(f"pauses {m.grid.ports[r]} sends", [("tx_pause", r, span),
                                                                   ("rx_pause", int(m.peer(r)), span)])
                if t is not None:
                    h.templates.append(t)


def congestion_hypothesis(m: Model, port: str, start, end, inc: Incident | None) -> Hypothesis | None:
    """congestion at an egress port: ECN marks and a queue there, pauses to its feeders."""
    x = m.index.get(port)
    if x is None:
        return None
    span = m.course(m.profile(start, end), [("ecn_marked", x)])
    h = Hypothesis("congestion", "port", port, start, end, inc, root_ports=[x])
    t = m.template("ECN at the egress", [("ecn_marked", x, span)], required=True)
    if t is None:
        return None
    h.templates.append(t)
    _pause_tree(m, m.device[x], int(m.plane[x]), {x}, span, h)
    return h if h.templates else None


def storm_hypothesis(m: Model, port: str, start, end, inc: Incident | None) -> Hypothesis | None:
    """pfc_storm from a port: pause frames it sends (seen at its peer when it reports nothing),
    its peer's traffic to it stalled, its peer's queue filling, and the tree upstream."""
    x = m.index.get(port)
    if x is None:
        return None
    y = int(m.peer(x))
    span = m.course(m.profile(start, end), [("tx_pause", x), ("rx_pause", y)])
    h = Hypothesis("pfc_storm", "port", port, start, end, inc, root_ports=[x, y])
    sends = m.template("pause frames it sends", [("tx_pause", x, span), ("rx_pause", y, span)],
                       required=True)
    if sends is None:
        return None
    h.templates.append(sends)
    for t in (
        m.template("traffic to it stalled", [
            (ctr, p, -np.nan_to_num(m.healthy[KI[ctr], p]) * span)
            for ctr, p in (("tx_bytes", y), ("tx_packets", y), ("rx_bytes", x), ("rx_packets", x))],
                   amax=1.0),
        m.template("ECN at the paused port", [("ecn_marked", y, span)]),
    ):
        if t is not None:
            h.templates.append(t)
    _pause_tree(m, m.device[y], int(m.plane[y]), {y}, span, h)
    return h if h.templates else None


def imbalance_hypothesis(m: Model, device: str, start, end, inc: Incident | None) -> Hypothesis | None:
    """load_imbalance at a switch: its uplinks share its outflow unevenly and steadily (an ECMP
    hash), the shares fitted on the observation."""
    ports = [p for p in m.ports_of.get(device, []) if p < m.c and m.fabric.cable_tier[p] > 0]
    if len(ports) < 2:
        return None
    span = m.profile(start, end)
    on = span > 0
    tx = np.nan_to_num(m.obs[KI["tx_bytes"], ports])
    total = tx.sum(axis=0)
    if total[on].sum() <= 0:
        return None
    share = tx[:, on].sum(axis=1) / total[on].sum()
    h = Hypothesis("load_imbalance", "device", device, start, end, inc, root_ports=ports,
                   extra_params=len(ports) - 1)
    cells = []
    for p, s in zip(ports, share, strict=True):
        for ctr, q in (("tx_bytes", p), ("rx_bytes", int(m.peer(p)))):
            delta = np.where(on, total * s - m.healthy[KI[ctr], q], 0.0)
            cells.append((ctr, q, delta))
    t = m.template("uneven uplink shares", cells, fixed=True)
    if t is None:
        return None
    h.templates.append(t)
    return h


def hypothesis(m: Model, kind: str, root_id: str, start, end, inc: Incident | None) -> Hypothesis | None:
    """The twin's hypothesis of a fault kind at an entity (None where the twin has no such
    entity: a root outside the cabling)."""
    if kind in ("link_down", "link_flap"):
        return link_hypothesis(m, kind, root_id, start, end, inc)
    if kind == "link_degraded":
        return degraded_hypothesis(m, root_id, start, end, inc)
    if kind == "congestion":
        return congestion_hypothesis(m, root_id, start, end, inc)
    if kind == "pfc_storm":
        return storm_hypothesis(m, root_id, start, end, inc)
    if kind == "load_imbalance":
        return imbalance_hypothesis(m, root_id, start, end, inc)
    return None


def _hot(m: Model, counter: str, span: np.ndarray, n: int) -> list[tuple[int, np.ndarray]]:
    """The n ports whose `counter` is furthest beyond noise during span (windows a window either
    side), with the windows where it is."""
    k = KI[counter]
    near = _near(span)
    z = m.z0.reshape(len(NAMES), m.n_p, m.n_w)[k]
    excess = loss(np.where(near[None, :] & (z > 0), z, 0.0))
    energy = excess.sum(axis=1)
    top = [int(p) for p in np.argsort(-energy)[:n] if energy[p] > 0]
    return [(p, excess[p] > 0) for p in top]


def from_residual(m: Model) -> list[tuple[str, str, datetime, datetime | None]]:
    """Candidates read from the residual alone, for faults no detector may report: a cable
    whose port negotiated less than its peers, a cable direction whose receiver keeps missing
    what its peer sent (silent loss), a port counting link downs no event or state shows (a
    flap shorter than a sample)."""
    out = []
    speed = m.obs[KI["port_speed"], :, 0]
    nominal = m.healthy[KI["port_speed"], :, 0]
    slow = np.flatnonzero(np.isfinite(speed) & (speed < 0.99 * nominal))
    for c in sorted({int(p) % m.c for p in slow}):
        out.append(("link_degraded", m.fabric.link_id(c), m.grid.bounds[0], None))
    z = m.z0.reshape(len(NAMES), m.n_p, m.n_w)
    lossy = loss(np.where(z[KI["rx_deficit_packets"]] > 0, z[KI["rx_deficit_packets"]], 0.0))
    persistent = (lossy > 0).sum(axis=1) >= 2  # one window is a sampling accident
    energy = np.where(persistent, lossy.sum(axis=1), 0.0)
    for p in [int(p) for p in np.argsort(-energy)[:ALTERNATIVES] if energy[p] > 0]:
        out.append(("link_degraded", m.fabric.link_id(p % m.c), *_bounds_of(m, lossy[p] > 0)))
    events = np.nan_to_num(m.obs[KI["link_down_events"]])
    down = np.nan_to_num(m.obs[KI["down_fraction"]])
    hidden = (events > 0) & (down == 0)
    for c in sorted({int(p) % m.c for p in np.flatnonzero(hidden.any(axis=1))})[:ALTERNATIVES]:
        on = hidden[c] | hidden[c + m.c]
        out.append(("link_flap", m.fabric.link_id(c), *_bounds_of(m, on)))
    return out


def _bounds_of(m: Model, on: np.ndarray) -> tuple[datetime, datetime]:
    w = np.flatnonzero(on)
    return m.grid.bounds[w[0]], m.grid.bounds[w[-1] + 1]


def alternatives(m: Model, inc: Incident) -> list[tuple[str, str, datetime, datetime | None]]:
    """(kind, root id, start, end) of the candidates that compete with an incident for its
    residual."""
    span = _span(m, inc)
    out = []
    if inc.kind in ("congestion", "pfc_storm"):
        for p, on in _hot(m, "ecn_marked", span, ALTERNATIVES):
            out.append(("congestion", m.grid.ports[p], *_bounds_of(m, on)))
        for p, on in _hot(m, "rx_pause", span, ALTERNATIVES):  # the port at the other end sends
            out.append(("pfc_storm", m.grid.ports[int(m.peer(p))], *_bounds_of(m, on)))
        for p, on in _hot(m, "tx_pause", span, ALTERNATIVES):
            out.append(("pfc_storm", m.grid.ports[p], *_bounds_of(m, on)))
        if inc.root_id in m.index:
            other = m.grid.ports[int(m.peer(m.index[inc.root_id]))]
            out.append(("pfc_storm" if inc.kind == "congestion" else "congestion", other,
                        inc.start, inc.end))
    elif inc.kind in ("link_down", "link_flap", "link_degraded"):
        others = {"link_down": ["link_degraded"], "link_flap": ["link_degraded"],
                  "link_degraded": ["link_flap"]}[inc.kind]
        out += [(k, inc.root_id, inc.start, inc.end) for k in others]
        c = _link_cable(m, inc.root_id)
        if c is not None:  # the same kind at the cable's siblings: its lower end's other cables
            lower = m.device[c]
            siblings = [p for p in m.ports_of.get(lower, []) if p < m.c and p != c
                        and m.fabric.cable_tier[p] == m.fabric.cable_tier[c]]
            out += [(inc.kind, m.fabric.link_id(p), inc.start, inc.end) for p in siblings[:3]]
            if m.fabric.cable_tier[c] > 0 and lower not in m.hosts:
                out.append(("load_imbalance", lower, inc.start, inc.end))
    elif inc.kind == "load_imbalance":
        for p in m.ports_of.get(inc.root_id, []):
            if p < m.c and m.fabric.cable_tier[p] > 0:
                out.append(("link_degraded", m.fabric.link_id(p), inc.start, inc.end))
    return out


# --- the search ------------------------------------------------------------------------------

@dataclass
class Outcome:
    """What the search made of one hypothesis."""

    h: Hypothesis
    alone: float  # gain on the whole residual
    marginal: float = 0.0  # gain given the other chosen faults
    chosen: bool = False
    pred: np.ndarray | None = None
    victim_of: Outcome | None = None


def explain(con: duckdb.DuckDBPyConnection, incidents: list[Incident]) -> list[Incident]:
    """Score, re-root and explain the detectors' incidents on the twin; the list to rank.

    Without a stored replay (no cabling the twin accepts, or a store diagnosed without replay)
    the incidents keep their detectors' scores and say so in their explanation.
    """
    m = _model(con)
    if m is None:
        for inc in incidents:
            inc.explanation = {"basis": "detector", "note": "no replay of this store: the "
                               "detector's score, not tested on the twin"}
        return incidents
    hyps: dict[tuple[str, str], Hypothesis] = {}
    for inc in incidents:
        h = hypothesis(m, inc.kind, inc.root_id, inc.start, inc.end, inc)
        if h is not None:
            hyps[h.key] = h
    for inc in incidents:
        rivals = alternatives(m, inc)
        for kind, root, start, end in rivals:
            if (kind, root) not in hyps:
                h = hypothesis(m, kind, root, start, end, None)
                if h is not None:
                    h.search_cost = math.log(1 + len(rivals))
                    hyps[h.key] = h
    for kind, root, start, end in from_residual(m):
        if not any(k[1] == root for k in hyps):  # a link a detector named is tested as named
            h = hypothesis(m, kind, root, start, end, None)
            if h is not None:
                h.search_cost = math.log(m.c)  # looked for on every cable
                hyps[h.key] = h
    outcomes = {}
    for key, h in hyps.items():
        gain, _, h.amps = m.fit(h, m.z0)
        outcomes[key] = Outcome(h, gain)
    chosen = _search(m, outcomes)
    resid = m.z0.copy()
    for o in chosen:
        resid -= o.pred
    for o in outcomes.values():  # victims: significant alone, explained by the chosen ones
        if o.chosen or o.alone <= m.penalty(o.h):
            o.victim_of = None
            continue
        gain, _, amps = m.fit(o.h, resid)
        if o.victim_of is None and gain <= m.penalty(o.h, amps):
            o.victim_of = max(chosen, key=lambda r, o=o: m.fit(o.h, resid + r.pred)[0], default=None)
    out: list[Incident] = []
    for o in chosen:
        inc = o.h.incident or Incident(o.h.kind, o.h.root_type, o.h.root_id, o.h.start, o.h.end,
                                       0.0, _summary(m, o))
        if o.h.incident is None:
            inc.evidence = [{"role": "explained by the twin", **c} for c in _root_cells(m, o)[:3]]
        inc.score = _root_score(m, o)
        inc.explanation = _explanation(m, o, outcomes, resid, chosen)
        out.append(inc)
    for o in outcomes.values():
        inc = o.h.incident
        if inc is None or o.chosen:
            continue
        if o.victim_of is not None:
            root = o.victim_of.h.incident
            rival = o.victim_of.h.root_id == inc.root_id
            note = {"role": f"rival explanation: the twin explains it as {o.victim_of.h.kind}"
                    if rival else "victim", "kind": inc.kind, "root_cause": {"type": inc.root_type,
                    "id": inc.root_id}, "share_alone": round(o.alone / max(m.total, 1e-12), 3),
                    "summary": inc.summary}
            if root is not None:
                root.evidence.append(note)
            else:
                next(i for i in out if i.root_id == o.victim_of.h.root_id).evidence.append(note)
            continue
        pen = m.penalty(o.h)
        inc.score = min(0.5, 0.5 * o.alone / (o.alone + pen)) if o.alone > 0 else 0.0
        inc.explanation = _explanation(m, o, outcomes, resid, chosen)
        out.append(inc)
    explained = {id(i) for i in out}
    for inc in incidents:  # kinds or roots the twin has no hypothesis for keep their detector's
        if id(inc) not in explained and (inc.kind, inc.root_id) not in hyps:
            inc.explanation = {"basis": "detector", "note": "the twin has no hypothesis for "
                               f"{inc.root_type} {inc.root_id}: not in the replayed cabling"}
            out.append(inc)
    return out


def _model(con: duckdb.DuckDBPyConnection) -> Model | None:
    from replay.fabric import fabric_from_store

    try:
        rows = con.execute("SELECT status FROM replay_runs").fetchall()
        status = rows[0] if rows else None
        if not status or status[0] != "ok":
            return None
        grid = load_grid(con, fabric_from_store(con))
    except (TopologyError, duckdb.Error):
        return None
    return Model(con, grid) if grid is not None else None


def _search(m: Model, outcomes: dict[tuple[str, str], Outcome]) -> list[Outcome]:
    """Greedy: add the fault whose gain beyond its penalty is largest, up to MAX_FAULTS."""
    resid = m.z0.copy()
    chosen: list[Outcome] = []
    for _ in range(MAX_FAULTS):
        best, best_net, best_pred, best_gain = None, 0.0, None, 0.0
        for o in outcomes.values():
            if o.chosen or o.victim_of is not None:
                continue
            gain, pred, amps = m.fit(o.h, resid)
            net = gain - m.penalty(o.h, amps)
            if net > best_net:
                best, best_net, best_pred, best_gain = o, net, pred, gain
                o.h.amps = amps
        if best is None:
            break
        best.chosen, best.pred, best.marginal = True, best_pred, best_gain
        resid = resid - best_pred
        chosen.append(best)
        for o in outcomes.values():
            if o.chosen or o.victim_of is not None:
                continue
            # what the chosen fault explains most of is its victim; another kind of fault at the
            # same entity is a rival explanation of the same residual, not a second fault
            if o.h.root_id == best.h.root_id or m.fit(o.h, resid)[0] < VICTIM * o.alone:
                o.victim_of = best
    for o in chosen:  # each one's gain given all the others
        others = resid + o.pred
        o.marginal, o.pred, o.h.amps = m.fit(o.h, others)
        resid = others - o.pred
    return chosen


def _root_score(m: Model, o: Outcome) -> float:
    pen = m.penalty(o.h)
    margin = max(0.0, (o.marginal - pen) / max(o.marginal, 1e-12))
    share = o.marginal / max(m.total, 1e-12)
    return float(min(0.99, 0.5 + 0.5 * margin * math.sqrt(min(1.0, share))) + 1e-3)


def _cells_of(m: Model, h: Hypothesis) -> np.ndarray:
    return np.unique(np.concatenate([t.idx for t in h.templates]))


def _root_cells(m: Model, o: Outcome) -> list[dict]:
    """The cells at the root's own ports the fault explains most: observed, the healthy twin,
    the twin with the fault."""
    idx = _cells_of(m, o.h)
    k, rest = np.divmod(idx, m.n_p * m.n_w)
    p, w = np.divmod(rest, m.n_w)
    pred = o.pred if o.pred is not None else m.fit(o.h, m.z0)[1]
    z = m.z0[idx]
    gain = loss(z) - loss(z - pred[idx])
    at_root = np.isin(p, o.h.root_ports)
    order = np.lexsort((-gain, ~at_root))
    out = []
    for i in order[:4]:
        if gain[i] <= 0 and out:
            break
        kk, pp, ww = int(k[i]), int(p[i]), int(w[i])
        noise = m.noise[kk, pp]
        out.append({"port": m.grid.ports[pp], "counter": NAMES[kk],
                    "window_start": _iso(m.grid.bounds[ww]),
                    "observed": _num(m.obs[kk, pp, ww]), "healthy": _num(m.healthy[kk, pp, ww]),
                    "with_fault": _num(m.healthy[kk, pp, ww] + pred[idx[i]] * noise),
                    "noise": _num(noise)})
    return out


def _num(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(f"{x:.4g}")


def _explanation(m: Model, o: Outcome, outcomes: dict, resid: np.ndarray,
                 chosen: list[Outcome]) -> dict:
    """The `explanation` object of an incident (README, Investigate)."""
    base = resid + o.pred if o.chosen else resid
    gain = o.marginal if o.chosen else m.fit(o.h, base)[0]
    share = gain / max(m.total, 1e-12)
    rivals = []
    for r in outcomes.values():
        if r is o or r.chosen or r.h.key == o.h.key:
            continue
        g, _, amps = m.fit(r.h, base)
        rivals.append((g - m.penalty(r.h, amps), g, r, amps))
    runner = None
    if rivals:
        net, g, r, r_amps = max(rivals, key=lambda x: x[0])
        runner = {"kind": r.h.kind, "root_cause": {"type": r.h.root_type, "id": r.h.root_id},
                  "share": round(g / max(m.total, 1e-12), 3), "explained": round(g, 1),
                  "why": _why(m, o, r, gain, g, r_amps)}
    amps = o.h.amps or m.fit(o.h, base)[2]
    return {
        "basis": "twin",
        "role": "root" if o.chosen else "not explained beyond noise",
        "share": round(share, 3),
        "explained": round(gain, 1), "penalty": round(m.penalty(o.h), 1),
        "residual": round(m.total, 1),
        "windows": {"start": _iso(o.h.start), "end": _iso(o.h.end)},
        "root": _root_cells(m, o) if o.chosen else [],
        "fitted": {t.name: _num(a) for t, a in zip(o.h.templates, amps, strict=False)},
        "runner_up": runner,
        "other_roots": [{"kind": c.h.kind, "root_cause": {"type": c.h.root_type, "id": c.h.root_id}}
                        for c in chosen if c is not o],
        "victims": [{"kind": v.h.kind, "root_cause": {"type": v.h.root_type, "id": v.h.root_id},
                     "share_alone": round(v.alone / max(m.total, 1e-12), 3)}
                    for v in outcomes.values() if v.victim_of is o],
    }


def _why(m: Model, o: Outcome, r: Outcome, gain: float, rival_gain: float,
         rival_amps: list[float]) -> str:
    """Why the runner-up lost: less explained, or as much for more parameters, and the cell
    it leaves unexplained that the winner explains."""
    if rival_gain - m.penalty(r.h, rival_amps) <= 0:
        head = "explains nothing beyond noise"
    elif rival_gain < gain:
        head = f"explains {rival_gain / max(m.total, 1e-12):.0%} of the residual, against {gain / max(m.total, 1e-12):.0%}"
    else:
        head = (f"explains as much ({rival_gain / max(m.total, 1e-12):.0%}) with more fitted "
                f"parameters ({r.h.params(rival_amps):.0f} against {o.h.params():.0f})")
    cells = [c for c in _root_cells(m, o) if c["observed"] is not None]
    if cells:
        c = cells[0]
        head += (f"; it leaves {c['counter']} at {c['port']} unexplained "
                 f"(observed {c['observed']:.4g}, healthy {c['healthy']:.4g})")
    return head


def _summary(m: Model, o: Outcome) -> str:
    h = o.h
    what = {"congestion": "is congested (the twin's overload explains its ECN marks and the "
                          "pauses it sends upstream)",
            "pfc_storm": "is storming pause frames (the twin's PFC tree from it explains the "
                         "pauses upstream)",
            "link_degraded": "is degraded (the twin's loss or speed explains the residual)",
            "link_down": "is down", "link_flap": "flapped",
            "load_imbalance": "balances its uplinks unevenly"}[h.kind]
    return f"{h.root_id} {what}, from {_iso(h.start)}" + (f" to {_iso(h.end)}" if h.end else "")


__all__ = ["Hypothesis", "Model", "Template", "explain", "loss"]

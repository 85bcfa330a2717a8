"""The residual model of the explanation (`replay.explain`): the replay's `expected_counters`
as arrays of cells (counter x port x window) in noise units, the loss a residual counts with,
the templates a hypothesis predicts, and the twin's routing for reroutes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

import duckdb
import numpy as np

from replay.counters import COUNTERS, Grid, nominal_fabric
from replay.stored import Incident

DEAD_ZONE = 3.0  # noise units a residual may reach before it needs explaining (3 sigma)
HUBER = 1.345  # the Huber loss' corner (95% efficiency under Gaussian noise)
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
class Prediction:
    """A hypothesis' prediction in noise units: `values` at the sorted flat cells `idx`, zero
    elsewhere (a dense array of the 256-switch hour's 20M cells, allocated and paged in for
    each of some 60 fits, cost 1.5 s)."""

    idx: np.ndarray
    values: np.ndarray

    def taken_from(self, resid: np.ndarray) -> np.ndarray:
        """`resid` minus the prediction (a new array)."""
        out = resid.copy()
        out[self.idx] -= self.values
        return out

    def added_to(self, resid: np.ndarray) -> np.ndarray:
        """`resid` plus the prediction (a new array)."""
        out = resid.copy()
        out[self.idx] += self.values
        return out


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
    def fit(self, h: Hypothesis, resid: np.ndarray) -> tuple[float, Prediction, list[float]]:
        """Fit h's amplitudes on `resid` (flat, noise units): (gain, its prediction at h's
        cells, amplitudes). The residual is updated on h's cells only (`r`, at `idx`)."""
        idx = (np.unique(np.concatenate([t.idx for t in h.templates])) if h.templates
               else np.zeros(0, np.int64))
        r = resid[idx]
        amps = []
        for t in h.templates:
            at = np.searchsorted(idx, t.idx)
            v = t.raw / self.noise_at(t.idx)
            cur = r[at]
            a = 1.0 if t.fixed else self._amplitude(cur, v, t.amax)
            if t.required and a == 0:
                return 0.0, Prediction(idx, np.zeros(idx.size, resid.dtype)), \
                    [0.0] * len(h.templates)
            r[at] = cur - a * v
            amps.append(a)
        gain = float(loss(resid[idx]).sum() - loss(r).sum())
        return gain, Prediction(idx, resid[idx] - r), amps

    @staticmethod
    def _amplitude(cur: np.ndarray, v: np.ndarray, amax: float) -> float:
        """The amplitude >= 0 that lowers the loss of `cur - a v` most, of two estimates: least
        squares (right for a pattern seen everywhere), and the median of the cells' own ratios
        (robust where the pattern is right on most cells and wrong on a few); 0 if neither
        helps (least squares ignores the dead zone)."""
        vv = float(v @ v)
        if vv <= 0 or np.abs(cur).max() <= DEAD_ZONE:  # nothing there needs explaining
            return 0.0
        on = v != 0
        ratio = np.sort(cur[on] / v[on])  # np.median costs more than the sort on a few cells
        tries = {float(np.clip((cur @ v) / vv, 0.0, amax)),
                 float(np.clip(ratio[len(ratio) // 2], 0.0, amax))}
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

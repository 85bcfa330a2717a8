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
from dataclasses import dataclass

import duckdb
import numpy as np

from replay.counters import load_grid
from replay.explain_model import NAMES, Hypothesis, Model, Prediction, loss
from replay.hypotheses import alternatives, from_residual, hypothesis
from replay.stored import Incident
from replay.stored import iso as _iso
from replay.victims import overlap
from twin.topology import TopologyError

MAX_FAULTS = 3
VICTIM = 0.5  # a candidate the chosen faults leave less than this share of its gain is a victim
# the highest score of an incident the twin explains nothing of beyond noise: clearly below the
# 0.5 that separates an incident from noise (half of it with no gain at all, all of it with a
# gain just short of its penalty), so that the detectors' order among them is kept
NOISE_CAP = 0.45


@dataclass
class Outcome:
    """What the search made of one hypothesis."""

    h: Hypothesis
    alone: float  # gain on the whole residual
    marginal: float = 0.0  # gain given the other chosen faults
    chosen: bool = False
    pred: Prediction | None = None
    victim_of: Outcome | None = None


def explain(con: duckdb.DuckDBPyConnection, incidents: list[Incident],
            decide: bool = False) -> list[Incident]:
    """Explain the detectors' incidents on the twin; with `decide`, also score and re-root them
    by the twin's search (the list to rank then holds the chosen roots and the twin's own finds).

    `decide` is off by default: measured on the project's writer and writer2 with the current
    detectors, the search's rivals displaced true roots the detectors had (the project's writer
    100% -> 75% top-1 over 12 bundles), so each incident keeps its detector's score and set, and
    its explanation says what the twin makes of it (its share of the residual, whether the
    twin's search chose it, the runner-up); one the twin finds no residual for beyond the
    bundle's noise scores at most NOISE_CAP (0.45), clearly below 0.5. Without a stored replay (no cabling the twin accepts, or a store diagnosed without replay)
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
    resid = m.z0
    for o in chosen:
        resid = o.pred.taken_from(resid)
    if not decide:
        return _advise(m, incidents, hyps, outcomes, resid, chosen)
    for o in outcomes.values():  # victims: significant alone, explained by the chosen ones
        if o.chosen or o.alone <= m.penalty(o.h):
            o.victim_of = None
            continue
        gain, _, amps = m.fit(o.h, resid)
        if o.victim_of is None and gain <= m.penalty(o.h, amps):
            o.victim_of = max(chosen, key=lambda r, o=o: m.fit(o.h, r.pred.added_to(resid))[0], default=None)
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


def _advise(m: Model, incidents: list[Incident], hyps: dict, outcomes: dict,
            resid: np.ndarray, chosen: list[Outcome]) -> list[Incident]:
    """The detectors' incidents as they are, each with the twin's explanation of it."""
    for inc in incidents:
        o = outcomes.get((inc.kind, inc.root_id))
        if o is None:
            inc.explanation = {"basis": "detector", "note": "the twin has no hypothesis for "
                               f"{inc.root_type} {inc.root_id}: not in the replayed cabling"}
            continue
        inc.explanation = _explanation(m, o, outcomes, resid, chosen)
        inc.explanation["ranked_by"] = "detector"
        pen = m.penalty(o.h)
        if o.alone <= pen:  # the twin sees nothing beyond noise there: clearly below 0.5
            cap = NOISE_CAP * (0.5 + 0.5 * max(0.0, o.alone) / max(pen, 1e-12))
            inc.score = min(inc.score, cap)
            inc.explanation["note"] = ("the twin explains nothing beyond the bundle's noise with "
                                       f"this fault: score capped at {cap:.2f}")
    order_concurrent(incidents, {k: o.alone - m.penalty(o.h) for k, o in outcomes.items()})
    return incidents


def order_concurrent(incidents: list[Incident], net: dict[tuple[str, str], float]) -> None:
    """Concurrent congestions ranked by what the twin explains with each, not by how many samples
    each detector counted: an incast's co-bottleneck upstream (an ECMP-hashed uplink its flows
    collide on, marking ECN from the same onset) runs hot for as long as the receiver's port and
    may span a sample more, while the receiver's port explains its paused feeders' marks too
    (the project's seed 12038: 20% of the residual against 0.5%, ranked second on 0.75 against
    0.775). A congestion the twin explains less of than one overlapping it scores just below
    that one; both stay incidents. `net`: (kind, root id) -> the twin's gain alone beyond its
    penalty."""
    cong = [i for i in incidents if i.kind == "congestion" and (i.kind, i.root_id) in net]
    gain = {id(i): net[(i.kind, i.root_id)] for i in cong}
    for inc in sorted(cong, key=lambda i: -gain[id(i)]):  # the louder ones settled first
        louder = [j for j in cong if j is not inc and gain[id(j)] > gain[id(inc)] > 0
                  and overlap(inc, j)]
        below = min((j.score for j in louder), default=None)
        if below is not None and below <= inc.score:
            top = max(louder, key=lambda j: gain[id(j)])
            inc.score = round(max(0.0, below - 1e-3), 6)
            inc.explanation = {**(inc.explanation or {}), "note": (
                f"ranked below {top.root_id}, congested at the same time: the twin explains "
                f"{gain[id(top)] / gain[id(inc)]:.0f}x as much of the residual with it")}


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
        resid = best_pred.taken_from(resid)
        chosen.append(best)
        for o in outcomes.values():
            if o.chosen or o.victim_of is not None:
                continue
            # what the chosen fault explains most of is its victim; another kind of fault at the
            # same entity is a rival explanation of the same residual, not a second fault
            if o.h.root_id == best.h.root_id or m.fit(o.h, resid)[0] < VICTIM * o.alone:
                o.victim_of = best
    for o in chosen:  # each one's gain given all the others
        others = o.pred.added_to(resid)
        o.marginal, o.pred, o.h.amps = m.fit(o.h, others)
        resid = o.pred.taken_from(others)
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
    pred = (o.pred if o.pred is not None else m.fit(o.h, m.z0)[1]).values  # at idx
    z = m.z0[idx]
    gain = loss(z) - loss(z - pred)
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
                    "with_fault": _num(m.healthy[kk, pp, ww] + pred[i] * noise),
                    "noise": _num(noise)})
    return out


def _num(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(f"{x:.4g}")


def _explanation(m: Model, o: Outcome, outcomes: dict, resid: np.ndarray,
                 chosen: list[Outcome]) -> dict:
    """The `explanation` object of an incident (README, Investigate)."""
    base = o.pred.added_to(resid) if o.chosen else resid
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
                 f"(observed {_plain(c['observed'])}, healthy {_plain(c['healthy'])})")
    return head


def _plain(value: float) -> str:
    """A counter value as people read it in the TUI, the report and a ticket: thousands
    separators, never scientific notation (`2,135,000`, not `2.135e+06`)."""
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}" if value == 0 or abs(value) >= 1e-3 else f"{value:.6f}".rstrip("0")


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


__all__ = ["explain"]

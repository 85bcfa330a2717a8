"""What a window's deficit ratio can show with no packet lost: the bounds silent loss
(`replay.link_faults`) takes off a link direction's deficit before it calls anything a loss.

Two devices' counters are read at different instants (clock skew, polling phase, an
exporter's cache), counts between reads are interpolated linearly, and an end may leave some
of a window uncounted (a counter clear's interval, a gap): each moves counts between the two
ends of a cable with no packet lost, by at most the rate's change or spread times the seconds
involved. Rows are `link_residuals` rows as dicts (with the cable's `timing_share`).
"""

from __future__ import annotations

import itertools


def step_bound(r: dict) -> float:
    """The relative deficit a step in traffic alone can show in this window: counters of the
    two ends may be stamped up to a sample interval apart (clock skew, an exporter serving a
    cached value), and over a window that offset times the rate's change is counted at one end
    and not yet at the other; the row's `timing_share` of that interval where the cable's
    other direction measures it; plus what seconds an end left uncounted can show
    (`uncounted_bound`)."""
    return timing_bound(r) + uncounted_bound(r)


def timing_bound(r: dict) -> float:
    """`step_bound`'s part from ends read apart: the rate's change times the read offset."""
    change = r["rate_change"] if r["rate_change"] is not None else 1.0  # unknown: no trust
    return change * read_offset(r)


def uncounted_bound(r: dict) -> float:
    """The relative deficit an end's uncounted seconds alone can show (`uncounted_share`: the
    interval a counter clear fell in, a gap): each end's rate is its count over the seconds it
    counted, so ends that counted different seconds differ by the rate's variation over the
    window (its spread at either boundary, its change between them) times that share: what
    of them is known (a window at the bundle's end has no rate past its end; a whole one of
    "no trust" there would undo the 90% an end may leave uncounted, which windows had before)."""
    share = r.get("uncounted_share") or 0.0
    if share <= 0:
        return 0.0
    known = (r["rate_change"], r.get("bend_start"), r.get("bend_end"))
    return sum(v for v in known if v is not None) * share


def read_offset(r: dict) -> float:
    """How far apart the two ends' reads can be, as a share of the window: the row's
    `timing_share` of a sample interval (`replay.link_faults._SHARES_CTE` measures it), else a
    whole one."""
    window_s = (r["window_end"] - r["window_start"]).total_seconds()
    return r.get("timing_share", 1.0) * (r["sample_s"] or window_s) / max(window_s, 1e-9)


def span_timing(rows: list[dict]) -> float:
    """What read timing can move in the deficit ratio of adjacent windows taken together (the
    rows of one direction, consecutive, of one basis): ends read an offset apart disagree over
    a span by that offset times the rate's change between the span's two ends, and adjacent
    windows share a boundary's rate, so their signed steps (`rate_step`) telescope: a rate
    that rises in one window and falls back in the next moves nothing over the two. Never more
    than the windows' own bounds summed (`step_bound`, weighted by their traffic), which is
    what windows that are not adjacent (a window left out between them) or a store whose
    residuals predate `rate_step` get."""
    basis = rows[0]["basis"]
    sent = [r[f"sent_{basis}_per_s"] or 0.0 for r in rows]
    total = sum(sent)
    if total <= 0:
        return 0.0
    summed = sum(timing_bound(r) * s for r, s in zip(rows, sent, strict=True)) / total
    # seconds an end did not count: per window, whichever windows the span holds
    uncounted = sum(uncounted_bound(r) * s for r, s in zip(rows, sent, strict=True)) / total
    adjacent = all(a["window_end"] == b["window_start"] for a, b in itertools.pairwise(rows))
    if not adjacent or any(r.get("rate_step") is None for r in rows):
        return summed + uncounted + sum(span_bends([r], [s], total) for r, s in
                                        zip(rows, sent, strict=True))
    offset = max(read_offset(r) for r in rows)
    steps = abs(sum(r["rate_step"] * s for r, s in zip(rows, sent, strict=True))) / total
    return min(summed, offset * steps) + span_bends(rows, sent, total) + uncounted


def span_bends(rows: list[dict], sent: list[float], total: float) -> float:
    """What linear interpolation can move in adjacent windows' deficit ratio taken together: a
    count read between two samples is interpolated, and a rate that steps inside the interval
    straddling a boundary puts it off by up to the step times a quarter of the interval (a
    step from a to b at time s of an interval T off by |a - b| s (T - s) / T at most), at each
    end by its own phase, both the same way: their difference is no more than that, nor more
    than the step times how far apart the ends read (that error moves by at most the step per
    second the interval is shifted: the cable's `timing_share` of an interval). Inner
    boundaries count the same interpolated read in the window before and after, so only the
    span's two outer ones stay (`bend_start` of the first, `bend_end` of the last: the spread of
    the sent rate within a sample interval of the boundary, a share of the window's rate)."""
    first, last = rows[0], rows[-1]
    spread = ((first.get("bend_start") or 0.0) * sent[0]
              + (last.get("bend_end") or 0.0) * sent[-1])
    window_s = (first["window_end"] - first["window_start"]).total_seconds()
    interval = max(r["sample_s"] or window_s for r in (first, last))
    apart = min(0.25, max(r.get("timing_share", 1.0) for r in (first, last)))
    return spread * interval * apart / (max(window_s, 1e-9) * total)

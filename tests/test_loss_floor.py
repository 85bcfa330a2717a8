"""The silent-loss floor (issue 17): a deficit that two ends' read timing explains is not loss.

A small fabric written in the real tools' formats (gnmic `json` with ns timestamps, a
Prometheus scrape with ms timestamps, `lldpctl -f json0`), every counter read as the device saw
it at its own instant: one leaf, eight steady cables to one spine whose clocks agree (their
conservation residuals are about zero, so the bundle's MAD is too) and one cable to a second
spine scraped by Prometheus, its clock 2.6 s ahead, whose job starts at 03:00:00 and ramps up
to its rate over 30 s before it holds (the spine's first read comes before the start, the
leaf's after it). Ingested and diagnosed by the real parsers and the silent-loss detector.
"""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import numpy as np
import pytest

from collectors.formats.gnmi import cumulus_notification, write_json
from collectors.formats.lldp import LldpNeighbor, write_lldp_json0
from collectors.formats.prom import write_exposition
from replay.investigate import ingest_alone, views_once
from replay.link_faults import _span_timing, find_silent_loss, loss_score

NS = 1_000_000_000
T0 = 1_796_007_600  # 2026-11-30T03:00:00Z
SPAN, STEP = 600, 10
PKT = 4096  # bytes per packet
STEADY = 8e6  # packets/s each way on the leaf's cables to spine-p0-01
RAMP = 8e6  # packets/s the ramping cable reaches
SKEW = {"leaf-p0-01": 0.0, "spine-p0-01": 0.4, "spine-p0-02": 2.6}  # each clock's offset, s
# each device's first read, true seconds after 03:00:00 (then every STEP, with jitter)
FIRST = {"leaf-p0-01": 0.3, "spine-p0-01": 4.1, "spine-p0-02": -2.8}
RAMPED = ("leaf-p0-01", "swp9", "spine-p0-02", "swp1")
LINK = "leaf-p0-01:swp9--spine-p0-02:swp1"


def _cables() -> list[tuple[str, str, str, str]]:
    return [("leaf-p0-01", f"swp{i}", "spine-p0-01", f"swp{i}") for i in range(1, 9)] + [RAMPED]


def _sent(t: np.ndarray, cable: tuple, wobble: float = 0.0) -> np.ndarray:
    """Packets sent on `cable` (each way) from 0 to true time t: steady, or (the ramped one)
    nothing before 0, then up to its rate linearly over 30 s, then held; with `wobble`, the
    ramped one instead steps every 150 s (in phase with no window) to a rate between
    (1 - wobble) and 1 of RAMP, as a training job's phases do."""
    if cable != RAMPED:
        return STEADY * t
    if wobble:
        edges = np.arange(-600.0, 3600.0, 150.0)
        levels = RAMP * (1 - wobble * np.random.default_rng(3).random(len(edges)))
        return np.interp(t, edges, np.r_[0.0, np.cumsum(levels[:-1] * 150.0)])
    t = np.maximum(t, 0.0)
    ramp = np.minimum(t, 30.0)
    return RAMP * (ramp ** 2 / 60.0 + np.maximum(t - 30.0, 0.0))


def _write(bundle: Path, loss: float, lossy: tuple[float, float] = (180.0, 480.0),
           scraped: float = SPAN, seed: int = 7, stamp_jitter: float = 0.0,
           span: int = SPAN, step: int = STEP, wobble: float = 0.0,
           partial: int | None = None, missed: tuple[str, ...] = ()) -> None:
    """The bundle; `loss`: the share of what the leaf sends on the ramped cable that
    spine-p0-02 never counts, over the true seconds `lossy` (no error counter moves);
    `scraped`: the last true second at which spine-p0-02 was scraped; `stamp_jitter`: each
    read is stamped up to that many seconds off the instant its counters were read (an
    exporter that stamps the poll, not the read); `span`: seconds of the bundle; `step`: every
    device's sample interval; `wobble`: the ramped cable's rate steps (`_sent`); `partial`: a
    read of spine-p0-01 that lacks the counters `missed` (gnmic streams each path on its own:
    those updates of that instant never arrived)."""
    rng = np.random.default_rng(seed)
    n = span // step
    reads = {d: FIRST[d] + np.arange(n) * step + np.r_[0.0, rng.uniform(-0.2, 0.2, n - 1)]
             for d in SKEW}
    off = {d: rng.uniform(-stamp_jitter, stamp_jitter, n) for d in SKEW}
    ports: dict[str, dict[str, dict[str, np.ndarray]]] = {d: {} for d in SKEW}
    for cable in _cables():
        da, ia, db, ib = cable
        for dev, ifn in ((da, ia), (db, ib)):
            t = reads[dev]
            sent = _sent(t, cable, wobble)
            got = _sent(t, cable, wobble)
            if loss and cable == RAMPED and dev == db:  # what the leaf sent that the spine counts
                lost = (_sent(np.clip(t, *lossy), cable, wobble)
                        - _sent(np.full_like(t, lossy[0]), cable, wobble))
                got = got - loss * lost
            base = float(rng.integers(10**9, 10**12))
            c = ports[dev].setdefault(ifn, {})
            c["tx_packets"] = np.floor(base + sent)
            c["rx_packets"] = np.floor(base + got)
            c["tx_bytes"], c["rx_bytes"] = c["tx_packets"] * PKT, c["rx_packets"] * PKT
    for dev in ("leaf-p0-01", "spine-p0-01"):
        notes = []
        for k, t in enumerate(reads[dev]):
            ts = int(round((T0 + t + SKEW[dev] + off[dev][k]) * NS))
            for ifn, c in sorted(ports[dev].items()):
                leaves = {"in-discards": 0, "out-discards": 0,
                          "in-octets": int(c["rx_bytes"][k]), "out-octets": int(c["tx_bytes"][k]),
                          "in-pkts": int(c["rx_packets"][k]), "out-pkts": int(c["tx_packets"][k])}
                if dev == "spine-p0-01" and k == partial:
                    leaves = {n: v for n, v in leaves.items() if n not in missed}
                notes.append(cumulus_notification(ts, dev, "counters", leaves, ifname=ifn))
        fh = io.StringIO()
        write_json(notes, fh)
        (bundle / "gnmi").mkdir(parents=True, exist_ok=True)
        (bundle / "gnmi" / f"{dev}.json").write_text(fh.getvalue())
    rows = []
    for k, t in enumerate(reads["spine-p0-02"][reads["spine-p0-02"] <= scraped]):
        ts = int(round((T0 + t + SKEW["spine-p0-02"] + off["spine-p0-02"][k]) * NS))  # ms kept
        c = ports["spine-p0-02"]["swp1"]
        for metric, counter in (("if_in_octets", "rx_bytes"), ("if_out_octets", "tx_bytes"),
                                ("if_in_ucast_pkts", "rx_packets"), ("if_out_ucast_pkts", "tx_packets")):
            rows.append({"ts": ts, "device": "spine-p0-02", "ifname": "swp1", "qualifier": "",
                         "metric": f"nvswitch_interface_{metric}", "value": float(c[counter][k])})
    fh = io.StringIO()
    write_exposition(rows, fh)
    (bundle / "prom").mkdir(parents=True)
    (bundle / "prom" / "spine-p0-02.prom").write_text(fh.getvalue())
    nbrs: dict[str, list[LldpNeighbor]] = {}
    for da, ia, db, ib in _cables():
        nbrs.setdefault(da, []).append(LldpNeighbor(ia, db, ib))
        nbrs.setdefault(db, []).append(LldpNeighbor(ib, da, ia))
    for dev, ns in nbrs.items():
        fh = io.StringIO()
        write_lldp_json0(ns, fh)
        (bundle / "topology" / dev).mkdir(parents=True)
        (bundle / "topology" / dev / "lldpctl.json").write_text(fh.getvalue())
    (bundle / "manifest.json").write_text(json.dumps({"name": "loss-floor", "timezone": "UTC"}))


def _diagnosed(tmp_path: Path, loss: float, lossy: tuple[float, float] = (180.0, 480.0),
               scraped: float = SPAN, stamp_jitter: float = 0.0, span: int = SPAN,
               step: int = STEP, wobble: float = 0.0, partial: int | None = None,
               missed: tuple[str, ...] = ()) -> tuple[list, duckdb.DuckDBPyConnection]:
    bundle, db = tmp_path / "b", tmp_path / "s.duckdb"
    _write(bundle, loss, lossy, scraped, stamp_jitter=stamp_jitter, span=span, step=step,
           wobble=wobble, partial=partial, missed=missed)
    ingest_alone(bundle, db)
    con = duckdb.connect(str(db))
    with views_once(con):
        found = find_silent_loss(con)
    return found, con


def test_skewed_reads_of_a_ramping_rate_are_no_loss(tmp_path):
    found, con = _diagnosed(tmp_path, 0.0)
    # the phenomenon is there: while the rate ramps, the spine (its clock 2.6 s ahead) counts
    # less than the leaf sent over the same stamped seconds, more than a 0.5% loss would
    ramp = con.execute("""SELECT max(deficit_ratio) FROM link_residuals WHERE link_id = ?
                          AND tx_port = 'leaf-p0-01:swp9' AND status = 'ok'""", [LINK]).fetchone()[0]
    assert ramp > 0.005
    # the bundle's MAD is about zero (the steady cables agree exactly): the floor is not
    steady = con.execute("""SELECT median(abs(deficit_ratio)) FROM link_residuals
                            WHERE status = 'ok' AND link_id <> ?""", [LINK]).fetchone()[0]
    assert steady < 1e-6
    assert found == []


def test_a_steady_half_percent_loss_with_the_same_skew_is_found(tmp_path):
    found, _ = _diagnosed(tmp_path, 0.005)
    assert [(i.kind, i.root_id) for i in found] == [("link_degraded", LINK)]
    head = found[0].evidence[0]
    assert head["direction"] == "leaf-p0-01:swp9 -> spine-p0-02:swp1"
    # 0.5% in the windows the loss covers whole, less in the last (the spine's clock is ahead:
    # its 03:08 holds the loss's last 2.6 s)
    assert 0.3 < head["mean_deficit_pct"] < 0.6 and 0.45 < head["worst_deficit_pct"] < 0.55
    assert found[0].score > 0.5
    # the loss runs 180 s .. 480 s after 03:00: windows 03:03 .. 03:08
    assert found[0].start.minute == 3 and found[0].end.minute <= 9


@pytest.mark.parametrize("missed", [("in-octets", "out-octets", "in-pkts", "out-pkts"),
                                    ("in-octets", "in-pkts")], ids=["all", "rx"])
def test_a_read_that_missed_counters_covers_none_of_their_seconds(tmp_path, missed):
    # writer3 seed 600: w3_033, a read whose octets and packets never arrived (its queue and
    # pause paths did), and w3_039, one whose rx counters never arrived, were counted as
    # seconds of them, so the spine's next read, its rate of them spanning both intervals,
    # spread its counts over 70 s of a 60 s window: a 14% "loss" at z 55-60
    found, con = _diagnosed(tmp_path, 0.0, partial=25, missed=missed)
    rows = con.execute("""SELECT count(*) FROM port_rates WHERE device = 'spine-p0-01'
                          AND rx_packets_per_s IS NULL AND discards_per_s IS NOT NULL""").fetchone()
    assert rows[0] == 8  # the partial read is there, one row per port, rates unknown
    worst = con.execute("""SELECT max(abs(deficit_ratio)) FROM link_residuals
                           WHERE status = 'ok' AND link_id LIKE '%spine-p0-01%'""").fetchone()[0]
    assert worst < 1e-3 and found == []


def test_a_loss_in_the_last_whole_window_is_found(tmp_path):
    # from 480 s to the end, and the spine's scrape stops at 570 s: its 03:09 window is partial,
    # 03:08 beside it lies more than a sample interval inside every end's reads: trusted
    found, con = _diagnosed(tmp_path, 0.005, (480.0, 600.0), scraped=570.0)
    rows = dict(con.execute("""SELECT strftime(window_start, '%H:%M'), status FROM link_residuals
                               WHERE tx_port = 'leaf-p0-01:swp9'""").fetchall())
    assert rows["03:08"] == "ok" and rows["03:09"] == "partial"
    assert [(i.kind, i.root_id) for i in found] == [("link_degraded", LINK)]
    assert found[0].start.minute == 8 and found[0].score > 0.5


def _window_sigma(con: duckdb.DuckDBPyConnection) -> float:
    """The robust spread of the healthy cables' per-window deficit ratios."""
    return con.execute("""SELECT 1.4826 * median(abs(deficit_ratio)) FROM link_residuals
                          WHERE status = 'ok' AND link_id <> ?""", [LINK]).fetchone()[0]


def test_a_two_percent_loss_lasting_the_bundle_is_found_though_no_run_stands_out(tmp_path):
    """Reads stamped up to 0.5 s off make every window's deficit noisy (a sigma of about 0.5%
    on the healthy cables, measured here): a 2% loss is a few of a window's sigmas, and the
    windows above Z_RUN are too few and too scattered for a run. Over twenty minutes, window
    after window, it is far beyond what the same bundle's other cable directions show."""
    found, con = _diagnosed(tmp_path, 0.02, (0.0, 1200.0), scraped=1200.0, stamp_jitter=0.5,
                            span=1200)
    assert _window_sigma(con) > 0.004
    assert [(i.kind, i.root_id) for i in found] == [("link_degraded", LINK)]
    head = found[0].evidence[0]
    assert head["direction"] == "leaf-p0-01:swp9 -> spine-p0-02:swp1"
    assert head["windows"] >= 15 and 1.8 < head["mean_deficit_pct"] < 2.2
    assert found[0].score > 0.5


def test_a_loss_of_106_s_none_of_whose_windows_stands_out_alone_is_found(tmp_path):
    """0.8% for 106 s, from 27 s into a window (writer2 seed 8000 w026: 1% for 106 s, z 2.99
    and 5.4 in its two windows, Stouffer 6.0, short of Z_REAL): reads stamped up to 0.1 s off
    give each window a sigma of about 0.11%. Counters are cumulative, so the inner boundary of
    adjacent windows cancels in their sum: its noise, measured on the bundle's other
    directions, is about one window's, while the deficit adds up."""
    found, con = _diagnosed(tmp_path, 0.008, (207.0, 313.0), scraped=1200.0, stamp_jitter=0.1,
                            span=1200)
    assert 0.0008 < _window_sigma(con) < 0.0015
    assert [(i.kind, i.root_id) for i in found] == [("link_degraded", LINK)]
    head = found[0].evidence[0]
    assert head["direction"] == "leaf-p0-01:swp9 -> spine-p0-02:swp1" and head["evidence_z"] > 8
    # the loss runs 207 s .. 313 s: windows 03:03 .. 03:05 (the last holds 13 s of it)
    assert (found[0].start.minute, found[0].end.minute) == (3, 6)


def test_the_same_small_stamp_noise_without_loss_is_no_incident(tmp_path):
    found, _ = _diagnosed(tmp_path, 0.0, scraped=1200.0, stamp_jitter=0.1, span=1200)
    assert found == []


def test_the_same_stamp_noise_without_loss_is_no_incident(tmp_path):
    found, con = _diagnosed(tmp_path, 0.0, (0.0, 1200.0), scraped=1200.0, stamp_jitter=0.5,
                            span=1200)
    assert _window_sigma(con) > 0.004 and found == []


def _step_bound_share(con: duckdb.DuckDBPyConnection, tx_port: str) -> float:
    """The ramped cable's median window, in the direction from `tx_port`: its deficit beyond
    the bundle's median, as a share of what a whole sample interval's read offset times the
    rate's change between the window's boundaries could show."""
    return con.execute("""
        SELECT median(abs(deficit_ratio) / (rate_change * sample_s
                                           / epoch(window_end - window_start)))
        FROM link_residuals WHERE link_id = ? AND tx_port = ? AND status = 'ok'""",
                       [LINK, tx_port]).fetchone()[0]


# 30 s reads (180 s windows, six of them whole in the loss), the ramped cable's rate stepping
# by up to 30% between windows, spine-p0-02's clock 2.6 s ahead of the leaf's
WOBBLY = {"lossy": (240.0, 1200.0), "scraped": 1200.0, "span": 1200, "step": 30, "wobble": 0.3}


def test_a_loss_below_what_a_whole_interval_offset_could_hide_is_found(tmp_path):
    """A 1.5% loss while the rate steps from window to window: were the two ends read a whole
    sample interval apart, a window's steps could show more than that (writer3's w3_012 of seed
    300, missed so). The cable's reverse direction, read by the same two clocks, shows the
    offset is a tenth of that; measured so, the loss stands out."""
    found, con = _diagnosed(tmp_path, 0.015, stamp_jitter=0.2, **WOBBLY)
    big = con.execute("""SELECT count(*) FROM link_residuals WHERE link_id = ? AND status = 'ok'
                         AND rate_change * sample_s / epoch(window_end - window_start) > 0.015
                         AND tx_port = 'leaf-p0-01:swp9'""", [LINK]).fetchone()[0]
    assert big >= 2  # windows whose whole-interval bound alone exceeds the loss
    assert _step_bound_share(con, "spine-p0-02:swp1") < 0.3  # the reverse: the offset is small
    assert [(i.kind, i.root_id) for i in found] == [("link_degraded", LINK)]
    head = found[0].evidence[0]
    assert head["direction"] == "leaf-p0-01:swp9 -> spine-p0-02:swp1"
    assert 1.2 < head["mean_deficit_pct"] < 1.8


def test_the_same_steps_and_skew_without_loss_are_no_incident(tmp_path):
    found, con = _diagnosed(tmp_path, 0.0, stamp_jitter=0.2, **WOBBLY)
    assert _step_bound_share(con, "leaf-p0-01:swp9") > 0.03  # the steps do show, both ways
    assert found == []


@pytest.mark.parametrize(("ratio", "low", "high"), [(1.0, 0.3, 0.49), (1.2, 0.3, 0.5),
                                                     (2.5, 0.6, 0.7), (30.0, 0.9, 0.9)])
def test_the_score_follows_how_far_beyond_the_floor(ratio, low, high):
    assert low <= loss_score(ratio * 1e-4, 1e-4) <= high


def _window(minute: int, step: float | None, sent: float = 1e6) -> dict:
    """A residual row of a 60 s window read every 15 s, the two ends up to a whole interval
    apart (timing_share 1), its rate stepping by `step` of itself between its boundaries."""
    start = datetime(2026, 10, 24, 15, minute)
    return {"window_start": start, "window_end": start + timedelta(seconds=60),
            "basis": "packets", "sent_packets_per_s": sent, "sample_s": 15.0,
            "rate_change": None if step is None else abs(step), "rate_step": step,
            "timing_share": 1.0}


def test_read_timing_over_adjacent_windows_is_the_rate_change_between_their_ends():
    """Counters are cumulative: ends read an offset apart disagree over adjacent windows by the
    offset times the rate's change between the first window's start and the last one's end,
    the inner boundaries cancel. A rate up 2.1% in one window and down 2.5% in the next moves
    almost nothing over the two (writer2 seed 13026's silent loss: 1.8% in its window, the
    neighbours' summed bounds, 0.5% each, took it under Z_REAL)."""
    up_down = [_window(1, 0.021), _window(2, -0.025), _window(3, 0.006)]
    assert _span_timing(up_down) == pytest.approx(15 / 60 * 0.002 / 3)
    ramp = [_window(1, 0.02), _window(2, 0.02)]  # a ramp's steps add up: each window's bound
    assert _span_timing(ramp) == pytest.approx(15 / 60 * 0.02)
    # a window left out between them, or residuals without rate_step: each window's bound
    gap = [_window(1, 0.021), _window(3, -0.025)]
    assert _span_timing(gap) == pytest.approx(15 / 60 * 0.046 / 2)
    old = [{**r, "rate_step": None} for r in up_down]
    assert _span_timing(old) == pytest.approx(15 / 60 * 0.052 / 3)


def test_interpolation_over_adjacent_windows_is_bounded_at_the_outer_boundaries_only():
    """A rate that steps inside the read interval straddling a boundary puts a count
    interpolated there off by up to the step times a quarter of the interval; inner boundaries
    count the same read on both sides, so a span keeps only its first start's and last end's."""
    rows = [{**_window(1, 0.0), "bend_start": 1.8, "bend_end": 0.7},
            {**_window(2, 0.0), "bend_start": 0.7, "bend_end": 0.04}]
    assert _span_timing(rows) == pytest.approx((1.8 + 0.04) * 1e6 * 15 / (4 * 60 * 2e6))
    # ends read close together (a tenth of an interval apart): their errors differ by less
    near = [{**r, "timing_share": 0.1} for r in rows]
    assert _span_timing(near) == pytest.approx((1.8 + 0.04) * 1e6 * 15 * 0.1 / (60 * 2e6))
    assert _span_timing(rows[:1]) == pytest.approx((1.8 + 0.7) * 15 / (4 * 60))


def test_a_rate_dip_at_a_window_boundary_is_no_silent_loss(tmp_path):
    """writer2 seed 507 (two:congestion,pfc_storm): the leaf port towards gpu012 drops from 6.1
    to 1.9 Mpps a second after 03:01:00 and recovers 2 s before 03:02:00; linear interpolation
    inside the reads straddling those boundaries left 9.6% of the window's packets unmatched
    (sent rate's change between the boundaries 0.12: a 0.3% allowance), the next window gave
    most of it back and the one before was partial: link_degraded 0.848 ranked between the
    two faults. The spread of the rate at the span's outer boundary bounds it."""
    from benchmarks.writer2 import write_bundle
    from replay.investigate import investigate

    labels = write_bundle(tmp_path / "b", 507, "two:congestion,pfc_storm")
    incs = investigate(tmp_path / "b", tmp_path / "s.duckdb")["incidents"]
    truth = {(f["kind"], f["root_cause"]["id"]) for f in labels["faults"]}
    assert {(i["kind"], i["root_cause"]["id"]) for i in incs[:2]} == truth
    assert not [i for i in incs if i["kind"] == "link_degraded" and i["score"] > 0.5]


def test_a_loss_in_one_window_between_rate_steps_that_cancel_is_found(tmp_path):
    """writer2 seed 13026: a 1.9% silent loss for 56 s on a host's cable (NIC to leaf), 1.8% in
    its one window (z 9), the windows either side stepping up and back down 2%: the span test
    allowed each neighbour its own read-timing bound and the loss fell to z 6.4 (no incident);
    over the span the steps cancel."""
    from benchmarks.writer2 import write_bundle
    from replay.investigate import investigate

    labels = write_bundle(tmp_path / "b", 13026, "silent_loss")
    (fault,) = labels["faults"]
    incs = investigate(tmp_path / "b", tmp_path / "s.duckdb")["incidents"]
    assert incs and (incs[0]["kind"], incs[0]["root_cause"]["id"]) == (
        "link_degraded", fault["root_cause"]["id"])


def test_a_loss_in_a_window_with_a_counter_clear_is_found(tmp_path):
    """writer2 seed 21026: a silent loss of 1.6% over 21:02:02-21:03:28 on a spine-super cable,
    the super's counters cleared at 21:01:55: the read interval over the clear straddles
    21:02:00, and both windows it touched were `reset` (not computable) though each end still
    counted over 90% of them; the loss was left with 28 s in one window (z 3.4): no incident."""
    from benchmarks.writer2 import write_bundle
    from replay.investigate import investigate

    labels = write_bundle(tmp_path / "b", 21026, "silent_loss")
    (fault,) = labels["faults"]
    incs = investigate(tmp_path / "b", tmp_path / "s.duckdb")["incidents"]
    assert incs and (incs[0]["kind"], incs[0]["root_cause"]["id"]) == (
        "link_degraded", fault["root_cause"]["id"])
    con = duckdb.connect(str(tmp_path / "s.duckdb"), read_only=True)
    share = con.execute("SELECT max(uncounted_share) FROM link_residuals WHERE status = 'ok' "
                        "AND link_id = ?", [fault["root_cause"]["id"]]).fetchone()[0]
    con.close()
    assert 0 < share < 0.1  # the clear's window, counted over the rest


def test_a_cable_losing_in_both_directions_window_after_window_is_one_incident(tmp_path):
    """The project's seed 16008 (accuracy.py's b008): both directions of a leaf-spine cable
    short of what was sent over all their windows; the second direction's lasting loss looked
    up a run that only the first had found, and investigate crashed (KeyError)."""
    from benchmarks.accuracy import draw
    from replay.investigate import investigate
    from twin.synth import generate

    toml, _kinds = draw(np.random.default_rng(16008), 8)
    (tmp_path / "s.toml").write_text(toml)
    generate(tmp_path / "s.toml", tmp_path / "b", seed=16008)
    (fault,) = json.loads((tmp_path / "b" / "labels.json").read_text())["faults"]
    incs = investigate(tmp_path / "b", tmp_path / "s.duckdb")["incidents"]
    assert (incs[0]["kind"], incs[0]["root_cause"]["id"]) == ("link_degraded", fault["root_cause"]["id"])

"""`counter_rates` and `port_rates` pair samples from the predecessors stored at ingest
(`collectors.store.frames.with_predecessors`, views.sql `sample_deltas`): they must equal the plain definition, a
window over every sample of a series, whatever the files' order, overlap and batching."""

from __future__ import annotations

import functools
import math
import random
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import collectors.store.frames as frames_mod
import collectors.store.writer as store_mod
from collectors.core.source import Sink
from collectors.store.frames import with_predecessors
from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store, open_readonly

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z

# the definitions before predecessors were stored: the oracle
WINDOW_COUNTER_RATES = """
WITH s AS (
    SELECT s.device, s.ifname, s.counter, s.qualifier, s.metric, s.ts, s.value, s.file_id, s.line,
        hash(s.device, s.ifname, s.metric, s.qualifier) AS series
    FROM samples s JOIN counters k ON s.counter = k.counter
    WHERE k.kind = 'counter' AND s.value IS NOT NULL AND isfinite(s.value)
), d AS (
    SELECT *, lag(value) OVER w AS prev, lag(ts) OVER w AS prev_ts,
        lag(value) OVER w - lag(value, 2) OVER w AS prev_step,
        max(value) OVER (PARTITION BY series) AS series_max
    FROM s WINDOW w AS (PARTITION BY series ORDER BY ts, file_id, line)
), r AS (
    SELECT *, counter_delta(value, prev, series_max, prev_step) AS raw_delta
    FROM d WHERE prev IS NOT NULL AND ts > prev_ts
)
SELECT device, ifname, counter, qualifier, metric, prev_ts AS ts_start, ts,
    epoch_us(ts - prev_ts) / 1e6 AS interval_s, raw_delta AS delta,
    raw_delta / (epoch_us(ts - prev_ts) / 1e6) AS rate,
    value < prev AND raw_delta IS NOT NULL AS wrapped, raw_delta IS NULL AS reset
FROM r"""

WINDOW_PORT_RATES = """
WITH pm AS (SELECT * FROM preferred_metrics WHERE counter IN ('rx_bytes', 'tx_bytes',
    'rx_packets', 'tx_packets', 'ecn_marked', 'rx_pause', 'tx_pause', 'rx_discards',
    'tx_discards', 'no_buffer_drops', 'wred_drops', 'rx_errors', 'tx_errors', 'rx_fcs_errors',
    'symbol_errors'))
SELECT r.device, r.ifname, r.ts, max(r.interval_s),
    sum(r.rate) FILTER (WHERE r.counter = 'rx_bytes'),
    sum(r.rate) FILTER (WHERE r.counter = 'tx_bytes'),
    sum(r.rate) FILTER (WHERE r.counter = 'tx_pause'),
    sum(r.rate) FILTER (WHERE r.counter IN ('rx_discards', 'tx_discards', 'no_buffer_drops',
        'wred_drops')),
    bool_or(r.reset)
FROM ({WINDOW_COUNTER_RATES}) r SEMI JOIN pm USING (device, ifname, counter, qualifier, metric)
GROUP BY ALL"""

PORT_RATES = """SELECT device, ifname, ts, interval_s, rx_bytes_per_s, tx_bytes_per_s,
    tx_pause_per_s, discards_per_s, reset FROM port_rates"""


def _rows(con, sql: str) -> list[tuple]:
    def norm(v):  # NULL and NaN sort and compare as themselves; floats to 12 digits
        if isinstance(v, float):
            return "nan" if math.isnan(v) else float(f"{v:.12g}")
        return v
    return sorted((tuple(norm(v) for v in row) for row in con.execute(sql).fetchall()), key=repr)


def assert_rates_match_the_window(con) -> None:
    cols = "device, ifname, counter, qualifier, metric, ts_start, ts, interval_s, delta, rate, " \
           "wrapped, reset"
    got = _rows(con, f"SELECT {cols} FROM counter_rates")
    want = _rows(con, f"SELECT {cols} FROM ({WINDOW_COUNTER_RATES})")
    assert got == want
    assert _rows(con, PORT_RATES) == _rows(
        con, WINDOW_PORT_RATES.format(WINDOW_COUNTER_RATES=WINDOW_COUNTER_RATES))


def _csv(rows: list[tuple]) -> str:
    """Normalized CSV rows: (seconds, device, ifname, counter, qualifier, value)."""
    out = ["ts,device,ifname,counter,qualifier,value"]
    out += [f"{T0 + t},{d},{i},{c},{q},{v}" for t, d, i, c, q, v in rows]
    return "\n".join(out) + "\n"


def _ingest(tmp_path: Path, files: list[list[tuple]], legacy: list[tuple] = ()) -> Store:
    bundle = tmp_path / "b"
    bundle.mkdir(exist_ok=True)
    for k, rows in enumerate(files):
        (bundle / f"f{k:03d}.csv").write_text(_csv(rows))
    store = Store.open(tmp_path / "s.duckdb")
    ingest_bundle(store, bundle)
    for k, (t, d, i, c, q, v) in enumerate(legacy):  # rows another tool wrote, without runs
        store.con.execute(  # (a line each, or two at one time would be in no defined order)
            "INSERT INTO samples (ts, device, ifname, counter, metric, qualifier, value, line) "
            "VALUES (make_timestamp(?::BIGINT * 1000000), ?, ?, ?, ?, ?, ?, ?)",
            [T0 + t, d, i, c, c, q, v, k])
    return store


def test_files_in_sequence_are_paired_across_their_boundaries(tmp_path):
    series = [(t, "leaf-1", "swp1", "rx_bytes", "", 1000.0 * t) for t in range(0, 100, 10)]
    store = _ingest(tmp_path, [series[:4], series[4:7], series[7:]])
    assert store.con.execute("SELECT count(*) FROM samples WHERE prev_gap_us IS NULL").fetchone() == (
        3,)
    assert store.con.execute("SELECT count(*), min(delta), max(delta) FROM counter_rates"
                             ).fetchone() == (9, 10000.0, 10000.0)
    assert_rates_match_the_window(store.con)
    store.close()


def test_interleaved_files_fall_back_to_the_window(tmp_path):
    a = [(t, "leaf-1", "swp1", "rx_bytes", "", 100.0 * t) for t in range(0, 200, 20)]
    b = [(t, "leaf-1", "swp1", "rx_bytes", "", 100.0 * t) for t in range(10, 200, 20)]
    store = _ingest(tmp_path, [a, b])
    assert store.con.execute("SELECT count(*), max(interval_s) FROM counter_rates").fetchone() == (
        19, 10.0)
    assert_rates_match_the_window(store.con)
    store.close()


def test_a_32bit_wrap_needs_the_maximum_of_the_whole_series(tmp_path):
    # the drop from 3e9 would be a 32-bit wrap, but the series later exceeds 2^32 (its last
    # sample, in another file): a reset, as the window over the whole series says
    values = [(0, 10.0), (10, 3e9), (20, 100.0), (30, 200.0), (40, 5e9)]
    rows = [(t, "leaf-1", "swp1", "rx_bytes", "", v) for t, v in values]
    store = _ingest(tmp_path, [rows[:3], rows[3:]])
    assert store.con.execute("SELECT epoch(ts)::BIGINT - ?, wrapped FROM counter_rates "
                             "WHERE reset OR wrapped", [T0]).fetchall() == [(20, False)]
    assert_rates_match_the_window(store.con)
    store.close()


@functools.cache
def _values() -> st.SearchStrategy:
    near32, near64 = 2.0 ** 32, 2.0 ** 64
    return st.one_of(
        st.floats(0, 1e6), st.floats(near32 - 1e6, near32 - 1), st.floats(2.0 ** 31, near32 - 1),
        st.floats(near64 - 1e18, near64 - 1), st.just(float("nan")), st.just(float("inf")))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_files_batches_and_order_give_the_window_rates(tmp_path_factory, monkeypatch, data):
    tmp_path = tmp_path_factory.mktemp("pairs")
    rows = []
    for d, i, c, q in data.draw(st.lists(st.sampled_from([
            ("leaf-1", "swp1", "rx_bytes", ""), ("leaf-1", "swp1", "tx_bytes", ""),
            ("leaf-1", "swp1", "tx_discards", "queue=1"), ("leaf-1", "swp1", "tx_discards", "queue=2"),
            ("leaf-2", "swp1", "tx_pause", "priority=3")]), min_size=1, max_size=4, unique=True)):
        times = data.draw(st.lists(st.integers(0, 60), min_size=1, max_size=25))  # ties included
        values = data.draw(st.lists(_values(), min_size=len(times), max_size=len(times)))
        rows += [(t * 10, d, i, c, q, v) for t, v in zip(times, values, strict=True)]
    rnd = random.Random(data.draw(st.integers(0, 2 ** 32)))
    if data.draw(st.booleans()):
        rows.sort(key=lambda r: r[0])  # mostly files in time order, as collectors write them
    files = [[] for _ in range(data.draw(st.integers(1, 4)))]
    for row in rows:
        files[rnd.randrange(len(files))].append(row)
    legacy = [files[0].pop() for _ in range(min(len(files[0]), data.draw(st.integers(0, 2))))]
    batch = data.draw(st.sampled_from([2, 5, 200_000]))  # several load batches per file
    ids = data.draw(st.sampled_from([None, "exact", "split"]))  # series ids from the parser
    if ids:  # "split": a series under two ids, as two keys naming one series would give
        monkeypatch.setattr(frames_mod, "with_predecessors",
                            functools.partial(_with_ids, split=ids == "split", seed=rnd.random()))

    class BatchedSink(Sink):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, batch_rows=batch, **kwargs)

    monkeypatch.setattr(store_mod, "Sink", BatchedSink)
    store = _ingest(tmp_path, [f for f in files if f], legacy)
    try:
        assert_rates_match_the_window(store.con)
    finally:
        store.close()


def _with_ids(frame: pl.DataFrame, split: bool, seed: float) -> pl.DataFrame:
    """`with_predecessors` of a frame given series ids, as a numbering parser would add them."""
    sid = pl.struct(*SERIES).rank("dense").cast(pl.Int64) * 2
    if split:
        sid += (pl.int_range(pl.len()) + int(seed * 1000)).hash() % 2
    return with_predecessors(frame.with_columns(sid.alias("sid")))


SERIES = ("device", "ifname", "metric", "qualifier")


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 5), st.sampled_from("ab"), st.sampled_from("xy"),
                               st.one_of(_values(), st.none()), st.integers(0, 3)),
                     min_size=0, max_size=40))
def test_series_ids_give_the_runs_of_the_names(rows):
    rows = [(*r[:4], r[4] * 100 + k) for k, r in enumerate(rows)]  # (ts, line) ties: any order
    frame = pl.DataFrame(
        {"ts": [t * 10_000 - 5 for t, *_ in rows], "device": [d for _, d, *_ in rows],
         "ifname": ["x"] * len(rows), "metric": [m for _, _, m, *_ in rows],
         "qualifier": [""] * len(rows), "value": [v for *_, v, _ in rows],
         "line": [ln for *_, ln in rows]},
        schema={"ts": pl.Int64, "device": pl.String, "ifname": pl.String, "metric": pl.String,
                "qualifier": pl.String, "value": pl.Float64, "line": pl.Int64})
    want = with_predecessors(frame)
    got = _with_ids(frame, split=False, seed=0)
    assert got.columns == want.columns
    assert got.equals(want)


def test_with_predecessors_runs_each_series_in_time_then_line_order():
    frame = pl.DataFrame({
        "ts": [30_000, 10_000, 20_000, 10_000, 20_000, 40_000, 50_000],
        "device": ["a", "a", "a", "b", "a", "a", "a"], "ifname": ["x"] * 7, "metric": ["m"] * 7,
        "qualifier": [""] * 7, "value": [3.0, 1.0, float("nan"), 7.0, 2.0, 4.0, 0.5],
        "line": [1, 2, 3, 4, 5, 6, 7]})
    out = with_predecessors(frame)
    assert out.drop("prev_gap_us", "prev_delta", "is_tail").equals(frame)  # the batch's order
    # series a, finite, in (ts, line) order: lines 2 (1.0), 5 (2.0), 1 (3.0), 6 (4.0), 7 (0.5);
    # the drop to 0.5 starts a new run: line 6 is a tail, line 7 a head
    assert out["prev_gap_us"].to_list() == [10, None, None, None, 10, 10, None]
    assert out["prev_delta"].to_list() == [1.0, None, None, None, 1.0, 1.0, None]
    assert out["is_tail"].to_list() == [False, False, None, True, False, True, True]


def test_series_sharing_a_hash_only_shorten_each_others_runs(monkeypatch):
    # every series hashes alike: the sort interleaves them, and runs break where they alternate
    monkeypatch.setattr(pl.Expr, "hash", lambda self, *a, **k: pl.lit(7, pl.UInt64))
    frame = pl.DataFrame({
        "ts": [10_000, 10_000, 20_000, 30_000, 30_000], "device": ["a", "b", "a", "a", "b"],
        "ifname": ["x"] * 5, "metric": ["m"] * 5, "qualifier": [""] * 5,
        "value": [1.0, 5.0, 2.0, 3.0, 6.0], "line": [1, 2, 3, 4, 5]})
    out = with_predecessors(frame).sort("line")
    # sorted: a@10 b@10 a@20 a@30 b@30: a@20 is a head (after b), a@30 continues it
    assert out["prev_gap_us"].to_list() == [None, None, None, 10, None]
    assert out["is_tail"].to_list() == [True, True, False, True, True]


@pytest.mark.parametrize("bundle", ["two_faults", "link_flap"])
def test_sample_bundles_give_the_window_rates(sample_stores, bundle):
    con = open_readonly(sample_stores.ingested(bundle))  # the session's ingest of the bundle
    try:
        assert con.execute("SELECT count(*) FROM port_rates").fetchone()[0] > 1000
        assert_rates_match_the_window(con)
    finally:
        con.close()

"""The residuals' per-port sums in numpy (replay.port_sums): each counter over its own sample
intervals, and medians as DuckDB's."""

from __future__ import annotations

import duckdb
import numpy as np

from replay.port_sums import Span, _Groups, port_windows
from replay.rate_arrays import OWN_INTERVAL, RATES, RateArrays


def _arrays(ts_s: list[float], interval: list[float], own: dict[str, list[float]],
            rates: dict[str, list[float]]) -> RateArrays:
    """One port's rows (code 0), as rate_arrays reads them: NaN where a counter is NULL."""
    n = len(ts_s)
    values = {c: np.array(rates.get(c, [np.nan] * n), dtype=float) for c in RATES}
    own_s = {}
    for c, col in OWN_INTERVAL.items():
        s = np.array(own.get(c, interval), dtype=float)
        rows = np.flatnonzero(~np.isnan(values[col]) & (s != np.array(interval)))
        own_s[c] = rows, s[rows]
    return RateArrays(["sw:p1"], ["sw"], np.zeros(n, np.int64),
                      (np.array(ts_s) * 1e6).astype(np.int64), np.array(interval, dtype=float),
                      np.zeros(n, bool), values, own_s)


def test_a_counter_a_read_missed_counts_over_its_own_seconds():
    # reads every 10 s; the read at 30 s carried rx_bytes but not tx_bytes, so the read at 40 s
    # has tx_bytes over 20 s (its interval, the row's) and rx_bytes over its own 10 s
    ts = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
    rx = [100.0, 200.0, 300.0, 700.0, 500.0, 600.0]
    tx = [100.0, 200.0, np.nan, 400.0, 500.0, 600.0]
    interval = [10.0, 10.0, 10.0, 20.0, 10.0, 10.0]
    own = {"rx_bytes": [10.0] * 6, "tx_bytes": [10.0, 10.0, np.nan, 20.0, 10.0, 10.0]}
    span = Span(0, 60_000_000, 60.0, 1, 60.0)
    got = port_windows(_arrays(ts, interval, own, {"rx_bytes_per_s": rx, "tx_bytes_per_s": tx}),
                       span).to_arrow("w").to_pydict()
    assert got["w"] == [0] and got["samples"] == [6]
    # the bytes the counters moved in the window, over its 60 s: each counter's time-weighted mean
    assert got["rx_bytes_secs"] == [60.0] and got["rx_bytes"][0] / 60 == sum(rx) * 10 / 60
    assert got["tx_bytes_secs"] == [60.0]
    assert got["tx_bytes"][0] == 100 * 10 + 200 * 10 + 400 * 20 + 500 * 10 + 600 * 10
    assert got["secs"] == [70.0]  # the rows' intervals: the longest counter's
    # read over the row's interval instead, rx's read at 40 s would count 20 s: 70 s in all,
    # and a mean of 3,100 / 70 x 10 bytes/s instead of the counters' 2,400 / 60 x 10
    rows_own = port_windows(_arrays(ts, interval, {}, {"rx_bytes_per_s": rx}), span
                            ).to_arrow("w").to_pydict()
    assert rows_own["rx_bytes_secs"] == [70.0]
    assert rows_own["rx_bytes"][0] / 70 != got["rx_bytes"][0] / 60


def test_medians_are_duckdbs():
    rng = np.random.default_rng(7)
    g = rng.integers(0, 300, 4000) ** 2 // 300  # groups of 1 to about 70 values
    x = np.where(rng.random(4000) < 0.5, 10.0, rng.random(4000) * 20)
    x[g % 3 == 0] = 10.0  # a third of the groups all one value
    con = duckdb.connect()
    want = con.execute("SELECT g, median(x) FROM (SELECT unnest($g) AS g, unnest($x) AS x) "
                       "GROUP BY g ORDER BY g", {"g": g.tolist(), "x": x.tolist()}).fetchall()
    groups = _Groups(g)
    got = groups.median(groups.take(x))
    assert list(zip(groups.keys.tolist(), got.tolist(), strict=True)) == want

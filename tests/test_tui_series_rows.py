"""The drill-downs' rates in numpy (fabtwin/tui/series_rows.py) are the SQL's (StoreData's
fallback): the metric with most samples, wraps and resets, qualifiers summed, each port's own
sampling period; a sample that is not finite leaves it to the SQL."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import pytest

from collectors.store.writer import Store
from fabtwin.tui import series_rows
from fabtwin.tui.data import RATE_COUNTERS, StoreData

pytest_plugins = ["tui_fixtures"]  # two_faults_db

T = datetime(2026, 11, 30, 3, 0, 0)


def _samples() -> list[tuple]:
    rows = []

    def series(device, ifname, counter, metric, qualifier, step_s, values, offset_s=0.0):
        for k, v in enumerate(values):
            rows.append((T + timedelta(seconds=offset_s + k * step_s), device, ifname, counter,
                         metric, qualifier, float(v)))

    # a 32-bit counter that wraps (prev in the top half, the series below 2^32)
    series("sw1", "swp1", "tx_bytes", "if_out_octets", "", 10,
           [4_294_000_000, 4_294_500_000, 4_294_900_000, 300_000, 900_000, 1_500_000])
    # the same counter through a second name with fewer samples: not the one read
    series("sw1", "swp1", "tx_bytes", "out-octets", "", 20, [0, 5e9, 9e9], offset_s=3)
    # a reset: a decrease of a series that went past 2^32
    series("sw1", "swp2", "tx_bytes", "if_out_octets", "", 15,
           [5e9, 5.5e9, 6e9, 100, 600_000_100, 1_200_000_100], offset_s=2)
    # ECN marks per queue: summed over the qualifiers of an instant
    series("sw1", "swp1", "ecn_marked", "ecn", "queue=0", 10, [0, 10, 30, 60, 100, 150])
    series("sw1", "swp1", "ecn_marked", "ecn", "queue=3", 10, [5, 5, 25, 25, 45, 45])
    # two counters of one rate: the one with more samples is read
    series("sw1", "swp2", "rx_discards", "rx_discards", "", 15, [0, 1, 2, 4, 8, 16, 32])
    series("sw1", "swp2", "tx_discards", "tx_discards", "", 15, [0, 3, 9, 27], offset_s=7)
    # another device, sampled every 45 s, with an equal timestamp repeated in a series
    series("sw2", "eth0", "rx_bytes", "rx_bytes_phy", "", 45, [0, 4.5e10, 9e10, 1.35e11])
    rows.append((T + timedelta(seconds=45), "sw2", "eth0", "rx_bytes", "rx_bytes_phy", "",
                 4.5e10))
    return rows


@pytest.fixture
def crafted(tmp_path):
    db = tmp_path / "crafted.duckdb"
    with Store.open(db) as store:
        store.con.executemany("INSERT INTO samples (ts, device, ifname, counter, metric, "
                              "qualifier, value) VALUES (?, ?, ?, ?, ?, ?, ?)", _samples())
    return db


def _both(data: StoreData, monkeypatch, *args) -> tuple[list, list]:
    fast = data._series_rows(*args)
    with monkeypatch.context() as m:
        m.setattr(series_rows, "compute", lambda *a, **k: None)
        slow = data._series_rows(*args)
    return fast, slow


def _same(fast: list, slow: list) -> None:
    assert [r[:-1] for r in sorted(fast, key=str)] == [r[:-1] for r in sorted(slow, key=str)]
    for a, b in zip(sorted(fast, key=str), sorted(slow, key=str), strict=True):
        assert (a[-1] is None) == (b[-1] is None), (a, b)
        assert a[-1] is None or math.isclose(a[-1], b[-1], rel_tol=1e-9, abs_tol=1e-9) or (
            math.isnan(a[-1]) and math.isnan(b[-1])), (a, b)


PORTS = ["sw1:swp1", "sw1:swp2", "sw2:eth0"]


@pytest.mark.parametrize("by_port", [False, True])
def test_numpy_gives_the_sql_rates_on_wraps_resets_queues_and_periods(crafted, monkeypatch,
                                                                        by_port):
    data = StoreData(crafted)
    try:
        for counters in (list(RATE_COUNTERS), ["tx_bytes_per_s"], ["discards_per_s"]):
            for bounds in ((None, None), (T + timedelta(seconds=5), T + timedelta(seconds=70))):
                fast, slow = _both(data, monkeypatch, PORTS, counters, *bounds, by_port)
                assert fast, (counters, bounds)
                _same(fast, slow)
        # the wrap is counted (300,000 + 2^32 - 4,294,900,000 bytes in 10 s), the reset is not
        tx = {r[1:-1]: r[-1] for r in data._series_rows(PORTS, ["tx_bytes_per_s"], None, None,
                                                        True)}
        assert tx[("sw1:swp1", T + timedelta(seconds=30))] == pytest.approx(
            (300_000 + 2 ** 32 - 4_294_900_000) / 10)
        assert tx[("sw1:swp2", T + timedelta(seconds=45))] is None
    finally:
        data.close()


def test_numpy_gives_the_sql_rates_on_the_sample_store(two_faults_db, monkeypatch):
    data = StoreData(two_faults_db)
    try:
        ports = [p for (p,) in data._rows("SELECT DISTINCT device || ':' || ifname FROM samples "
                                          "ORDER BY 1")]
        for by_port in (False, True):
            fast, slow = _both(data, monkeypatch, ports, list(RATE_COUNTERS), None, None, by_port)
            assert len(fast) > 100
            _same(fast, slow)
    finally:
        data.close()


def test_a_sample_that_is_not_finite_is_left_to_the_sql(tmp_path, monkeypatch):
    db = tmp_path / "nan.duckdb"
    with Store.open(db) as store:
        store.con.executemany("INSERT INTO samples (ts, device, ifname, counter, metric, "
                              "qualifier, value) VALUES (?, ?, ?, ?, ?, ?, ?)",
                              _samples() + [(T + timedelta(seconds=55), "sw1", "swp1",
                                             "tx_bytes", "if_out_octets", "", math.nan)])
    data = StoreData(db)
    try:
        got = data.con.execute(series_rows.fetch_sql("device = 'sw1'", ["counter = 'tx_bytes'"],
                                                     by_port=True)).fetchnumpy()
        assert series_rows.compute(got, ["tx_bytes_per_s"], True) is None
        fast, slow = _both(data, monkeypatch, PORTS, ["tx_bytes_per_s"], None, None, True)
        assert fast and [r[:-1] for r in fast] == [r[:-1] for r in slow]
        _same(fast, slow)
    finally:
        data.close()

"""The TUI heatmap's per-port load without a replay: the store's rates, wraps and resets kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import duckdb
import pytest

from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store
from fabtwin.tui.data import StoreData

T0 = datetime(2026, 11, 30, 3, 0, 0)
WRAP = [4_294_000_000, 4_294_900_000, 200_000, 1_200_000]  # a 32-bit counter wraps at 20 s
RESET = [5_000_000_000, 5_001_000_000, 1_000, 101_000]  # cleared (or a reboot) at 20 s


def _prom(series: dict[str, list[int]]) -> str:
    lines = ["# TYPE nvswitch_interface_if_out_octets counter"]
    for ifname, values in series.items():
        for k, v in enumerate(values):
            ms = int((T0 + timedelta(seconds=10 * k)).replace(tzinfo=UTC).timestamp() * 1000)
            lines.append(f'nvswitch_interface_if_out_octets{{instance="leaf-p0-01",interface="{ifname}"}} {v} {ms}')
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def wrapped_db(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("wrap")
    (root / "bundle" / "prom").mkdir(parents=True)
    (root / "bundle" / "prom" / "leaf.prom").write_text(_prom({"swp1": WRAP, "swp2": RESET}))
    db = str(root / "s.duckdb")
    with Store.open(db) as store:
        ingest_bundle(store, root / "bundle")
    return db


def test_port_util_counts_wraps_and_drops_resets_as_the_rate_view_does(wrapped_db):
    t0, t1 = T0 + timedelta(seconds=5), T0 + timedelta(seconds=35)
    util = StoreData(wrapped_db)._port_util(t0, t1)
    # wrap: 900,000 + (2^32 - 4,294,900,000 + 200,000) + 1,000,000 bytes over 30 s
    assert util["leaf-p0-01:swp1"] == pytest.approx((900_000 + 267_296 + 1_000_000) / 30)
    # reset: the interval across it counts neither bytes nor seconds
    assert util["leaf-p0-01:swp2"] == pytest.approx((1_000_000 + 100_000) / 20)
    with duckdb.connect(wrapped_db, read_only=True) as con:
        view = dict(con.execute("""
            SELECT device || ':' || ifname, sum(tx_bytes_per_s * interval_s) / sum(interval_s)
            FROM port_rates WHERE ts >= ? AND ts < ? AND tx_bytes_per_s IS NOT NULL
            GROUP BY 1""", [t0, t1]).fetchall())
    assert util == pytest.approx(view)


def test_port_util_is_bounded_by_the_window(wrapped_db):
    # [0 s, 10 s): the interval ending at 10 s only (its start, at 0 s, is the window's edge)
    util = StoreData(wrapped_db)._port_util(T0 + timedelta(seconds=1), T0 + timedelta(seconds=11))
    assert util == pytest.approx({"leaf-p0-01:swp1": 90_000, "leaf-p0-01:swp2": 100_000})
    assert StoreData(wrapped_db)._port_util(T0 + timedelta(seconds=40), T0 + timedelta(seconds=50)) == {}


def test_the_drill_down_series_counts_wraps_and_drops_resets_like_the_view(wrapped_db):
    data = StoreData(wrapped_db)
    (wrap,) = data.port_series_many(["leaf-p0-01:swp1"], ["tx_bytes_per_s"])
    (reset,) = data.port_series_many(["leaf-p0-01:swp2"], ["tx_bytes_per_s"])
    # one rate per 10 s sample: the wrap interval is (2^32 - 4,294,900,000 + 200,000) / 10 s,
    # not a gap; the interval across the reset is no rate at all (dropping wraps lost 26,730)
    assert [r for r in wrap.observed if r is not None] == pytest.approx([90_000, 26_729.6, 100_000])
    assert [r for r in reset.observed if r is not None] == pytest.approx([100_000, 10_000])

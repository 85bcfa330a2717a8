"""The analysis' per-port rates as numpy arrays, read from `port_rates` once and shared.

Within `replay.investigate.views_once`, `port_rates` is a temp table that carries, after the
view's columns, each port's integer code (`pc`) and the byte and packet counters' own sample
intervals (collectors/store/sql/views.sql `port_rates_part`). The replay's observed rates
(`replay.counters.observed_rates`) and the conservation residuals' per-port sums
(`replay.residuals`) both read it through `rate_arrays`: one read, sorted by (port code, ts),
integer keys instead of `device || ':' || ifname` strings (on the 256-switch hour, 8.76M rows
the two read in turn).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import duckdb
import numpy as np

# the rates read, port_rates' columns (replay.counters.RATE_COLUMN's and the residuals')
RATES = ("tx_bytes_per_s", "rx_bytes_per_s", "tx_packets_per_s", "rx_packets_per_s",
         "ecn_marked_per_s", "tx_pause_per_s", "rx_pause_per_s", "discards_per_s",
         "errors_per_s")
# per counter read over its own interval (`<counter>_s`), the rate column that counts it
OWN_INTERVAL = {"tx_bytes": "tx_bytes_per_s", "rx_bytes": "rx_bytes_per_s",
                "tx_packets": "tx_packets_per_s", "rx_packets": "rx_packets_per_s"}


@dataclass
class RateArrays:
    """port_rates as arrays, rows sorted by (port code, ts). A NULL rate is NaN with `valid`
    False (a rate is never NaN otherwise: deltas over positive intervals)."""

    ports: list[str]  # the port id (`device:ifname`) of each code
    devices: list[str]  # the device of each code
    pc: np.ndarray  # int64 port code per row
    ts_us: np.ndarray  # int64 microseconds since the epoch
    interval_s: np.ndarray  # the row's interval: its longest counter's
    reset: np.ndarray  # bool (NULL read as false)
    values: dict[str, np.ndarray]  # per rate column, float64
    # per OWN_INTERVAL counter, the rows that carry it over an interval other than the row's
    # (a read missed another counter) and that interval: few, so kept apart (280 MB less)
    own_s: dict[str, tuple[np.ndarray, np.ndarray]]

    def valid(self, col: str, at: np.ndarray | None = None) -> np.ndarray:
        """Whether the rate is known (not NULL), for every row or the rows `at`."""
        return ~np.isnan(self.values[col] if at is None else self.values[col][at])

    def own_interval(self, counter: str, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Of the rows `at`, those (positions in `at`) whose `counter` has its own interval
        (another than the row's), and that interval."""
        rows, seconds = self.own_s[counter]
        pos = np.minimum(np.searchsorted(rows, at), max(rows.size - 1, 0))
        hit = np.flatnonzero(rows[pos] == at) if rows.size else np.zeros(0, np.int64)
        return hit, seconds[pos[hit]]


_EPOCH = datetime(1970, 1, 1)


def epoch_us(t: datetime) -> int:
    """Microseconds since the epoch, exactly (the store's TIMESTAMPs are UTC without zone)."""
    if t.tzinfo is not None:
        t = t.astimezone(UTC).replace(tzinfo=None)
    return (t - _EPOCH) // timedelta(microseconds=1)


# connection -> arrays of its temp.port_rates (dropped with it: `forget`)
_KEPT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _temp_columns(con: duckdb.DuckDBPyConnection) -> set[str] | None:
    """The columns of temp.port_rates, None without one."""
    rows = con.execute("SELECT column_name FROM duckdb_columns() WHERE database_name = 'temp' "
                       "AND table_name = 'port_rates'").fetchall()
    return {r[0] for r in rows} or None


def rate_arrays(con: duckdb.DuckDBPyConnection) -> RateArrays:
    """The connection's port_rates as arrays: temp.port_rates' read once and kept until
    `forget` (views_once's end); without that table (a replay outside views_once), the view's,
    read each time, its ports coded here."""
    kept = _KEPT.get(con)
    if kept is not None:
        return kept
    columns = _temp_columns(con)
    if columns is not None and "pc" in columns:
        src, code = "temp.port_rates", "pc"
        own = {c: f"{c}_s" if f"{c}_s" in columns else "interval_s" for c in OWN_INTERVAL}
    else:  # the view, or a temp table of a store whose views predate the codes
        src = "temp.port_rates" if columns is not None else "port_rates"
        code = "(dense_rank() OVER (ORDER BY device, ifname) - 1)::INTEGER"
        own = {c: "interval_s" for c in OWN_INTERVAL}
    # NULL as NaN in SQL: plain arrays, not masked ones (their conversion and a copy of each
    # column cost 13 s of CPU on the 256-switch hour); a rate is never NaN otherwise
    nan = "'NaN'::DOUBLE"
    rows = con.execute(f"""
        WITH r AS (SELECT *, {code} AS code FROM {src})
        SELECT code::BIGINT AS code, epoch_us(ts) AS ts_us, interval_s,
            coalesce(reset, false) AS reset, {", ".join(f"coalesce({c}, {nan}) AS {c}" for c in RATES)},
            {", ".join(f"coalesce({col}, {nan}) AS {c}_s" for c, col in own.items())}
        FROM r""").fetchnumpy()
    names = con.execute(f"""
        WITH r AS (SELECT device, ifname, {code} AS code FROM {src})
        SELECT code, any_value(device), any_value(ifname) FROM r GROUP BY code""").fetchall()
    ports = [""] * (max((c for c, _, _ in names), default=-1) + 1)
    devices = list(ports)
    for c, device, ifname in names:  # a loop over ports, not rows: 22K on the 256-switch hour
        ports[c], devices[c] = f"{device}:{ifname}", device
    plain = {k: np.ma.getdata(rows.pop(k)) for k in list(rows)}  # no mask: plain arrays
    code, ts = plain["code"], plain["ts_us"]
    # sorted by one integer key where (code, microseconds since the first read) fit in 63
    # bits (0.3 s on the hour's 8.76M rows; DuckDB's ORDER BY of every column took 6 s more)
    lo = int(ts.min()) if ts.size else 0
    shift = int(ts.max() - lo).bit_length() if ts.size else 0
    if ts.size and shift + max(1, len(ports)).bit_length() <= 63:
        key = (code << shift) | (ts - lo)
        # rows read in order already (the store's copy, replay.analysis_cache, is kept sorted):
        # neither the sort nor the gathers below (5 s of CPU on the hour)
        order = None if bool(np.all(key[1:] > key[:-1])) else np.argsort(key)  # unique keys
        del key
    else:
        order = np.lexsort((ts, code))
    del code, ts
    # every column sorted once (2.4-5 s): the readers' gathers then run along memory; each
    # read column freed once sorted
    sort = {k: plain.pop(k) if order is None else plain.pop(k)[order] for k in list(plain)}
    del order
    out = RateArrays(ports, devices, sort.pop("code"), sort.pop("ts_us"), sort.pop("interval_s"),
                     sort.pop("reset"), {col: sort.pop(col) for col in RATES}, {})
    for c, col in OWN_INTERVAL.items():
        own = sort.pop(f"{c}_s")
        rows_own = np.flatnonzero(~np.isnan(out.values[col]) & (own != out.interval_s))
        out.own_s[c] = rows_own, own[rows_own]
    if columns is not None and "pc" in columns:
        _KEPT[con] = out
    return out


def kept(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the connection's arrays are kept (read from temp.port_rates)."""
    return con in _KEPT


def forget(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the connection's kept arrays (its temp.port_rates is going)."""
    _KEPT.pop(con, None)

"""Per-port rates read from `samples` for a few counters and devices, as the store's
`port_rates` view computes them (its `counter_delta` macro: 32- and 64-bit wraps added back,
resets dropped), for readers that must stay bounded: the report and the TUI."""

from __future__ import annotations

# the port_rates columns, and the canonical counters each sums (views.sql)
RATE_COLUMNS = {
    "tx_bytes_per_s": ("tx_bytes",), "rx_bytes_per_s": ("rx_bytes",),
    "ecn_marked_per_s": ("ecn_marked",), "tx_pause_per_s": ("tx_pause",), "rx_pause_per_s": ("rx_pause",),
    "errors_per_s": ("rx_errors", "tx_errors", "rx_fcs_errors", "symbol_errors"),
    "discards_per_s": ("rx_discards", "tx_discards", "no_buffer_drops", "wred_drops"),
}


def rates_sql(columns: list[str], group: str, by_device: bool = True) -> str:
    """SQL for per-port rates of `columns` (keys of RATE_COLUMNS), one row per port and `group`
    (an expression of ts: `ts` itself, or a time bucket), for the ports of the devices in $d
    (every device with `by_device=False`: then there is no $d) between $t0 and $t1.

    The same rates as the `port_rates` view (wraps of 32- and 64-bit counters kept, resets
    dropped, one source per port and counter: the metric with the most samples), but read from
    `samples` for these few counters and devices only: the view evaluates every counter of every
    port, minutes on a 1-hour 256-switch store. Over a bucket, a rate is the bucket's counted
    delta over its covered seconds (per queue or priority, then summed).
    """
    counters = sorted({c for col in columns for c in RATE_COLUMNS[col]})
    listed = ", ".join(f"'{c}'" for c in counters)
    devices = "AND list_contains($d::VARCHAR[], device)" if by_device else ""
    pivot = ",\n".join(
        f"sum(rate) FILTER (WHERE counter IN ({', '.join(repr(c) for c in RATE_COLUMNS[col])})) AS {col}"
        for col in columns)
    return f"""
        WITH s AS (
            SELECT device, ifname, counter, metric, qualifier, ts, value, file_id, line,
                   hash(device, ifname, metric, qualifier) AS series FROM samples
            WHERE counter IN ({listed}) {devices}
              AND ts BETWEEN $t0 - INTERVAL 5 MINUTE AND $t1 AND value IS NOT NULL AND isfinite(value)
        ), preferred AS (
            SELECT device, ifname, counter, qualifier, metric FROM (
                SELECT device, ifname, counter, qualifier, metric, count(*) AS n FROM s GROUP BY ALL)
            QUALIFY row_number() OVER (PARTITION BY device, ifname, counter, qualifier
                                       ORDER BY n DESC, metric) = 1
        ), d AS (
            SELECT s.*, lag(value) OVER w AS prev, lag(ts) OVER w AS prev_ts,
                   lag(value) OVER w - lag(value, 2) OVER w AS prev_step,
                   max(value) OVER (PARTITION BY series) AS series_max
            FROM s JOIN preferred USING (device, ifname, counter, qualifier, metric)
            WINDOW w AS (PARTITION BY series ORDER BY ts, file_id, line)  -- as views.sql
        ), r AS (
            SELECT device, ifname, counter, qualifier, ts,
                   epoch_us(ts - prev_ts) / 1e6 AS dt,
                   counter_delta(value, prev, series_max, prev_step) AS delta  -- views.sql's macro
            FROM d WHERE prev IS NOT NULL AND ts > prev_ts AND ts >= $t0
        ), q AS (
            SELECT device, ifname, counter, qualifier, {group} AS ts,
                   sum(delta) / sum(dt) FILTER (WHERE delta IS NOT NULL) AS rate
            FROM r GROUP BY ALL
        )
        SELECT device, device || ':' || ifname AS port, ts,
               {pivot}
        FROM q GROUP BY device, ifname, ts"""

"""A few ports' counter rates from their raw samples, for the drill-down screens: one scan of
`samples` in DuckDB, the arithmetic in numpy.

What it computes is `sql`'s statement (the fallback, kept for samples that are not finite,
whose comparisons DuckDB and numpy order differently), step by step: per counter and
port the metric with most samples (a tie: the first by name); per series (device,
ifname, metric, qualifier) in time order the increase from the previous sample, the store's
`counter_delta` (32- and 64-bit wraps added back, other decreases dropped) over the seconds
between them; summed over the qualifiers of a port's instant; averaged per sampling period
(time_bucket of the median gap: one for all the ports, or each port's own) and summed over the
ports. DuckDB's window over tens of thousands of rows in hundreds of partitions was most of
it: a 64-port leaf's 7 counters over an hour took 62-110 ms of CPU in one statement.

The scan (fetch_sql) picks the metric as `sql` does and hands the rows over sorted, with no
text column but the port's when rows per port are asked for; numpy then only walks runs. A
64-port leaf's hour (41K samples): 16-20 ms of scan and 22-24 of numpy (three lexsorts and
the metric and port names as Python strings) became 21-24 and 6-7 (CPU, load 7-9).
"""

from __future__ import annotations

import numpy as np

ORIGIN_US = 946_857_600_000_000  # time_bucket's default origin, 2000-01-03 00:00:00
TWO32, TWO63, TWO64 = 2.0 ** 32, 2.0 ** 63, 2.0 ** 64


def fetch_sql(where: str, conditions: list[str], by_port: bool = False) -> str:
    """The one scan: the samples of `where` that one of `conditions` (a counter's, in order)
    takes, of the metric `sql`'s `best` picks for each counter and port, with the condition's
    index, port and series hashes, time (us), value and (by_port) the port's id; sorted by
    counter, port, series and time, so that every series is one run in time order."""
    code = "CASE " + " ".join(f"WHEN {c} THEN {k}" for k, c in enumerate(conditions)) + " END"
    port = ", device || ':' || ifname AS port" if by_port else ""
    return f"""
        WITH s AS (
            SELECT {code} AS c, device, ifname, metric, qualifier, ts, value
            FROM samples
            WHERE ({where}) AND ({" OR ".join(conditions)}) AND value IS NOT NULL
        ), best AS (  -- as in `sql`: most samples, a tie the first metric by name
            SELECT c, device, ifname, first(metric ORDER BY n DESC, metric) AS metric
            FROM (SELECT c, device, ifname, metric, count(*) AS n FROM s GROUP BY ALL)
            GROUP BY ALL
        )
        SELECT c, hash(device, ifname) AS pk, hash(device, ifname, metric, qualifier) AS sk,
            epoch_us(ts) AS us, value{port}
        FROM s JOIN best USING (c, device, ifname, metric)
        ORDER BY c, pk, sk, us, value"""


def _runs(*keys: np.ndarray) -> np.ndarray:
    """Where each run of equal keys (arrays in the same sorted order) starts."""
    n = len(keys[0])
    change = np.zeros(max(n - 1, 0), bool)
    for k in keys:
        change |= k[1:] != k[:-1]
    return np.flatnonzero(np.concatenate([[n > 0], change]))


def _labels(starts: np.ndarray, n: int) -> np.ndarray:
    """The run number of each of `n` rows, from where the runs start (_runs)."""
    mark = np.zeros(n, np.int64)
    mark[starts[1:]] = 1
    return np.cumsum(mark)


def _by_time(group: np.ndarray, us: np.ndarray) -> np.ndarray:
    """The stable order by (group, us) of rows whose `group` labels do not decrease: one
    argsort of a combined key, which timsort does in a merge of the rows' sorted runs."""
    rel = us - us.min()
    span = int(rel.max()) + 1
    if int(group.max()) * span < 2 ** 62:
        return np.argsort(group.astype(np.int64) * span + rel, kind="stable")
    return np.lexsort((us, group))


def compute(got: dict[str, np.ndarray], names: list[str], by_port: bool) -> list[tuple] | None:
    """(counter, [port,] period start, rate or None) rows from fetch_sql's columns;
    None when a value is not finite (the SQL then decides)."""
    v = np.asarray(got["value"], dtype=float)
    if not len(v):
        return []
    if not np.isfinite(v).all():
        return None
    c, pk, sk = (np.asarray(got[k]) for k in ("c", "pk", "sk"))
    us = np.asarray(got["us"], dtype=np.int64)
    # per series (one run each, in time order): the increase since the previous sample over
    # the seconds between them
    s_starts = _runs(c, sk)
    smax = np.maximum.reduceat(v, s_starts)[_labels(s_starts, len(v))]
    has = np.ones(len(v), bool)
    has[s_starts] = False
    pv = np.roll(v, 1)
    ge = v >= pv
    w32 = (pv >= 2147483648.0) & (smax < TWO32)
    w64 = pv >= TWO63
    dv = np.where(ge, v - pv, np.where(w32, v + TWO32 - pv, v + TWO64 - pv))
    dt = (us - np.roll(us, 1)) / 1e6
    ok = (ge | w32 | w64) & (dt > 0)
    # r: one rate per counter, port and instant (its qualifiers summed, in series order),
    # rows with a previous sample
    rows = np.flatnonzero(has)
    if not len(rows):
        return []
    o = rows[_by_time(_labels(_runs(c, pk), len(v))[rows], us[rows])]
    dv, dt, ok = dv[o], dt[o], ok[o]
    r_starts = _runs(c[o], pk[o], us[o])
    r_dt = np.maximum.reduceat(dt, r_starts)
    r_n = np.add.reduceat(ok.astype(np.int64), r_starts)
    r_rate = np.add.reduceat(np.where(ok, dv / np.where(ok, dt, 1.0), 0.0), r_starts)
    r_rows = o[r_starts]
    r_c, r_pk, r_us = c[r_rows], pk[r_rows], us[r_rows]
    # the sampling period: the median gap, rounded half away from zero, at least 1 s
    if by_port:
        p_order = np.argsort(r_pk, kind="stable")
        p_starts = _runs(r_pk[p_order])
        med = np.array([np.median(r_dt[p_order][a:b]) for a, b in
                        zip(p_starts, np.append(p_starts[1:], len(p_order)), strict=True)])
        period = np.zeros(len(r_dt), np.int64)
        period[p_order] = np.maximum(1, np.floor(med + 0.5)).astype(np.int64)[
            _labels(p_starts, len(p_order))]
    else:
        period = np.full(len(r_dt), max(1, int(np.floor(np.median(r_dt) + 0.5))), np.int64)
    width = period * 1_000_000
    t = ORIGIN_US + np.floor_divide(r_us - ORIGIN_US, width) * width
    # per: the mean rate of each counter, port and period (rates that are there); the r rows
    # are in (counter, port, time) order, and so in (counter, port, period) order
    q_starts = _runs(r_c, r_pk, t)
    has_rate = r_n > 0
    q_n = np.add.reduceat(has_rate.astype(np.int64), q_starts)
    q_sum = np.add.reduceat(np.where(has_rate, r_rate, 0.0), q_starts)
    q_c, q_t = r_c[q_starts], t[q_starts]
    with np.errstate(invalid="ignore", divide="ignore"):
        q_rate = q_sum / q_n
    if by_port:
        q_port = np.asarray(got["port"], dtype=object)[r_rows[q_starts]]
        return [(names[int(k)], p, x, float(y) if n else None)
                for k, p, x, y, n in zip(q_c.tolist(), q_port.tolist(), _times(q_t),
                                         q_rate.tolist(), q_n.tolist(), strict=True)]
    # summed over the ports (in port order), per counter and period
    f = _by_time(q_c, q_t)
    f_starts = _runs(q_c[f], q_t[f])
    ok_q = q_n[f] > 0
    f_n = np.add.reduceat(ok_q.astype(np.int64), f_starts)
    f_sum = np.add.reduceat(np.where(ok_q, q_rate[f], 0.0), f_starts)
    return [(names[int(k)], x, float(y) if n else None)
            for k, x, y, n in zip(q_c[f][f_starts].tolist(), _times(q_t[f][f_starts]),
                                  f_sum.tolist(), f_n.tolist(), strict=True)]


def _times(us: np.ndarray) -> list:
    """Microseconds since the epoch as naive datetimes (what DuckDB gives for a TIMESTAMP)."""
    return us.astype("datetime64[us]").tolist()


def sql(where: str, conditions: dict[str, str], by_port: bool) -> str:
    """The same rows in one SQL statement (the fallback): rate name -> its samples' condition
    in `conditions`; (name, [port,] period start, rate) rows."""
    name = "CASE " + " ".join(f"WHEN {c} THEN '{n}'" for n, c in conditions.items()) + " END"
    # per port: each port's own sampling period; summed: one period for all (the median)
    key, join = ("device, ifname,", "JOIN b USING (device, ifname)") if by_port else ("", ", b")
    final = ("SELECT cname, device || ':' || ifname, t, rate FROM per ORDER BY 1, 2, 3"
                 if by_port else "SELECT cname, t, sum(rate) FROM per GROUP BY ALL ORDER BY 1, 2")
    return f"""
            WITH s AS (
                SELECT {name} AS cname, device, ifname, metric, qualifier, ts, value
                FROM samples
                WHERE ({where}) AND ({" OR ".join(conditions.values())})
                    AND value IS NOT NULL
            ), best AS (  -- a tie: the first metric by name (arg_max took either, run to run)
                SELECT cname, device, ifname, first(metric ORDER BY n DESC, metric) AS metric
                FROM (SELECT cname, device, ifname, metric, count(*) AS n FROM s GROUP BY ALL)
                GROUP BY ALL
            ), d AS (  -- the store's counter_delta (views.sql): wraps added back, resets NULL
                SELECT s.*, counter_delta(value, lag(value) OVER w,
                                          max(value) OVER (PARTITION BY device, ifname, metric,
                                                           qualifier)) AS dv,
                    epoch_us(ts - lag(ts) OVER w) / 1e6 AS dt
                FROM s JOIN best USING (cname, device, ifname, metric)
                WINDOW w AS (PARTITION BY device, ifname, metric, qualifier ORDER BY ts)
            ), r AS (
                SELECT cname, device, ifname, ts, max(dt) AS dt,
                    sum(CASE WHEN dv IS NOT NULL AND dt > 0 THEN dv / dt END) AS rate
                FROM d WHERE dt IS NOT NULL GROUP BY ALL
            ), b AS (  -- ports sample at their own instants: align them on the sampling period
                SELECT {key} greatest(1, round(median(dt)))::BIGINT AS period
                FROM r GROUP BY ALL
            ), per AS (
                SELECT cname, r.device, r.ifname, time_bucket(to_seconds(b.period), ts) AS t,
                    avg(rate) AS rate
                FROM r {join} GROUP BY ALL)
            {final}"""

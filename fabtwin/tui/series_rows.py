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
"""

from __future__ import annotations

import numpy as np

ORIGIN_US = 946_857_600_000_000  # time_bucket's default origin, 2000-01-03 00:00:00
TWO32, TWO63, TWO64 = 2.0 ** 32, 2.0 ** 63, 2.0 ** 64


def fetch_sql(where: str, conditions: list[str]) -> str:
    """The one scan: each sample of `where` that one of `conditions` (a counter's, in order)
    takes, with its condition's index, its port and series hashes, its metric (hash and
    name) and time (us)."""
    code = "CASE " + " ".join(f"WHEN {c} THEN {k}" for k, c in enumerate(conditions)) + " END"
    return f"""
        SELECT {code} AS c, hash(device, ifname) AS pk, device || ':' || ifname AS port,
            hash(device, ifname, metric, qualifier) AS sk, hash(metric) AS mk,
            metric, epoch_us(ts) AS us, value
        FROM samples
        WHERE ({where}) AND ({" OR ".join(conditions)}) AND value IS NOT NULL"""


def _runs(*keys: np.ndarray) -> np.ndarray:
    """Where each run of equal keys (arrays in the same sorted order) starts."""
    n = len(keys[0])
    change = np.zeros(max(n - 1, 0), bool)
    for k in keys:
        change |= k[1:] != k[:-1]
    return np.flatnonzero(np.concatenate([[n > 0], change]))


def _grouped(order: np.ndarray, *keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For rows in `order` (sorted by `keys`): the start of each group and each row's group."""
    starts = _runs(*(k[order] for k in keys))
    group = np.zeros(len(order), np.int64)
    group[starts[1:]] = 1
    return starts, np.cumsum(group)


def compute(got: dict[str, np.ndarray], names: list[str], by_port: bool) -> list[tuple] | None:
    """(counter, [port,] period start, rate or None) rows from fetch_sql's columns;
    None when a value is not finite (the SQL then decides)."""
    v = np.asarray(got["value"], dtype=float)
    if not len(v):
        return []
    if not np.isfinite(v).all():
        return None
    c, pk, sk, mk = (np.asarray(got[k]) for k in ("c", "pk", "sk", "mk"))
    us = np.asarray(got["us"], dtype=np.int64)
    ports = np.asarray(got["port"], dtype=object)
    # the metric with most samples per counter and port (a tie: the first metric by name)
    o = np.lexsort((mk, pk, c))
    starts, group = _grouped(o, c, pk, mk)
    counts = np.diff(np.append(starts, len(o)))
    g = o[starts]
    _, by_name = np.unique(np.asarray(got["metric"], dtype=object)[g].astype(str),
                           return_inverse=True)
    pick = np.lexsort((by_name, -counts, pk[g], c[g]))
    first = _runs(c[g][pick], pk[g][pick])
    chosen = np.zeros(len(starts), bool)
    chosen[pick[first]] = True
    keep = np.zeros(len(v), bool)
    keep[o] = chosen[group]
    # per series in time order: the increase since the previous sample over the seconds between
    rows = np.flatnonzero(keep)
    o = rows[np.lexsort((us[rows], sk[rows]))]
    s_starts, s_group = _grouped(o, sk)
    vv, tt = v[o], us[o]
    smax = np.maximum.reduceat(vv, s_starts)[s_group]
    has = np.ones(len(o), bool)
    has[s_starts] = False
    pv = np.roll(vv, 1)
    ge = vv >= pv
    w32 = (pv >= 2147483648.0) & (smax < TWO32)
    w64 = pv >= TWO63
    dv = np.where(ge, vv - pv, np.where(w32, vv + TWO32 - pv, vv + TWO64 - pv))
    dt = (tt - np.roll(tt, 1)) / 1e6
    ok = has & (ge | w32 | w64) & (dt > 0)
    # r: one rate per counter, port and instant (its qualifiers summed), rows with a previous
    o, dv, dt, ok = o[has], dv[has], dt[has], ok[has]
    r_order = np.lexsort((us[o], pk[o], c[o]))
    o, dv, dt, ok = o[r_order], dv[r_order], dt[r_order], ok[r_order]
    if not len(o):
        return []
    r_starts, _ = _grouped(np.arange(len(o)), c[o], pk[o], us[o])
    r_dt = np.maximum.reduceat(dt, r_starts)
    r_n = np.add.reduceat(ok.astype(np.int64), r_starts)
    r_rate = np.add.reduceat(np.where(ok, dv / np.where(ok, dt, 1.0), 0.0), r_starts)
    r_c, r_pk, r_us = c[o][r_starts], pk[o][r_starts], us[o][r_starts]
    r_port = ports[o][r_starts]
    # the sampling period: the median gap, rounded half away from zero, at least 1 s
    if by_port:
        p_order = np.argsort(r_pk, kind="stable")
        p_starts, p_group = _grouped(p_order, r_pk)
        med = np.array([np.median(r_dt[p_order][a:b]) for a, b in
                        zip(p_starts, np.append(p_starts[1:], len(p_order)), strict=True)])
        period = np.zeros(len(r_dt), np.int64)
        period[p_order] = np.maximum(1, np.floor(med + 0.5)).astype(np.int64)[p_group]
    else:
        period = np.full(len(r_dt), max(1, int(np.floor(np.median(r_dt) + 0.5))), np.int64)
    width = period * 1_000_000
    t = ORIGIN_US + np.floor_divide(r_us - ORIGIN_US, width) * width
    # per: the mean rate of each counter, port and period (rates that are there)
    q = np.lexsort((t, r_pk, r_c))
    q_starts, _ = _grouped(q, r_c, r_pk, t)
    has_rate = r_n[q] > 0
    q_n = np.add.reduceat(has_rate.astype(np.int64), q_starts)
    q_sum = np.add.reduceat(np.where(has_rate, r_rate[q], 0.0), q_starts)
    q_c, q_t = r_c[q][q_starts], t[q][q_starts]
    with np.errstate(invalid="ignore", divide="ignore"):
        q_rate = q_sum / q_n
    if by_port:
        q_port = r_port[q][q_starts]
        return [(names[int(k)], p, x, float(y) if n else None)
                for k, p, x, y, n in zip(q_c.tolist(), q_port.tolist(), _times(q_t),
                                         q_rate.tolist(), q_n.tolist(), strict=True)]
    # summed over the ports, per counter and period
    f = np.lexsort((q_t, q_c))
    f_starts, _ = _grouped(f, q_c, q_t)
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

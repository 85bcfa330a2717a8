"""Link faults no error counter or log line reports (issue 17): loss seen only as a conservation
residual, a link that negotiated a lower speed than its peers, flaps shorter than a sample.

- silent loss: a link direction whose receiver counts fewer packets than its sender sent, far
  above a floor that is never zero: the bundle's own noise (`replay.residuals.noise_floors`),
  no less than the counters' resolution, plus what ends read up to a sample interval apart show
  when the rate differs between a window's boundaries; for several windows, or for one window
  by a margin no noise of this bundle comes near, and still over the run and its neighbours
  (lost packets never come back); scored by how far beyond the floor (`loss_score`);
- lower speed: a link whose ports report (`port_speed_bps`) less than the other links of the
  same role on each of its devices, and less than the fabric's links of that role;
- short flaps: `carrier_transitions`, `carrier_down_events` or `link_down_events` moving in a
  sample interval in which neither end was seen down for a second or more.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime

import duckdb

from replay import analysis_cache
from replay.loss_bounds import span_timing as _span_timing
from replay.loss_bounds import step_bound as _step_bound
from replay.residuals import (
    MAD_TO_SIGMA,
    MIN_FLOOR_ROWS,
    NoiseFloor,
    compute_residuals,
    noise_floors,
    replay_windows,
    residuals_present,
)
from replay.stored import Incident, rows_of
from replay.stored import iso as _iso

# A window's deficit counts towards a run when it is Z_RUN robust sigmas above the bundle's
# median; a run is loss when its combined evidence (sum of z / sqrt(windows), Stouffer) reaches
# Z_REAL: far beyond the tail of any noise that is near normal (p < 1e-15 per row), so that a
# bundle of thousands of rows raises nothing by chance.
Z_RUN = 3.0
Z_REAL = 8.0
LASTING_WINDOWS = 3  # a deficit that lasts: at least this many computable windows ...
SPEED_RATIO = 0.9  # below this share of its peers' speed: speeds come in steps of 2x or more
FLAP_COUNTERS = ("carrier_transitions", "carrier_down_events", "link_down_events")


def ensure_residuals(con: duckdb.DuckDBPyConnection) -> None:
    """Residuals of the latest replay, or computed now in temp tables (a read-only store, or one
    replayed before residuals existed)."""
    if not residuals_present(con) and replay_windows(con) is not None:
        compute_residuals(con, schema="temp")


_COLUMNS = """window_start, window_end, link_id, tx_port, rx_port, sent_packets_per_s,
               received_packets_per_s, sent_bytes_per_s, received_bytes_per_s, deficit_ratio,
               deficit_packets_per_s, basis, sample_s, rate_change, granularity, errors_per_s,
               sender_pause_per_s, status, {edge}, {step}, {bends}"""


def _direction_rows(con: duckdb.DuckDBPyConnection, key: tuple[str, str], cols: str,
                   share: float) -> list[dict]:
    """One link direction's residual rows (`cols`) in time order, with its `timing_share`."""
    rows = rows_of(con, f"""SELECT {cols} FROM link_residuals
                          WHERE link_id = ? AND tx_port = ? ORDER BY window_start""", list(key))
    return [{**r, "timing_share": share} for r in rows]


def find_silent_loss(con: duckdb.DuckDBPyConnection) -> list[Incident]:
    """link_degraded where a link direction loses packets that no error counter accounts for:
    a lasting deficit far above the bundle's noise floor for its sampling cadence."""
    ensure_residuals(con)
    floors = noise_floors(con)
    if not floors:
        return []
    # a store whose residuals predate `edge_s` (read-only: not recomputed) trusts no edge window
    has = {d[0] for d in con.execute("SELECT * FROM link_residuals LIMIT 0").description}
    edge = "edge_s" if "edge_s" in has else "NULL AS edge_s"
    cols = _COLUMNS.format(
        edge=edge, step="rate_step" if "rate_step" in has else "NULL AS rate_step",
        bends=("bend_start, bend_end, uncounted_share" if "uncounted_share" in has
               else "NULL AS bend_start, NULL AS bend_end, NULL AS uncounted_share"))
    # only the directions with a window that could stand Z_RUN above its floor are read (each
    # whole, in order): the rows of the 256-switch hour (1.4M) read into dicts and walked one by
    # one cost tens of seconds of CPU, and few of them come near a floor
    params = _suspect_params(floors)
    # the shares (an aggregate over every residual row) once, for this read and `_lasting`'s
    con.execute(f"CREATE OR REPLACE TEMP TABLE _link_shares AS WITH {_SHARES_CTE} "
                "SELECT * FROM shares", {"median": params.pop("median")})
    rows = rows_of(con, f"""
        WITH {_SHARES_READ}, suspect AS ({_SUSPECT_BODY})
        SELECT {cols}, share AS timing_share
        FROM link_residuals JOIN shares USING (link_id, tx_port)
        SEMI JOIN suspect USING (link_id, tx_port)
        ORDER BY link_id, tx_port, window_start""", params)
    by_dir: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        by_dir.setdefault((r["link_id"], r["tx_port"]), []).append(r)
    found: dict[str, Incident] = {}
    runs: dict[str, list[dict]] = {}
    noise = span_noise(con, floors)
    for (link, tx_port), series in by_dir.items():
        for run, strength in _runs(series, floors, noise):
            inc = found.get(link)
            if inc is None or strength > inc.evidence[0]["evidence_z"]:
                found[link] = _loss_incident(link, tx_port, run, strength, floors,
                                             _beyond_floor(run, floors, noise))
                runs[link] = run
    for (link, tx_port), rows, strength, beyond in _lasting(con, by_dir, floors, edge, cols):
        # a run found in the link replaced only by a loss that goes on beyond it; both of a
        # cable's directions lasting: the stronger (project seed 16008 crashed here)
        if (link not in found
                or (link in runs and _beyond_run(runs[link], rows, floors))
                or (link not in runs and strength > found[link].evidence[0]["evidence_z"])):
            found[link] = _loss_incident(link, tx_port, rows, strength, floors, beyond)
    con.execute("DROP TABLE IF EXISTS temp._link_shares")
    return list(found.values())


LASTING_SHARE = 2 / 3  # ... most of them short of what the sender sent


def _beyond_run(run: list[dict], rows: list[dict], floors: dict[int | None, NoiseFloor]) -> bool:
    """Whether a direction's lasting deficit (`rows`, `_lasting`) goes on beyond the run found
    in it: its windows outside the run short by at least half the run's deficit on average (as
    `_runs` widens a run), a loss window after window that the run is only the loudest part of."""
    inside = {r["window_start"] for r in run}
    outside = [r for r in rows if r["window_start"] not in inside]
    if not outside:
        return False
    mean = sum(_excess(r, floors) for r in run) / len(run)
    return sum(_excess(r, floors) for r in outside) / len(outside) >= mean / 2


def _inside(series: list[dict], k: int, good: list[bool]) -> bool:
    """Whether window k lies away from the edges of what both ends counted (see `_runs`)."""
    r = series[k]
    return ((0 < k < len(series) - 1 and good[k - 1] and good[k + 1])
            or (r.get("edge_s") or 0.0) >= (r["sample_s"] or math.inf))


def _lasting(con: duckdb.DuckDBPyConnection, by_dir: dict[tuple[str, str], list[dict]],
             floors: dict[int | None, NoiseFloor], edge: str, cols: str):
    """((link, tx port), windows, strength, (deficit, floor)) of each direction whose deficit
    over all its computable windows stands Z_REAL beyond what the same bundle's other
    directions show, though no window may stand out on its own: a loss of a few percent,
    window after window.

    Per direction (its windows away from the edges of what both ends counted, `_inside`, of its
    commoner basis), u = (its summed deficit ratio - the bundle's median - what read timing can
    move at the edges of its runs of adjacent windows) * windows / (the window noise x
    sqrt(runs)): about a standard normal, or below, on a healthy link. Counters are cumulative:
    a window's deficit is the difference of what its two boundaries' interpolated reads are off
    by, so over adjacent windows the inner boundaries cancel and the summed deficit's noise is
    a single window's (per run), not sqrt(windows) of them. The other directions' u (their
    median and MAD) are the floor: systematic offsets of healthy links (a NIC that counts what
    a switch does not, read timing) widen it, so only an outlier counts. One SQL aggregate per
    direction (a bundle of a million windows stays cheap); the rows only for the few found."""
    values = ", ".join(f"({'NULL' if c is None else int(c)}::INT, {f.median!r}, {f.sigma!r})"
                       for c, f in floors.items())
    cand = []
    for link, tx, basis, n, runs, sent, got, med, timing, moved, sigma, short, t_share in con.execute(
            _LASTING_SQL.format(floors=values, edge=edge, shares=_SHARES_READ)).fetchall():
        if n < LASTING_WINDOWS or not sent or sent <= 0:
            continue
        deficit = (sent - got) / sent
        # read timing moves counts between adjacent windows, and over a run of them those
        # moves cancel but at its edges: twice its largest window's share per run, and never
        # more than all its windows' together; of the offset the cable's ends are measured at
        timing = t_share * min(moved, 2 * runs * timing) / sent
        scale = n / math.sqrt(runs)
        u = (deficit - med - timing) * scale / sigma
        cand.append(((link, tx), basis, n, u, short, (deficit, med + timing, sigma / scale),
                     t_share))
    if len(cand) < 2 * LASTING_WINDOWS:
        return
    us = sorted(c[3] for c in cand)
    centre = us[len(us) // 2]
    spread = max(1.0, sorted(abs(u - centre) for u in us)[len(us) // 2] * MAD_TO_SIGMA)
    for key, basis, _n, u, share, (deficit, base, noise), t_share in cand:
        z = (u - centre) / spread
        if z >= Z_REAL and share >= LASTING_SHARE:
            # a lasting loss has no window above Z_RUN: its rows were not read with the suspects'
            series = by_dir[key] if key in by_dir else _direction_rows(con, key, cols, t_share)
            good = [r["status"] in ("ok", "idle") for r in series]
            rows = [r for k, r in enumerate(series) if r["status"] == "ok" and r["basis"] == basis
                    and r["deficit_ratio"] is not None and _inside(series, k, good)]
            # the deficit ratio a direction of this many windows had to reach
            floor = base + (centre + Z_REAL * spread) * noise
            yield key, rows, z, (deficit, floor)


_LASTING_SQL = """
    WITH f(cadence, med, sig) AS (VALUES {floors}), {shares},
    r AS (
        SELECT link_id, tx_port, window_start, status, basis, deficit_ratio, sample_s, granularity,
               coalesce(CASE basis WHEN 'packets' THEN sent_packets_per_s
                        ELSE sent_bytes_per_s END, 0) AS sent,
               coalesce(CASE basis WHEN 'packets' THEN received_packets_per_s
                        ELSE received_bytes_per_s END, 0) AS got,
               coalesce(rate_change, 1.0) * coalesce(sample_s, epoch(window_end - window_start))
                   / greatest(epoch(window_end - window_start), 1e-9) AS step,
               coalesce(lag(status IN ('ok', 'idle')) OVER w, false)
                   AND coalesce(lead(status IN ('ok', 'idle')) OVER w, false) AS between_good,
               coalesce({edge}, 0) >= coalesce(sample_s, 'infinity'::DOUBLE) AS edge_in,
               round(log2(greatest(coalesce(sample_s, 1e-3), 1e-3)))::INT AS cadence
        FROM link_residuals WINDOW w AS (PARTITION BY link_id, tx_port ORDER BY window_start)
    ), q AS (
        SELECT *, status = 'ok' AND deficit_ratio IS NOT NULL AND (between_good OR edge_in) AS kept
        FROM r
    ), o AS (  -- `opens`: a kept window whose predecessor is not kept, or of another basis
        SELECT *, coalesce(lag(CASE WHEN kept THEN basis END) OVER w, '') <> basis AS opens
        FROM q WINDOW w AS (PARTITION BY link_id, tx_port ORDER BY window_start)
    ), k AS (
        SELECT o.*, coalesce(f.med, g.med) AS med,
               greatest(coalesce(f.sig, g.sig), coalesce(granularity, 0), 1e-9) AS sigma
        FROM o LEFT JOIN f USING (cadence) CROSS JOIN (SELECT med, sig FROM f WHERE cadence IS NULL) g
        WHERE kept
    ), d AS (
        SELECT link_id, tx_port, basis, count(*) AS n, sum(opens::INT) AS runs, sum(sent) AS sent,
               sum(got) AS got, avg(med) AS med, max(step * sent) AS timing,
               sum(step * sent) AS moved, max(sigma) AS sigma,
               avg((deficit_ratio > med)::INT) AS short
        FROM k GROUP BY ALL
    )
    SELECT link_id, tx_port, arg_max(basis, n) AS basis, arg_max(n, n) AS n,
           arg_max(runs, n) AS runs, arg_max(sent, n) AS sent, arg_max(got, n) AS got,
           arg_max(med, n) AS med, arg_max(timing, n) AS timing, arg_max(moved, n) AS moved,
           arg_max(sigma, n) AS sigma, arg_max(short, n) AS short, any_value(s.share) AS share
    FROM d JOIN shares s USING (link_id, tx_port) GROUP BY link_id, tx_port"""

# A window's relative deficit that a step in traffic alone can show if the two ends were read a
# whole sample interval apart (`_step_bound`), per residual row of link_residuals
_STEP = """coalesce(rate_change, 1.0)
           * coalesce(nullif(sample_s, 0), epoch_us(window_end - window_start) / 1e6)
           / greatest(epoch_us(window_end - window_start) / 1e6, 1e-9)"""

# Per link direction, the share of that whole-interval offset its ends' reads are measured to be
# apart (`timing_share`, at most 1): both directions of a cable are read by the same two clocks,
# so an offset moves the counts of each by its own rate's change, and the other direction's
# deficits (beyond the bundle's median: no loss assumed there) over its own steps bound it:
# sqrt(sum of squared deficits / sum of squared step bounds). Noise and a loss the other way
# only raise it (a miss, never a false loss); 1 where it cannot be measured (no computable
# window the other way, fewer than LASTING_WINDOWS, or a rate that never changed).
_SHARES_CTE = f"""shares AS (
    WITH t AS (
        SELECT link_id, tx_port, count(*) AS n, sum((deficit_ratio - $median) ** 2) AS d2,
               sum(({_STEP}) ** 2) AS s2
        FROM link_residuals
        WHERE status = 'ok' AND deficit_ratio IS NOT NULL AND rate_change IS NOT NULL
        GROUP BY ALL)
    SELECT d.link_id, d.tx_port, CASE WHEN t.n >= {LASTING_WINDOWS} AND t.s2 > 0
                                      THEN least(1.0, sqrt(t.d2 / t.s2)) ELSE 1.0 END AS share
    FROM (SELECT DISTINCT link_id, tx_port FROM link_residuals) d
    LEFT JOIN t ON t.link_id = d.link_id AND t.tx_port <> d.tx_port)"""

# The directions `_runs` can find a run in: a window whose z (`_z`) could exceed Z_RUN, bounded
# from above so that no such direction is left out: the smallest median and sigma of any of the
# bundle's floors (whichever cadence the row's is), the pause rule and the edge rule left out,
# NaN kept (DuckDB orders it above every number), and a margin for the rounding of the window's
# length. It must stay a superset of the windows `_z` scores above Z_RUN (rows carrying the
# direction's `timing_share`, as find_silent_loss reads them).
_SUSPECT_BODY = f"""
    SELECT DISTINCT link_id, tx_port FROM link_residuals JOIN shares USING (link_id, tx_port)
    WHERE status = 'ok' AND deficit_ratio IS NOT NULL
      AND (deficit_ratio - $least_median - share * {_STEP})
          / greatest($least_sigma, coalesce(granularity, 0.0), 1e-9) > $z"""
_SUSPECT_SQL = f"WITH {_SHARES_CTE} {_SUSPECT_BODY}"
# `_SHARES_CTE` as find_silent_loss materialises it, once for its two reads (an aggregate and a
# join over every residual row, 1.4M on the 256-switch hour)
_SHARES_READ = "shares AS (SELECT * FROM temp._link_shares)"


def _suspect_params(floors: dict[int | None, NoiseFloor]) -> dict[str, float]:
    """`_SUSPECT_SQL`'s bounds: the least median and sigma of the floors, Z_RUN less a margin;
    and the bundle's median, which `timing_share` measures deficits from."""
    return {"least_median": min(f.median for f in floors.values()),
            "least_sigma": min(f.sigma for f in floors.values()), "z": Z_RUN - 1e-6,
            "median": floors[None].median}


def _floor_of(r: dict, floors: dict[int | None, NoiseFloor]) -> NoiseFloor:
    cadence = round(math.log2(max(r["sample_s"] or 1e-3, 1e-3)))
    return floors.get(cadence) or floors[None]


def _z(r: dict, floors: dict[int | None, NoiseFloor]) -> float | None:
    """How many of the bundle's robust sigmas this window's deficit stands above its median
    (the sigma no smaller than what whole-packet counters explain); None if not computable."""
    if r["status"] != "ok" or r["deficit_ratio"] is None:
        return None
    if r["basis"] == "packets" and r["deficit_packets_per_s"] <= 2 * (r["sender_pause_per_s"] or 0):
        return 0.0  # as many pause frames sent as packets missing: control frames, not loss
    return (r["deficit_ratio"] - _floor_of(r, floors).median - _step_bound(r)) / _sigma(r, floors)


def _sigma(r: dict, floors: dict[int | None, NoiseFloor]) -> float:
    """A window's noise: the bundle's robust sigma for its cadence, never below what the
    counters' resolution shows on their own (`granularity`: one packet per read, one timestamp
    quantum of traffic per end): a bundle whose steady links agree exactly has a MAD of about
    zero, and no floor is ever zero."""
    return max(_floor_of(r, floors).sigma, r["granularity"] or 0.0, 1e-9)


# the noise of a direction's deficit ratio summed over k adjacent windows, for a row of it
SpanNoise = Callable[[dict, int], float]


def span_noise(con: duckdb.DuckDBPyConnection, floors: dict[int | None, NoiseFloor]) -> SpanNoise:
    """The robust sigma of the deficit ratio summed over k adjacent computable windows of a
    direction, per sampling cadence, measured on the bundle (the MAD of every direction's
    k-window sums: the few lossy ones barely move it), never below the counters' resolution.
    Counters are cumulative: a window's deficit is the difference of what its two boundaries'
    interpolated reads are off by, so over adjacent windows the inner boundaries cancel and the
    sum's noise stays about one window's (measured: writer2 seed 8000 w026, 1.84e-3 for one
    window, 1.35e-3 for two, 1.41e-3 for three; writer3 seed 600 w3_020 1.09e-3, 1.20e-3,
    1.07e-3), where independent windows would give sqrt(k) times it: sums of windows away
    from a partial one are even quieter than single windows, which include those beside it.
    Too few sums for a cadence and k (MIN_FLOOR_ROWS): sqrt(k) times one window's."""
    cache: dict[tuple[int | None, int], float | None] = {}

    def measured(cadence: int | None, k: int) -> float | None:
        if (cadence, k) not in cache:
            row = con.execute(f"""
                WITH r AS (
                    SELECT round(log2(greatest(sample_s, 1e-3)))::INT AS c,
                           sum(deficit_ratio) OVER w AS s,
                           count(*) FILTER (WHERE status = 'ok' AND deficit_ratio IS NOT NULL)
                               OVER w AS n
                    FROM link_residuals
                    WINDOW w AS (PARTITION BY link_id, tx_port ORDER BY window_start
                                 ROWS BETWEEN CURRENT ROW AND {k - 1} FOLLOWING)),
                g AS (SELECT s FROM r WHERE n = {k} AND ($c IS NULL OR c = $c))
                SELECT count(*), median(abs(s - (SELECT median(s) FROM g))) FROM g""",
                {"c": cadence}).fetchall()[0]
            cache[cadence, k] = (MAD_TO_SIGMA * float(row[1])
                                 if row[0] >= MIN_FLOOR_ROWS and row[1] is not None else None)
        return cache[cadence, k]

    def noise(r: dict, k: int) -> float:
        one = _sigma(r, floors)
        got = measured(_floor_of(r, floors).cadence, k) if k > 1 else None
        # the counters' resolution bounds it from below, as it does one window's (`_sigma`)
        return max(got, r["granularity"] or 0.0, 1e-9) if got is not None else one * math.sqrt(k)

    return noise


def _independent(floors: dict[int | None, NoiseFloor]) -> SpanNoise:
    """The span noise if windows were independent: sqrt(k) times one window's."""
    return lambda r, k: _sigma(r, floors) * math.sqrt(k)


def _runs(series: list[dict], floors: dict[int | None, NoiseFloor],
          noise: SpanNoise | None = None):
    """(rows, strength) of each run of consecutive windows above Z_RUN, widened by the windows
    beside it that the loss covers most of (a loss that starts or ends inside a window shows
    that part of its rate there: at least half the run's deficit, so that the span reported is
    the loss's to the nearest window boundary), whose evidence reaches Z_REAL, and whose deficit holds
    over the run and the windows either side of it. The evidence: the run's z combined
    (Stouffer), or the widened run's deficit summed against what the bundle's noise gives a
    sum of that many windows (`noise`, `span_noise`; independent windows without it): a loss
    of 1% for 106 s in 60 s windows is 0.7% in one window and 1% in the next, z 2.99 and 5.4,
    and 11.4 together (writer2 seed 8000 w026).

    The second test is conservation over a longer span: a rate step inside a sample interval
    that straddles a window boundary moves counts between the two windows at one end only (the
    counter is interpolated linearly inside the interval), a deficit in one window and a surplus
    in the next that cancel; lost packets never come back. A window that is not computable
    ends a run, and so does a window next to the edge of what both ends counted (the first
    and last windows, or one beside a window that is not computable: partial, reset) unless
    it lies a sample interval or more inside both ends' reads (`edge_s`): ends whose clocks are
    skewed count different spans of a traffic that starts or stops, and a step before a port's
    first read (or after its last) is one no sample of it shows."""
    noise = noise or _independent(floors)
    good = [r["status"] in ("ok", "idle") for r in series]
    zs = []
    for k, r in enumerate(series):
        inside = (0 < k < len(series) - 1 and good[k - 1] and good[k + 1]) or (
            (r.get("edge_s") or 0.0) >= (r["sample_s"] or math.inf))
        zs.append(_z(r, floors) if inside else None)
    k = 0
    while k < len(series):
        if zs[k] is None or zs[k] <= Z_RUN:
            k += 1
            continue
        last = k
        while last + 1 < len(series) and zs[last + 1] is not None and zs[last + 1] > Z_RUN:
            last += 1
        run_z = [zs[i] for i in range(k, last + 1)]
        half = sum(_excess(r, floors) for r in series[k:last + 1]) / (2 * len(run_z))

        def part(i: int, half: float = half) -> bool:  # a neighbour the loss covers most of
            return zs[i] is not None and zs[i] > 0 and _excess(series[i], floors) >= half

        first, end = k, last
        while first > 0 and part(first - 1):
            first -= 1
        while end + 1 < len(series) and part(end + 1):
            end += 1
        rows = series[first:end + 1]
        strength = max(sum(run_z) / math.sqrt(len(run_z)), _summed_z(rows, floors, noise))
        if strength >= Z_REAL and _span_z(series, first, end, floors, noise) >= Z_REAL:
            yield rows, strength
        k = end + 1


def _excess(r: dict, floors: dict[int | None, NoiseFloor]) -> float:
    """A window's deficit ratio beyond the bundle's median for its cadence."""
    return r["deficit_ratio"] - _floor_of(r, floors).median


def _summed_z(rows: list[dict], floors: dict[int | None, NoiseFloor], noise: SpanNoise) -> float:
    """The z of adjacent windows' deficit ratios summed: less each one's median and what read
    timing can move (`_step_bound`), over the noise of a sum of that many windows."""
    excess = sum(_excess(r, floors) for r in rows) - _span_timing(rows) * len(rows)
    return excess / max(noise(r, len(rows)) for r in rows)


def _span_z(series: list[dict], first: int, last: int,
            floors: dict[int | None, NoiseFloor], noise: SpanNoise) -> float:
    """The z of the deficit over windows first-1 .. last+1 (the neighbours where they are
    computable, idle ones included): packets lost over the span against its packets sent, and
    the noise of a sum of that many windows (`span_noise`)."""
    span = [series[i] for i in range(max(0, first - 1), min(len(series), last + 2))
            if series[i]["status"] in ("ok", "idle") and series[i]["basis"] == series[first]["basis"]]
    basis = series[first]["basis"]
    sent = sum(r[f"sent_{basis}_per_s"] or 0.0 for r in span)
    got = sum(r[f"received_{basis}_per_s"] or 0.0 for r in span)
    if sent <= 0:
        return 0.0
    f = _floor_of(series[first], floors)
    sigma = max(noise(r, len(span)) for r in span)
    # what read timing can move over the span: the rate's change between the span's ends
    timing = _span_timing(span)
    # windows are equally long: the span's ratio is the ratio of summed rates, times the
    # windows the sum of their ratios
    return ((sent - got) / sent - f.median - timing) * len(span) / sigma


def _beyond_floor(run: list[dict], floors: dict[int | None, NoiseFloor],
                  noise: SpanNoise) -> tuple[float, float]:
    """(the run's mean deficit ratio, the floor it had to clear): per window, the bundle's
    median, what the read-time offset can do (`_step_bound`) and its share of the noise a sum
    of that many windows needs to reach Z_REAL (`span_noise`, never less than the counters'
    resolution)."""
    deficit = sum(r["deficit_ratio"] for r in run) / len(run)
    need = Z_REAL * max(noise(r, len(run)) for r in run) / len(run)
    floor = sum(_floor_of(r, floors).median + _step_bound(r) for r in run) / len(run) + need
    return deficit, floor


def loss_score(deficit: float, floor: float) -> float:
    """A silent loss's score from how far its deficit stands beyond the floor it cleared (the
    floor holds Z_REAL sigma of noise already): under 0.5 just past it, where a healthy
    bundle's worst window could reach, 0.5 a quarter beyond it, 0.9 at 10 times it or more."""
    ratio = max(deficit / max(floor, 1e-12), 1e-12)
    return float(min(0.9, max(0.3, 0.5 + 0.4 * math.log(ratio / 1.25) / math.log(8.0))))


def _loss_incident(link: str, tx_port: str, run: list[dict], strength: float,
                   floors: dict[int | None, NoiseFloor],
                   beyond: tuple[float, float]) -> Incident:
    """`beyond`: (deficit, floor) the run cleared (`_beyond_floor`, or `_lasting`'s)."""
    worst = max(run, key=lambda r: r["deficit_ratio"])
    floor = _floor_of(worst, floors)
    deficit, needed = beyond
    errors = sum(r["errors_per_s"] or 0.0 for r in run) / len(run)
    evidence = [{"tx_port": tx_port, "rx_port": r["rx_port"], "window_start": _iso(r["window_start"]),
                 "window_end": _iso(r["window_end"]), "basis": r["basis"],
                 "sent_per_s": r[f"sent_{r['basis']}_per_s"],
                 "received_per_s": r[f"received_{r['basis']}_per_s"],
                 "deficit_pct": round(100 * r["deficit_ratio"], 3),
                 "errors_per_s": round(r["errors_per_s"] or 0.0, 3)} for r in run]
    evidence.insert(0, {"link": link, "direction": f"{tx_port} -> {worst['rx_port']}",
                        "windows": len(run), "evidence_z": round(strength, 2),
                        "worst_deficit_pct": round(100 * worst["deficit_ratio"], 3),
                        "mean_deficit_pct": round(100 * deficit, 4),
                        "floor_pct": round(100 * needed, 4),
                        "noise_floor": floor.as_json()})
    how = "with no error counter moving" if errors == 0 else f"({errors:.1f} errors or discards/s)"
    return Incident(
        "link_degraded", "link", link, run[0]["window_start"], run[-1]["window_end"],
        loss_score(deficit, needed),
        f"link {link} loses up to {100 * worst['deficit_ratio']:.2f}% of what {tx_port} sends "
        f"{how}, over {len(run)} window(s) ({deficit / max(needed, 1e-12):.1f}x the floor "
        f"that read timing, counter resolution and the bundle's noise give)",
        evidence)


def find_low_speed(con: duckdb.DuckDBPyConnection) -> list[Incident]:
    """link_degraded where a link runs below the speed of the links of the same role on each of
    its devices that has such links, and below the fabric's links of that role."""
    from replay.hosts import HOSTS

    rows = analysis_cache.kept_rows(con, "low_speed", f"""
        WITH hosts AS {HOSTS},
        speed AS (  -- per port: its lowest reported speed, and when it reported that
            SELECT device || ':' || ifname AS port, min(value) AS bps
            FROM samples WHERE counter = 'port_speed_bps' AND value > 0 GROUP BY ALL
        ), low_at AS (  -- still: its latest speed sample reports that speed
            SELECT s.device || ':' || s.ifname AS port, min(s.ts) FILTER (WHERE s.value = p.bps)
                   AS start, max(s.ts) FILTER (WHERE s.value = p.bps) AS last,
                   arg_max(s.value, s.ts) = p.bps AS still
            FROM samples s JOIN speed p ON p.port = s.device || ':' || s.ifname
            WHERE s.counter = 'port_speed_bps' GROUP BY s.device, s.ifname, p.bps
        ), ends AS (  -- each link from each of its ends, with the role of its far end
            SELECT link_id, device_a AS device, port_a AS port, device_b IN (SELECT device FROM hosts)
                   AS to_host FROM links
            UNION ALL SELECT link_id, device_b, port_b, device_a IN (SELECT device FROM hosts)
            FROM links
        ), link_speed AS (
            SELECT l.link_id, min(s.bps) AS bps, (SELECT count(*) FROM ends x WHERE x.link_id = l.link_id
                   AND x.to_host) > 0 AS host_link
            FROM links l JOIN speed s ON s.port IN (l.port_a, l.port_b) GROUP BY ALL
        ), peers AS (  -- per end: the median speed of the device's other links of the same role
            SELECT e.link_id, e.device, median(o.bps) AS peer_bps, count(*) AS peers
            FROM ends e JOIN ends f ON f.device = e.device AND f.to_host = e.to_host
                                    AND f.link_id <> e.link_id
            JOIN link_speed o ON o.link_id = f.link_id GROUP BY ALL
        ), fabric AS (SELECT host_link, median(bps) AS fabric_bps, count(*) AS links
                      FROM link_speed GROUP BY ALL)
        SELECT k.link_id, k.bps, k.host_link, f.fabric_bps, f.links AS fabric_links,
            list({{'device': p.device, 'peer_bps': p.peer_bps, 'peers': p.peers}}
                 ORDER BY p.device) AS ends,  -- ordered: the same evidence on every run
            bool_and(k.bps < {SPEED_RATIO} * p.peer_bps) AS below_every_device,
            (SELECT min(start) FROM low_at a JOIN links l ON a.port IN (l.port_a, l.port_b)
             WHERE l.link_id = k.link_id) AS start,
            (SELECT max(last) FROM low_at a JOIN links l ON a.port IN (l.port_a, l.port_b)
             WHERE l.link_id = k.link_id) AS last,
            (SELECT bool_or(still) FROM low_at a JOIN links l ON a.port IN (l.port_a, l.port_b)
             WHERE l.link_id = k.link_id) AS still
        FROM link_speed k JOIN peers p USING (link_id) JOIN fabric f USING (host_link)
        GROUP BY ALL
        HAVING below_every_device AND k.bps < {SPEED_RATIO} * f.fabric_bps
        ORDER BY k.link_id""")
    out = []
    for r in rows:
        peer = max(e["peer_bps"] for e in r["ends"])
        out.append(Incident(  # end None: still at that speed at its last report
            "link_degraded", "link", r["link_id"], r["start"], None if r["still"] else r["last"],
            min(0.9, 0.7 + 0.1 * math.log2(peer / r["bps"])),
            f"link {r['link_id']} runs at {r['bps'] / 1e9:g} Gb/s where its peers run at "
            f"{peer / 1e9:g} Gb/s (a lower negotiated speed)",
            [{"link": r["link_id"], "speed_bps": r["bps"], "fabric_median_bps": r["fabric_bps"],
              "fabric_links": r["fabric_links"], "host_link": r["host_link"],
              "ends": r["ends"], "low_since": _iso(r["start"]), "low_until": _iso(r["last"])}]))
    return out


def counter_flaps(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Per port, each sample interval in which a carrier or link-down counter moved: port, link,
    counter, ts_start, ts, delta (resets and clears give no delta, so never a flap)."""
    names = ", ".join(f"'{c}'" for c in FLAP_COUNTERS)
    return analysis_cache.kept_rows(con, "counter_flaps", f"""
        WITH d AS (SELECT port, counter, ts_start, ts, delta
                   FROM sample_deltas([{names}]) WHERE delta > 0),
        n AS (SELECT DISTINCT hash(device, ifname) AS port, device, ifname FROM samples
              WHERE counter IN ({names}))
        SELECT n.device || ':' || n.ifname AS port, coalesce(
                   (SELECT link_id FROM links WHERE port_a = n.device || ':' || n.ifname
                    OR port_b = n.device || ':' || n.ifname LIMIT 1),
                   n.device || ':' || n.ifname) AS link,
               d.counter, d.ts_start, d.ts, d.delta
        FROM d JOIN n USING (port) ORDER BY link, d.ts_start""")


def short_flaps(moves: list[dict], outages: dict[str, list[tuple[datetime, datetime]]]
                ) -> dict[str, list[dict]]:
    """The counter moves (`counter_flaps`) of each link that no outage of a second or more
    (`outages`: per link, merged down intervals) explains: an interval overlapping an outage is
    that outage's own transition. So is an odd carrier-transitions move within a sample
    interval of an outage's start or end: one transition, not a flap (a flap is down and up),
    a net change of state that the state read of the same poll missed (a read's counters and
    oper status are not one instant: the project's seed 18023, carrier 1 -> 2 at a read that
    still says up, down from the next read on, the link down once). A down-event counter's move
    in the interval just before an outage starts holds that outage's down where no move of the
    same counter overlaps the start (the read stamped before the down that it counted: writer2
    seed 21038, link_down_events +1 over 07:00:47.9-57.9, the down logged at 07:00:58.1 and
    58.5): one down fewer, a flap only if more remain."""
    out: dict[str, list[dict]] = {}
    for m in moves:
        known = outages.get(m["link"], [])
        if any(s <= m["ts"] and m["ts_start"] <= e for s, e in known):
            continue
        if m["counter"] == "carrier_transitions" and int(m["delta"]) % 2 == 1:
            gap = m["ts"] - m["ts_start"]
            if any(m["ts"] < s <= m["ts"] + gap or m["ts_start"] - gap <= e < m["ts_start"]
                   for s, e in known):
                continue
        elif m["counter"] != "carrier_transitions" and _counted_early(m, known, moves):
            if m["delta"] <= 1:
                continue
            m = {**m, "delta": m["delta"] - 1}
        out.setdefault(m["link"], []).append(m)
    return out


def _counted_early(m: dict, known: list[tuple[datetime, datetime]], moves: list[dict]) -> bool:
    """Whether a down-event move `m` holds the down of an outage starting within a sample
    interval after it: no move of the same port and counter overlaps that outage's start."""
    gap = m["ts"] - m["ts_start"]
    return any(m["ts"] < s <= m["ts"] + gap and not any(
        o["port"] == m["port"] and o["counter"] == m["counter"] and o["ts_start"] <= s <= o["ts"]
        for o in moves) for s, _ in known)


def flap_episodes(moves: list[dict]) -> list[tuple[datetime, datetime, int, set[str]]]:
    """One link's unexplained counter moves as flaps: overlapping intervals (either end, any
    counter) are one episode; per episode (start, end, flaps, ports). Carrier transitions count
    down and up (two per flap), down-event counters one per flap."""
    episodes: list[list[dict]] = []
    for m in sorted(moves, key=lambda m: m["ts_start"]):
        if episodes and m["ts_start"] <= max(x["ts"] for x in episodes[-1]):
            episodes[-1].append(m)
        else:
            episodes.append([m])
    out = []
    for ep in episodes:
        per = {}
        for m in ep:
            n = m["delta"] / 2 if m["counter"] == "carrier_transitions" else m["delta"]
            per[(m["port"], m["counter"])] = per.get((m["port"], m["counter"]), 0) + n
        out.append((min(m["ts_start"] for m in ep), max(m["ts"] for m in ep),
                    max(1, math.ceil(max(per.values()))), {m["port"] for m in ep}))
    return out

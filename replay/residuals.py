"""Conservation residuals: what one end of a cable sent is what the other end received.

Per link, direction and replay window (the windows of `expected_ports`), the sending port's
tx against the receiving port's rx (packets where both count them, else bytes); per switch and
window, everything its ports received against everything they sent. The rows land in
`link_residuals` and `switch_residuals` (replay/sql/results.sql, README "Tables and views").

Counters of two devices never agree exactly: their clocks are skewed and their samples fall at
different instants, so a window's two averages cover slightly different seconds. The noise
floor is measured on the bundle itself: the median and MAD of the relative deficits of every
link and window that carried traffic; beside it, per row, what read timing can show
(`rate_change`: the sent rate's change between the window's boundaries, at sample level) and
what the counters' resolution can (`granularity`: a packet per read, a timestamp quantum of
traffic per end), so that a bundle whose steady links agree exactly (a MAD of about zero) still
has a floor. A window is not computable (and says so in `status`, no
guess) where an end exports nothing (a silent device: its links are seen from the other end
only) or a counter was reset or cleared in it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib import resources

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa

from replay import analysis_cache
from replay.port_sums import link_pairs, span_of, sums_for
from replay.results import RESULT_DDL, ensure_results

SQL = (resources.files("replay") / "sql" / "residuals.sql").read_text()
# a robust standard deviation from a MAD (normal noise)
MAD_TO_SIGMA = 1.4826


def _statements() -> dict[str, str]:
    """The named statements of residuals.sql (`-- name: x` starts one)."""
    out: dict[str, str] = {}
    name = None
    for line in SQL.splitlines():
        if line.startswith("-- name:"):
            name = line.split(":", 1)[1].strip()
            out[name] = ""
        elif name:
            out[name] += line + "\n"
    return out


STATEMENTS = _statements()


def _residual_ddl() -> list[str]:
    """The CREATE TABLE statements of link_residuals and switch_residuals in
    replay/sql/results.sql (split here, not at import: DuckDB's parser starts its default
    database, about 30 ms of CPU, that only a read-only store's residuals need)."""
    return [q.query for q in duckdb.extract_statements(RESULT_DDL)
            if "TABLE IF NOT EXISTS link_residuals" in q.query
            or "TABLE IF NOT EXISTS switch_residuals" in q.query]


@dataclass
class Windows:
    """The replay windows the residuals use: [t_from + k * window_s, ...) up to t_to."""

    t_from: datetime
    t_to: datetime
    window_s: float

    @property
    def count(self) -> int:
        return max(1, math.ceil((self.t_to - self.t_from).total_seconds() / self.window_s - 1e-9))


def replay_windows(con: duckdb.DuckDBPyConnection) -> Windows | None:
    """The latest replay's windows (`replay_runs`); without a replay, the windows a replay of
    the whole store would use (replay.expected.replay's rule); None without samples."""
    from replay.expected import default_window_s  # the twin's import chain only when needed

    run = con.execute("SELECT t_from, t_to, window_s FROM replay_runs "
                      "WHERE t_from IS NOT NULL AND t_to > t_from").fetchone()
    if run:
        return Windows(run[0], run[1], float(run[2]))
    lo, hi = con.execute("SELECT min(ts), max(ts) FROM samples").fetchone()
    if lo is None or hi <= lo:
        return None
    window_s = default_window_s(con)
    epoch = datetime(1970, 1, 1)
    t_from = epoch + timedelta(seconds=((lo - epoch).total_seconds() // window_s) * window_s)
    return Windows(t_from, hi, window_s)


def compute_residuals(con: duckdb.DuckDBPyConnection, windows: Windows | None = None,
                      schema: str = "main") -> int:
    """Replace `<schema>.link_residuals` and `<schema>.switch_residuals` with the residuals of
    `windows` (default: the latest replay's); returns the link rows written. `schema="temp"`
    computes them beside a read-only store (temp tables of the same names shadow the store's)."""
    from replay.hosts import HOSTS

    if schema == "main":
        ensure_results(con)
        # a store whose link_residuals predates `edge_s`, `rate_step` or the bends: the columns
        # added (in the order of the table's DDL), the rows replaced
        for column in ("edge_s", "rate_step", "bend_start", "bend_end", "uncounted_share"):
            con.execute(f"ALTER TABLE main.link_residuals ADD COLUMN IF NOT EXISTS {column} DOUBLE")
    else:  # the tables' own DDL, as temp tables (a read-only or older store may lack them)
        for ddl in _residual_ddl():
            con.execute(ddl.replace("CREATE TABLE IF NOT EXISTS", "CREATE TEMP TABLE IF NOT EXISTS"))
    if schema == "main":
        analysis_cache.forget_tables(con)
    for table in ("link_residuals", "switch_residuals"):
        con.execute(f"DELETE FROM {schema}.{table}")
    windows = windows or replay_windows(con)
    if windows is None:
        return 0
    fmt = {"window_s": windows.window_s, "n_win": windows.count, "hosts": HOSTS,
           "span_s": (windows.t_to - windows.t_from).total_seconds()}
    frames = _port_sums(con, windows, fmt)
    con.complete()  # register refuses to run beside a result left open (a fetchone's)
    for name, frame in frames.items():
        con.register(name, frame)
    try:
        con.execute(f"""
            CREATE OR REPLACE TEMP TABLE _resid_ports AS
            SELECT c.port, c.device, {_PORT_COLUMNS},
                least({fmt["window_s"]}, {fmt["span_s"]} - w * {fmt["window_s"]}) AS window_secs,
                first_t, last_t
            FROM _resid_ports_frame JOIN _resid_codes c USING (pc)""")
        at = {"t0": windows.t_from, "t_to": windows.t_to, "window_us": windows.window_s * 1e6}
        for name in ("link_residuals", "switch_residuals"):
            sql = STATEMENTS[name].format(**fmt).replace(f"INSERT INTO {name}",
                                                         f"INSERT INTO {schema}.{name}", 1)
            con.execute(sql, at)
    finally:
        for name in frames:
            con.unregister(name)
        con.execute("DROP TABLE IF EXISTS temp._resid_ports")
    return con.execute(f"SELECT count(*) FROM {schema}.link_residuals").fetchone()[0]


# _resid_ports' columns after port and device, but window_secs (SQL's, from the window's number)
_PORT_COLUMNS = ("w, secs, tx_bytes_secs, rx_bytes_secs, tx_packets_secs, rx_packets_secs, reset, "
                 "samples, sample_s, quantum_s, tx_bytes, rx_bytes, tx_packets, rx_packets, "
                 "errors, discards, tx_pause")


def _port_sums(con: duckdb.DuckDBPyConnection, windows: Windows, fmt: dict) -> dict[str, pa.Table]:
    """The frames residuals.sql reads, from the analysis' rate arrays (`replay.port_sums`):
    `_resid_ports_frame` (per port code and window) and `_resid_codes` (the codes' port and
    device) for `_resid_ports`, `_link_dirs` and `_link_pairs` for link_residuals."""
    sums = sums_for(con, span_of(windows.t_from, windows.t_to, windows.window_s, windows.count))
    ports, edges = sums.windows, sums.edges
    codes = pl.DataFrame({"port": sums.ports, "pc": np.arange(len(sums.ports), dtype=np.int64)})
    links = pl.DataFrame(con.execute("SELECT link_id, port_a, port_b FROM links").fetchall(),
                         schema={"link_id": pl.String, "port_a": pl.String, "port_b": pl.String},
                         orient="row")
    dirs = pl.concat([links.select("link_id", tx_port="port_a", rx_port="port_b"),
                      links.select("link_id", tx_port="port_b", rx_port="port_a")]
                     ).with_row_index("d")
    ends = dirs.join(codes.rename({"port": "tx_port", "pc": "tx"}), on="tx_port", how="left"
                     ).join(codes.rename({"port": "rx_port", "pc": "rx"}), on="rx_port",
                            how="left").sort("d")
    tx, rx = (ends[c].fill_null(-1).to_numpy() for c in ("tx", "rx"))
    return {"_resid_codes": pa.table({"pc": pa.array(codes["pc"].to_numpy().astype(np.int32)),
                                      "port": sums.ports, "device": sums.devices}),
            "_resid_ports_frame": ports.to_arrow("w"),
            "_link_dirs": dirs.with_columns(pl.col("d").cast(pl.Int64)).to_arrow(),
            "_link_pairs": link_pairs(ports, edges, tx, rx, windows.count, len(sums.ports))}


def residuals_present(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the connection sees residuals (a store only ingested, replayed before residuals
    existed, or older than the table, has none)."""
    if not con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'link_residuals'"
                       ).fetchone()[0]:
        return False
    return bool(con.execute("SELECT EXISTS (SELECT 1 FROM link_residuals)").fetchone()[0])


@dataclass
class NoiseFloor:
    """The bundle's own spread of relative deficits over the links and windows with traffic
    whose coarser end samples about as often (within a factor of two: `cadence` is
    round(log2(sample_s))); the whole bundle's where a cadence has too few rows."""

    cadence: int | None
    median: float
    sigma: float  # MAD x 1.4826
    rows: int

    def as_json(self) -> dict:
        return {"median_deficit_ratio": round(self.median, 6),
                "sigma_deficit_ratio": round(self.sigma, 6), "rows": self.rows,
                "sample_s_class": None if self.cadence is None else 2.0 ** self.cadence}


MIN_FLOOR_ROWS = 30  # rows a cadence needs for its own median and MAD


def noise_floors(con: duckdb.DuckDBPyConnection) -> dict[int | None, NoiseFloor]:
    """Median and MAD of `deficit_ratio` over the computable rows, per sampling cadence (key
    None: every row). Empty without a computable row."""
    rows = con.execute("""
        WITH r AS (SELECT round(log2(greatest(sample_s, 1e-3)))::INT AS c, deficit_ratio AS x
                   FROM link_residuals WHERE status = 'ok' AND deficit_ratio IS NOT NULL),
        g AS (SELECT NULL::INT AS c, x FROM r UNION ALL SELECT c, x FROM r),
        m AS (SELECT c, median(x) AS med, count(*) AS n FROM g GROUP BY c)
        SELECT m.c, any_value(med), median(abs(x - med)), any_value(n)
        FROM g JOIN m ON g.c IS NOT DISTINCT FROM m.c GROUP BY m.c""").fetchall()
    out = {c: NoiseFloor(c, float(med), MAD_TO_SIGMA * float(mad), int(n))
           for c, med, mad, n in rows}
    if None not in out:
        return {}
    return {c: f for c, f in out.items() if c is None or f.rows >= MIN_FLOOR_ROWS}

"""The two tables every analysis computes from all the samples (`port_rates` and
`link_state_intervals`: on the 256-switch hour about 40 s of the 116 s of CPU investigate takes),
kept in the store between runs so that a second diagnosis of the same store reads them back.

They are copies, in the store file, of what `replay.investigate.views_once` computes: tables
`analysis_port_rates` and `analysis_link_state_intervals` (the views' columns, plus port_rates'
integer port code and counter intervals), with `analysis_cache` holding the key they were
computed for (`cache_key`: the views' SQL, the `files` the store ingested, the samples' count
and time range, the small tables the views read). Any ingest that adds or replaces a file, any
change of the views' definitions, changes the key, and the tables are computed again and replaced.
They are written only into a DuckDB file opened for writing (investigate, replay): never
through a read-only connection, never into a Parquet lake (its connection is in memory).

Beside them, the arrays the replay derives from the rates (`save_arrays` / `load_arrays`: the
observed rates per port and window, the residuals' per-port sums, the sample interval), each in
a table `analysis_<name>` with its key in `analysis_derived`: the copies' key and the windows
they were computed for. A second diagnosis of the same store then never reads the rates into
arrays at all (on the 256-switch hour 8.76M rows, about 20 s of CPU).

And the replay's own tables (`expected_ports`, `expected_counters`, `link_residuals`,
`switch_residuals`): a replay whose inputs (the copies' key, the windows, the routing, the
fabric, the observed rates, link states and traffic groups it feeds the twin) and code are those
of the replay that wrote them does not write them again (`tables_kept`); any other write of them
drops their key first (`forget_tables`). Every derived key includes the code (`code_key`: the
sources of `replay` and `twin`), so a changed program never reads what an older one kept.
"""

from __future__ import annotations

import functools
import hashlib
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import numpy as np
import orjson
import pyarrow as pa

from collectors.store.schema import sql_text
from replay.stored import rows_of
from twin.topology import Fabric

VERSION = 2  # of the cached tables' layout (2: port_rates sorted): a change invalidates stores' copies
META = "analysis_cache"
# the views every analysis computes once (replay.investigate.views_once shadows them with temp
# tables of the same names, or temp views of the store's copies), and the store's copy of each
SHADOWED_VIEWS = ("port_rates", "link_state_intervals")
TABLES = {view: f"analysis_{view}" for view in SHADOWED_VIEWS}
DERIVED = "analysis_derived"  # name, key and shapes of each set of derived arrays
# the sets of derived arrays (`save_arrays`), each in its table analysis_<name>
DERIVED_SETS = ("observed_rates", "sample_interval", "port_windows", "port_edges", "port_codes")
# the replay's tables, and the row of analysis_derived naming the inputs they were computed for
# (its `shapes`: their row counts then; a row deleted by hand is a changed table)
REPLAY_TABLES = ("expected_ports", "expected_counters", "link_residuals", "switch_residuals")
KEPT_TABLES = "replay_tables"
# the detectors' statements over every sample whose results are kept (`kept_rows`)
KEPT_QUERIES = ("down_events", "counter_flaps", "low_speed")
CACHE_TABLES = (META, *TABLES.values(), DERIVED,  # every table this module writes
                *(f"analysis_{name}" for name in DERIVED_SETS + KEPT_QUERIES))


def shadow(con: duckdb.DuckDBPyConnection, name: str) -> tuple[str, int] | None:
    """('TABLE' or 'VIEW', its oid) of the temp relation `name` that shadows the store's view
    of that name within views_once (a table computed, or a view of the store's copy); None
    outside one."""
    row = con.execute("""
        SELECT 'TABLE', table_oid FROM duckdb_tables() WHERE temporary AND table_name = $n
        UNION ALL
        SELECT 'VIEW', view_oid FROM duckdb_views() WHERE temporary AND view_name = $n""",
                      {"n": name}).fetchone()
    return (row[0], row[1]) if row else None


def writable_file(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the connection's database is a DuckDB file open for writing."""
    row = con.execute("SELECT path, readonly FROM duckdb_databases() "
                      "WHERE database_name = current_database()").fetchone()
    return bool(row and row[0] and not row[1])


# the small tables the two views read besides samples: hashed whole (events and cabling of
# the 256-switch hour: a few thousand rows)
HASHED = ("events", "neighbors", "ifmap", "counters", "counter_map")


def cache_key(con: duckdb.DuckDBPyConnection, main: str) -> str:
    """What the analysis tables depend on: the views' SQL, the ingested files, the samples'
    count and time range, and the whole content of the small tables the views read (a row
    deleted or changed there by hand changes it; a sample changed in place by hand does not:
    drop `analysis_cache` after editing samples)."""
    files = con.execute(f"SELECT path, sha256, status, rows_written FROM {main}.files "
                        "ORDER BY file_id").fetchall()
    samples = con.execute(f"SELECT count(*), min(ts)::VARCHAR, max(ts)::VARCHAR "
                          f"FROM {main}.samples").fetchone()
    small = [con.execute(f"SELECT count(*), sum(hash(t))::VARCHAR FROM {main}.{table} t"
                         ).fetchone() for table in HASHED if _has(con, table)]
    h = hashlib.sha256(orjson.dumps([VERSION, sql_text("views.sql"), files, samples, small]))
    return h.hexdigest()


def _has(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    return bool(con.execute("SELECT count(*) FROM duckdb_tables() WHERE NOT temporary AND "
                            "database_name = current_database() AND schema_name = 'main' "
                            "AND table_name = ?", [table]).fetchall()[0][0])


def load(con: duckdb.DuckDBPyConnection, main: str, key: str) -> bool:
    """`port_rates` and `link_state_intervals` as temp views of the store's copies when they
    were computed for `key` (read where they are: a temp table of them would hold 1.4 GB of
    the 256-switch hour's in memory, and take 1.3 s to fill); False (nothing created) when
    they were not."""
    if not all(_has(con, t) for t in (META, *TABLES.values())):
        return False
    row = con.execute(f"SELECT key FROM {main}.{META}").fetchone()
    if not row or row[0] != key:
        return False
    for view, table in TABLES.items():
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT * FROM {main}.{table}")
    return True


def save(con: duckdb.DuckDBPyConnection, main: str, key: str) -> None:
    """Copy the temp tables into the store as the analysis tables of `key`. The key is
    dropped first and written last: an interrupted save leaves no key, so no stale copy."""
    con.execute(f"DROP TABLE IF EXISTS {main}.{META}")
    for view, table in TABLES.items():
        # port_rates sorted as replay.rate_arrays reads it: read back in that order, it
        # needs no sort of its own
        order = " ORDER BY pc, ts" if view == "port_rates" else ""
        con.execute(f"CREATE OR REPLACE TABLE {main}.{table} AS SELECT * FROM temp.{view}{order}")
    con.execute(f"CREATE TABLE {main}.{META} AS SELECT ?::VARCHAR AS key", [key])


# connection -> (main schema, key) of the copies its views_once block reads (`keyed`)
_KEYED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@contextmanager
def keyed(con: duckdb.DuckDBPyConnection, main: str, key: str | None) -> Iterator[None]:
    """Within the block, `load_arrays` and `save_arrays` of the connection use `key` (the
    copies'); without a key (a read-only store, a lake) they load nothing and save nothing."""
    if key is None:
        yield
        return
    _KEYED[con] = (main, key)
    try:
        yield
    finally:
        _KEYED.pop(con, None)


def keyed_now(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the connection is within a `keyed` block with a key."""
    return con in _KEYED


@functools.cache
def code_key() -> str:
    """sha256 of the sources of the packages that compute what is kept (`replay`, `twin`)."""
    import twin

    h = hashlib.sha256()
    for root in (Path(__file__).parent, Path(twin.__file__).parent):
        for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".sql")):
            h.update(f"{root.name}/{path.relative_to(root)}\n".encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def digest(*parts: object) -> str:
    """sha256 of `parts`: arrays by dtype, shape and bytes, anything else as JSON."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray):
            h.update(f"{part.dtype}{part.shape}".encode())
            h.update(memoryview(np.ascontiguousarray(part)).cast("B"))
        else:
            h.update(orjson.dumps(part, default=str, option=orjson.OPT_SERIALIZE_NUMPY))
    return h.hexdigest()


def fabric_digest(fabric: Fabric) -> str:
    """sha256 of what the replay reads of a fabric: its spec, nodes, cables (their port order is
    the rows of every per-port array) and endpoints."""
    return digest(
        repr(fabric.spec), fabric.node_name, fabric.cable_port_a, fabric.cable_port_b,
        *(getattr(fabric, name) for name in (
            "node_kind", "node_plane", "cable_a", "cable_b", "cable_gbps", "cable_plane",
            "cable_tier", "ep_host", "ep_nic", "ep_plane", "ep_cable", "ep_leaf")))


def _derived_key(key: str, params: object) -> str:
    return digest(code_key(), key, params)


def _derived_row(con: duckdb.DuckDBPyConnection, main: str, name: str) -> tuple[str, str] | None:
    """(key, shapes) of `name`'s row of analysis_derived; None without one."""
    if not _has(con, DERIVED):
        return None
    rows = con.execute(f"SELECT key, shapes FROM {main}.{DERIVED} WHERE name = ?",
                       [name]).fetchall()
    return rows[0] if rows else None


def _drop_row(con: duckdb.DuckDBPyConnection, main: str, name: str) -> None:
    """`name`'s row of analysis_derived gone (the table made if need be): what it keyed is
    about to be written."""
    con.execute(f"CREATE TABLE IF NOT EXISTS {main}.{DERIVED} "
                "(name VARCHAR PRIMARY KEY, key VARCHAR, shapes VARCHAR)")
    con.execute(f"DELETE FROM {main}.{DERIVED} WHERE name = ?", [name])


def _add_row(con: duckdb.DuckDBPyConnection, main: str, name: str, key: str, shapes: str) -> None:
    """`name`'s row of analysis_derived, written last: what it keys is complete."""
    con.execute(f"INSERT INTO {main}.{DERIVED} VALUES (?, ?, ?)", [name, key, shapes])


def load_arrays(con: duckdb.DuckDBPyConnection, name: str,
                params: object) -> dict[str, np.ndarray] | None:
    """The arrays `save_arrays` kept as `name` for these `params` (JSON-able: the windows)
    under the connection's current key, each in its shape; None when there are none."""
    got = _KEYED.get(con)
    if got is None or not _has(con, f"analysis_{name}"):
        return None
    main, key = got
    row = _derived_row(con, main, name)
    if not row or row[0] != _derived_key(key, params):
        return None
    shapes = orjson.loads(row[1])
    cols = con.execute(f"SELECT * FROM {main}.analysis_{name}").fetchnumpy()
    return {k: np.ma.getdata(cols[k]).reshape(shape) for k, shape in shapes.items()}


def save_arrays(con: duckdb.DuckDBPyConnection, name: str, params: object,
                arrays: dict[str, np.ndarray]) -> None:
    """Keep `arrays` (numeric, bool or str; each flattened, all of one size) as `name` for
    `params` under the connection's current key; nothing outside a `keyed` block. The key row
    goes first and comes back last: an interrupted save leaves no key, so no stale read."""
    got = _KEYED.get(con)
    if got is None:
        return
    main, key = got
    _drop_row(con, main, name)
    table = pa.table({k: pa.array(np.asarray(v).ravel()) for k, v in arrays.items()})
    con.register("_derived_arrays", table)
    try:
        con.execute(f"CREATE OR REPLACE TABLE {main}.analysis_{name} AS "
                    "SELECT * FROM _derived_arrays")
    finally:
        con.unregister("_derived_arrays")
    shapes = {k: list(np.shape(v)) for k, v in arrays.items()}
    _add_row(con, main, name, _derived_key(key, params), orjson.dumps(shapes).decode())


def _kept_table(con: duckdb.DuckDBPyConnection, name: str, sql: str,
                params: list | None) -> str | None:
    """The store's table of `sql`'s result for the current key, code and statement, computed
    now if need be; None outside a `keyed` block."""
    got = _KEYED.get(con)
    if got is None:
        return None
    assert name in KEPT_QUERIES, name
    main, key = got
    table, want = f"{main}.analysis_{name}", _derived_key(key, [sql, params])
    row = _derived_row(con, main, name) if _has(con, f"analysis_{name}") else None
    if not row or row[0] != want:
        _drop_row(con, main, name)
        con.execute(f"CREATE OR REPLACE TABLE {table} AS {sql}", params or [])
        _add_row(con, main, name, want, "rows")
        con.complete()
    return table


def kept_relation(con: duckdb.DuckDBPyConnection, name: str, sql: str,
                  params: list | None = None) -> duckdb.DuckDBPyRelation:
    """The result of `sql` (a SELECT that reads the store's telemetry, not the replay's tables),
    as a relation: within a `keyed` block the store's copy of it (`analysis_<name>`, name one
    of KEPT_QUERIES) computed once for the current key, code and statement (on the 256-switch
    hour each scans 92M samples: 0.2-1 s); else the statement itself. Rows in the statement's
    order."""
    table = _kept_table(con, name, sql, params)
    return con.sql(sql, params=params) if table is None else con.sql(f"SELECT * FROM {table}")


def kept_rows(con: duckdb.DuckDBPyConnection, name: str, sql: str,
              params: list | None = None) -> list[dict]:
    """`kept_relation`'s rows as dicts keyed by column name."""
    table = _kept_table(con, name, sql, params)
    return rows_of(con, sql, params) if table is None else rows_of(con, f"SELECT * FROM {table}")


# connection -> the inputs digest of the replay that just rewrote the replay's tables
# (`replayed`), for `keep_tables` once the residuals are written too
_PENDING: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _table_rows(con: duckdb.DuckDBPyConnection, main: str) -> list[int]:
    return [con.execute(f"SELECT count(*) FROM {main}.{t}").fetchall()[0][0]
            for t in REPLAY_TABLES]


def tables_kept(con: duckdb.DuckDBPyConnection, inputs: str) -> bool:
    """Whether the store's replay tables are those a replay of `inputs` (a `digest`) wrote,
    under the connection's current key and code, with the row counts it left."""
    got = _KEYED.get(con)
    if got is None:
        return False
    main, key = got
    row = _derived_row(con, main, KEPT_TABLES)
    return bool(row and row[0] == _derived_key(key, inputs)
                and orjson.loads(row[1]) == _table_rows(con, main))


def replayed(con: duckdb.DuckDBPyConnection, inputs: str) -> None:
    """The replay of `inputs` rewrote the replay's tables (within a `keyed` block)."""
    if con in _KEYED:
        _PENDING[con] = inputs


def keep_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Record that the replay's tables, residuals included, are those of the inputs `replayed`
    named last; nothing when no replay named any in this `keyed` block."""
    inputs, got = _PENDING.pop(con, None), _KEYED.get(con)
    if inputs is None or got is None:
        return
    main, key = got
    _drop_row(con, main, KEPT_TABLES)
    _add_row(con, main, KEPT_TABLES, _derived_key(key, inputs),
             orjson.dumps(_table_rows(con, main)).decode())


def forget_tables(con: duckdb.DuckDBPyConnection) -> None:
    """The replay's tables are about to be written: whatever inputs they were kept for, no
    longer (called by every writer of them, inside a `keyed` block or not)."""
    if _has(con, DERIVED):
        con.execute(f"DELETE FROM main.{DERIVED} WHERE name = ?", [KEPT_TABLES])

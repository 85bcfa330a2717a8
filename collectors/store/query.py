"""Read-only SQL over a store, for the CLI, the TUI and scripts.

Two fences, each enough alone for the statements it knows:
- a statement check with a clear refusal: DuckDB's own parser classifies every statement, and an
  EXPLAIN (`EXPLAIN`, `EXPLAIN ANALYZE`, `EXPLAIN (ANALYZE, FORMAT json)`, ...) is judged by the
  statement it wraps, recursively, since `EXPLAIN ANALYZE` runs it. Only queries pass: SELECT
  (with DESCRIBE, SHOW, SUMMARIZE, FROM-first, VALUES, PIVOT with an IN list) and a few PRAGMAs
  that only read; PREPARE/EXECUTE, SET, CALL, CHECKPOINT, temp tables and every write do not;
- the connection (`collectors.store.readonly.fence`): read-only, file access off but for the store's
  own files, spills in a private directory, configuration locked, so that `read_csv('/etc/passwd')`,
  `COPY ... TO`, `ATTACH`, `INSTALL`, `SET` fail inside DuckDB too.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import duckdb
import pyarrow as pa

from collectors.store.readonly import open_readonly

ST = duckdb.StatementType
ALLOWED_PRAGMAS = frozenset({"table_info", "show_tables", "show_tables_expanded", "version",
                             "database_size", "storage_info", "show", "database_list",
                             "functions", "collations", "platform", "user_agent", "metadata_info"})
# column types each output format cannot carry as they are, rendered as DuckDB's text for them
# (what `CAST(x AS VARCHAR)`, and DuckDB's own COPY ... TO csv, print: `[1, 2]`, `{'a': 1}`,
# `1 day`, `\xAA`); JSON keeps lists, structs and maps as JSON arrays and objects
_NESTED = frozenset({"list", "struct", "map", "array", "union"})
_NOT_PLAIN = frozenset({"interval", "blob", "bit", "bignum", "time with time zone", "varint"})
TEXT_TYPES = {
    "csv": _NESTED | _NOT_PLAIN,
    "json": _NOT_PLAIN,
    "table": frozenset({"interval", "union", "time with time zone"}),
    "parquet": frozenset({"interval", "union", "time with time zone"}),
}


class QueryRefused(ValueError):
    """A statement fabtwin's read-only SQL does not run."""


def check_readonly(sql: str) -> list[str]:
    """The statements of `sql`, each one only reading the store; QueryRefused otherwise."""
    statements = _parse(sql)
    if not statements:
        raise QueryRefused("empty query")
    for st in statements:
        _check(st)
    return [st.query for st in statements]


def _parse(sql: str) -> list:
    try:
        return duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryRefused(f"SQL error: {_one_line(exc)}") from exc


def _type(st) -> duckdb.StatementType:
    try:
        return st.type
    except ValueError as exc:  # a statement type newer than the Python enum (UPDATE EXTENSIONS)
        raise QueryRefused(f"refused: {st.query.split()[0].upper()} statement: {_REFUSAL}") from exc


_REFUSAL = ("fabtwin sql only runs queries (SELECT, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN of a "
            "query) on a read-only store: no writes, temp tables, COPY, ATTACH, INSTALL/LOAD, "
            "SET, CALL, PREPARE/EXECUTE")


def _check(st) -> None:
    """Refuse `st` unless it only reads; an EXPLAIN is judged by the statement it wraps."""
    kind = _type(st)
    if kind == ST.SELECT:
        _check_query_nodes(st.query)
        return
    if kind == ST.EXPLAIN:
        inner = _parse(_explained(st.query))
        if len(inner) != 1:
            raise QueryRefused(f"refused: EXPLAIN of {len(inner)} statements")
        try:
            _check(inner[0])
        except QueryRefused as exc:
            raise QueryRefused(f"{exc} (wrapped in EXPLAIN, which ANALYZE runs)") from None
        return
    if kind == ST.PRAGMA and _pragma_name(st.query) in ALLOWED_PRAGMAS:
        return
    hint = "; PIVOT with `ON col IN (values)` is a plain query" if kind == ST.MULTI else ""
    raise QueryRefused(f"refused: {kind.name} statement: {_REFUSAL}{hint}")


# a SELECT may hold other statements in its CTEs (`WITH x AS (COPY ... TO 'f') SELECT ...`,
# `WITH d AS (DELETE ... RETURNING *)`): these are the query nodes of a plain read
_READ_NODES = frozenset({"SELECT_NODE", "SET_OPERATION_NODE", "RECURSIVE_CTE_NODE", "CTE_NODE"})
_PARSER_LOCK = threading.Lock()  # the TUI checks queries from worker threads
_parser: duckdb.DuckDBPyConnection | None = None  # one in-memory DuckDB: a connection costs ~50 ms


def _check_query_nodes(sql: str) -> None:
    """Refuse a SELECT whose syntax tree (DuckDB's json_serialize_sql) holds any query node but
    a read, at any depth; one it cannot serialize is refused too (fail closed)."""
    with _PARSER_LOCK:
        global _parser
        if _parser is None:  # not the store's connection: nothing of the user's runs there
            _parser = duckdb.connect(":memory:")
        doc = json.loads(_parser.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])
    if doc.get("error"):
        raise QueryRefused(f"refused: DuckDB cannot check this query ({doc.get('error_message')})")
    stack = [doc["statements"]]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            node = item.get("type")
            if isinstance(node, str) and node.endswith("_NODE") and node not in _READ_NODES:
                kind = node.removesuffix("_NODE").removesuffix("_QUERY")
                raise QueryRefused(f"refused: {kind} inside a query: {_REFUSAL}")
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _words(sql: str) -> list[tuple[int, bytes]]:
    """DuckDB's tokens of `sql` as (UTF-8 byte offset, lower-cased text), comments dropped."""
    raw = sql.encode()
    toks = duckdb.tokenize(sql)  # offsets are bytes of the UTF-8 text
    ends = [o for o, _ in toks[1:]] + [len(raw)]
    return [(o, raw[o:e].strip().lower()) for (o, t), e in zip(toks, ends, strict=True)
            if t != duckdb.token_type.comment]


def _explained(sql: str) -> str:
    """The statement an EXPLAIN wraps: after `EXPLAIN`, an `ANALYZE` or a `( options )` list."""
    words = _words(sql)
    i = 1  # words[0] is EXPLAIN: the parser said so
    if i < len(words) and words[i][1] == b"analyze":
        i += 1
    elif i < len(words) and words[i][1] == b"(":
        depth = 0
        while i < len(words):
            depth += {b"(": 1, b")": -1}.get(words[i][1], 0)
            i += 1
            if depth == 0:
                break
    return sql.encode()[words[i][0]:].decode() if i < len(words) else ""


def _pragma_name(sql: str) -> str:
    words = [w.decode() for _, w in _words(sql)]
    return words[1] if len(words) > 1 and words[0] == "pragma" else ""


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def stream(con: duckdb.DuckDBPyConnection, sql: str, batch_rows: int = 65_536,
           fmt: str | None = None) -> pa.RecordBatchReader:
    """Check `sql` (`check_readonly`) and stream its last statement's result from `con`.

    The statements before the last are bound (their SQL errors reported) but not run: they are
    reads whose results nobody sees. With `fmt`, the result is shaped for that output format
    (`for_format`). QueryRefused for refusals, file access and SQL errors, one line.
    """
    queries = check_readonly(sql)
    try:
        for q in queries[:-1]:
            con.sql(q)  # a SELECT relation is lazy: binding it checks it
        relation = con.sql(queries[-1])
        if relation is None:  # a PRAGMA without a result
            relation = con.sql("SELECT 'ok' AS result")
        if fmt is not None:
            relation = for_format(relation, fmt)
        return relation.to_arrow_reader(batch_rows)
    except duckdb.PermissionException as exc:
        raise QueryRefused(
            "refused: reading or writing files, ATTACH and extensions are disabled in fabtwin sql "
            f"({_one_line(exc)})") from exc
    except duckdb.Error as exc:
        raise QueryRefused(f"SQL error: {_one_line(exc)}") from exc


def for_format(relation: duckdb.DuckDBPyRelation, fmt: str) -> duckdb.DuckDBPyRelation:
    """`relation` as output format `fmt` can carry it: the columns of TEXT_TYPES[fmt] cast to
    VARCHAR, and, but for csv, a repeated column name made unique as DuckDB does (`a`, `a_1`):
    a JSON object would keep one, polars and Parquet readers refuse them."""
    types, unique = TEXT_TYPES[fmt], fmt != "csv"
    names = list(relation.columns)
    if unique:
        seen: dict[str, int] = {}
        for i, name in enumerate(names):
            seen[name] = seen.get(name, -1) + 1
            names[i] = f"{name}_{seen[name]}" if seen[name] else name
    if names == relation.columns and not any(t.id in types for t in relation.types):
        return relation
    cols = []  # by position (#i), so that repeated names stay apart
    for i, (name, t) in enumerate(zip(names, relation.types, strict=True), 1):
        alias = '"' + name.replace('"', '""') + '"'
        cols.append(f"CAST(#{i} AS VARCHAR) AS {alias}" if t.id in types else f"#{i} AS {alias}")
    return relation.project(", ".join(cols))


class QueryResult:
    """A running query: `.reader` streams Arrow record batches; close() releases the store."""

    def __init__(self, con: duckdb.DuckDBPyConnection, reader: pa.RecordBatchReader) -> None:
        self.con = con
        self.reader = reader

    @property
    def schema(self) -> pa.Schema:
        return self.reader.schema

    def close(self) -> None:
        self.reader.close()  # it holds the query's result, and with it the database's spill files
        self.con.close()

    def __enter__(self) -> QueryResult:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_query(db: str | Path, sql: str, batch_rows: int = 65_536,
              fmt: str | None = None) -> QueryResult:
    """Run read-only `sql` on the store `db` (a DuckDB file or a lake directory) and stream its
    last statement's result as Arrow record batches (`stream`; `fmt` renders as text the columns
    that output format cannot carry).

    QueryRefused for anything that is not a read, including DuckDB's own refusals (file access)
    and SQL errors, with a one-line message; the store is not opened for a refused statement.
    """
    check_readonly(sql)
    con = open_readonly(db)
    try:
        return QueryResult(con, stream(con, sql, batch_rows, fmt))
    except BaseException:
        con.close()
        raise

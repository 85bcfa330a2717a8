"""The store's schema: the SQL files (`sql/schema.sql`, `sql/views.sql`), the data tables, and the
DDL that layers above register for tables of their own (replay's results)."""

from __future__ import annotations

from importlib import resources


def sql_text(name: str) -> str:
    """The text of one of the store's SQL files (package data, shipped with the wheel)."""
    return (resources.files("collectors.store") / "sql" / name).read_text()


_REGISTERED: dict[str, str] = {}


def register_tables(owner: str, ddl: str) -> None:
    """Have every store (`Store.open`) and lake (`lake_connection`) also run `ddl` (CREATE TABLE
    IF NOT EXISTS statements) after `sql/schema.sql`: how replay's result tables exist, empty,
    in a store that was only ingested, without the store knowing them. Registering the same
    owner again replaces its DDL."""
    _REGISTERED[owner] = ddl


def schema_ddl() -> str:
    """`sql/schema.sql` followed by the registered DDL."""
    return "\n".join([sql_text("schema.sql"), *_REGISTERED.values()])


DATA_TABLES = ("samples", "text_samples", "events", "logs", "neighbors", "addresses", "ifmap",
               "jobs", "job_hosts", "rejects")

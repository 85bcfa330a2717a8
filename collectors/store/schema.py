"""The store's schema: the SQL files (`sql/schema.sql`, `sql/views.sql`) and the data tables."""

from __future__ import annotations

from importlib import resources


def sql_text(name: str) -> str:
    """The text of one of the store's SQL files (package data, shipped with the wheel)."""
    return (resources.files("collectors.store") / "sql" / name).read_text()


DATA_TABLES = ("samples", "text_samples", "events", "logs", "neighbors", "addresses", "ifmap",
               "jobs", "job_hosts", "rejects")

"""Stores the TUI tests open: two_faults diagnosed (plus one planted incident), and an empty one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from collectors.store.writer import Store
from fabtwin.tui.prepare import prepare_bundle

REPO = Path(__file__).resolve().parents[1]
# planted so sorting has something to reorder: the highest score, the earliest start, the first
# kind alphabetically, yet ranked last
PLANTED = (3, "congestion", "port", "leaf-p0-01:swp5", "2026-11-30 03:00:30",
           "2026-11-30 03:01:00", 0.99, "planted: ECN marks on leaf-p0-01:swp5",
           json.dumps({"links": ["leaf-p0-01:swp5--spine-p0-01:swp1"]}))


@pytest.fixture(scope="session")
def two_faults_db(tmp_path_factory) -> Path:
    """sample_traces/two_faults ingested and investigated, plus the PLANTED incident."""
    db = tmp_path_factory.mktemp("tui") / "two_faults.duckdb"
    prepare_bundle(REPO / "sample_traces" / "two_faults", db)
    with Store.open(db) as store:
        store.con.execute("INSERT INTO incidents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", PLANTED)
        store.con.execute("INSERT INTO incident_evidence VALUES (3, 1, ?)",
                          [json.dumps({"port": "leaf-p0-01:swp5", "ecn_marked_per_s_peak": 1e5})])
    return db


@pytest.fixture
def store_copy(two_faults_db, tmp_path, private_state_dir) -> Path:
    """A private copy (a test's app holds the store open), and a private SQL history."""
    db = tmp_path / "two_faults.duckdb"
    shutil.copy(two_faults_db, db)
    return db


@pytest.fixture
def private_state_dir(tmp_path, monkeypatch) -> Path:
    """The SQL history goes to a temporary directory, never to the tester's home."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


@pytest.fixture
def empty_db(tmp_path, private_state_dir) -> Path:
    db = tmp_path / "empty.duckdb"
    Store.open(db).close()
    return db

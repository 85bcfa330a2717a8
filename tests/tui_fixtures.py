"""Stores the TUI tests open: two_faults diagnosed (plus one planted incident), and an empty one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from collectors.store.writer import Store

REPO = Path(__file__).resolve().parents[1]
# planted so sorting has something to reorder: the highest score, the earliest start, the first
# kind alphabetically, yet ranked last
PLANTED = (3, "congestion", "port", "leaf-p0-01:swp5", "2026-11-30 03:00:30",
           "2026-11-30 03:01:00", 0.99, "planted: ECN marks on leaf-p0-01:swp5",
           json.dumps({"links": ["leaf-p0-01:swp5--spine-p0-01:swp1"]}))


@pytest.fixture(scope="session")
def two_faults_db(tmp_path_factory, sample_stores) -> Path:
    """sample_traces/two_faults ingested and investigated (`fabtwin tui BUNDLE` prepares it so:
    fabtwin.tui.prepare), plus the PLANTED incident: a copy of the session's investigated
    store (conftest's `sample_stores`)."""
    db = sample_stores.copy(sample_stores.investigated("two_faults"),
                            tmp_path_factory.mktemp("tui") / "two_faults.duckdb")
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


def _checked(root: Path, host_cable: bool) -> Path:
    """test_check's 2-plane bundle with NICs swapped between rails on gpu-node-0003 and the
    cable leaf-p1-03:swp6--spine-p1-02:swp3 removed (and, without `host_cable`, gpu-node-0005's
    plane-1 cable), as `fabtwin check BUNDLE` stores its findings; their time fixed so that
    snapshots compare."""
    from click.testing import CliRunner
    from test_check import SCENARIO, swap_host_ports, uncable

    from fabtwin.cli import main
    from twin.synth.bundle import generate

    (root / "mp.toml").write_text(SCENARIO)
    bundle = generate(root / "mp.toml", root / "mp", seed=7).out
    swap_host_ports(bundle, "gpu-node-0003", "eth0", "eth2")
    uncable(bundle, "leaf-p1-03:swp6", "spine-p1-02:swp3")
    if not host_cable:
        uncable(bundle, "gpu-node-0005:eth1", "leaf-p1-03:swp1")
    db = root / "checked.duckdb"
    out = CliRunner().invoke(main, ["check", str(bundle), "--db", str(db), "-q"])
    assert out.exit_code == 5, out.output  # findings
    with Store.open(db) as store:
        store.con.execute("UPDATE check_findings SET created = TIMESTAMP '2026-11-30 03:15:00'")
    return db


@pytest.fixture(scope="session")
def checked_db(tmp_path_factory) -> Path:
    """Findings rail, rail, missing_link (leaf-p1-03 to spine-p1-02); the fabric draws."""
    return _checked(tmp_path_factory.mktemp("checked"), host_cable=True)


@pytest.fixture(scope="session")
def host_cable_db(tmp_path_factory) -> Path:
    """Also gpu-node-0005 without its plane-1 cable: a missing_link naming the host and
    plane-1, and cabling the fabric screen cannot draw (its hosts' planes differ)."""
    return _checked(tmp_path_factory.mktemp("host_cable"), host_cable=False)


@pytest.fixture
def checked_copy(checked_db, tmp_path, private_state_dir) -> Path:
    db = tmp_path / "checked.duckdb"
    shutil.copy(checked_db, db)
    return db

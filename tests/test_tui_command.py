"""`fabtwin tui BUNDLE` before the app opens: the store it picks and the one-line failures of
a bundle it cannot diagnose there (found driving it as a new user: tracebacks, a store left)."""

from __future__ import annotations

from click.testing import CliRunner
from conftest import REPO

from fabtwin.cli import main


def test_a_store_holding_another_bundle_is_one_line_and_kept(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "s.duckdb"
    first = CliRunner().invoke(main, ["ingest", str(REPO / "sample_traces" / "basic"), "--db", str(db), "-q"])
    assert first.exit_code == 0, first.output
    before = db.read_bytes()
    out = CliRunner().invoke(main, ["tui", str(REPO / "sample_traces" / "link_down"), "--db", str(db)])
    assert out.exit_code == 2, out.output
    lines = out.output.strip().splitlines()
    assert lines[-1].startswith("fabtwin: error: ") and "holds bundle" in lines[-1]
    assert db.read_bytes() == before  # the user's store: neither removed nor changed


def test_a_bundle_without_telemetry_exits_6_and_leaves_no_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FABTWIN_DB", raising=False)
    (tmp_path / "empty").mkdir()
    out = CliRunner().invoke(main, ["tui", "empty"])
    assert out.exit_code == 6, out.output
    last = out.output.strip().splitlines()[-1]
    # without --db the bundle gets the store investigate would give it, not the shared default
    assert last.startswith("fabtwin: error: empty (store empty.fabtwin.duckdb): no telemetry")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]

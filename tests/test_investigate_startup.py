"""What `fabtwin investigate` of a small bundle pays for besides the diagnosis (issue 17's first
speed target): the modules it imports, the threads it starts. Figures: benchmarks/diagnosis_speed.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from collectors.store.writer import one_thread_if

REPO = Path(__file__).resolve().parent.parent

# imported by a whole investigate run, this would be a cost the diagnosis never uses
NOT_ON_THE_PATH = ("textual", "networkx", "twin.engine", "twin.telemetry", "twin.nscc",
                   "fabtwin.tui", "unittest", "charset_normalizer", "numpy.f2py.f2py2e",
                   "numpy.testing._private")

# the command ends the process itself (fabtwin.cli.exit_now): what it imported is written by an
# atexit handler, which must still run
_PROBE = """
import atexit, json, os, sys
sys.argv = ["fabtwin", "investigate", "-q", sys.argv[1], "--db", sys.argv[2], "--json"]
atexit.register(lambda: print(json.dumps({"modules": sorted(sys.modules),
                "openblas": os.environ.get("OPENBLAS_NUM_THREADS")}), file=sys.stderr))
from fabtwin.cli import main
main()
"""


def _probe(tmp_path: Path, **env: str) -> dict:
    """An investigate of sample_traces/two_faults from nothing in a fresh process, into
    tmp_path/s.duckdb: the modules it imported by its end, the OpenBLAS threads it ran with
    and (key "stdout") what it printed."""
    environ = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", _PROBE, str(REPO / "sample_traces" / "two_faults"),
                          str(tmp_path / "s.duckdb")], capture_output=True, text=True,
                         env={**environ, "PYTHONPATH": str(REPO), **env}, cwd=tmp_path)
    assert out.returncode == 5, out.stderr  # incidents found
    assert [(i["kind"], i["score"]) for i in json.loads(out.stdout)["incidents"]] == [
        ("link_flap", 0.95), ("pfc_storm", 0.875)]
    return {**json.loads(out.stderr.strip().splitlines()[-1]), "stdout": out.stdout}


@pytest.fixture(scope="module")
def probed(tmp_path_factory) -> tuple[dict, Path]:
    """`_probe` with the user's environment, once for the module: (the probe, its store)."""
    root = tmp_path_factory.mktemp("probe")
    return _probe(root), root / "s.duckdb"


def test_investigate_imports_no_tui_graph_or_simulator(probed) -> None:
    probe, _ = probed
    loaded = [m for m in probe["modules"]
              if any(m == n or m.startswith(n + ".") for n in NOT_ON_THE_PATH)]
    assert loaded == []
    assert "replay.investigate" in probe["modules"]  # the probe did run the command
    # one OpenBLAS thread unless the user chose: set before numpy's import, which reads it
    assert probe["openblas"] == "1"


def test_users_openblas_threads_kept(tmp_path: Path) -> None:
    assert _probe(tmp_path, OPENBLAS_NUM_THREADS="3")["openblas"] == "3"


def test_one_thread_if_small_then_restored() -> None:
    con = duckdb.connect()
    con.execute("SET threads = 2")

    def threads() -> int:
        return con.execute("SELECT current_setting('threads')").fetchone()[0]

    with one_thread_if(con, True):
        assert threads() == 1
    assert threads() == 2
    with one_thread_if(con, False):
        assert threads() == 2
    assert threads() == 2


def test_deferred_numpy_tools_load_when_used() -> None:
    code = ("import fabtwin.commands.diagnose, sys, numpy, scipy.sparse\n"
            "assert 'unittest' not in sys.modules\n"
            "numpy.testing.assert_equal([1, 2], [1, 2])\n"
            "from numpy.f2py import crackfortran\n"
            "print(type(numpy.testing).__name__, 'unittest' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.stdout.split() == ["module", "True"]


def test_fast_exit_leaves_a_checkpointed_store(probed, tmp_path: Path) -> None:
    """`fabtwin investigate` ends without the interpreter's teardown: its store is closed
    (checkpointed, no WAL left) and its whole output written, with its exit code (the probe's
    run: exit 5 and its JSON whole, `_probe`); a bundle that is not there is still exit 2."""
    probe, db = probed
    assert json.loads(probe["stdout"])["store"] == str(db) and probe["stdout"].endswith("\n")
    assert not db.with_suffix(".duckdb.wal").exists()
    assert duckdb.connect(str(db), read_only=True).execute(
        "SELECT count(*) FROM incidents").fetchone()[0] == 2
    cmd = [sys.executable, "-m", "fabtwin.cli", "investigate", "-q"]
    out = subprocess.run([*cmd, str(tmp_path / "no-such-bundle"), "--db", str(db)],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
                         cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""

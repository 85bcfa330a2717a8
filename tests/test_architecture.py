"""The house rules that a reviewer would otherwise check by hand: ruff clean, one import direction."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import REPO

BIN = Path(sys.executable).parent


def test_ruff_is_clean():
    out = subprocess.run([BIN / "ruff", "check", "."], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_imports_run_one_way_app_replay_twin_collectors():
    out = subprocess.run([BIN / "lint-imports"], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 kept, 0 broken" in out.stdout  # one direction; no Textual below the app

"""The house rules that a reviewer would otherwise check by hand: ruff clean, one import direction,
the twin's model apart from its synthesizer."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import REPO

BIN = Path(sys.executable).parent


def test_ruff_is_clean():
    out = subprocess.run([BIN / "ruff", "check", "."], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_imports_run_one_way_app_replay_twin_collectors():
    out = subprocess.run([BIN / "lint-imports"], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    # one direction; no Textual below the app; the twin's model writes no collector format
    assert "3 kept, 0 broken" in out.stdout


def test_the_model_contract_names_every_twin_module_but_the_synthesizer():
    """A new twin module is model unless it sits in twin/synth/: the contract must name it."""
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (model,) = [c for c in contracts if c["name"].startswith("the twin's model")]
    modules = {f"twin.{p.stem}" for p in (REPO / "twin").glob("*.py") if p.stem != "__init__"}
    assert set(model["source_modules"]) == modules
    assert (REPO / "twin" / "synth" / "__init__.py").is_file() and "twin.synth" in model["forbidden_modules"]

"""The house rules that a reviewer would otherwise check by hand: ruff clean, one import direction,
the twin's model apart from its synthesizer; the collectors' rooms (families alone, an
explicit registry, no import cycle, no huge module)."""

from __future__ import annotations

import ast
import importlib
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
    # one direction; no Textual below the app; the twin's model writes no collector format;
    # collectors' layers; families independent; the store below the twin; the twin without
    # DuckDB or the store
    assert "7 kept, 0 broken" in out.stdout


def test_the_model_contract_names_every_twin_module_but_the_synthesizer():
    """A new twin module is model unless it sits in twin/synth/: the contract must name it."""
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (model,) = [c for c in contracts if c["name"].startswith("the twin's model")]
    modules = {f"twin.{p.stem}" for p in (REPO / "twin").glob("*.py") if p.stem != "__init__"}
    assert set(model["source_modules"]) == modules
    assert (REPO / "twin" / "synth" / "__init__.py").is_file() and "twin.synth" in model["forbidden_modules"]


def test_every_format_family_is_in_the_registry():
    from collectors import registry

    folders = sorted(p.name for p in (REPO / "collectors" / "formats").iterdir()
                     if (p / "__init__.py").exists())
    assert sorted(name for name, _ in registry.FAMILIES) == folders
    families = {name: parsers for name, parsers in registry.FAMILIES}
    for name in folders:
        module = importlib.import_module(f"collectors.formats.{name}")
        assert families[name] is module.PARSERS and module.PARSERS, name
    assert registry.parsers() == [p for _, ps in registry.FAMILIES for p in ps]
    assert "import_module" not in (REPO / "collectors" / "registry.py").read_text()


PACKAGES = ("collectors", "twin", "replay", "fabtwin")


def test_no_import_cycle_anywhere_even_inside_functions():
    import grimp
    import networkx as nx

    graph = grimp.build_graph(*PACKAGES)  # counts imports inside functions (and TYPE_CHECKING)
    edges = [(m, d) for m in graph.modules for d in graph.find_modules_directly_imported_by(m)]
    assert len(edges) > 200  # the graph was read (258 edges today)
    cycles = [sorted(c) for c in nx.strongly_connected_components(nx.DiGraph(edges)) if len(c) > 1]
    assert cycles == []


def test_no_module_over_700_lines_nor_function_over_100():
    too_long = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            text = path.read_text()
            if text.count("\n") > 700:
                too_long.append(f"{path.relative_to(REPO)}: {text.count(chr(10))} lines")
            for node in ast.walk(ast.parse(text)):
                if (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                        and node.end_lineno - node.lineno + 1 > 100):
                    too_long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}")
    assert too_long == []

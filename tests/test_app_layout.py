"""The app's layout (issue 20): one module per command group registered on the group, modules
and functions of a readable size, no import cycle in the app (imports inside functions too)."""

from __future__ import annotations

import ast

import grimp
import networkx as nx
from conftest import REPO

from fabtwin.cli import main

APP = REPO / "fabtwin"
COMMAND_MODULES = {  # command -> the module of fabtwin.commands defining it
    "ingest": "ingest", "sql": "sql", "replay": "diagnose", "investigate": "diagnose",
    "simulate": "simulate", "generate": "simulate", "sweep": "sweep", "export": "export",
    "report": "report", "tui": "tui",
}


def test_each_command_lives_in_its_groups_module_and_is_registered_explicitly():
    assert {name: cmd.callback.__module__ for name, cmd in main.commands.items()} == \
        {name: f"fabtwin.commands.{m}" for name, m in COMMAND_MODULES.items()}
    cli = (APP / "cli.py").read_text()
    assert "noqa: E402" not in cli and "@main.command" not in cli
    assert "main.add_command(command)" in cli


def test_no_module_over_700_lines_no_function_over_100():
    too_long = []
    for path in APP.rglob("*.py"):
        text = path.read_text()
        if text.count("\n") > 700:
            too_long.append(f"{path.relative_to(REPO)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > 100:
                    too_long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}: {lines}")
    assert too_long == []


def test_no_import_cycle_in_the_app():
    graph = grimp.build_graph("fabtwin", "collectors", "twin", "replay")
    edges = nx.DiGraph((m, d) for m in graph.modules if m.startswith("fabtwin")
                       for d in graph.find_modules_directly_imported_by(m)
                       if d.startswith("fabtwin"))
    assert len(edges) > 20  # the graph was read (imports inside functions included)
    assert [sorted(c) for c in nx.strongly_connected_components(edges) if len(c) > 1] == []

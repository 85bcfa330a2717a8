"""The app's layout (issue 20): one module per command group registered on the group (module
and function sizes and import cycles are checked for every package in test_architecture)."""

from __future__ import annotations

from conftest import REPO

from fabtwin.cli import main

APP = REPO / "fabtwin"
COMMAND_MODULES = {  # command -> the module of fabtwin.commands defining it
    "ingest": "ingest", "sql": "sql", "replay": "diagnose", "investigate": "diagnose",
    "simulate": "simulate", "generate": "simulate", "sweep": "sweep", "export": "export",
    "report": "report", "tui": "tui", "check": "check",
}


def test_each_command_lives_in_its_groups_module_and_is_registered_explicitly():
    assert {name: cmd.callback.__module__ for name, cmd in main.commands.items()} == \
        {name: f"fabtwin.commands.{m}" for name, m in COMMAND_MODULES.items()}
    cli = (APP / "cli.py").read_text()
    assert "noqa: E402" not in cli and "@main.command" not in cli
    assert "main.add_command(command)" in cli

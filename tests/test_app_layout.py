"""The app's layout (issue 20): one module per command group registered on the group (module
and function sizes and import cycles are checked for every package in test_architecture)."""

from __future__ import annotations

import click
from conftest import REPO

from fabtwin.cli import main

APP = REPO / "fabtwin"
COMMAND_MODULES = {  # command -> the module of fabtwin.commands defining it
    "ingest": "ingest", "sql": "sql", "replay": "diagnose", "investigate": "diagnose",
    "simulate": "simulate", "generate": "simulate", "sweep": "sweep", "export": "export",
    "report": "report", "tui": "tui", "check": "check",
}


def test_each_command_lives_in_its_groups_module_and_is_registered_explicitly():
    ctx = click.Context(main)
    # registered by name in fabtwin.cli.COMMANDS, imported when looked up (LazyGroup)
    assert {name: main.get_command(ctx, name).callback.__module__
            for name in main.list_commands(ctx)} == \
        {name: f"fabtwin.commands.{m}" for name, m in COMMAND_MODULES.items()}
    cli = (APP / "cli.py").read_text()
    assert "noqa: E402" not in cli and "@main.command" not in cli
    assert "lazy=COMMANDS" in cli


def test_a_command_imports_only_its_own_module():
    """`fabtwin simulate` loads fabtwin.commands.simulate, not the store's, the diagnosis' or
    the TUI's commands (their imports were a tenth of its start-up)."""
    import subprocess
    import sys

    code = ("import sys\nfrom fabtwin.cli import main\n"
            "try:\n    main(['simulate', '--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('fabtwin.commands.')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=REPO)
    loaded = out.stdout.strip().splitlines()[-1]
    assert loaded == "['fabtwin.commands.common', 'fabtwin.commands.simulate']"

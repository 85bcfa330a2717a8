"""The SQL console's history, kept across sessions in $XDG_STATE_HOME/fabtwin/sql_history.json
(newest last, at most LIMIT queries). Unreadable or unwritable history is simply not kept."""

from __future__ import annotations

import json
import os
from pathlib import Path

LIMIT = 200


def history_path() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(state) / "fabtwin" / "sql_history.json"


def load() -> list[str]:
    try:
        queries = json.loads(history_path().read_text())
    except (OSError, ValueError):
        return []
    return [q for q in queries if isinstance(q, str)][-LIMIT:]


def save(queries: list[str]) -> None:
    path = history_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(queries[-LIMIT:]))
        tmp.replace(path)  # a crash never leaves half a file
    except OSError:
        return  # history is a convenience: a read-only home must not stop the console

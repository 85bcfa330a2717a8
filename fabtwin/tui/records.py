"""The JSON text the store keeps (evidence, explanations, findings, WJH drop records) read
back for the TUI, never raising on text that is not JSON."""

from __future__ import annotations

import json
from datetime import UTC, datetime


def json_or_none(text: str | None) -> object:
    """`text` decoded as JSON; None for text that is not JSON."""
    try:
        return json.loads(text or "")
    except ValueError:
        return None


def wjh_record(message: str | None) -> dict:
    """A drop event's JSON record; {} for a message that is not one."""
    rec = json_or_none(message)
    return rec if isinstance(rec, dict) else {}


def wjh_fields(message: str | None) -> tuple[str, str, float | None, datetime | None,
                                            datetime | None]:
    """(reason, severity, aggregate count, first, last) of a WJH drop event's JSON record
    (Cumulus/NetQ keys: Reason, Severity, AggCount, FirstTimestamp, EndTimestamp in epoch s)."""
    rec = wjh_record(message)
    if not rec:  # a drop line that is not a record: its text as the reason
        return (message or "", "", None, None, None)

    def when(key: str) -> datetime | None:
        v = rec.get(key)
        return datetime.fromtimestamp(v, UTC).replace(tzinfo=None) \
            if isinstance(v, int | float) and v > 0 else None

    count = rec.get("AggCount")
    return (str(rec.get("Reason") or rec.get("ReasonId") or ""), str(rec.get("Severity") or ""),
            float(count) if isinstance(count, int | float) else None,
            when("FirstTimestamp"), when("EndTimestamp"))

"""An incident's evidence and impact as short text lines, for `investigate`/`replay` and the TUI.

Values go through fabtwin.units (Gb/s for link rates, per second with thousands separators for
counts), so the terminal, the TUI and the report write a rate the same way.
"""

from __future__ import annotations

import textwrap

from fabtwin.units import field

EVIDENCE_ROWS = 5  # per incident in the text output; --json and the TUI have them all


def evidence_line(ev: object, day: str = "") -> str:
    """One evidence row: `port=leaf-p0-02:swp5  tx_pause_per_s_peak=25,217/s`; times on
    `day` (an ISO date, `2026-11-30`) lose it, the header says it once."""
    if isinstance(ev, dict):
        return "  ".join(f"{k}={_on_day(field(k, v), day)}" for k, v in ev.items())
    return str(ev)


def _on_day(text: str, day: str) -> str:
    return text.removeprefix(f"{day}T") if day and text.startswith(f"{day}T") else text


def impact_line(impact: dict) -> str:
    """The impact as one line: `jobs 1000; plane plane-0; capacity lost 100.5 Gb/s; ...`."""
    parts = []
    for key, value in impact.items():
        if value in (None, [], ""):
            continue
        name = key.removesuffix("_gbps").replace("_", " ")
        parts.append(f"{name} {field(key, value)}")
    return "; ".join(parts) or "none recorded"


def incident_lines(inc: dict, width: int = 80, evidence_rows: int = EVIDENCE_ROWS) -> list[str]:
    """An incident of `investigate --json`'s shape as text: its header line (`#rank kind root
    score`), its time, its summary, then its evidence and impact, wrapped to `width`."""
    rc = inc["root_cause"]
    start, end = str(inc["start"] or "-"), str(inc["end"] or "still going")
    day = start[:10] if start[10:11] == "T" else ""
    lines = [f"#{inc['rank']} {inc['kind']:<15} {rc['type']} {rc['id']}  score {inc['score']:.2f}",
             f"   {start} .. {_on_day(end, day)}"]

    def wrapped(text: str, first: str, rest: str) -> list[str]:
        return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=rest,
                             break_on_hyphens=False) or [first.rstrip()]

    lines += wrapped(inc["summary"], "   ", "   ")
    evidence = inc.get("evidence") or []
    lines.append(f"   evidence ({len(evidence)}):" if evidence else "   evidence: none recorded")
    for ev in evidence[:evidence_rows]:
        lines += wrapped(evidence_line(ev, day), "     ", "       ")
    if len(evidence) > evidence_rows:
        lines.append(f"     ... {len(evidence) - evidence_rows} more (--json, or SQL: "
                     "incident_evidence)")
    lines += wrapped(impact_line(inc.get("impact") or {}), "   impact: ", "     ")
    return lines

"""An incident for a ticket: its JSON (the `investigate --json` incident object) and a
Markdown page (summary, why it was ranked, evidence as a table, impact), written beside each
other as `incident-<rank>.md` / `.json`, never over an existing file. The evidence table is
also the report's. Plain Python, no UI import."""

from __future__ import annotations

import json
from pathlib import Path

from fabtwin.explanation import CELL_COLUMNS, cell_rows, summary_lines
from fabtwin.units import field
from replay.stored import Incident

MAX_SUFFIX = 1000  # incident-1-2.md ... : a folder with a thousand exports is a mistake


def value_text(value, key: str = "") -> str:
    """An evidence or impact value in a cell, in fabtwin.units' rule for the field `key` (rates
    by their name: Gb/s for bytes, per second otherwise; counts with thousands separators),
    lists shortened."""
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value).lower()
    if isinstance(value, dict):
        return ", ".join(f"{k}={value_text(v, k)}" for k, v in value.items())
    return field(key, value)


def evidence_table(evidence: list) -> tuple[list[str], list[list[str]]]:
    """(columns, rows) of evidence records: one column per key in order of first appearance
    (records of different shapes leave their missing cells empty); byte rates in Gb/s."""
    columns: list[str] = []
    for ev in evidence:
        for key in ev if isinstance(ev, dict) else ["evidence"]:
            if key not in columns:
                columns.append(key)
    rows = [[value_text(ev.get(c), c) if isinstance(ev, dict) else
             (value_text(ev) if c == "evidence" else "") for c in columns] for ev in evidence]
    return columns, rows


def incident_json(inc: Incident, evidence: list, explanation: dict | None) -> dict:
    """The incident as `investigate --json` prints it, its explanation beside its evidence."""
    out = inc.as_json()
    impact = out.pop("impact")  # the explanation sits beside the evidence, impact last
    out["evidence"] = evidence
    out["explanation"] = explanation or {}
    out["impact"] = impact
    return out


def _md_table(columns: list[str] | tuple[str, ...], rows: list) -> list[str]:
    def cell(v: str) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    return ["| " + " | ".join(cell(c) for c in columns) + " |",
            "|" + "---|" * len(columns)] + ["| " + " | ".join(cell(v) for v in r) + " |"
                                            for r in rows]


def incident_markdown(inc: Incident, evidence: list, explanation: dict | None) -> str:
    """The Markdown page of one incident, for a ticket."""
    d = incident_json(inc, evidence, explanation)
    lines = [f"# Incident #{d['rank']}: {inc.kind} on {inc.root_type} `{inc.root_id}`", "",
             *_md_table(("field", "value"), [
                 ("kind", inc.kind), ("root cause", f"{inc.root_type} `{inc.root_id}`"),
                 ("start", d["start"] or "-"), ("end", d["end"] or "still going"),
                 ("score", f"{inc.score:.2f}"), ("summary", inc.summary)]),
             "", "## Why it was ranked", ""]
    lines += [f"- {line.strip()}" for line in summary_lines(explanation)]
    if cell_rows(explanation):
        lines += ["", *_md_table(CELL_COLUMNS, cell_rows(explanation))]
    lines += ["", "## Evidence", ""]
    columns, rows = evidence_table(evidence)
    lines += _md_table(columns, rows) if rows else ["none recorded"]
    lines += ["", "## Impact", ""]
    impact = [(k, value_text(v, k)) for k, v in (inc.impact or {}).items()]
    lines += [f"- {k}: {v}" for k, v in impact] or ["none recorded"]
    return "\n".join(lines) + "\n"


def write_ticket(inc: Incident, evidence: list, explanation: dict | None,
                 folder: Path) -> tuple[Path, Path]:
    """Write `incident-<rank>.md` and `.json` into `folder`; when either name is taken, the
    first `incident-<rank>-<n>` free for both. Files are created exclusively: an existing
    file is never overwritten, even one appearing meanwhile."""
    md, js = incident_markdown(inc, evidence, explanation), \
        json.dumps(incident_json(inc, evidence, explanation), indent=2, default=str) + "\n"
    for n in range(MAX_SUFFIX):
        stem = f"incident-{inc.rank}" + (f"-{n}" if n else "")
        md_path, js_path = folder / f"{stem}.md", folder / f"{stem}.json"
        if md_path.exists() or js_path.exists():
            continue
        try:
            with md_path.open("x", encoding="utf-8") as f:
                f.write(md)
        except FileExistsError:
            continue
        try:
            with js_path.open("x", encoding="utf-8") as f:
                f.write(js)
        except FileExistsError:  # taken between the check and now: this stem is not free
            md_path.unlink()  # ours, written just now
            continue
        return md_path, js_path
    raise FileExistsError(f"{folder}: incident-{inc.rank}.md and {MAX_SUFFIX - 1} suffixes "
                          "are taken")

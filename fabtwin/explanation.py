"""Why an incident was ranked, in words and rows: the `explanation` object the diagnosis
stores per incident (`incident_explanations`, README "Investigate"), for the TUI's incident
screen, the ticket export and the report. Plain Python, no UI import.

Reads the keys replay/explain.py writes: `basis` (`twin`, or `detector` with a `note` when
no replay tested it), `role` (`root` when the twin's search chose it), `ranked_by`, `share`,
`explained` / `residual` (noise units), `note`, the cells at the root (`root`: port, counter,
window_start, observed, healthy, with_fault, in expected_counters' units), `runner_up` (share,
why it lost), `other_roots` and `victims`; and the design's names for the same things
(`explained_share`, `without_fault`, `cells`), so a store from either reads alike.
"""

from __future__ import annotations

from fabtwin.units import replay_value

NONE_STORED = "no explanation stored (run investigate again)"
CELL_COLUMNS = ("port", "counter", "window", "observed", "without fault", "with fault")


def share_of(obj: dict) -> float | None:
    """The share of the residual `obj` (an explanation or its runner-up) explains."""
    value = obj.get("share", obj.get("explained_share"))
    return float(value) if isinstance(value, int | float) else None


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _cause(obj: dict) -> str:
    root = obj.get("root_cause") or {}
    if isinstance(root, dict):
        return f"{root.get('type', '')} {root.get('id', '')}".strip()
    return str(root)


def cell_rows(expl: dict | None) -> list[tuple[str, ...]]:
    """The cells at the root's ports the fault explains most: CELL_COLUMNS each (observed,
    what the twin predicts without the fault, and with it), in the counter's unit."""
    if not expl:
        return []
    cells = expl.get("root") or expl.get("cells") or []
    rows = []
    for c in cells if isinstance(cells, list) else []:
        if not isinstance(c, dict):
            continue
        window, counter = str(c.get("window_start") or ""), str(c.get("counter", ""))

        def num(key: str, c: dict = c, counter: str = counter) -> str:
            v = c.get(key)
            return replay_value(counter, float(v)) if isinstance(v, int | float) else "-"

        rows.append((str(c.get("port", "")), counter,
                     window[11:19] if len(window) >= 19 else window, num("observed"),
                     num("healthy") if "healthy" in c else num("without_fault"),
                     num("with_fault")))
    return rows


def summary_lines(expl: dict | None) -> list[str]:
    """Two to four lines: how much of the residual it explains (and as what), the runner-up
    and why it lost; NONE_STORED for a store without explanations."""
    if not expl:
        return [NONE_STORED]
    if expl.get("basis") == "detector":  # no replay to test it on: the detector's word only
        return [f"not tested on the twin: {expl.get('note') or 'no replay'}"]
    head = f"explains {_pct(share_of(expl))} of the residual"
    if isinstance(expl.get("explained"), int | float) and isinstance(expl.get("residual"),
                                                                      int | float):
        head += f" ({expl['explained']:g} of {expl['residual']:g} noise units)"
    if expl.get("role"):
        head += ", chosen as a root cause" if expl["role"] == "root" else f", {expl['role']}"
    lines = [head]
    if expl.get("ranked_by") == "detector":  # the twin explains; the detectors' score ranks
        lines.append("ranked by its detector's score; the twin's explanation beside it")
    if expl.get("note"):
        lines.append(str(expl["note"]))
    runner = expl.get("runner_up")
    if isinstance(runner, dict):
        lines.append(f"runner-up: {runner.get('kind', '?')} {_cause(runner)} explains "
                     f"{_pct(share_of(runner))}")
        if runner.get("why"):
            lines.append(f"  lost because it {runner['why']}")
    else:
        lines.append("runner-up: none (no other hypothesis competed)")
    others = [o for o in expl.get("other_roots") or [] if isinstance(o, dict)]
    if others:
        lines.append("other roots of the residual: " + ", ".join(
            f"{o.get('kind', '?')} {_cause(o)}" for o in others[:4]))
    victims = expl.get("victims") or []
    if victims:
        lines.append("explains as victims: " + ", ".join(
            f"{v.get('kind', '?')} {_cause(v)}" for v in victims[:4] if isinstance(v, dict))
            + (f" +{len(victims) - 4}" if len(victims) > 4 else ""))
    return lines


def as_text(expl: dict | None) -> str:
    """The explanation as plain text (summary, then the cells as aligned columns)."""
    lines = summary_lines(expl)
    rows = cell_rows(expl)
    if rows:
        widths = [max(len(r[i]) for r in [CELL_COLUMNS, *rows]) for i in range(len(CELL_COLUMNS))]
        for r in [CELL_COLUMNS, *rows]:
            lines.append("  " + "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True))
                         .rstrip())
    return "\n".join(lines)

"""The report as one self-contained HTML page: inline CSS, PNGs embedded as base64, no scripts,
no external asset, so it opens offline and pastes into a postmortem."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from html import escape

import polars as pl

from fabtwin.explanation import CELL_COLUMNS, cell_rows, summary_lines
from fabtwin.report.model import Picture, Report
from fabtwin.ticket import evidence_table, value_text
from fabtwin.units import count

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222;
       max-width: 1200px; margin: 2em auto; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.meta { color: #666; } .note { background: #fff8e1; border-left: 4px solid #f2c14e; padding: 0.5em 0.8em;
       margin: 0.6em 0; }
table { border-collapse: collapse; margin: 0.6em 0; } th, td { border: 1px solid #ddd; padding: 0.25em 0.6em;
       text-align: left; vertical-align: top; } th { background: #f4f6f8; }
td.num { text-align: right; font-variant-numeric: tabular-nums; } code { font-size: 0.92em; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.92em; } pre { background: #f6f8fa; padding: 0.6em; overflow-x: auto; }
ul.marks li { font-family: ui-monospace, monospace; font-size: 0.9em; }
"""

SOURCE = {
    "stored": "as stored by the latest diagnosis (`incidents` table)",
    "computed": "computed now by the telemetry detectors (no diagnosis stored in this store)",
    "empty": "none: the store holds no telemetry",
    "undiagnosed": "none stored: the store was not diagnosed yet",
}


def _t(t: datetime | None) -> str:
    return "-" if t is None else t.strftime("%Y-%m-%d %H:%M:%S")


def _picture(pic: Picture) -> str:
    b64 = base64.b64encode(pic.png).decode("ascii")
    out = [f'<figure id="{escape(pic.name)}"><img src="data:image/png;base64,{b64}" '
           f'alt="{escape(pic.title)}"><figcaption>{escape(pic.caption)} '
           f'(<code>{escape(pic.name)}</code>)</figcaption>']
    if pic.snapshot is not None:
        down = pic.snapshot.filter(pl.col("down_fraction") > 0).sort("down_fraction", "link_id",
                                                                       descending=[True, False])
        bad = pic.snapshot.filter(pl.col("degraded")).sort("link_id")
        items = [f'<li class="down">down {row["down_fraction"] * 100:.0f}% of the window: '
                 f'{escape(row["link_id"])}</li>' for row in down.head(20).iter_rows(named=True)]
        items += [f'<li class="degraded">degraded ({count(row["errors_per_s"])} errors/s): '
                  f'{escape(row["link_id"])}</li>' for row in bad.head(20).iter_rows(named=True)]
        more = down.height + bad.height - len(items)
        if more > 0:
            items.append(f"<li>... and {more} more</li>")
        out.append('<ul class="marks">' + "".join(items) + "</ul>" if items
                   else "<p>No link down or degraded in this window.</p>")
    return "".join(out) + "</figure>"


def _summary(rep: Report) -> str:
    s = rep.summary
    span = f"{_t(s.start)} .. {_t(s.end)} UTC"
    if s.start and s.end:
        span += f" ({(s.end - s.start).total_seconds() / 60:.1f} min)"
    if s.replay is None:
        replay = "no replay yet"
    else:
        replay = (f"{s.replay.get('status')} at {_t(s.replay.get('created'))}: {s.replay.get('windows')} "
                  f"windows of {s.replay.get('window_s')} s, routing {s.replay.get('routing')}")
    rows = [("time range", span), ("devices", f"{s.switches} switches, {s.hosts} hosts"),
            ("links", f"{s.links}"), ("samples", f"{s.samples:,}"), ("events", f"{s.events:,}"),
            ("jobs", f"{s.jobs}"), ("files", f"{s.files_loaded} loaded, {s.files_skipped} skipped, "
                                             f"{s.rejects} rejected records"),
            ("bundles", ", ".join(s.bundles) or "-"), ("replay", replay)]
    return ('<table class="summary">' + "".join(f"<tr><th>{k}</th><td>{escape(v)}</td></tr>" for k, v in rows)
            + "</table>")


def _incident_table(rep: Report) -> str:
    if not rep.incidents:
        if rep.source in ("empty", "undiagnosed"):
            return ""
        return "<p><strong>Healthy:</strong> no incident found.</p>"
    head = "".join(f"<th>{h}</th>" for h in ("rank", "kind", "root cause", "start", "end", "score", "summary"))
    body = "".join(
        f'<tr><td class="num"><a href="#incident-{i.rank}">{i.rank}</a></td><td>{escape(i.kind)}</td>'
        f"<td>{escape(i.root_type)} <code>{escape(i.root_id)}</code></td><td>{_t(i.start)}</td>"
        f'<td>{_t(i.end) if i.end else "still"}</td><td class="num">{i.score:.2f}</td>'
        f"<td>{escape(i.summary)}</td></tr>" for i in rep.incidents)
    return f'<table class="incidents"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _is_wjh(ev: object) -> bool:
    return isinstance(ev, dict) and ev.get("source") == "wjh"


def _wjh_table(evidence: list) -> str:
    """The incident's What Just Happened drops (replay.wjh's evidence entries), one row each."""
    rows = [e for e in evidence if _is_wjh(e)]
    if not rows:
        return ""
    head = "".join(f"<th>{h}</th>" for h in ("port", "drop reason", "count", "first", "last"))
    body = "".join(
        f'<tr><td><code>{escape(str(e.get("port")))}</code></td><td>{escape(str(e.get("reason")))}</td>'
        f'<td class="num">{e.get("count", 0):,}</td><td>{escape(str(e.get("first") or ""))}</td>'
        f'<td>{escape(str(e.get("last") or ""))}</td></tr>' for e in rows)
    return (f'<table class="wjh"><caption>What Just Happened drops</caption><thead><tr>{head}'
            f"</tr></thead><tbody>{body}</tbody></table>")


def _incident_sections(rep: Report) -> str:
    out = []
    shown = {p.rank for p in rep.pictures if p.rank is not None}
    for i in rep.incidents:
        wjh = _wjh_table(i.evidence)
        if i.rank not in shown and not wjh:
            continue
        pics = "".join(_picture(p) for p in rep.pictures if p.rank == i.rank)
        out.append(f'<section id="incident-{i.rank}"><h3>#{i.rank} {escape(i.kind)}: {escape(i.root_type)} '
                   f"<code>{escape(i.root_id)}</code></h3><p>{escape(i.summary)} "
                   f'({_t(i.start)} .. {_t(i.end) if i.end else "still"} UTC, score {i.score:.2f})</p>'
                   f"{pics}{wjh}{_why(rep.explanations.get(i.rank))}{_evidence(i)}</section>")
    return "".join(out)


def _table(cls: str, columns, rows) -> str:
    head = "".join(f"<th>{escape(str(c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in r) + "</tr>"
                   for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _why(explanation: dict | None) -> str:
    """Why it was ranked: the twin's explanation (fabtwin.explanation), or that none is stored."""
    lines = "".join(f"<li>{escape(line.strip())}</li>" for line in summary_lines(explanation))
    cells = cell_rows(explanation)
    return (f'<h4>Why it was ranked</h4><ul class="why">{lines}</ul>'
            + (_table("explanation", CELL_COLUMNS, cells) if cells else ""))


def _evidence(i) -> str:
    """The evidence rows as a table (a column per key; the WJH drops have their own table),
    the impact as key and value."""
    columns, rows = evidence_table([e for e in i.evidence if not _is_wjh(e)])
    out = "<h4>Evidence</h4>" + (_table("evidence", columns, rows) if rows
                                  else "<p>none recorded</p>")
    impact = [(k, value_text(v, k)) for k, v in (i.impact or {}).items()]
    return out + "<h4>Impact</h4>" + (_table("impact", ("what", "which"), impact) if impact
                                       else "<p>none recorded</p>")


def render(rep: Report) -> str:
    """The whole page."""
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
    notes = "".join(f'<p class="note">{escape(n)}</p>' for n in rep.notes)
    fabric = [p for p in rep.pictures if p.rank is None]
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>fabtwin report: {escape(rep.db)}</title><style>{CSS}</style></head><body>",
        "<h1>fabtwin report</h1>",
        f'<p class="meta">store <code>{escape(rep.db)}</code>, written {now} UTC in {rep.seconds:.1f} s'
        + (f", utilization windows of {rep.window_s} s" if rep.window_s else "") + "</p>",
        notes, "<h2>Store</h2>", _summary(rep),
        f"<h2>Incidents</h2><p class=\"meta\">{len(rep.incidents)} incident(s), ranked best first, "
        f"{SOURCE[rep.source]}.</p>", _incident_table(rep)]
    if fabric:
        parts += ["<h2>Fabric</h2>"] + [_picture(p) for p in fabric]
    sections = _incident_sections(rep)
    if sections:
        parts += ["<h2>Around each incident</h2>", sections]
    parts.append("</body></html>")
    return "\n".join(parts)

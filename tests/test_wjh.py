"""What Just Happened drops become evidence of the incident on their port, and the report shows
them: the link_degraded sample with the WJH records its switches would stream (gnmic `json`, the
record a JSON string inside the value, as Cumulus sends it), planted in tmp_path."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime

import pytest
from click.testing import CliRunner
from conftest import REPO

from fabtwin.cli import main
from fabtwin.report.build import build
from fabtwin.report.html import render

LINK = "leaf-p0-01:swp7--spine-p0-03:swp1"  # degraded 03:04-03:08 (labels.json)


def _epoch(hhmmss: str) -> int:
    return int(datetime.fromisoformat(f"2026-11-30T{hhmmss}+00:00").astimezone(UTC).timestamp())


def wjh_line(device: str, ifname: str, at: str, reason: str, reason_id: int, count: int,
             level: str = "l1", egress: str = "") -> str:
    """One gnmic `json` message with one WJH aggregate (30 s ending at `at`)."""
    end = _epoch(at)
    record = {"AggCount": count, "DropType": level.upper(), "EgressPort": egress,
              "EndTimestamp": end, "FirstTimestamp": end - 30, "Hostname": device,
              "IngressPort": ifname, "Reason": reason, "ReasonId": reason_id, "Severity": "Error"}
    return json.dumps({
        "source": device, "subscription-name": "wjh", "timestamp": end * 10**9,
        "prefix": f"interfaces/interface[name={ifname}]/wjh/aggregate/{level}/reasons/"
                  f"reason[severity=error][id={reason_id}]",
        "updates": [{"Path": "state/drop", "values": {"state/drop": json.dumps([record])}}]})


@pytest.fixture(scope="module")
def investigated(tmp_path_factory):
    root = tmp_path_factory.mktemp("wjh")
    bundle = root / "link_degraded"
    shutil.copytree(REPO / "sample_traces" / "link_degraded", bundle)
    lines = [
        wjh_line("leaf-p0-01", "swp7", "03:05:00", "Bad signal integrity", 10021, 120),
        wjh_line("leaf-p0-01", "swp7", "03:06:00", "Bad signal integrity", 10021, 80),
        wjh_line("spine-p0-03", "swp1", "03:05:30", "Checksum or IPver or IPv4 IHL too short", 213,
                 7, "l2"),
        # not this incident's: another port, and the same port before the degradation began
        wjh_line("leaf-p0-02", "swp1", "03:05:00", "Tail drop", 503, 55, "buffer", "swp1"),
        wjh_line("leaf-p0-01", "swp7", "03:01:00", "Bad signal integrity", 10021, 3),
    ]
    (bundle / "gnmi" / "wjh.json").write_text("\n".join(lines) + "\n")
    db = root / "s.duckdb"
    out = CliRunner().invoke(main, ["investigate", str(bundle), "--db", str(db), "--json", "-q"])
    assert out.exit_code == 5, out.output
    return db, json.loads(out.output)


def test_wjh_drops_are_evidence_of_the_degraded_link(investigated):
    _, result = investigated
    (inc,) = [i for i in result["incidents"] if i["root_cause"]["id"] == LINK]
    assert inc["kind"] == "link_degraded"
    wjh = [e for e in inc["evidence"] if e.get("source") == "wjh"]
    assert wjh == [
        {"source": "wjh", "port": "leaf-p0-01:swp7", "reason": "Bad signal integrity", "count": 200,
         "first": "2026-11-30T03:04:30.000Z", "last": "2026-11-30T03:06:00.000Z"},
        {"source": "wjh", "port": "spine-p0-03:swp1", "reason": "Checksum or IPver or IPv4 IHL too short",
         "count": 7, "first": "2026-11-30T03:05:00.000Z", "last": "2026-11-30T03:05:30.000Z"}]
    # no other incident takes drops that are not on its ports
    others = [e for i in result["incidents"] if i["root_cause"]["id"] != LINK
              for e in i["evidence"] if e.get("source") == "wjh"]
    assert all(e["port"] != "leaf-p0-01:swp7" for e in others)


def test_the_report_has_a_wjh_table_for_the_incident(investigated):
    db, _ = investigated
    page = render(build(db))
    section = page[page.index(f"<code>{LINK}</code></h3>"):]
    table = section[section.index('<table class="wjh">'):section.index("</table>")]
    assert "<td><code>leaf-p0-01:swp7</code></td><td>Bad signal integrity</td><td class=\"num\">200</td>" in table
    assert "spine-p0-03:swp1" in table and "Tail drop" not in table
    # its rows once: the incident's evidence table leaves them to the WJH table
    evidence = section[section.index('<table class="evidence">'):]
    evidence = evidence[:evidence.index("</table>")]
    assert "errors_per_s_peak" in evidence and "Bad signal integrity" not in evidence

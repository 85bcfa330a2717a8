"""fabtwin investigate on the gallery: the right root cause first, no false incident."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import REPO

from fabtwin.cli import main
from replay.investigate import investigate

GALLERY = ["healthy", "link_down", "link_flap", "link_degraded", "congestion", "pfc_storm",
           "load_imbalance", "two_faults"]


@pytest.mark.parametrize("name", GALLERY)
def test_every_labelled_fault_is_found_and_nothing_else(tmp_path, name):
    bundle = REPO / "sample_traces" / name
    truth = json.loads((bundle / "labels.json").read_text())["faults"]
    result = investigate(bundle, tmp_path / "s.duckdb")
    def key(x):
        return json.dumps([x["kind"], x["root_cause"]], sort_keys=True)

    # exactly the labelled faults: kind and root cause right, nothing else reported
    assert sorted(map(key, result["incidents"])) == sorted(map(key, truth))
    by_key = {key(f): f for f in truth}
    for inc in result["incidents"]:
        f = by_key[key(inc)]  # and each overlaps its true fault in time
        assert inc["start"] <= f["end"] and (inc["end"] is None or inc["end"] >= f["start"])


def test_investigate_json_has_the_design_shape(tmp_path):
    out = CliRunner().invoke(main, ["investigate", str(REPO / "sample_traces" / "two_faults"),
                                    "--db", str(tmp_path / "s.duckdb"), "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert set(doc) == {"bundle", "window", "incidents"}
    assert set(doc["window"]) == {"start", "end"}
    first = doc["incidents"][0]
    assert set(first) == {"rank", "kind", "root_cause", "start", "end", "score", "summary",
                          "evidence", "impact"}
    assert [i["rank"] for i in doc["incidents"]] == list(range(1, len(doc["incidents"]) + 1))
    assert all(0 <= i["score"] <= 1 for i in doc["incidents"])


def test_a_healthy_bundle_says_so(tmp_path):
    out = CliRunner().invoke(main, ["investigate", str(REPO / "sample_traces" / "healthy"),
                                    "--db", str(tmp_path / "s.duckdb")])
    assert out.exit_code == 0 and "healthy: no incident found" in out.output

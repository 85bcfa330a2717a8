"""The explanation's sentences read as the rest of the UI does: no scientific notation in what
`investigate --json` stores and the TUI and report print (the runner-up's `why` showed
`observed 2.135e+06, healthy 3.05e+06` on sample_traces/two_faults)."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner
from conftest import REPO

from fabtwin.cli import main
from replay.explain import _plain

EXPONENT = re.compile(r"\d(?:\.\d+)?e[+-]\d")


def test_plain_numbers():
    assert [_plain(v) for v in (2.135e6, 3.05e6, 9141.0, 0.0, 12.5, 0.0042, 2e-5)] == [
        "2,135,000", "3,050,000", "9,141", "0", "12.5", "0.0042", "0.00002"]


def test_the_runner_ups_why_has_no_exponent(tmp_path):
    out = CliRunner().invoke(main, ["investigate", str(REPO / "sample_traces" / "two_faults"),
                                    "--db", str(tmp_path / "s.duckdb"), "--json", "-q"])
    assert out.exit_code == 5, out.output
    whys = [i["explanation"]["runner_up"]["why"] for i in json.loads(out.output)["incidents"]
            if (i.get("explanation") or {}).get("runner_up")]
    assert any("unexplained (observed " in w for w in whys), whys
    assert not [w for w in whys if EXPONENT.search(w)], whys

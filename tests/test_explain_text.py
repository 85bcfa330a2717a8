"""The explanation's sentences read as the rest of the UI does: no scientific notation in what
`investigate --json` stores and the TUI and report print (the runner-up's `why` showed
`observed 2.135e+06, healthy 3.05e+06` on sample_traces/two_faults)."""

from __future__ import annotations

import json
import re

from replay.explain import _plain

EXPONENT = re.compile(r"\d(?:\.\d+)?e[+-]\d")


def test_plain_numbers():
    assert [_plain(v) for v in (2.135e6, 3.05e6, 9141.0, 0.0, 12.5, 0.0042, 2e-5)] == [
        "2,135,000", "3,050,000", "9,141", "0", "12.5", "0.0042", "0.00002"]


def test_the_runner_ups_why_has_no_exponent(sample_stores):
    # investigate's document on two_faults, as `investigate --json` prints it (json.dumps)
    doc = json.loads(json.dumps(sample_stores.document("two_faults"), default=str))
    whys = [i["explanation"]["runner_up"]["why"] for i in doc["incidents"]
            if (i.get("explanation") or {}).get("runner_up")]
    assert any("unexplained (observed " in w for w in whys), whys
    assert not [w for w in whys if EXPONENT.search(w)], whys

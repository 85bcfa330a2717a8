"""Every scenario the repository ships simulates, within a time and a memory cap.

`ring64_ar.toml`, the README's own example, once sampled an idle fabric every millisecond up to
a default cap of 1e12 ms (20 minutes and 20 GB before it was stopped): a run now ends with its
last flow. The scenarios run in a child process under RLIMIT_AS, so a regression fails here
instead of taking the machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

SCENARIOS = sorted((REPO / "scenarios").rglob("*.toml"))
MEMORY_CAP = 4 << 30  # address space of the child: numpy, scipy and the run itself
TIME_CAP_S = 240  # the whole set takes ~10 s here

CHILD = r"""
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
from twin.scenario import load, run
out = {}
for path in sys.argv[2:]:
    outcome = run(load(path))
    result = outcome.result
    out[path] = {"flows": int(len(result.finish)), "samples": int(len(result.sample_times)),
                 "last_finish_s": float(result.finish.max()) if len(result.finish) else 0.0}
print(json.dumps(out))
"""


def test_the_repository_ships_scenarios():
    assert len(SCENARIOS) >= 10
    assert REPO / "scenarios" / "ring64_ar.toml" in SCENARIOS


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict]:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(MEMORY_CAP), *map(str, SCENARIOS)],
                          capture_output=True, text=True, timeout=TIME_CAP_S, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: str(p.relative_to(REPO / "scenarios")))
def test_shipped_scenario_simulates_and_ends_with_its_last_flow(outcomes, path: Path):
    got = outcomes[str(path)]
    assert got["flows"] > 0
    assert got["last_finish_s"] > 0
    # sampling stops with the last flow: never more samples than the run's duration allows
    # at the finest sampling any shipped scenario asks for (1 ms), plus the first and last
    assert got["samples"] <= got["last_finish_s"] / 1e-3 + 2

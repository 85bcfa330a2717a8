"""What-if sweeps: variants, ranking, and the same answers on one process, N processes or Ray."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabtwin.cli import main
from twin.parallel import run_tasks
from twin.scenario import ScenarioError, load, run
from twin.sweep import fabric_of, load_sweep, run_sweep

BASE = """
[fabric]
hosts = 8
leaf_radix = 4
spine_radix = 4
hosts_per_leaf = 2
host_speed_gbps = 400
fabric_speed_gbps = 400

[balancing]
mode = "{mode}"
convergence_ms = 50

[[jobs]]
name = "moe"
collective = "alltoall"
hosts = "all"
size = "64MiB"
"""


def _write(tmp_path: Path, sweep: str, mode: str = "ecmp", extra: str = "") -> Path:
    p = tmp_path / "s.toml"
    p.write_text(BASE.format(mode=mode) + extra + "\n[sweep]\n" + sweep)
    return p


def _square(x: int) -> tuple[int, int]:
    return x, x * x


def test_run_tasks_keeps_task_order_on_processes():
    tasks = [7, -3, 12, 0, 5, 9, 1]
    want = [(x, x * x) for x in tasks]
    assert run_tasks(_square, tasks, workers=1) == want
    assert run_tasks(_square, tasks, workers=2) == want
    with pytest.raises(ValueError, match="executor"):
        run_tasks(_square, tasks, executor="dask")


def test_failure_variant_equals_the_scenario_with_that_fault_written_in(tmp_path):
    """The sweep's simulation of 'fail link L at 1 ms' is `fabtwin simulate` of the same fault."""
    sw = load_sweep(_write(tmp_path, 'fail = "each_spine_link"\nat_ms = 1\n'))
    fabric = fabric_of(sw.scenario.spec)
    report = run_sweep(sw)
    link = report["variants"][0]["fail"]
    fault = f'\n[[faults]]\nkind = "link_down"\nlinks = ["{link}"]\nat_ms = 1\n'
    (tmp_path / "one.toml").write_text(BASE.format(mode="ecmp") + fault)
    (tmp_path / "base.toml").write_text(BASE.format(mode="ecmp"))
    one = run(load(tmp_path / "one.toml")).as_json()["jobs"][0]
    base = run(load(tmp_path / "base.toml")).as_json()["jobs"][0]
    assert report["variants"][0]["jobs"][0]["completion_s"] == one["completion_s"]
    assert report["baseline"]["jobs"][0]["completion_s"] == base["completion_s"]
    assert report["variants"][0]["impact"] == one["completion_s"] / base["completion_s"] > 1
    assert len(report["variants"]) == int((fabric.cable_tier == 1).sum()) == 8


def test_variants_rank_by_slowdown_and_longer_convergence_hurts_more(tmp_path):
    sw = load_sweep(_write(tmp_path, 'fail = "each_spine_link"\nat_ms = 1\nconvergence_ms = [10, 300]\n'))
    report = run_sweep(sw)
    rows = report["variants"]
    assert len(rows) == 16 and [r["rank"] for r in rows] == list(range(1, 17))
    impacts = [r["impact"] for r in rows]
    assert impacts == sorted(impacts, reverse=True)
    by = {(r["fail"], r["convergence_ms"]): r["impact"] for r in rows}
    for link in {r["fail"] for r in rows}:
        assert by[link, 300.0] > by[link, 10.0] > 1.0
    top = rows[0]["jobs"][0]
    assert top["busbw_drop"] == pytest.approx(1 - 1 / top["slowdown"])


def test_each_leaf_in_ecmp_under_adaptive_routing(tmp_path):
    sw = load_sweep(_write(tmp_path, 'ecmp = "each_leaf"\n', mode="ar"))
    report = run_sweep(sw)
    assert [r["ecmp_leaf"] for r in report["variants"]] != []
    assert {r["ecmp_leaf"] for r in report["variants"]} == {f"leaf-p0-0{i}" for i in range(1, 5)}
    assert all(r["impact"] >= 1.0 - 1e-12 for r in report["variants"])
    assert report["variants"][0]["impact"] > 1.0  # hashing collides where AR would split


def test_a_link_failed_at_the_start_that_never_converges_stalls_the_job(tmp_path):
    """ECMP with convergence beyond the run: flows hashed onto the dead link never finish."""
    sw = load_sweep(_write(tmp_path, 'fail = "each_spine_link"\nconvergence_ms = 1e9\n',
                           extra="\n[run]\nuntil_ms = 100\n"))
    report = run_sweep(sw)
    stalled = [r for r in report["variants"] if r["impact"] is None]
    assert stalled and stalled[0]["rank"] == 1
    assert stalled[0]["jobs"][0]["completion_s"] is None
    json.dumps(report, allow_nan=False)  # no infinities in the JSON


def _strip(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != "run"}


def test_two_processes_give_exactly_the_single_process_sweep(tmp_path):
    sw = load_sweep(_write(tmp_path, 'fail = "each_spine_link"\nat_ms = 1\nconvergence_ms = [10, 300]\n'))
    assert _strip(run_sweep(sw, workers=2)) == _strip(run_sweep(sw, workers=1))


def test_ray_gives_exactly_the_local_sweep(tmp_path, ray_cluster):
    sw = load_sweep(_write(tmp_path, 'fail = "each_spine_link"\nat_ms = 1\nconvergence_ms = [10, 300]\n'))
    on_ray = run_sweep(sw, executor="ray", workers=2)
    assert ray_cluster.is_initialized()  # the fixture's cluster was used, not shut down
    assert _strip(on_ray) == _strip(run_sweep(sw, workers=1))
    assert run_tasks(abs, [-3, 1, -2], executor="ray") == [3, 1, 2]  # workers import tests/ not


def test_sweep_file_errors_name_the_file(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(BASE.format(mode="ecmp"))
    with pytest.raises(ScenarioError, match=r"s\.toml: no \[sweep\]"):
        load_sweep(p)
    with pytest.raises(ScenarioError, match="no link 'x--y'"):
        load_sweep(_write(tmp_path, 'fail = ["x--y"]\n'))
    with pytest.raises(ScenarioError, match="each_spine_link"):
        load_sweep(_write(tmp_path, 'fail = "every_link"\n'))
    with pytest.raises(ScenarioError, match="plane 3"):
        load_sweep(_write(tmp_path, 'fail = "each_spine_link"\nplane = 3\n'))


def test_cli_sweep_prints_the_ranking_and_json(tmp_path):
    p = _write(tmp_path, 'fail = "each_spine_link"\nat_ms = 1\n')
    out = CliRunner().invoke(main, ["sweep", str(p), "--workers", "1", "--json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert report["tasks"] == 9 and report["run"]["executor"] == "local"
    text = CliRunner().invoke(main, ["sweep", str(p), "--workers", "1", "--top", "2"])
    assert text.exit_code == 0, text.output
    first = report["variants"][0]
    assert f"fail {first['fail']} at 1 ms" in text.output and "6 more" in text.output
    bad = CliRunner().invoke(main, ["sweep", str(tmp_path / "missing.toml")])
    assert bad.exit_code == 2 and "missing.toml" in bad.output
    assert math.isclose(first["impact"], first["jobs"][0]["slowdown"])


def test_cli_sweep_progress_on_stderr_and_quiet(tmp_path, monkeypatch):
    # named relative to its folder: the progress line is cut at 80 columns, and tmp_path's
    # length varies (an xdist worker's is 10 characters longer)
    monkeypatch.chdir(tmp_path)
    p = _write(tmp_path, 'fail = "each_spine_link"\nat_ms = 1\n').relative_to(tmp_path)
    shown = CliRunner().invoke(main, ["sweep", str(p), "--workers", "1", "--json"],
                               env={"FORCE_COLOR": "1"})  # stderr as a terminal would be
    assert shown.exit_code == 0 and f"sweep {p}" in shown.stderr
    quiet = CliRunner().invoke(main, ["sweep", str(p), "--workers", "1", "--json", "-q"],
                               env={"FORCE_COLOR": "1"})
    assert quiet.exit_code == 0 and quiet.stderr == ""
    assert _strip(json.loads(quiet.stdout)) == _strip(json.loads(shown.stdout))

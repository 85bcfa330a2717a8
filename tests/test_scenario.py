"""`fabtwin simulate`: the scenario format and the numbers nccl-tests users read."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import REPO

from fabtwin.cli import main
from twin.scenario import ScenarioError, load, parse_size, run

BASE = """
[fabric]
hosts = 16
leaf_radix = 8
spine_radix = 8
hosts_per_leaf = 4
host_speed_gbps = 400
fabric_speed_gbps = 400

[balancing]
mode = "{mode}"

[[jobs]]
name = "j"
collective = "{coll}"
hosts = "gpu-node-[0001-0016]"
size = "64MiB"
"""


def scenario(tmp_path, mode="ar", coll="allreduce_ring", extra=""):
    p = tmp_path / "s.toml"
    p.write_text(BASE.format(mode=mode, coll=coll) + extra)
    return p


@pytest.mark.parametrize("coll,factor", [("allreduce_ring", 2 * 15 / 16), ("allgather", 15 / 16),
                                         ("alltoall", 15 / 16), ("permutation", 1.0)])
def test_bus_bandwidth_is_line_rate_on_a_healthy_nonblocking_fabric(tmp_path, coll, factor):
    out = run(load(scenario(tmp_path, coll=coll))).as_json()
    (job,) = out["jobs"]
    # every rank sends at 400 Gb/s = 50 GB/s the whole time: busbw is the line rate
    assert job["busbw_GBps"] == pytest.approx(50.0, rel=1e-6)
    assert job["algbw_GBps"] == pytest.approx(50.0 / factor, rel=1e-6)


def test_incast_is_bounded_by_the_receiver_port(tmp_path):
    out = run(load(scenario(tmp_path, coll="incast"))).as_json()
    (job,) = out["jobs"]
    # 15 senders x 64 MiB into one 400G port
    assert job["completion_s"] == pytest.approx(15 * 64 * 2**20 / 50e9, rel=1e-6)


def test_degraded_link_slows_the_ring_down(tmp_path):
    extra = '\n[[faults]]\nkind = "link_degraded"\nplane = 0\nspeed_gbps = 100\nat_ms = 0\n'
    slow = run(load(scenario(tmp_path, extra=extra))).as_json()["jobs"][0]
    assert slow["busbw_GBps"] == pytest.approx(12.5, rel=1e-6)


def test_sizes_and_errors_name_the_file():
    assert parse_size("1GiB", "x") == 2**30 and parse_size("2 MB", "x") == 2e6
    with pytest.raises(ScenarioError, match="x: size"):
        parse_size("lots", "x")


def test_bad_scenarios_are_one_line_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[fabric]\nhosts = 4\nradix = 3\n")
    out = CliRunner().invoke(main, ["simulate", str(bad)])
    assert out.exit_code == 2 and "bad.toml: [fabric] has unknown keys ['radix']" in out.output
    bad.write_text(BASE.format(mode="ar", coll="allreduce_ring") +
                   '\n[[faults]]\nlinks = ["nope--nope"]\n')
    out = CliRunner().invoke(main, ["simulate", str(bad)])
    assert out.exit_code == 2 and "no link 'nope--nope'" in out.output


def test_simulate_json_on_the_htsim_example():
    out = CliRunner().invoke(main, ["simulate", str(REPO / "scenarios" / "htsim_perm1024_ecmp.toml"),
                                    "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["flows"]["finished"] == 1024
    assert 400e-6 < doc["flows"]["fct_median_s"] < 600e-6  # htsim: 500.7 us


def test_lossy_link_costs_goodput_like_go_back_n(tmp_path):
    extra = '\n[[faults]]\nkind = "link_degraded"\nplane = 0\nloss = 1e-3\nat_ms = 0\n'
    job = run(load(scenario(tmp_path, extra=extra))).as_json()["jobs"][0]
    # every link loses 1e-3 of its packets, each loss resends a 64-packet window
    assert job["busbw_GBps"] == pytest.approx(50.0 * (1 - 1e-3) / (1 + 1e-3 * 64), rel=1e-6)


def test_pfc_storm_stalls_the_job_for_its_duration(tmp_path):
    healthy = run(load(scenario(tmp_path))).as_json()["jobs"][0]["completion_s"]
    extra = '\n[[faults]]\nkind = "pfc_storm"\nhost = "gpu-node-0006"\nat_ms = 0.5\nduration_ms = 2\n'
    stormed = run(load(scenario(tmp_path, extra=extra))).as_json()["jobs"][0]["completion_s"]
    # the ring passes through the stormer: the whole collective waits out the storm
    assert stormed == pytest.approx(healthy + 2e-3, rel=1e-6)

"""The held-out htsim set (benchmarks/htsim_heldout): the converter on htsim's real output
lines, and the committed files consistent with each other (the .cm, the CSVs, the README's
tables and command lines), so a mis-mapped flow or a stale table fails here."""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

import numpy as np
import pytest

from benchmarks import htsim_calibration as calibration
from benchmarks.htsim_calibration import fct_stats, htsim_fct_us, htsim_wall_times, wall_key
from benchmarks.htsim_heldout import ALL, REFERENCE, REGIMES, SCENARIOS, available
from benchmarks.htsim_heldout.convert import ConvertError, convert, read_cm
from benchmarks.htsim_heldout.gen_cm import generate
from benchmarks.htsim_heldout.run import command, run_one
from twin.workload import read_connection_matrix

CM = """Nodes 1024
Connections 3
701->146 id 1 start 0 size 1000000
185->146 id 2 start 0 size 1000000
191->146 id 3 start 7 size 1000000
"""
# lines as htsim_roce and htsim_uec print them (from incast32_1MB runs; htsim_roce's number is
# its object id, htsim_uec's flowId the .cm's id), with the set-up chatter around them
ROCE_OUT = """tiers 3
traffic matrix input file: incast32_1MB.cm
startflow Roce_701_146 at 0
Source Roce_701_146 RESUME 167.634
Flow Roce_185_146 23220 finished at 1268.51 total bytes 250
Flow Roce_701_146 23178 finished at 2622 total bytes 250
.Done
New: 0 Rtx: 0
"""
UEC_OUT = ("Flow Uec_191_146 flowId 3 uecSrc 24 finished at 1332.23 total messages 1 total packets"
           " 245 RTS 0 total bytes 1001070 in_flight now 0 fair_inc 45926 prop_inc 468\n")


def _rows(path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_convert_maps_lines_to_cm_rows_by_pair(tmp_path):
    cm, out, dst = tmp_path / "x.cm", tmp_path / "x.out", tmp_path / "x.csv"
    cm.write_text(CM)
    out.write_text(ROCE_OUT + UEC_OUT)
    assert convert(cm, out, dst) == (3, 3)
    rows = _rows(dst)
    assert list(rows[0]) == ["id", "src", "dst", "size_bytes", "start_us", "finish_us"]
    # .cm order, not output order; whole microseconds written as floats like the shared CSVs
    assert [list(r.values()) for r in rows] == [["1", "701", "146", "1000000", "0", "2622.0"],
                        ["2", "185", "146", "1000000", "0", "1268.51"],
                        ["3", "191", "146", "1000000", "7", "1332.23"]]
    assert dst.read_bytes().count(b"\r\n") == 4  # the shared CSVs' line ends


def test_convert_leaves_unfinished_flows_empty(tmp_path):
    cm, out, dst = tmp_path / "x.cm", tmp_path / "x.out", tmp_path / "x.csv"
    cm.write_text(CM)
    out.write_text(UEC_OUT)
    assert convert(cm, out, dst) == (1, 3)
    assert [r["finish_us"] for r in _rows(dst)] == ["", "", "1332.23"]


def test_convert_rejects_what_it_cannot_map(tmp_path):
    cm, out, dst = tmp_path / "x.cm", tmp_path / "x.out", tmp_path / "x.csv"
    cm.write_text(CM)
    out.write_text("Flow Roce_5_6 1 finished at 10 total bytes 2\n")
    with pytest.raises(ConvertError, match="not in"):
        convert(cm, out, dst)
    out.write_text(UEC_OUT + UEC_OUT)
    with pytest.raises(ConvertError, match=r"x\.out:2: flow 191->146 finished twice"):
        convert(cm, out, dst)
    cm.write_text(CM.replace("185->146 id 2", "185 -> 146 id 2"))
    with pytest.raises(ConvertError, match=r"x\.cm:4: not a flow line"):
        read_cm(cm)
    cm.write_text(CM.replace("185->146", "701->146"))
    with pytest.raises(ConvertError, match="pair occurs twice"):
        read_cm(cm)


def test_generator_rewrites_the_committed_cm_files(tmp_path):
    generate(tmp_path)
    names = {sc.cm for sc in ALL.values()}
    assert {p.name for p in tmp_path.glob("*.cm")} == names
    for name in names:
        assert (tmp_path / name).read_bytes() == (REFERENCE / name).read_bytes(), name


def _readme_runs() -> tuple[dict[str, list[str]], set[str]]:
    rows, cmds = {}, set()
    for line in (REFERENCE / "README.md").read_text().splitlines():
        if line.startswith("| ") and not line.startswith("| run "):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0]] = cells
        elif line.startswith("htsim_"):
            cmds.add(line.strip())
    return rows, cmds


@pytest.mark.parametrize("name", list(ALL))
def test_committed_runs_match_cm_and_readme(name):
    sc = ALL[name]
    if name not in available(ALL):
        pytest.skip(f"{name}: not every regime was run")
    flows = read_cm(REFERENCE / sc.cm)
    rows, cmds = _readme_runs()
    walls = htsim_wall_times(REFERENCE / "README.md")
    gbps = sc.spec.host_speed_gbps
    for regime in REGIMES:
        path = REFERENCE / sc.csv_name(regime)
        got = _rows(path)
        assert [(int(r["id"]), int(r["src"]), int(r["dst"]), int(r["size_bytes"]), int(r["start_us"]))
                for r in got] == [(f.id, f.src, f.dst, f.size, f.start_us) for f in flows]
        for r in got:  # no flow beats serializing its bytes at its host's line rate
            if r["finish_us"]:
                assert float(r["finish_us"]) - int(r["start_us"]) > int(r["size_bytes"]) * 8e-3 / gbps
        key = wall_key(sc, regime)
        fct, total = htsim_fct_us(path)
        med, p99, mx = fct_stats(fct)
        cells = rows[key]
        assert cells[1] == f"{len(fct)}/{total}"
        assert [float(c) for c in cells[2:5]] == [round(med, 1), round(p99, 1), round(mx, 1)]
        assert key in walls  # htsim_calibration reads the wall time from the table
        assert " ".join(command(sc, regime)) in cmds


def test_failed_runs_use_the_calibration_file_names():
    sc = SCENARIOS["perm128b_4MB_2tier_failed4"]
    assert sc.csv_name("uec_reps") == "perm128b_4MB_2tier_uec_reps_failed4.fct.csv"
    assert re.search(r" -failed 4 ", " ".join(command(sc, "uec_reps")))
    assert "-failed" not in command(SCENARIOS["perm128b_4MB_2tier"], "roce_ecmp")
    # the 3-tier failure means other links: kept out of what htsim_calibration would run
    sc = ALL["pod0in_2MB_3tier_failed4"]
    assert sc.name not in SCENARIOS and sc.spec.tiers == 3
    assert command(sc, "roce_ecmp")[:2] == ["htsim_roce", "-tiers"] and "-failed" in command(sc, "roce_ecmp")


@pytest.mark.parametrize("name", sorted({sc.cm for sc in ALL.values()}))
def test_twin_reads_every_cm_as_the_converter_does(name):
    """The twin's reader (what htsim_calibration feeds the twin) sees the same flows."""
    src, dst, start, size = read_connection_matrix(REFERENCE / name)
    flows = read_cm(REFERENCE / name)
    assert src.tolist() == [f.src for f in flows] and dst.tolist() == [f.dst for f in flows]
    assert np.allclose(start * 1e6, [f.start_us for f in flows]) and size.tolist() == [f.size for f in flows]


def test_command_lines_are_the_shared_readmes():
    """command() writes the shared reference's command lines for its own scenarios."""
    readme = calibration.REFERENCE / "README.md"
    if not readme.is_file():
        pytest.skip("../shared/reference/htsim not present")
    shared = {ln.strip() for ln in readme.read_text().splitlines() if ln.startswith("htsim_")}
    built = {" ".join(command(sc, r)) for sc in calibration.SCENARIOS.values() for r in REGIMES
             if sc.name != "perm1024_2MB"}  # the first table lists no command lines
    assert built and built <= shared


HTSIM_BIN = Path(os.environ.get("FABTWIN_HTSIM_BIN", "/tmp/htsim-src/htsim/sim/build/datacenter"))


def _built(regime: str):
    """`regime` as a parameter, skipped where its htsim binary is not built (one can be built
    without the other: `make htsim_uec`)."""
    binary = command(ALL["incast16_1MB_2tier"], regime)[0]
    return pytest.param(regime, marks=pytest.mark.skipif(
        not (HTSIM_BIN / binary).is_file(),
        reason=f"{binary} not built (set FABTWIN_HTSIM_BIN to its build/datacenter)"))


@pytest.mark.parametrize("regime", [_built("roce_ecmp"), _built("uec_reps")])
def test_rerun_reproduces_the_committed_csv(tmp_path, regime):
    """The whole chain (command line, htsim, converter) on the smallest scenario (0.2 s of CPU
    each): htsim is deterministic, so the CSV comes out byte for byte as committed."""
    sc = ALL["incast16_1MB_2tier"]
    rec = run_one(sc, regime, HTSIM_BIN, 60.0, tmp_path, dest=tmp_path)
    assert (rec["finished"], rec["flows"]) == (16, 16)
    assert (tmp_path / sc.csv_name(regime)).read_bytes() == (REFERENCE / sc.csv_name(regime)).read_bytes()

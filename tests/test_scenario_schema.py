"""Scenario, generate and sweep files are checked against a schema (issue 19), and each fault
kind is declared once, in twin/faults.py, with a detector and a style keyed by it (issue 20)."""

from __future__ import annotations

import csv
import math
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import REPO

from fabtwin.cli import main
from fabtwin.report.data import SIGNAL
from fabtwin.tui.data import KIND_COUNTER, RATE_COUNTERS
from fabtwin.tui.screens.events import FAULT_STYLES, LANE_STYLES
from replay.detectors import DETECTOR_OF, DETECTORS
from replay.stored import Incident, StoredIncident
from twin.faults import FAULT_KINDS, KINDS, inject
from twin.scenario import ScenarioError, from_document, load, read_document
from twin.schema import Source
from twin.sweep import load_sweep
from twin.synth import parse_faults
from twin.topology import FabricSpec, build

GEN = """\
[fabric]
hosts = 16
leaf_radix = 8
spine_radix = 8
hosts_per_leaf = 4

[balancing]
mode = "ar"

[[jobs]]
name = "train"
hosts = "all"
size = "1GiB"

[telemetry]
duration_s = 600
sample_s = 10

[[faults]]
kind = "link_flap"
link = "leaf-p0-02:swp5--spine-p0-01:swp2"
at_s = 120
duration_s = 15
repeat = 3
period_s = 60
"""
LINE: dict[str, int] = {}  # the first line of each
for n, line in enumerate(GEN.splitlines(), 1):
    for key in ("mode", "size", "duration_s", "repeat", "[telemetry]"):
        if line.startswith(key):
            LINE.setdefault(key.strip("[]"), n)


def _error(tmp_path, text: str) -> str:
    p = tmp_path / "s.toml"
    p.write_text(text)
    with pytest.raises(ScenarioError) as exc:
        load(p)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"{p}: ")
    return msg


# -- issue 19: the schema ------------------------------------------------------------------

SHIPPED = sorted(REPO.glob("scenarios/**/*.toml")) + sorted(REPO.glob("sample_traces/*/*.toml"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(REPO)))
def test_every_shipped_scenario_parses(path):
    doc, source = read_document(path)
    sc = from_document(doc, source)
    assert sc.spec.hosts >= 1 and (sc.jobs or sc.flows_file)
    if doc.sweep is not None:
        assert len(load_sweep(path).variants) > 1


def test_the_shipped_set_covers_every_fault_kind():
    kinds = {type(f) for p in SHIPPED for f in read_document(p)[0].faults}
    assert kinds == {k.params for k in KINDS.values()}


@pytest.mark.parametrize("old,new,expected", [
    ("size = ", "szie = ", "[jobs[0]] has unknown keys ['szie'] (line {size})"),
    ("repeat = ", "repaet = ", "[faults[0]] has unknown keys ['repaet'] (line {repeat})"),
    ("[telemetry]", "[genrate]", "unknown table 'genrate' (line {telemetry})"),
    ("hosts = 16\n", "hosts = 16\nsample_mss = 1\n", "[fabric] has unknown keys ['sample_mss'] (line 3)"),
])
def test_each_reported_typo_names_the_file_key_and_line(tmp_path, old, new, expected):
    msg = _error(tmp_path, GEN.replace(old, new, 1))
    assert msg.endswith(expected.format(**LINE)), msg


def test_repeat_spelt_right_gives_three_flaps_in_the_labels(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(GEN)
    doc, source = read_document(p)
    (flap,) = parse_faults(build(from_document(doc, source).spec), doc.faults, source)
    assert flap.downs == [(120.0, 135.0), (180.0, 195.0), (240.0, 255.0)]


@pytest.mark.parametrize("old,new,expected", [
    ('mode = "ar"', 'mode = "adaptive"',
     "balancing.mode: 'adaptive' is not one of ecmp, spray, ar (line {mode})"),
    ("duration_s = 600", 'duration_s = "ten minutes"',
     "telemetry.duration_s: expected float, got 'ten minutes' (line {duration_s})"),
    ('size = "1GiB"', "size = -1", "jobs[0].size: expected float > 0.0, got -1 (line {size})"),
    ('size = "1GiB"', 'size = "lots"', "jobs[0].size: 'lots' is not a number of bytes (e.g. 1GiB, 512MB) "
     "(line {size})"),
    ("repeat = 3", "repeat = 0", "faults[0].repeat: expected int >= 1, got 0 (line {repeat})"),
    ('link = "leaf-p0-02:swp5--spine-p0-01:swp2"', "fraction = 1.5",
     "faults[0].fraction: expected float <= 1.0, got 1.5"),
    ('kind = "link_flap"', 'kind = "link_flop"', "faults[0].kind: 'link_flop' is not one of "
     + ", ".join(FAULT_KINDS)),
    ("hosts = 16", "hosts = -16", "fabric.hosts: expected int >= 1, got -16 (line 2)"),
])
def test_wrong_types_and_ranges_are_one_line_errors(tmp_path, old, new, expected):
    assert old in GEN
    assert expected.format(**LINE) in _error(tmp_path, GEN.replace(old, new))


def test_a_time_in_seconds_and_milliseconds_at_once_is_refused(tmp_path):
    p = tmp_path / "s.toml"
    text = GEN.replace("at_s = 120", "at_s = 120\nat_ms = 5")
    p.write_text(text)
    doc, source = read_document(p)
    line = text.splitlines().index("at_ms = 5") + 1
    with pytest.raises(ScenarioError, match=rf"faults\[0\]\.at_ms: give at_s or at_ms, not both \(line {line}\)"):
        parse_faults(build(from_document(doc, source).spec), doc.faults, source)


def test_binary_and_non_utf8_files_are_one_line_errors(tmp_path):
    p = tmp_path / "s.toml"
    p.write_bytes(b"[fabric]\nhosts = 4\n\xff\xfe\x00garbage")
    with pytest.raises(ScenarioError, match=r"s\.toml: not UTF-8 text .*\(line 3\)$"):
        load(p)
    p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")  # a picture
    with pytest.raises(ScenarioError, match=r"s\.toml: not UTF-8 text \(byte 0: a binary file\?\) \(line 1\)$"):
        load(p)
    p.write_bytes(b"\x00\x01\x02\x03")  # UTF-8, but no TOML
    with pytest.raises(ScenarioError, match=r"s\.toml: .*\(at line 1, column 1\)$"):
        load(p)


@pytest.mark.parametrize("command", [["simulate"], ["generate", "--out", "{out}"], ["sweep"]])
def test_the_commands_exit_2_with_the_one_line_error(tmp_path, command):
    p = tmp_path / "s.toml"
    p.write_text(GEN.replace('mode = "ar"', 'mode = "adaptive"'))
    out = tmp_path / "bundle"
    res = CliRunner().invoke(main, [c.format(out=out) for c in command] + [str(p)])
    assert res.exit_code == 2, res.output
    assert "balancing.mode: 'adaptive' is not one of ecmp, spray, ar" in res.output
    assert "Traceback" not in res.output and not out.exists()


def test_line_of_follows_arrays_of_tables_dotted_and_quoted_keys():
    text = ('[fabric]\nhosts = 4\n[[jobs]]\nname = "a"\n[[jobs]]\n"size" = 1\n'
            'run.until_ms = 5\n[[faults]]\nlinks = [\n  "x",\n]\n')
    src = Source(REPO / "x.toml", text)
    assert src.line_of(["jobs", 1, "size"]) == 6
    assert src.line_of(["jobs", 1, "run", "until_ms"]) == 7
    assert src.line_of(["jobs", 0]) == 3
    assert src.line_of(["faults", 0, "links", 0]) == 9
    assert src.line_of(["nothing"]) is None


# -- issue 20: one declaration per fault kind ---------------------------------------------

def test_every_kind_has_a_detector_a_style_and_a_signal():
    assert set(DETECTOR_OF) == set(FAULT_KINDS) and set(DETECTORS) == set(DETECTOR_OF.values())
    assert set(FAULT_STYLES) == set(FAULT_KINDS) and all(LANE_STYLES[k] for k in FAULT_KINDS)
    canonical = {r["canonical"] for r in csv.DictReader((REPO / "collectors/core/data/canonical_counters.csv").open())}
    for kind in KINDS.values():
        assert kind.params.__struct_config__.tag == kind.name
        assert kind.root_type in ("link", "port", "device")
        assert kind.signal in canonical
        assert KIND_COUNTER[kind.name] in RATE_COUNTERS
    assert KIND_COUNTER["pfc_storm"] == "tx_pause_per_s" and KIND_COUNTER["link_degraded"] == "errors_per_s"
    assert SIGNAL["congestion"][0] == "ecn_marked_per_s" and "link_down" not in SIGNAL


FAULT_OF = {"link_down": 'link = "leaf-p0-01:swp5--spine-p0-01:swp1"',
            "link_flap": 'link = "leaf-p0-01:swp5--spine-p0-01:swp1"',
            "link_degraded": 'link = "leaf-p0-01:swp5--spine-p0-01:swp1"\nloss = 1e-3',
            "congestion": 'host = "gpu-node-0003"\nsenders = 4', "pfc_storm": 'host = "gpu-node-0003"',
            "load_imbalance": 'device = "leaf-p0-02"'}


@pytest.mark.parametrize("name", FAULT_KINDS)
def test_each_kind_injects_a_fault_rooted_at_its_entity_type(tmp_path, name):
    p = tmp_path / "s.toml"
    head = GEN[: GEN.index("[[faults]]")]
    p.write_text(f'{head}[[faults]]\nkind = "{name}"\nat_s = 10\nduration_s = 5\n{FAULT_OF[name]}\n')
    doc, source = read_document(p)
    fabric = build(FabricSpec(hosts=16, leaf_radix=8, spine_radix=8, hosts_per_leaf=4))
    for generated in (True, False):
        (fault,) = inject(fabric, doc.faults, source, 0, generated)
        assert fault.kind == name and fault.root_type == KINDS[name].root_type and fault.start_s == 10
        # a generated link_down stays down (its label says so); a what-if's comes back
        assert fault.end_s == (math.inf if name == "link_down" and generated else 15)
        assert fault.changes or fault.storms or fault.extra_traffic is not None or fault.ecmp_leaf is not None


def test_a_what_if_runs_the_generator_only_kinds_too(tmp_path):
    from twin.scenario import run
    base = GEN[: GEN.index("[telemetry]")].replace('size = "1GiB"', 'size = "64MiB"')
    (tmp_path / "a.toml").write_text(base)
    (tmp_path / "b.toml").write_text(base + '[[faults]]\nkind = "congestion"\nhost = "gpu-node-0003"\n'
                                            'senders = 4\nduration_ms = 1\n')
    healthy, incast = (run(load(tmp_path / f)).as_json() for f in ("a.toml", "b.toml"))
    assert incast["flows"]["count"] == healthy["flows"]["count"] + 4


def test_detectors_and_the_store_share_one_incident_type():
    assert StoredIncident is Incident
    inc = Incident("link_flap", "link", "a:x--b:y", None, None, 0.9, "s", rank=3)
    assert inc.as_json()["rank"] == 3 and inc.as_json(1)["rank"] == 1 and inc.ports() == ["a:x", "b:y"]


def test_the_declarations_leave_the_engine_unimported():
    # the TUI and replay read twin.faults: the engine (numpy, scipy, networkx) is for injecting
    code = "import sys, twin.faults; print(sorted({'numpy', 'twin.engine'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.stdout.strip() == "[]"

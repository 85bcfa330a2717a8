"""Issue 18, item 4: the scenario's transport and queue knobs, the structural link selectors,
and `fabtwin simulate --fct-csv` / `--json` as htsim's reference computes them."""

from __future__ import annotations

import csv
import dataclasses
import json
import re

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import REPO
from test_scenario import BASE

from fabtwin.cli import main
from twin.engine import LinkChange
from twin.queueing import ROCE, UEC, Transport
from twin.scenario import KNOBS, ScenarioError, capacity_bytes, load, run, what_if_faults
from twin.topology import build

# test_scenario's 16-host 2-tier fabric at 400G, every host sending 8 MB to another
FABRIC = BASE.format(mode="ar", coll="permutation").replace('size = "64MiB"', 'size = "8MB"')
FIELDS = {f.name for f in dataclasses.fields(Transport)}


def write(tmp_path, text: str, name: str = "s.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def error_of(tmp_path, text: str) -> str:
    p = write(tmp_path, text)
    with pytest.raises(ScenarioError) as exc:
        load(p)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"{p}: "), msg
    return msg


def line_of(text: str, start: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if line.startswith(start))


# -- transport and queue knobs ---------------------------------------------------------------

def test_without_a_transport_table_flows_stay_fluid(tmp_path):
    assert load(write(tmp_path, FABRIC)).transport is None


@pytest.mark.parametrize("kind,preset", [("roce", ROCE), ("uec", UEC)])
def test_the_kind_picks_htsims_packets(tmp_path, kind, preset):
    sc = load(write(tmp_path, FABRIC + f'\n[transport]\nkind = "{kind}"\n'))
    assert sc.transport == preset


def test_pfc_mtu_and_headers_set_the_transport_fields(tmp_path):
    text = FABRIC + '\n[transport]\nkind = "uec"\npfc = true\nmtu_bytes = 2000\nheader_bytes = 100\n'
    sc = load(write(tmp_path, text))
    assert sc.transport == dataclasses.replace(UEC, payload_bytes=2000, header_bytes=100, lossless=True)


def test_the_transport_reaches_the_simulation(tmp_path):
    """One 8 MB flow per host at 400G: fluid, 160 us; with 100 bytes of header per 2,000-byte
    packet the wire carries 5% more, and the flow ends when its last ACK is back."""
    fluid = run(load(write(tmp_path, FABRIC))).result
    # RoCE: no window, so on this idle non-blocking fabric only the framing and the ACK count
    text = FABRIC + '\n[transport]\nkind = "roce"\nmtu_bytes = 2000\nheader_bytes = 100\n'
    framed = run(load(write(tmp_path, text))).result
    assert fluid.fct.max() == pytest.approx(8e6 * 8 / 400e9, rel=1e-9)
    # serialization of the framed bytes, plus at least one packet's store-and-forward per
    # switch hop (the model's own latency terms; hop latency is 0 here)
    assert framed.fct.min() >= 8e6 * 1.05 * 8 / 400e9 * (1 - 1e-9)
    assert framed.fct.min() < fluid.fct.min() * 1.06


@pytest.mark.parametrize("table,key", sorted(KNOBS))
def test_every_knob_is_wired_or_refused_with_its_line(tmp_path, table, key):
    """A knob sets its Transport field when the model has it; otherwise a one-line error
    naming the file, the key and its line (never accepted and ignored)."""
    value = {"cc": '"dcqcn"', "pfc": str(not ROCE.lossless).lower(), "trimming": "true",
             "mtu_bytes": "1000", "header_bytes": "50",
             "paths": "64", "window_bdp": "2.0", "size_packets": "50", "size_bytes": '"400KB"', "kmin": '"100KB"',
             "kmax": '"10MB"', "pmax": "0.5"}[key]
    # ECN marking is what DCQCN reacts to: its knobs come with cc = "dcqcn"
    marking = 'cc = "dcqcn"\n' if key in ("kmin", "kmax", "pmax") else ""
    text = FABRIC + '\n[transport]\nkind = "roce"\n' + marking + (
        f"{key} = {value}\n" if table == "transport" else f"\n[queues]\n{key} = {value}\n")
    field = KNOBS[table, key]
    if field in FIELDS:
        sc = load(write(tmp_path, text))
        assert getattr(sc.transport, field) != getattr(ROCE, field)
    else:
        msg = error_of(tmp_path, text)
        assert msg.endswith(f"{table}.{key}: not modelled: twin.queueing.Transport has no {field} "
                            f"field, so the twin would ignore it; remove the key "
                            f"(line {line_of(text, key + ' =')})"), msg


@dataclasses.dataclass(frozen=True)
class Modelled(Transport):
    """A Transport with a field for every knob: what the wiring does once the model has them."""

    window_bdp: float | None = None
    trimming: bool = False
    paths: int = 0
    queue_packets: float = 100.0
    kmin_bytes: float = 150e3
    kmax_bytes: float = 1.5e6
    pmax: float = 0.2


@pytest.fixture
def modelled(monkeypatch):
    import twin.scenario as scenario

    monkeypatch.setattr(scenario, "Transport", Modelled)
    monkeypatch.setattr(scenario, "TRANSPORTS", {"roce": Modelled(4000, 64),
                                                   "uec": Modelled(4086, 64, window_bdp=1.5)})


KNOBBED = FABRIC + """
[transport]
kind = "uec"
cc = "dcqcn"
paths = 64
mtu_bytes = 2000
header_bytes = 100
pfc = true
trimming = true

[queues]
size_bytes = "420KB"
kmin = "100KB"
kmax = "1MB"
pmax = 0.5
"""


def test_once_the_model_has_the_fields_every_knob_sets_its_own(tmp_path, modelled):
    t = load(write(tmp_path, KNOBBED)).transport
    # 420 KB of queue holds 200 of the 2,100-byte packets
    assert t == Modelled(2000, 100, lossless=True, window_bdp=None, trimming=True, paths=64,
                         queue_packets=200.0, kmin_bytes=100e3, kmax_bytes=1e6, pmax=0.5, cc="dcqcn")
    window = KNOBBED.replace('cc = "dcqcn"', 'cc = "uec"\nwindow_bdp = 2').split("[queues]")[0]
    assert load(write(tmp_path, window)).transport.window_bdp == 2.0
    packets = KNOBBED.replace('size_bytes = "420KB"', "size_packets = 50")
    assert load(write(tmp_path, packets)).transport.queue_packets == 50


@pytest.mark.parametrize("cc,window", [("uec", 1.5), ("none", None)])
def test_cc_is_the_models_window_or_none(tmp_path, modelled, cc, window):
    """UEC's congestion control is its window (the kind's, 1.5 BDP here), on either packets."""
    for kind in ("roce", "uec"):
        text = FABRIC + f'\n[transport]\nkind = "{kind}"\ncc = "{cc}"\n'
        assert load(write(tmp_path, text)).transport.window_bdp == window


@pytest.mark.parametrize("extra,key,message", [
    ('cc = "dcqcn"\nwindow_bdp = 2\n', "window_bdp", 'transport.window_bdp: cc = "dcqcn" has no window: '
     "drop window_bdp"),
    ('cc = "none"\nwindow_bdp = 2\n', "window_bdp", 'transport.window_bdp: cc = "none" has no window: '
     "drop window_bdp"),
])
def test_a_cc_the_model_lacks_or_contradicts_is_refused(tmp_path, modelled, extra, key, message):
    text = FABRIC + '\n[transport]\nkind = "uec"\n' + extra
    assert error_of(tmp_path, text).endswith(f"{message} (line {line_of(text, key + ' =')})")


def test_dcqcn_sets_the_transports_cc_and_its_marking(tmp_path):
    """cc = "dcqcn" selects twin.dcqcn (no window); [queues] kmin/kmax/pmax set the marking it
    reacts to, and are refused where nothing reads them."""
    text = FABRIC + '\n[transport]\nkind = "roce"\ncc = "dcqcn"\n\n[queues]\nkmin = "10KB"\npmax = 0.05\n'
    t = load(write(tmp_path, text)).transport
    assert (t.cc, t.window_bdp, t.kmin_bytes, t.kmax_bytes, t.pmax) == ("dcqcn", None, 10e3, ROCE.kmax_bytes, 0.05)
    assert load(write(tmp_path, FABRIC + '\n[transport]\nkind = "roce"\n')).transport.cc is None
    bare = text.replace('cc = "dcqcn"\n', "")
    assert error_of(tmp_path, bare).endswith('queues.kmin: ECN marking drives only cc = "dcqcn" in the twin: '
                                             f"set it or remove the key (line {line_of(bare, 'kmin =')})")


@pytest.mark.parametrize("old,new,expected", [
    ('kmin = "100KB"', 'kmin = "2MB"', "queues.kmin: kmin must be below kmax (line {kmin})"),
    ('kmin = "100KB"', 'kmin = "lots"', "queues.kmin: 'lots' is not a number of bytes (e.g. 400KB, "
     "1.5MB) (line {kmin})"),
    ('size_bytes = "420KB"', 'size_bytes = "420KB"\nsize_packets = 3',
     "queues.size_bytes: give size_packets or size_bytes, not both (line {size_bytes})"),
])
def test_knob_values_that_contradict_are_refused_with_their_line(tmp_path, modelled, old, new, expected):
    text = KNOBBED.replace(old, new)
    lines = {k: line_of(text, k + " =") for k in ("kmin", "size_bytes")}
    assert error_of(tmp_path, text).endswith(expected.format(**lines))


def test_pfc_mtu_and_headers_are_wired_today():
    """The fields twin.queueing.Transport had when this was written; a model change that adds
    a field turns that knob's refusal into wiring by itself."""
    wired = {k for k, f in KNOBS.items() if f in FIELDS}
    assert {("transport", "pfc"), ("transport", "mtu_bytes"), ("transport", "header_bytes")} <= wired


@pytest.mark.parametrize("extra,expected", [
    ('\n[transport]\nkind = "tcp"\n', "transport.kind: 'tcp' is not one of roce, uec (line {kind})"),
    ('\n[transport]\nkind = "roce"\ncc = "reno"\n',
     "transport.cc: 'reno' is not one of dcqcn, uec, none (line {cc})"),
    ('\n[transport]\nkind = "roce"\nmtu = 4096\n', "[transport] has unknown keys ['mtu'] (line {mtu})"),
    ('\n[transport]\npfc = true\n', "transport: needs kind (line {transport_table})"),
    ('\n[transport]\nkind = "roce"\nmtu_bytes = 0\n',
     "transport.mtu_bytes: expected int >= 1, got 0 (line {mtu_bytes})"),
    ('\n[transport]\nkind = "roce"\npfc = "yes"\n', "transport.pfc: expected bool, got 'yes' (line {pfc})"),
    ('\n[queues]\nkmin = "150KB"\n', 'queues: needs a [transport] table (kind = "roce" or "uec") '
     "(line {queues_table})"),
    ('\n[transport]\nkind = "roce"\n[queues]\npmax = 1.5\n',
     "queues.pmax: expected float <= 1.0, got 1.5 (line {pmax})"),
    ('\n[transport]\nkind = "roce"\n[queues]\nsize_packets = 100\nszie_bytes = 1\n',
     "[queues] has unknown keys ['szie_bytes'] (line {szie_bytes})"),
])
def test_bad_knobs_are_one_line_errors_with_the_key_and_line(tmp_path, extra, expected):
    text = FABRIC + extra
    starts = {k: k + " =" for k in ("kind", "cc", "mtu", "mtu_bytes", "pfc", "pmax", "szie_bytes")}
    starts |= {"transport_table": "[transport]", "queues_table": "[queues]"}
    lines = {k: line_of(text, start) for k, start in starts.items() if start in text}
    assert error_of(tmp_path, text).endswith(expected.format(**lines))


def test_simulate_exits_2_on_a_refused_knob(tmp_path):
    field = next((k for k, f in KNOBS.items() if f not in FIELDS), None)
    if field is None:
        pytest.skip("the model has a field for every knob")
    table, key = field
    value = '"dcqcn"' if key == "cc" else "64" if key in ("paths", "size_packets") else '"100KB"'
    extra = (f"{key} = {value}\n" if table == "transport" else f"[queues]\n{key} = {value}\n")
    p = write(tmp_path, FABRIC + '\n[transport]\nkind = "uec"\n' + extra)
    out = CliRunner().invoke(main, ["simulate", str(p)])
    assert out.exit_code == 2 and f"{table}.{key}: not modelled" in out.output
    assert "Traceback" not in out.output


# -- selectors -------------------------------------------------------------------------------

def faults_of(tmp_path, selector: str, fabric: str = FABRIC):
    text = fabric + f'\n[[faults]]\nkind = "link_down"\nlinks = {selector}\n'
    sc = load(write(tmp_path, text))
    fabric_ = build(sc.spec)
    (fault,) = what_if_faults(fabric_, sc)
    return fabric_, sorted(fabric_.link_id(c.cable) for c in fault.changes)


def test_leaf_uplinks_to_the_first_spines_on_two_tiers(tmp_path):
    _, links = faults_of(tmp_path, "{leaf_uplinks_to_first_spines = 2}")
    assert links == sorted(f"leaf-p0-{leaf:02d}:swp{4 + s}--spine-p0-{s:02d}:swp{leaf}"
                           for leaf in range(1, 5) for s in (1, 2))


THREE_TIER = FABRIC.replace("hosts_per_leaf = 4\n", "tiers = 3\n").replace(
    "leaf_radix = 8\nspine_radix = 8", "leaf_radix = 4\nspine_radix = 4")


def test_leaf_uplinks_to_the_first_spines_on_three_tiers_are_to_the_pods_first_agg(tmp_path):
    _, links = faults_of(tmp_path, "{leaf_uplinks_to_first_spines = 1}", THREE_TIER)
    assert links == [f"agg-p0-{pod:02d}-01:swp{k}--leaf-p0-{2 * pod + k:02d}:swp3"
                     for pod in range(4) for k in (1, 2)]


def test_a_fraction_per_tier_takes_that_share_of_every_tier(tmp_path):
    fabric, links = faults_of(tmp_path, "{fraction = 0.25, per_tier = true, seed = 1}", THREE_TIER)
    ids = {fabric.link_id(c): c for c in range(fabric.n_cables)}
    tiers = np.bincount([fabric.cable_tier[ids[x]] for x in links], minlength=3)
    assert tiers.tolist() == [0, 4, 4]  # 16 leaf-agg and 16 agg-core cables, a quarter each
    # the selector's own seed draws: the scenario's seed does not move it, another seed does
    reseeded = THREE_TIER.replace('mode = "ar"', 'mode = "ar"\nseed = 9')
    assert faults_of(tmp_path, "{fraction = 0.25, per_tier = true, seed = 1}", reseeded)[1] == links
    assert faults_of(tmp_path, "{fraction = 0.25, per_tier = true, seed = 2}", THREE_TIER)[1] != links


def test_a_fraction_selector_without_its_own_seed_draws_as_the_fraction_key_does(tmp_path):
    _, selected = faults_of(tmp_path, "{fraction = 0.25}", THREE_TIER)
    text = THREE_TIER + '\n[[faults]]\nkind = "link_down"\nfraction = 0.25\n'
    sc = load(write(tmp_path, text, "plain.toml"))
    fabric = build(sc.spec)
    (fault,) = what_if_faults(fabric, sc)
    assert sorted(fabric.link_id(c.cable) for c in fault.changes) == selected and len(selected) == 8


def test_a_selector_can_keep_to_one_plane(tmp_path):
    two_planes = FABRIC.replace("hosts = 16\n", "hosts = 16\nplanes = 2\n")
    fabric, links = faults_of(tmp_path, "{leaf_uplinks_to_first_spines = 1, plane = 1}", two_planes)
    assert links == [f"leaf-p1-{leaf:02d}:swp5--spine-p1-01:swp{leaf}" for leaf in range(1, 5)]


@pytest.mark.parametrize("selector,message", [
    ("{leaf_uplinks_to_first_spines = 5}", "leaf-p0-01 has uplinks to 4 switches, fewer than 5"),
    ("{leaf_uplinks_to_first_spines = 1, fraction = 0.5}",
     "say one of leaf_uplinks_to_first_spines = K or fraction = F"),
    ("{leaf_uplinks_to_first_spines = 1, seed = 3}", "per_tier and seed go with fraction"),
    ("{fraction = 0.01}", "fraction = 0.01 of this fabric's links is no link"),
    ("{leaf_uplinks_to_first_spines = 1, plane = 3}", "plane 3 is not one of the fabric's 1"),
])
def test_a_selector_that_cannot_pick_is_a_one_line_error_with_its_line(tmp_path, selector, message):
    text = FABRIC + f'\n[[faults]]\nkind = "link_down"\nlinks = {selector}\n'
    p = write(tmp_path, text)
    sc = load(p)
    with pytest.raises(ScenarioError) as exc:
        what_if_faults(build(sc.spec), sc)
    assert str(exc.value) == f"{p}: faults[0].links: {message} (line {line_of(text, 'links')})"


def test_an_unknown_selector_key_names_its_line(tmp_path):
    text = FABRIC + '\n[[faults]]\nkind = "link_down"\nlinks = {first_spines = 2}\n'
    assert error_of(tmp_path, text).endswith(
        f"[faults[0].links] has unknown keys ['first_spines'] (line {line_of(text, 'links')})")


def test_the_failed2_scenario_slows_what_htsims_failed_2_slows():
    """scenarios/htsim_perm128_2tier_failed2_uec_reps.toml with its selector degrades exactly
    the cables the calibration harness slows for `-failed 2` (every ToR's links to spines
    0 and 1), to 25% of 400G."""
    from benchmarks.htsim_calibration import SCENARIOS, fabric_state

    sc = load(REPO / "scenarios" / "htsim_perm128_2tier_failed2_uec_reps.toml")
    fabric = build(sc.spec)
    (fault,) = what_if_faults(fabric, sc)
    state = fabric_state(SCENARIOS["perm128_2MB_2tier_failed2"], "ar")
    slowed = np.flatnonzero(state.cable_gbps < 400)
    assert sorted(c.cable for c in fault.changes) == slowed.tolist() and len(slowed) == 32
    assert {c.gbps for c in fault.changes} == {100.0}


# -- --fct-csv and --json --------------------------------------------------------------------

CM = """\
Nodes 16
Connections 4
0->5 id 7 start 0 size 1000000
3->9 id 3 start 10 size 2000000
12->1 id 42 start 5 size 500000
2->4 id 9 start 0 size 100000000000
"""


@pytest.fixture
def cm_scenario(tmp_path):
    (tmp_path / "flows.cm").write_text(CM)
    text = FABRIC + '\n[run]\nflows = "flows.cm"\nuntil_ms = 1\nhop_latency_us = 1\n'
    return write(tmp_path, text)


def simulate(*args: str):
    return CliRunner().invoke(main, ["simulate", *map(str, args), "-q"])


def test_fct_csv_keeps_the_cm_ids_and_htsims_columns(tmp_path, cm_scenario):
    out = tmp_path / "fct.csv"
    res = simulate(cm_scenario, "--fct-csv", out)
    assert res.exit_code == 0, res.output
    with open(out, newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["id", "src", "dst", "size_bytes", "start_us", "finish_us"]
    body = rows[1:]
    assert len(body) == 16 + 4  # the permutation job's 16 transfers, then the .cm's 4
    cm = body[16:]
    assert [(r[0], r[1], r[2], r[3], float(r[4])) for r in cm] == [
        ("7", "0", "5", "1000000", 0.0), ("3", "3", "9", "2000000", 10.0),
        ("42", "12", "1", "500000", 5.0), ("9", "2", "4", "100000000000", 0.0)]
    # 100 GB at 400G takes 2 s: not finished at until_ms = 1, so no finish time
    assert cm[3][5] == ""
    assert all(float(r[5]) > float(r[4]) for r in body if r[5])
    # the job's transfers are numbered after the largest .cm id
    assert [int(r[0]) for r in body[:16]] == list(range(43, 59))
    assert all(r[3] == "8000000" for r in body[:16])


def test_json_median_p99_and_max_are_numpys_on_the_csv(tmp_path, cm_scenario):
    out = tmp_path / "fct.csv"
    res = simulate(cm_scenario, "--fct-csv", out, "--json")
    assert res.exit_code == 0, res.output
    flows = json.loads(res.output)["flows"]
    with open(out, newline="") as fh:
        fct = np.array([float(r["finish_us"]) - float(r["start_us"])
                        for r in csv.DictReader(fh) if r["finish_us"]])
    assert flows["finished"] == len(fct) == 19 and flows["count"] == 20
    assert flows["fct_median_s"] * 1e6 == pytest.approx(np.median(fct), rel=1e-9)
    assert flows["fct_p99_s"] * 1e6 == pytest.approx(np.percentile(fct, 99, method="lower"), rel=1e-9)
    assert flows["fct_max_s"] * 1e6 == pytest.approx(fct.max(), rel=1e-9)
    # "lower" is an observed FCT, not an interpolation between two
    assert np.isclose(fct, flows["fct_p99_s"] * 1e6, rtol=1e-9).any()


def test_fct_csv_of_a_shipped_htsim_scenario_lines_up_with_htsims_file(tmp_path):
    """The same ids, pairs, sizes and starts as htsim's own per-flow CSV, row by row."""
    out = tmp_path / "twin.csv"
    res = simulate(REPO / "scenarios" / "htsim_perm1024_uec_reps.toml", "--fct-csv", out)
    assert res.exit_code == 0, res.output
    assert "transport 4086 + 64 bytes a packet, PFC off, done at the last ACK" in res.output
    assert f"wrote    {out}: 1024 flows" in res.output
    with open(out, newline="") as fh, open(REPO / "tests/data/htsim/perm1024_2MB_uec_reps.fct.csv") as ref:
        twin, htsim = list(csv.DictReader(fh)), list(csv.DictReader(ref))
    key = ("id", "src", "dst", "size_bytes")
    assert [tuple(r[k] for k in key) for r in twin] == [tuple(r[k] for k in key) for r in htsim]
    assert [float(r["start_us"]) for r in twin] == [float(r["start_us"]) for r in htsim]


@pytest.mark.parametrize("target", ["scenario", "cm"])
def test_fct_csv_never_overwrites_an_input(tmp_path, cm_scenario, target):
    victim = cm_scenario if target == "scenario" else tmp_path / "flows.cm"
    before = victim.read_bytes()
    res = simulate(cm_scenario, "--fct-csv", victim)
    assert res.exit_code == 2 and f"{victim}: is the input" in res.output
    assert victim.read_bytes() == before
    # nor under another name: a hard link to it
    link = tmp_path / "alias.csv"
    link.hardlink_to(victim)
    res = simulate(cm_scenario, "--fct-csv", link)
    assert res.exit_code == 2 and "is the input" in res.output and victim.read_bytes() == before


def test_a_failing_run_leaves_an_existing_csv_as_it_was(tmp_path, cm_scenario):
    out = tmp_path / "fct.csv"
    out.write_text("mine\n")
    (tmp_path / "flows.cm").write_text(CM.replace("size 500000", "size lots"))
    res = simulate(cm_scenario, "--fct-csv", out)
    assert res.exit_code == 2, res.output
    assert res.output.strip() == (f"fabtwin: error: {tmp_path / 'flows.cm'}:5: expected "
                                  "`SRC->DST id N start T size BYTES`")
    assert out.read_text() == "mine\n" and [p.name for p in tmp_path.iterdir() if ".part" in p.name] == []


def test_fct_csv_into_a_missing_folder_is_one_line(tmp_path, cm_scenario):
    res = simulate(cm_scenario, "--fct-csv", tmp_path / "nope" / "fct.csv")
    assert res.exit_code == 2 and "no such folder" in res.output and "Traceback" not in res.output


def test_a_sweep_runs_the_scenarios_transport(tmp_path):
    """`fabtwin sweep`'s baseline is `fabtwin simulate` of the same file, transport included."""
    from twin.sweep import load_sweep, run_sweep

    framed = FABRIC + '\n[transport]\nkind = "uec"\nheader_bytes = 400\n'
    sweep = "\n[sweep]\nconvergence_ms = [10, 20]\n"
    got = run_sweep(load_sweep(write(tmp_path, framed + sweep)))["baseline"]["jobs"][0]["completion_s"]
    fluid = run_sweep(load_sweep(write(tmp_path, FABRIC + sweep)))["baseline"]["jobs"][0]["completion_s"]
    assert got == run(load(write(tmp_path, framed))).as_json()["jobs"][0]["completion_s"]
    assert got > fluid * 1.09  # 400 bytes of header on 4,086 of data: about 10% more on the wire


@pytest.mark.parametrize("name,regime,reference,rtol", [
    ("htsim_perm1024_roce_ecmp", "roce_ecmp", "perm1024_2MB", 1e-9),
    ("htsim_perm1024_roce_ar", "roce_ar", "perm1024_2MB", 1e-9),
    ("htsim_perm1024_uec_oblivious", "uec_oblivious", "perm1024_2MB", 1e-9),
    ("htsim_perm1024_uec_reps", "uec_reps", "perm1024_2MB", 1e-9),
    # the harness slows the links before the run, the scenario with a fault at t = 0: the
    # engine takes the store-and-forward latency from the capacities at the start (0.03 us)
    ("htsim_perm128_2tier_failed2_uec_reps", "uec_reps", "perm128_2MB_2tier_failed2", 1e-3),
])
def test_each_htsim_scenario_is_the_calibration_harness_run(tmp_path, name, regime, reference, rtol):
    """`fabtwin simulate scenarios/<name>.toml --fct-csv` gives, flow by flow, the FCTs that
    benchmarks/htsim_calibration.py compares with htsim for that run (fabric, mode, transport,
    slowed links, hop latency): a user's CLI comparison is the benchmark's."""
    from benchmarks.htsim_calibration import SCENARIOS, twin_fct_us

    out = tmp_path / "twin.csv"
    res = simulate(REPO / "scenarios" / f"{name}.toml", "--fct-csv", out)
    assert res.exit_code == 0, res.output
    with open(out, newline="") as fh:
        fct = np.array([float(r["finish_us"]) - float(r["start_us"]) for r in csv.DictReader(fh)])
    want = twin_fct_us(SCENARIOS[reference], regime, REPO / "tests" / "data" / "htsim")
    np.testing.assert_allclose(fct, want, rtol=rtol, atol=1e-5)


def test_generate_puts_the_transports_headers_on_the_wire(tmp_path):
    """A generated bundle's NIC counters carry the transport's bytes: one ring all-reduce of
    64 MiB on 8 hosts sends 2 x 7/8 x 64 MiB per NIC, twice that with as many header bytes as
    payload in every packet."""
    import gzip

    from twin.synth import generate

    base = FABRIC.replace("hosts = 16", "hosts = 8").replace("hosts_per_leaf = 4", "hosts_per_leaf = 2")
    base = base.split("[[jobs]]")[0] + ('[[jobs]]\ncollective = "allreduce_ring"\nsize = "64MiB"\n'
                                        "iterations = 1\n\n[telemetry]\nduration_s = 20\nsample_s = 10\n")
    sent = []
    for name, extra in (("fluid", ""), ("framed", '\n[transport]\nkind = "uec"\nmtu_bytes = 2000\n'
                                                   "header_bytes = 2000\n")):
        generate(write(tmp_path, base + extra, f"{name}.toml"), tmp_path / name)
        text = gzip.decompress((tmp_path / name / "nic/gpu-node-0001/eth0.ethtool.gz").read_bytes()).decode()
        values = [int(v) for v in re.findall(r"tx_bytes_phy: (\d+)\n", text)]
        sent.append(values[1] - values[0])  # over the window's first interval, where the job ran
    assert sent == [2 * 7 * 2**23, 2 * 2 * 7 * 2**23]


def test_simulate_with_a_cm_loads_neither_duckdb_polars_nor_networkx(tmp_path):
    """Process to process against htsim, start-up counts: a .cm scenario's run, CSV included,
    imports none of the three (about 0.3 s of CPU between them; 0.8 -> 0.5 s per run)."""
    import subprocess
    import sys

    out = tmp_path / "fct.csv"
    child = ("import sys\nfrom fabtwin.cli import main\n"
             f"try:\n    main(['simulate', {str(REPO / 'scenarios/htsim_perm128_2tier_failed2_uec_reps.toml')!r}, "
             f"'--fct-csv', {str(out)!r}, '-q'])\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
             "print(sorted(m for m in ('duckdb', 'polars', 'networkx') if m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, cwd=REPO,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]" and out.is_file()


def test_link_utilization_is_of_the_capacity_the_link_had(tmp_path):
    """Every link of the plane degraded to 100G from the start: the host links run full at
    100G, 100% of what they had (not 25% of their 400G nominal); a cable down for 1 s of a
    2 s run could carry 1 s of its 400G."""
    degraded = FABRIC + '\n[[faults]]\nkind = "link_degraded"\nplane = 0\nspeed_gbps = 100\n'
    out = run(load(write(tmp_path, degraded))).as_json()
    assert out["busiest_links"][0]["utilization"] == pytest.approx(1.0, rel=1e-9)
    fabric = build(load(write(tmp_path, FABRIC)).spec)
    caps = capacity_bytes(fabric, [LinkChange(0.5, 3, 0.0), LinkChange(1.5, 3, 400.0)], 0.0, 2.0)
    assert caps[6] == caps[7] == pytest.approx(400e9 / 8 * 1.0) and caps[0] == pytest.approx(400e9 / 8 * 2)

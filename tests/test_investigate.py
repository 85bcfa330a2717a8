"""fabtwin investigate on the gallery: the right root cause first, no false incident."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import REPO

from fabtwin.cli import main

GALLERY = ["healthy", "link_down", "link_flap", "link_degraded", "congestion", "pfc_storm",
           "load_imbalance", "two_faults"]


@pytest.mark.parametrize("name", GALLERY)
def test_every_labelled_fault_is_found_and_nothing_else(sample_stores, name):
    bundle = REPO / "sample_traces" / name
    truth = json.loads((bundle / "labels.json").read_text())["faults"]
    result = sample_stores.document(name)  # investigate(bundle, a copy of its ingest), once a session
    def key(x):
        return json.dumps([x["kind"], x["root_cause"]], sort_keys=True)

    # exactly the labelled faults: kind and root cause right, nothing else reported
    assert sorted(map(key, result["incidents"])) == sorted(map(key, truth))
    by_key = {key(f): f for f in truth}
    for inc in result["incidents"]:
        f = by_key[key(inc)]  # and each overlaps its true fault in time
        assert inc["start"] <= f["end"] and (inc["end"] is None or inc["end"] >= f["start"])


def test_investigate_json_has_the_design_shape(sample_stores, tmp_path):
    # into a copy of the session's ingest of the bundle: its files are reused (the document
    # is under test here; investigate into a new store: the sequence test below)
    db = sample_stores.copy(sample_stores.ingested("two_faults"), tmp_path / "s.duckdb")
    out = CliRunner().invoke(main, ["investigate", str(REPO / "sample_traces" / "two_faults"),
                                    "--db", str(db), "--json"])
    assert out.exit_code == 5, out.output  # incidents found
    doc = json.loads(out.stdout)
    assert set(doc) == {"bundle", "store", "window", "incidents"}  # design 8's, plus "store"
    assert doc["store"] == str(tmp_path / "s.duckdb")
    assert set(doc["window"]) == {"start", "end"}
    first = doc["incidents"][0]
    # design 8's keys, and issue 17's explanation beside the evidence
    assert set(first) == {"rank", "kind", "root_cause", "start", "end", "score", "summary",
                          "evidence", "explanation", "impact"}
    assert all(i["explanation"]["basis"] == "twin" for i in doc["incidents"])
    assert [i["rank"] for i in doc["incidents"]] == list(range(1, len(doc["incidents"]) + 1))
    assert all(0 <= i["score"] <= 1 for i in doc["incidents"])


def test_a_healthy_bundle_says_so(sample_stores, tmp_path):
    db = sample_stores.copy(sample_stores.ingested("healthy"), tmp_path / "s.duckdb")  # files reused
    out = CliRunner().invoke(main, ["investigate", str(REPO / "sample_traces" / "healthy"),
                                    "--db", str(db)])
    assert out.exit_code == 0 and "healthy: no incident found" in out.output
    assert out.stdout.splitlines()[0] == f"store    {tmp_path / 's.duckdb'}"


def _files(db) -> list[tuple]:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT bundle, path, sha256 FROM files ORDER BY ALL").fetchall()


def _incidents(db) -> list[tuple]:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT * FROM incidents ORDER BY rank").fetchall()


def test_the_reported_sequence_diagnoses_each_bundle_alone(tmp_path, monkeypatch):
    """README's first command, then `investigate link_down` without --db: it used to report 3
    incidents (the default store held both bundles) and the storm at 154,973/s, not 25,217."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FABTWIN_DB", raising=False)
    run = CliRunner().invoke
    first = run(main, ["investigate", str(REPO / "sample_traces" / "two_faults"),
                       "--db", "fabtwin.duckdb"])
    assert first.exit_code == 5, first.output
    assert "(25217/s)" in first.stdout
    held, diagnosis = _files("fabtwin.duckdb"), _incidents("fabtwin.duckdb")
    second = run(main, ["investigate", str(REPO / "sample_traces" / "link_down")])
    assert second.exit_code == 5, second.output
    lines = second.stdout.splitlines()
    assert lines[0] == "store    link_down.fabtwin.duckdb"
    kinds = [line.split()[1] for line in lines if line.startswith("#")]
    assert kinds == ["link_down"]  # the labelled fault, and nothing of two_faults
    # a store holding another bundle is refused, in one line saying what to do; nothing changes
    third = run(main, ["investigate", str(REPO / "sample_traces" / "link_down"),
                       "--db", "fabtwin.duckdb"])
    assert third.exit_code == 2 and third.stdout == ""
    assert third.stderr.count("\n") == 1
    assert third.stderr.startswith("fabtwin: error: fabtwin.duckdb: holds bundle ")
    assert "two_faults" in third.stderr and "link_down.fabtwin.duckdb" in third.stderr
    assert _files("fabtwin.duckdb") == held and _incidents("fabtwin.duckdb") == diagnosis
    # the same bundle again reuses its store (as given, relative or absolute)
    again = run(main, ["investigate", str(REPO / "sample_traces" / "two_faults"),
                       "--db", "fabtwin.duckdb", "--json"])
    assert again.exit_code == 5 and json.loads(again.stdout)["store"] == "fabtwin.duckdb"
    assert _files("fabtwin.duckdb") == held


@pytest.mark.parametrize("content", [None, b"\x00\x9f\x92binary\xff" * 100])
def test_no_telemetry_is_an_error_not_health(tmp_path, monkeypatch, content):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FABTWIN_DB", raising=False)
    bundle = tmp_path / "in"
    if content is None:
        bundle.mkdir()  # an empty folder
    else:
        bundle.write_bytes(content)  # a binary file
    out = CliRunner().invoke(main, ["investigate", "in"])
    assert out.exit_code == 6, out.output
    assert out.stdout == "" and out.stderr.count("\n") == 1
    assert out.stderr.startswith("fabtwin: error: in (store in.fabtwin.duckdb): no telemetry")
    assert ("no file" if content is None else "1 not recognized") in out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]  # the store it made is gone


def test_a_missing_bundle_makes_no_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FABTWIN_DB", raising=False)
    out = CliRunner().invoke(main, ["investigate", "nope"])
    assert out.exit_code == 2 and out.stderr == "fabtwin: error: nope: no such bundle\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("args", "kinds", "start"), [
    (["--from", "-4m"], ["pfc_storm"], "2026-11-30T03:06:00.429Z"),  # 4 min before the data's end
    (["--from=-4m", "--to", "-2m"], ["pfc_storm"], "2026-11-30T03:06:00.429Z"),
    (["--to", "1796007900"], ["link_flap"], "2026-11-30T02:59:59.319Z"),  # epoch 03:05:00Z
    (["--from", "1796007600.5", "--to", "2026-11-30T03:05:00Z"], ["link_flap"],
     "2026-11-30T03:00:00.500Z"),
])
def test_from_and_to_take_epoch_seconds_and_times_before_the_end(sample_stores, tmp_path, args,
                                                                 kinds, start):
    # into a copy of the session's ingest of the bundle (its files are reused: the windows are
    # under test, the ingest is not)
    db = sample_stores.copy(sample_stores.ingested("two_faults"), tmp_path / "s.duckdb")
    out = CliRunner().invoke(main, ["investigate", str(REPO / "sample_traces" / "two_faults"),
                                    "--db", str(db), "--json", *args])
    assert out.exit_code == 5, out.output
    doc = json.loads(out.stdout)
    assert [i["kind"] for i in doc["incidents"]] == kinds
    assert doc["window"]["start"] == start


@pytest.mark.parametrize(("args", "says"), [
    (["--from", "-2m", "--to", "-3m"], "is not before --to"),
    (["--from", "2026-11-30T03:05:00Z", "--to", "2026-11-30T03:01:00Z"], "is not before --to"),
    (["--from", "-3x"], "epoch seconds"),
    (["--to", "1e400"], "epoch seconds"),
    (["--window", "1e12"], "0.001<=x<=100000000.0"),  # was an OverflowError traceback
])
def test_bad_windows_are_one_line_exit_2(sample_stores, tmp_path, args, says):
    db = sample_stores.copy(sample_stores.ingested("healthy"), tmp_path / "s.duckdb")  # files reused
    out = CliRunner().invoke(main, ["investigate", str(REPO / "sample_traces" / "healthy"),
                                    "--db", str(db), *args])
    assert out.exit_code == 2 and says in out.output and "Traceback" not in out.output


def test_progress_goes_to_stderr_and_quiet_silences_it(tmp_path):
    bundle = str(REPO / "sample_traces" / "healthy")
    shown = CliRunner().invoke(main, ["investigate", bundle, "--db", str(tmp_path / "a.duckdb")],
                               env={"FORCE_COLOR": "1"})  # stderr as a terminal would be
    assert shown.exit_code == 0, shown.output
    assert f"investigate {bundle}" in shown.stderr
    assert "\x1b" not in shown.stdout  # the result stays plain for scripts
    quiet = CliRunner().invoke(main, ["investigate", bundle, "--db", str(tmp_path / "b.duckdb"),
                                      "-q"], env={"FORCE_COLOR": "1"})
    assert quiet.exit_code == 0 and quiet.stderr == ""
    assert quiet.stdout.splitlines()[1:] == shown.stdout.splitlines()[1:]

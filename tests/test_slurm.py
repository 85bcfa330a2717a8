"""Slurm: hostlist expressions, sacct -P, sacct/squeue --json, the sacct writer."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from conftest import run_parser
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.core.source import Manifest
from collectors.formats.slurm import (
    PARSERS,
    Job,
    SacctPipeParser,
    SlurmJsonParser,
    write_sacct_pipe,
)
from collectors.formats.slurm.hostlist import MAX_RANGE, HostlistError, compress, expand

NS = 1_000_000_000


def _ns(text: str, tz=UTC) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=tz).timestamp()) * NS


# -- hostlist -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("expression", "expected"), [
    ("lx[15,18,32-33]", ["lx15", "lx18", "lx32", "lx33"]),
    ("alpha,beta,gamma", ["alpha", "beta", "gamma"]),
    ("tux[2,1-2]", ["tux2", "tux1", "tux2"]),  # Slurm keeps order and duplicates
    ("tux[1-2,2]", ["tux1", "tux2", "tux2"]),
    ("node[01-02]", ["node01", "node02"]),
    ("n[1-010]", [f"n{i}" for i in range(1, 11)]),  # width is the low bound's
    ("rack[0-1]_blade[0-1]", ["rack0_blade0", "rack0_blade1", "rack1_blade0", "rack1_blade1"]),
    ("gpu-node-[0001-0002,0020] leaf-01\tspine-1", ["gpu-node-0001", "gpu-node-0002",
                                                    "gpu-node-0020", "leaf-01", "spine-1"]),
    ("a,,b,", ["a", "b"]),
    ("", []),
])
def test_expand(expression, expected):
    assert expand(expression) == expected


def test_expand_documented_sizes():
    assert len(expand("linux[0-64,128]")) == 66 and expand("linux[0-64,128]")[-1] == "linux128"
    assert len(expand("rack[0-63]_blade[0-41]")) == 64 * 42
    names = expand("linux[0000-1023]")
    assert len(names) == 1024 and names[0] == "linux0000" and names[-1] == "linux1023"
    assert len(expand("mcr[0-1151]")) == 1152


@pytest.mark.parametrize(("expression", "words"), [
    ("unit[0-31]rack", "must come at the end"),
    ("a[3-1]", "low bound above high"),
    ("a[1-2", "unclosed"),
    ("a1-2]", "without '['"),
    ("a[x]", "invalid range 'x'"),
    ("a[]", "invalid range ''"),
    (f"a[0-{MAX_RANGE}]", "too many hosts"),
])
def test_expand_invalid(expression, words):
    with pytest.raises(HostlistError, match=words.replace("[", r"\[")):
        expand(expression)


def test_compress():
    hosts = [f"gpu-node-{i:04d}" for i in range(1, 17)] + ["gpu-node-0020"]
    assert compress(hosts) == "gpu-node-[0001-0016,0020]"
    assert compress(["tux2", "tux1", "tux2"]) == "tux[2,1-2]"
    assert compress(["tux2", "tux10", "tux1", "tux2"], sort=True) == "tux[1-2,10]"
    assert compress(["n9", "n10", "n010"]) == "n[9-10,010]"
    assert compress(["leaf-01"]) == "leaf-01"
    assert compress(["alpha", "beta"]) == "alpha,beta"
    with pytest.raises(HostlistError):
        compress(["a,b"])


_name = st.builds(
    lambda prefix, num, width: f"{prefix}{num:0{width}d}" if num is not None else prefix,
    st.text(alphabet="abgpu-_.", min_size=1, max_size=4),
    st.none() | st.integers(min_value=0, max_value=120),
    st.integers(min_value=1, max_value=4),
)


@settings(max_examples=300, deadline=None)
@given(hosts=st.lists(_name, max_size=40))
def test_compress_expand_round_trip(hosts):
    assert expand(compress(hosts)) == hosts
    deduped = expand(compress(hosts, sort=True))
    assert len(deduped) == len(set(hosts)) and set(deduped) == set(hosts)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="ab01-9[],x \t", max_size=30))
def test_expand_arbitrary_text_raises_only_hostlist_error(text):
    try:
        names = expand(text)
    except HostlistError:
        return
    assert all(n and "[" not in n and "," not in n for n in names)


def test_real_hostlist_docs_valid(real_samples):
    lines = (real_samples / "slurm" / "hostlist-expressions-valid.txt").read_text().split()
    sizes = {e: len(expand(e)) for e in lines}
    assert sizes["linux[0-64,128]"] == 66
    assert expand("linux[0-64,128]") == [f"linux{i}" for i in (*range(65), 128)]
    assert expand("linux[0000-1023]") == [f"linux{i:04d}" for i in range(1024)]  # padding kept
    assert expand("alpha,beta,gamma") == ["alpha", "beta", "gamma"]
    assert expand("tux[2,1-2]") == ["tux2", "tux1", "tux2"]  # unsorted, not unique, as written
    assert expand("tux[1-2,2]") == ["tux1", "tux2", "tux2"]
    assert expand("tux[1-3]") == ["tux1", "tux2", "tux3"]
    assert expand("node[01-02]") == ["node01", "node02"]
    assert expand("rack[0-63]_blade[0-41]")[:2] == ["rack0_blade0", "rack0_blade1"]
    assert expand("rack[0-63]_blade[0-41]")[-1] == "rack63_blade41"
    assert expand("lx[15,18,32-33]") == ["lx15", "lx18", "lx32", "lx33"]
    assert sizes["rack[0-63]_blade[0-41]"] == 2688
    assert sizes["mcr[0-1151]"] == 1152 and sizes["emcr[0-1151]"] == 1152
    assert sizes["adev[2,4-7]"] == 5
    assert expand("ng[30103,30203,30706-30707]") == ["ng30103", "ng30203", "ng30706", "ng30707"]
    assert expand("cs[100,101,102]") == ["cs100", "cs101", "cs102"]
    assert len(sizes) == 18
    for expression in lines:  # the compressed form expands to the same names
        assert expand(compress(expand(expression))) == expand(expression)


def test_real_hostlist_docs_invalid(real_samples):
    for expression in (real_samples / "slurm" / "hostlist-expressions-invalid.txt").read_text() \
            .split():
        with pytest.raises(HostlistError, match="must come at the end"):
            expand(expression)


def test_real_scontrol_show_hostnames(real_samples):
    reference = (real_samples / "slurm" / "scontrol-show-hostnames-tux1-3-output.txt")
    assert expand("tux[1-3]") == reference.read_text().split()


# -- sacct -P ------------------------------------------------------------------------------------

SACCT = """JobID|Account|Start|End|NodeList
4242|llm-pretrain|2026-11-30T07:12:13|2026-11-30T09:00:00|gpu-node-[0001-0004]
4243|llm-sft|2026-11-30T08:00:00|Unknown|gpu-node-[0005-0006,0010]
4244|llm-sft|Unknown|Unknown|None assigned
"""

# other order, extra columns, `-p` trailing pipe, array and step ids (sacct without -X)
SACCT_EXTRA = """JobID|JobIDRaw|JobName|State|NodeList|AllocNodes|Start|End|Account|
7_1|8|train|CANCELLED by 1000|gpu-node-0001|1|2026-11-30T07:00:00|2026-11-30T07:30:00|vision|
8.batch|8.batch|batch|CANCELLED|gpu-node-0001|1|2026-11-30T07:00:00|2026-11-30T07:30:00|vision|
9|9|eval|RUNNING|gpu-node-[0002-0003]|2|2026-11-30T07:10:00|Unknown|vision|
"""


def test_sacct_pipe(write):
    p = write("jobs/sacct.txt", SACCT)
    parser, sink = run_parser(p)
    assert parser.name == "sacct_pipe"
    assert (sink.loaded, sink.rejected) == (3, 0)
    jobs = sink.collected("jobs")
    assert [(j["job_id"], j["tenant"], j["start"], j["end"], j["nodelist"], j["line"])
            for j in jobs] == [
        ("4242", "llm-pretrain", _ns("2026-11-30T07:12:13"), _ns("2026-11-30T09:00:00"),
         "gpu-node-[0001-0004]", 2),
        ("4243", "llm-sft", _ns("2026-11-30T08:00:00"), None, "gpu-node-[0005-0006,0010]", 3),
        ("4244", "llm-sft", None, None, "", 4),
    ]
    hosts = [(h["job_id"], h["host"]) for h in sink.collected("job_hosts")]
    assert hosts[:4] == [("4242", f"gpu-node-000{i}") for i in range(1, 5)]
    assert [h for j, h in hosts if j == "4243"] == ["gpu-node-0005", "gpu-node-0006",
                                                     "gpu-node-0010"]
    assert not [h for j, h in hosts if j == "4244"]


def test_sacct_timezone_from_manifest(write):
    p = write("jobs/sacct.txt", SACCT)
    _, sink = run_parser(p, manifest=Manifest(timezone="Europe/Paris"))
    paris = ZoneInfo("Europe/Paris")
    assert sink.collected("jobs")[0]["start"] == _ns("2026-11-30T07:12:13", paris)
    assert sink.collected("jobs")[0]["start"] == _ns("2026-11-30T06:12:13")


def test_sacct_columns_by_header(write):
    p = write("jobs/sacct.txt", SACCT_EXTRA)
    parser, sink = run_parser(p)
    assert parser.name == "sacct_pipe"
    assert (sink.loaded, sink.rejected) == (3, 0)
    jobs = sink.collected("jobs")
    assert [(j["job_id"], j["tenant"], j["state"], j["end"]) for j in jobs] == [
        ("8", "vision", "CANCELLED", _ns("2026-11-30T07:30:00")),
        ("9", "vision", "RUNNING", None),
    ]
    assert [h["host"] for h in sink.collected("job_hosts")] == [
        "gpu-node-0001", "gpu-node-0002", "gpu-node-0003"]


def test_sacct_bad_lines_are_rejected(write):
    text = SACCT + "\n".join([
        "4245|x|29 Apr 14:55|Unknown|n1",
        "4246|x|2026-11-30T08:00:00|Unknown|unit[0-31]rack",
        "4247|x|2026-11-30T08:00:00",
        "|x|2026-11-30T08:00:00|Unknown|n1",
    ]) + "\n"
    p = write("jobs/sacct.txt", text)
    _, sink = run_parser(p)
    assert (sink.loaded, sink.rejected) == (3, 4)
    reasons = {line: reason for line, reason, _ in sink.rejects}
    assert "SLURM_TIME_FORMAT" in reasons[5]
    assert "must come at the end" in reasons[6]
    assert reasons[7] == "expected 5 '|'-separated fields, found 3"
    assert reasons[8] == "empty JobID"


def test_sacct_line_before_header(write):
    p = write("jobs/sacct.txt", "JobID|Account|Start|End|NodeList\n")
    _, sink = run_parser(p)
    assert (sink.loaded, sink.rejected) == (0, 0)
    p = write("jobs/x.txt", "4242|a|Unknown|Unknown|n1\n" + SACCT)
    _, sink = run_parser(p, parser=SacctPipeParser())
    assert (sink.loaded, sink.rejected) == (3, 1) and "before the header" in sink.rejects[0][1]


def test_write_sacct_pipe_round_trip(write):
    jobs = [
        Job("100", "llm", _ns("2026-11-30T07:12:13"), _ns("2026-11-30T09:00:00"),
            [f"gpu-node-{i:04d}" for i in (3, 1, 2, 20)], "COMPLETED"),
        Job("101", "llm", _ns("2026-11-30T08:00:00"), None, ["gpu-node-0005"]),
        Job("102", "ft", None, None, []),
    ]
    for tz, manifest in ((UTC, None), (ZoneInfo("America/Chicago"), Manifest(timezone="America/Chicago"))):
        buf = io.StringIO()
        write_sacct_pipe(jobs, buf, tz)
        lines = buf.getvalue().splitlines()
        assert lines[0] == "JobID|Account|Start|End|NodeList"
        assert lines[1].endswith("|gpu-node-[0001-0003,0020]")
        assert lines[3] == "102|ft|Unknown|Unknown|None assigned"
        p = write("jobs/sacct.txt", buf.getvalue())
        parser, sink = run_parser(p, manifest=manifest)
        assert parser.name == "sacct_pipe"
        assert [(j["job_id"], j["tenant"], j["start"], j["end"])
                for j in sink.collected("jobs")] == [
            (j.job_id, j.account, j.start, j.end) for j in jobs]
        got = {}
        for h in sink.collected("job_hosts"):
            got.setdefault(h["job_id"], []).append(h["host"])
        assert got == {j.job_id: sorted(j.hosts) for j in jobs if j.hosts}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=len(SACCT)))
def test_truncated_sacct_keeps_accounting(write, cut):
    text = SACCT[:cut]
    p = write("jobs/sacct.txt", text)
    _, sink = run_parser(p, parser=SacctPipeParser())
    lines = text.splitlines()
    if "\n" in text:
        assert sink.loaded + sink.rejected == len(lines) - 1
        assert sink.rejected <= 1  # only a cut last line can be wrong
    else:  # a cut header: a shorter header ("JobID|Acc") or one line before any header ("Jo")
        assert sink.loaded == 0 and sink.rejected <= 1
    assert len(sink.collected("jobs")) == sink.loaded


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=300))
def test_arbitrary_text_never_raises(write, text):
    p = write("jobs/sacct.txt", "JobID|Account|Start|End|NodeList\n" + text)
    _, sink = run_parser(p, parser=SacctPipeParser())
    assert len(sink.collected("jobs")) <= sink.loaded
    p = write("jobs/sacct.json", '{"jobs": [' + text)
    _, sink = run_parser(p, parser=SlurmJsonParser())
    assert len(sink.collected("jobs")) <= sink.loaded


# -- sacct --json / squeue --json ------------------------------------------------------------------

SQUEUE_V40 = {
    "meta": {"plugin": {"data_parser": "data_parser/v0.0.40"},
             "slurm": {"release": "23.11.5"}},
    "jobs": [
        {"job_id": 11, "account": "llm", "nodes": "gpu-node-[0001-0002]",
         "job_state": ["RUNNING", "COMPLETING"],
         "array_job_id": {"set": True, "infinite": False, "number": 10},
         "start_time": {"set": True, "infinite": False, "number": 1700000000},
         "end_time": {"set": True, "infinite": True, "number": 0}},
        {"job_id": 12, "account": "llm", "nodes": "", "job_state": ["PENDING"],
         "start_time": {"set": False, "infinite": False, "number": 0},
         "end_time": {"set": False, "infinite": False, "number": 0}},
        {"job_id": "x13", "nodes": "n1"},
        {"job_id": 14, "nodes": "unit[0-3]rack"},
        "garbage",
    ],
}


def test_squeue_json_v40_shapes(write):
    p = write("jobs/squeue.json", json.dumps(SQUEUE_V40, indent=2))
    parser, sink = run_parser(p)
    assert parser.name == "slurm_json"
    assert (sink.loaded, sink.rejected) == (2, 3)
    assert [(j["job_id"], j["tenant"], j["start"], j["end"], j["state"], j["nodelist"])
            for j in sink.collected("jobs")] == [
        ("11", "llm", 1700000000 * NS, None, "RUNNING,COMPLETING", "gpu-node-[0001-0002]"),
        ("12", "llm", None, None, "PENDING", ""),
    ]
    assert [h["host"] for h in sink.collected("job_hosts")] == ["gpu-node-0001", "gpu-node-0002"]
    assert [r for _, r, _ in sink.rejects][:2] == ["job without a numeric job_id",
                                                   "a numeric range must come at the end of the "
                                                   "name: 'unit[0-3]rack' (text after the last "
                                                   "']' is not allowed)"]
    # each job starts on its own line, in order
    lines = [j["line"] for j in sink.collected("jobs")] + [ln for ln, _, _ in sink.rejects]
    assert lines == sorted(lines) and len(set(lines)) == 5


def test_invalid_json_is_one_reject_with_its_line(write):
    text = json.dumps(SQUEUE_V40, indent=2).replace('"account": "llm",', '"account": "llm"', 1)
    p = write("jobs/squeue.json", text)
    _, sink = run_parser(p, parser=SlurmJsonParser())
    assert (sink.loaded, sink.rejected) == (0, 1)
    assert sink.rejects[0][1].startswith(f"invalid JSON at line {sink.rejects[0][0]}")


def test_json_sniff_is_specific():
    sniff = SlurmJsonParser().sniff
    assert sniff('{"meta": {"plugin": {"type": "openapi/dbv0.0.38"}}, "jobs": []}', "x")
    assert not sniff('{"jobs": [{"name": "build"}]}', "ci.json")
    assert not sniff('{"source": "10.0.0.1:57400", "updates": []}', "gnmi.json")


# -- conformance with real Slurm output ------------------------------------------------------------

def _job(real_samples, name):
    parser, sink = run_parser(real_samples / "slurm" / name)
    assert parser is not None and parser.name == "slurm_json", name
    return sink


def test_real_sacct_json_21_08(real_samples):
    sink = _job(real_samples, "sacct-json-slurm_21_8_8.json")
    assert (sink.loaded, sink.rejected) == (1, 0)
    (job,) = sink.collected("jobs")
    assert (job["job_id"], job["state"], job["nodelist"], job["start"], job["end"]) == (
        "55978384", "REQUEUED", "cdr896", 1673275023 * NS, 1673369386 * NS)
    assert [h["host"] for h in sink.collected("job_hosts")] == ["cdr896"]


def test_real_sacct_json_22_05_hostlist(real_samples):
    sink = _job(real_samples, "sacct-json-slurm_22_5_9.json")
    (job,) = sink.collected("jobs")
    assert (job["job_id"], job["tenant"], job["state"]) == ("20247445", "rrg-bengioy-ad_gpu",
                                                            "FAILED")
    assert (job["start"], job["end"]) == (1693740641 * NS, 1693865044 * NS)
    assert [h["host"] for h in sink.collected("job_hosts")] == [
        "ng30103", "ng30203", "ng30706", "ng30707"]


def test_real_sacct_json_23_02_running(real_samples):
    sink = _job(real_samples, "sacct-json-slurm_23_2_6.json")
    (job,) = sink.collected("jobs")
    assert (job["job_id"], job["state"], job["end"], job["start"]) == (
        "4", "RUNNING", None, 1613725209 * NS)
    assert [h["host"] for h in sink.collected("job_hosts")] == ["mila02"]


def test_real_sacct_json_23_11_state_list(real_samples):
    sink = _job(real_samples, "sacct-json-slurm_23_11_5.json")
    (job,) = sink.collected("jobs")
    assert (job["job_id"], job["state"], job["end"], job["tenant"]) == (
        "4", "RUNNING", None, "mila")


def test_real_squeue_json_v37_mixed_array_shapes(real_samples):
    sink = _job(real_samples, "squeue-json-openapi-v0.0.37-slurm21.08.json")
    assert (sink.loaded, sink.rejected) == (2, 0)
    running, pending = sink.collected("jobs")
    assert (running["job_id"], running["state"], running["nodelist"]) == (
        "26515966", "RUNNING", "cs75")
    assert (running["start"], running["end"]) == (1684114921 * NS, 1686633833 * NS)
    assert (pending["job_id"], pending["state"], pending["nodelist"]) == (
        "58948420", "PENDING", "")
    assert (pending["start"], pending["end"]) == (None, None)
    assert [h["host"] for h in sink.collected("job_hosts")] == ["cs75"]


@pytest.mark.parametrize(("name", "what"), [
    ("squeue-steps-output-man-example.txt", "`squeue -s` job step table: not supported"),
    ("sinfo-default-output-man-example.txt", "`sinfo` partition table: not supported"),
    ("sinfo-Nel-output-man-example.txt", "`sinfo -N` node table: not supported"),
    ("hostlist-expressions-valid.txt", "a list of host names or Slurm hostlist expressions"),
    ("hostlist-expressions-invalid.txt", "a list of host names or Slurm hostlist expressions"),
    ("scontrol-show-hostnames-tux1-3-output.txt", "(as `scontrol show hostnames` prints): not "
                                                  "supported"),
])
def test_real_text_tables_without_jobs_are_named_as_unsupported(real_samples, name, what):
    """Slurm texts that place no job: no parser claims them, and the skip says what they are."""
    from collectors.registry import describe_unrecognized, recognize
    from collectors.store.ingest import head_of

    head = head_of(real_samples / "slurm" / name)
    assert not any(p.sniff(head, f"jobs/{name}") for p in PARSERS)
    assert recognize(head, f"jobs/{name}") is None
    assert what in describe_unrecognized(head)


def test_real_squeue_default_table(real_samples):
    """squeue's job table: the running job on its hosts, started TIME before the collection
    time; the pending ones without hosts (their NODELIST column is a reason)."""
    at = _ns("2026-03-01T10:00:00")
    parser, sink = run_parser(real_samples / "slurm" / "squeue-default-output-man-example.txt",
                              manifest=Manifest(collected_at=at))
    assert parser is not None and parser.name == "squeue_table"
    assert (sink.loaded, sink.rejected) == (3, 0)
    jobs = {j["job_id"]: (j["state"], j["nodelist"], j["start"], j["end"])
            for j in sink.collected("jobs")}
    assert jobs == {"12345": ("RUNNING", "dev[9-12]", at - 21 * NS, None),
                    "12346": ("PENDING", "", None, None), "12348": ("PENDING", "", None, None)}
    assert [h["host"] for h in sink.collected("job_hosts")] == ["dev9", "dev10", "dev11", "dev12"]


def test_squeue_table_rejects_what_it_cannot_place(write):
    from collectors.formats.slurm.tables import elapsed_ns

    text = (" JOBID PARTITION NAME USER ST  TIME  NODES NODELIST(REASON)\n"
            " 1 debug a u R 2-03:04:05 2 n[1-2]\n"
            " 2 debug b u R 0:01 3 n[1-2]\n"       # NODES disagrees with the list
            " 3 debug c u R soon 1 n1\n"           # not an elapsed time
            " 4 debug d u R 0:01 1\n")             # a column short
    path = write("jobs/squeue.txt", text)
    _, sink = run_parser(path, manifest=Manifest(collected_at=_ns("2026-03-01T10:00:00")))
    assert sink.loaded == 1 and [r[0] for r in sink.rejects] == [3, 4, 5]
    assert sink.rejects[0][1] == "NODES is 3 but the node list n[1-2] names 2 hosts"
    assert elapsed_ns("2-03:04:05") == ((2 * 24 + 3) * 3600 + 4 * 60 + 5) * NS
    assert elapsed_ns("1:43:21") == (3600 + 43 * 60 + 21) * NS


def test_every_real_slurm_json_is_recognized(real_samples):
    files = sorted((real_samples / "slurm").glob("*.json"))
    assert len(files) == 5
    for path in files:
        sink = _job(real_samples, path.name)
        assert sink.rejected == 0 and sink.loaded >= 1


def test_other_families_are_not_claimed(real_samples):
    from collectors.store.ingest import head_of

    for path in sorted(real_samples.rglob("*")):
        if path.is_file() and path.parent.name != "slurm" and path.suffix != ".md":
            head = head_of(path)
            assert not any(p.sniff(head, path.name) for p in PARSERS), path.name

"""One row per job when a bundle lists a job in several files (sacct and squeue): the view
`job_spans`, and the diagnosis and TUI reading it instead of `jobs`."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import duckdb
from click.testing import CliRunner

from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store
from fabtwin.cli import main

SACCT = """JobID|Account|Start|End|NodeList
4242|llm-pretrain|2026-11-30T07:12:13|2026-11-30T09:00:00|gpu-node-[0001-0004]
4243|llm-sft|2026-11-30T08:00:00|Unknown|gpu-node-[0005-0006]
"""
# squeue captured at 08:30 (the manifest): 4242 had run 1:17:47, so it "starts" at 07:12:13 and
# its end is unknown; 4250 is only in squeue
SQUEUE = """     JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
      4242     gpu     pretrain   alice  R    1:17:47      4 gpu-node-[0001-0004]
      4250     gpu     eval       bob    R      10:00      1 gpu-node-0009
"""


def _bundle(tmp_path, files: dict[str, str]) -> Path:
    """A bundle of job files whose squeue was captured at 08:30 (the manifest says so)."""
    b = tmp_path / "bundle"
    for rel, text in files.items():
        (b / rel).parent.mkdir(parents=True, exist_ok=True)
        (b / rel).write_text(text)
    (b / "manifest.json").write_text(json.dumps(
        {"timezone": "UTC", "context": {"jobs/squeue.txt": {"collected_at": "2026-11-30T08:30:00Z"}}}))
    return b


def _store(tmp_path, files: dict[str, str]) -> Store:
    store = Store.open(tmp_path / "s.duckdb")
    ingest_bundle(store, _bundle(tmp_path, files), workers=1)
    return store


def test_sacct_and_squeue_of_one_job_give_one_span_with_sacct_times(tmp_path):
    with _store(tmp_path, {"jobs/sacct.txt": SACCT, "jobs/squeue.txt": SQUEUE}) as store:
        con = store.con
        assert con.execute("SELECT count(*) FROM jobs WHERE job_id = '4242'").fetchone()[0] == 2
        rows = con.execute("""SELECT job_id, start, "end", source, rows FROM job_spans
                              ORDER BY job_id""").fetchall()
    assert rows == [
        ("4242", datetime(2026, 11, 30, 7, 12, 13), datetime(2026, 11, 30, 9), "sacct_pipe", 2),
        ("4243", datetime(2026, 11, 30, 8), None, "sacct_pipe", 1),
        ("4250", datetime(2026, 11, 30, 8, 20), None, "squeue_table", 1),
    ]


def test_impact_and_tui_count_a_job_once_and_not_after_its_end(tmp_path):
    """An incident at 10:00, after sacct's end of 4242: squeue's unknown end must not make 4242
    one of the jobs it stalls; the TUI's events list one start per job."""
    from fabtwin.tui.data import StoreData
    from replay.impact import _jobs
    from replay.stored import Incident

    inc = Incident("link_flap", "link", "a:1--b:1", datetime(2026, 11, 30, 10), None, 0.9, "")
    with _store(tmp_path, {"jobs/sacct.txt": SACCT, "jobs/squeue.txt": SQUEUE}) as store:
        assert _jobs(store.con, inc, datetime(2026, 11, 30, 10, 5)) == ["4243", "4250"]
    data = StoreData(tmp_path / "s.duckdb")
    starts = [r[1] for r in data.events(kind="job_start")]
    assert sorted(starts) == ["4242", "4243", "4250"]
    assert [r[0] for r in data.jobs_of(["gpu-node-0001"])] == ["4242"]


def test_the_tui_reads_a_store_made_before_job_spans(tmp_path):
    """A store from before the view (opened read-only by the TUI, which cannot add it) still
    lists its events and jobs, from `jobs`."""
    from fabtwin.tui.data import StoreData

    with _store(tmp_path, {"jobs/sacct.txt": SACCT}) as store:
        store.con.execute("DROP VIEW job_span_hosts; DROP VIEW job_spans")
    data = StoreData(tmp_path / "s.duckdb")
    assert sorted(r[1] for r in data.events(kind="job_start")) == ["4242", "4243"]
    assert [r[0] for r in data.jobs_of(["gpu-node-0001"])] == ["4242"]


# squeue's default table as squeue(1)'s example prints it (the real sample's lines), captured at
# 08:30 (the manifest), and sacct's default-format listing of the same job (no State column) and
# of one squeue never saw; then the job finished and a later sacct knows its end
SQUEUE_MAN = """ JOBID PARTITION NAME USER ST  TIME  NODES NODELIST(REASON)
 12345     debug job1 dave  R   0:21     4 dev[9-12]
 12346     debug job2 dave PD   0:00     8 (Resources)
 12348     debug job3 ed   PD   0:00     4 (Priority)
"""
SACCT_RUNNING = """JobID|Account|Start|End|NodeList
12345|physics|2026-11-30T08:29:39|Unknown|dev[9-12]
12300|physics|2026-11-30T06:00:00|2026-11-30T07:00:00|dev[1-2]
"""
SACCT_DONE = """JobID|Account|Start|End|NodeList
12345|physics|2026-11-30T08:29:39|2026-11-30T09:10:00|dev[9-12]
"""


def test_one_job_listed_by_squeue_and_sacct_is_one_job_with_its_hosts_once(tmp_path):
    """The store keeps both listings (records read = loaded, nothing rejected); `job_spans` merges
    them field by field (sacct's account and start, squeue's state where sacct has none),
    `job_span_hosts` lists the 4 hosts once (job_hosts has them twice), the summary counts
    4 jobs, not 5 listings, and says what was merged."""
    b = _bundle(tmp_path, {"jobs/squeue.txt": SQUEUE_MAN, "jobs/sacct.txt": SACCT_RUNNING})
    out = CliRunner().invoke(main, ["ingest", str(b), "--db", str(tmp_path / "s.duckdb")])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert "records  5 read = 5 loaded + 0 rejected" in lines
    assert any(" 0 links, 4 jobs, " in line for line in lines)
    assert ("merged   1 job listed more than once (5 rows in jobs for 4 jobs: sacct and squeue, "
            "or several captures): job_spans has one row per job, sacct's fields winning where "
            "both give them") in lines
    with duckdb.connect(str(tmp_path / "s.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM job_hosts WHERE job_id = '12345'").fetchone() == (8,)
        spans = con.execute("""SELECT job_id, tenant, start, "end", state, nodelist, source,
                               start_source, rows FROM job_spans ORDER BY job_id""").fetchall()
        hosts = con.execute("SELECT job_id, host FROM job_span_hosts ORDER BY ALL").fetchall()
    assert spans == [
        ("12300", "physics", datetime(2026, 11, 30, 6), datetime(2026, 11, 30, 7), "", "dev[1-2]",
         "sacct_pipe", "sacct_pipe", 1),
        ("12345", "physics", datetime(2026, 11, 30, 8, 29, 39), None, "RUNNING", "dev[9-12]",
         "sacct_pipe", "sacct_pipe", 2),
        ("12346", "", None, None, "PENDING", "", "squeue_table", None, 1),
        ("12348", "", None, None, "PENDING", "", "squeue_table", None, 1)]
    assert sorted(hosts) == sorted([("12300", "dev1"), ("12300", "dev2"),
                                    *[("12345", f"dev{i}") for i in range(9, 13)]])
    js = json.loads(CliRunner().invoke(main, ["ingest", str(b), "--db", str(tmp_path / "s.duckdb"),
                                              "--json"]).output)["store"]
    assert (js["jobs"], js["job_rows"], js["jobs_merged"]) == (4, 5, 1)


def test_a_job_sacct_saw_end_is_not_left_running_by_squeue(tmp_path):
    """squeue's RUNNING is from before the end a later sacct knows: the span ends, with no state
    (sacct printed none), and the TUI's job query lists its hosts once."""
    from fabtwin.tui.data import StoreData

    with _store(tmp_path, {"jobs/squeue.txt": SQUEUE_MAN, "jobs/sacct.txt": SACCT_DONE}) as store:
        row = store.con.execute("""SELECT start, "end", state FROM job_spans
                                   WHERE job_id = '12345'""").fetchone()
    assert row == (datetime(2026, 11, 30, 8, 29, 39), datetime(2026, 11, 30, 9, 10), "")
    data = StoreData(tmp_path / "s.duckdb")
    hosts = data._rows(f"SELECT host FROM {data.jobs_relation(hosts=True)} WHERE job_id = '12345'")
    assert sorted(hosts) == sorted((f"dev{i}",) for i in range(9, 13))

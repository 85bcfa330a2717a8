"""One row per job when a bundle lists a job in several files (sacct and squeue): the view
`job_spans`, and the diagnosis and TUI reading it instead of `jobs`."""

from __future__ import annotations

import json
from datetime import datetime

from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store

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


def _store(tmp_path, files: dict[str, str]) -> Store:
    b = tmp_path / "bundle"
    for rel, text in files.items():
        (b / rel).parent.mkdir(parents=True, exist_ok=True)
        (b / rel).write_text(text)
    (b / "manifest.json").write_text(json.dumps(
        {"timezone": "UTC", "context": {"jobs/squeue.txt": {"collected_at": "2026-11-30T08:30:00Z"}}}))
    store = Store.open(tmp_path / "s.duckdb")
    ingest_bundle(store, b, workers=1)
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
        store.con.execute("DROP VIEW job_spans")
    data = StoreData(tmp_path / "s.duckdb")
    assert sorted(r[1] for r in data.events(kind="job_start")) == ["4242", "4243"]
    assert [r[0] for r in data.jobs_of(["gpu-node-0001"])] == ["4242"]

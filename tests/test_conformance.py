"""The real-samples corpus as one bundle: every file is loaded with exact accounting or listed
as unsupported with a reason. Per-family expected values live in each family's test file."""

from __future__ import annotations

from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store

# text outputs of Slurm that carry no job times (or no jobs at all), and the corpus's own notes
UNSUPPORTED = {
    "SOURCES.md",
    "slurm/hostlist-expressions-invalid.txt",
    "slurm/hostlist-expressions-valid.txt",
    "slurm/scontrol-show-hostnames-tux1-3-output.txt",
    "slurm/sinfo-Nel-output-man-example.txt",
    "slurm/sinfo-default-output-man-example.txt",
    "slurm/squeue-default-output-man-example.txt",
    "slurm/squeue-steps-output-man-example.txt",
}


def test_every_real_sample_is_accounted_for(real_samples, tmp_path):
    with Store.open(tmp_path / "rs.duckdb") as store:
        summary = ingest_bundle(store, real_samples)
        by_status: dict[str, set[str]] = {}
        for f in summary.files:
            by_status.setdefault(f.status, set()).add(f.path)
            if f.status == "loaded":
                assert f.records_read == f.loaded + f.rejected, f.path
                # every reject says why, in words, with the line it came from
                if f.rejected:
                    assert f.first_reject and f.first_reject.startswith(f"{f.path}:")
        assert by_status.get("skipped", set()) == UNSUPPORTED
        assert "failed" not in by_status
        # the corpus is not a bundle of one fabric, but what loads must be clean
        assert store.con.execute("SELECT count(*) FROM rejects WHERE reason = ''").fetchone()[0] == 0
        families = dict(store.con.execute(
            "SELECT family, count(*) FROM files WHERE status = 'loaded' GROUP BY 1").fetchall())
        assert set(families) == {"gnmi", "prom", "nic", "syslog", "topology", "jobs"}

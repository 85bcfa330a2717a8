"""Job placement as `sacct -a -X -P` prints it: every scenario job running through the window."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from collectors.formats.slurm import Job, write_sacct_pipe
from twin.synth.files import NS, write_text

if TYPE_CHECKING:
    from twin.synth.writer import BundleWriter

JOB_ID0 = 1000  # the first scenario job's id; the rest follow


def write_jobs(w: BundleWriter) -> None:
    """`jobs/sacct.txt`: each job started an hour before the window and still running."""
    jobs = [Job(str(JOB_ID0 + j), "tenant-a", w.t0 - 3600 * NS, None,
                [w.f.node_name[h] for h in coll.hosts], "RUNNING")
            for j, (_, coll) in enumerate(w.sc.jobs)]
    fh = io.StringIO()
    write_sacct_pipe(jobs, fh)
    write_text(w.out / "jobs" / "sacct.txt", fh.getvalue())

"""Slurm's text tables: `squeue`'s default job table (read: jobs and the hosts they run on), and
the tables and lists that carry no jobs, named for the files that are skipped (`describe`).

`squeue` (default format, or any `-o` keeping the JOBID, ST and NODELIST(REASON) columns):

     JOBID PARTITION NAME USER ST  TIME  NODES NODELIST(REASON)
     12345     debug job1 dave  R   0:21     4 dev[9-12]
     12346     debug job2 dave PD   0:00     8 (Resources)

One record per data line. The NODELIST(REASON) column holds a hostlist, or for a job without
nodes the reason in parentheses (no hosts). ST is the compact state code (`R` -> RUNNING).
squeue prints no start time, only the elapsed TIME: a job that has run starts at the file's
collection time (`SourceFile.collection_ts`: manifest, `--time`, else the file's modification
time, recorded as such in `files.time_source`) minus TIME, to the second; `end` is unknown.
A NODES column that disagrees with the hostlist's size rejects the line.
"""

from __future__ import annotations

import re

from collectors.core.source import Sink, SourceFile
from collectors.core.timeparse import NS
from collectors.formats.slurm.hostlist import HostlistError, expand

# squeue's compact state codes (squeue(1), JOB STATE CODES)
STATES = {
    "BF": "BOOT_FAIL", "CA": "CANCELLED", "CD": "COMPLETED", "CF": "CONFIGURING",
    "CG": "COMPLETING", "DL": "DEADLINE", "F": "FAILED", "NF": "NODE_FAIL",
    "OOM": "OUT_OF_MEMORY", "PD": "PENDING", "PR": "PREEMPTED", "R": "RUNNING",
    "RD": "RESV_DEL_HOLD", "RF": "REQUEUE_FED", "RH": "REQUEUE_HOLD", "RQ": "REQUEUED",
    "RS": "RESIZING", "RV": "REVOKED", "SI": "SIGNALING", "SE": "SPECIAL_EXIT",
    "SO": "STAGE_OUT", "ST": "STOPPED", "S": "SUSPENDED", "TO": "TIMEOUT",
}
_NODELIST = ("NODELIST(REASON)", "NODELIST")
_ELAPSED = re.compile(r"(?:(?P<d>\d+)-)?(?:(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d{2})")


def first_line(head: str) -> str | None:
    """The first non-blank line of a text (what the Slurm parsers sniff), or None."""
    return next((line for line in head.splitlines() if line.strip()), None)


def _header(line: str) -> list[str] | None:
    cols = line.split()
    if "JOBID" in cols and ("ST" in cols or "STATE" in cols) and any(c in cols for c in _NODELIST):
        return cols
    return None


def elapsed_ns(text: str) -> int | None:
    """squeue's TIME (`0:21`, `1:43:21`, `2-03:04:05`) in ns; None if it is not one."""
    m = _ELAPSED.fullmatch(text)
    if m is None:
        return None
    d, h = int(m["d"] or 0), int(m["h"] or 0)
    return (((d * 24 + h) * 60 + int(m["m"])) * 60 + int(m["s"])) * NS


class SqueueTableParser:
    """`squeue`'s job table (see the module docstring)."""

    name = "squeue_table"
    family = "jobs"
    priority = 20

    def sniff(self, head: str, rel: str) -> bool:
        line = first_line(head)
        return line is not None and _header(line) is not None

    def parse(self, src: SourceFile, sink: Sink) -> None:
        cols: list[str] | None = None
        for number, line in src.lines():
            if not line.strip():
                continue
            found = _header(line)
            if found is not None:  # the header; several runs may be concatenated
                cols = found
                continue
            sink.current_line = number
            why = self._line(src, line, cols, sink) if cols else "squeue line before the header"
            if why:
                sink.reject(number, why, line)
            else:
                sink.accept()

    @staticmethod
    def _line(src: SourceFile, line: str, cols: list[str], sink: Sink) -> str:
        """Append the job of one line, or return why it cannot be read."""
        fields = line.split()
        if len(fields) != len(cols):
            return (f"expected {len(cols)} whitespace-separated columns ({' '.join(cols)}), "
                    f"found {len(fields)}")
        row = dict(zip(cols, fields, strict=True))
        code = row.get("ST", row.get("STATE", ""))
        state = STATES.get(code, code.upper())
        nodes = next(row[c] for c in _NODELIST if c in row)
        hosts: list[str] = []
        if not nodes.startswith("("):  # "(Resources)": a pending job's reason, no nodes
            try:
                hosts = expand(nodes)
            except HostlistError as exc:
                return str(exc)
        else:
            nodes = ""
        count = row.get("NODES", "")
        if hosts and count.isdigit() and int(count) != len(hosts):
            return f"NODES is {count} but the node list {nodes} names {len(hosts)} hosts"
        start = None
        if "TIME" in row:
            took = elapsed_ns(row["TIME"])
            if took is None:
                return f"TIME {row['TIME']!r} is not squeue's [days-][hours:]minutes:seconds"
            at = src.collection_ts() if hosts and state != "PENDING" else None
            start = None if at is None else at - took
        sink.job(row["JOBID"], row.get("ACCOUNT", ""), start, None, state, nodes, hosts)
        return ""


# -- what the files no parser reads are ---------------------------------------------------------

_HOSTLIST_LINE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-\[\],]*")


def describe(head: str) -> str | None:
    """What a Slurm text a parser does not read is, and that it is not supported; None when the
    text is none of them."""
    lines = [ln for ln in head.splitlines() if ln.strip()]
    if not lines:
        return None
    first = lines[0].split()
    if "STEPID" in first and any(c in first for c in _NODELIST):
        return ("`squeue -s` job step table: not supported (steps, not jobs: squeue's job "
                "table, sacct -P or --json place the jobs)")
    if first[:2] == ["PARTITION", "AVAIL"] and "NODELIST" in first:
        return "`sinfo` partition table: not supported (node states per partition, no jobs)"
    if first and first[0] == "NODELIST" and "STATE" in first:
        return "`sinfo -N` node table: not supported (node states, no jobs)"
    if all(_HOSTLIST_LINE.fullmatch(ln.strip()) for ln in lines[:64]):
        return ("a list of host names or Slurm hostlist expressions, one per line (as "
                "`scontrol show hostnames` prints): not supported (no jobs, no telemetry)")
    return None

"""Slurm job placement: `sacct -P` pipe-separated output, and `sacct --json` / `squeue --json`.

sacct pipe (`sacct -a -X -P -o JobID,Account,Start,End,NodeList`): the header names the columns,
in any order and with extra ones (State, JobName, AllocNodes...); `-p` adds a trailing `|`. One
record per data line. Start/End are Slurm's `2026-11-30T07:12:13` in the cluster's local time:
the bundle manifest's `timezone` when set, else UTC. `Unknown`/`None` mean not started / still
running. NodeList is a hostlist, or `None assigned` for a job that never got nodes. JobIDRaw is
preferred to JobID when both are present (array tasks print as `123_4` in JobID). Job steps
(`123.batch`, `123.0`: sacct without `-X`) are read and loaded without rows: the job line already
places the job. Without a State column the state is "".

JSON (openapi/data_parser v0.0.37 .. v0.0.40 and later): one record per element of `jobs`.
`job_id`; `account`; `nodes`; times from `time.start`/`time.end` (sacct) or `start_time`/`end_time`
(squeue), epoch seconds, plain or `{set, infinite, number}`, 0 meaning unknown/running; state from
`state.current` (sacct) or `job_state` (squeue), a string or a list (joined with `,`). The job id
is the unique `job_id`, as sacct's JobIDRaw would print it.

`squeue`'s job table: `tables.SqueueTableParser`. Not supported: `squeue -s` step tables, sinfo
tables, host name lists (`tables.describe` names them for the files skipped) and `sacct -n` (no
header to name the columns).
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import IO

from collectors.core.source import Sink, SourceFile
from collectors.core.timeparse import NS, TimeError, parse_iso, time_problem, tz_from_name
from collectors.formats.slurm.hostlist import HostlistError, compress, expand
from collectors.formats.slurm.tables import SqueueTableParser, first_line

_NO_NODES = {"", "none assigned", "(null)", "none"}
_NO_TIME = {"", "unknown", "none", "n/a"}


@dataclass
class Job:
    """One job as the writers take it (times in ns UTC, None when unknown)."""

    job_id: str
    account: str
    start: int | None
    end: int | None
    hosts: list[str] = field(default_factory=list)
    state: str = ""


def hosts_of(nodelist: str) -> tuple[str, list[str]]:
    """(nodelist as stored, host names); `None assigned` gives ("", []). HostlistError if bad."""
    text = nodelist.strip()
    if text.lower() in _NO_NODES:
        return "", []
    return text, expand(text)


# -- sacct -P ----------------------------------------------------------------------------------

_HEADER = re.compile(r"\s*(?:[A-Za-z]+\|)*JobID(?:Raw)?(?:\|[A-Za-z]+)*\|?\s*$")
_STEP = re.compile(r"^\d+(?:[_+][\d\[\]\-,%]+)?\.")


class SacctPipeParser:
    """`sacct -P` / `sacct -p` with a header line."""

    name = "sacct_pipe"
    family = "jobs"
    priority = 20

    def sniff(self, head: str, rel: str) -> bool:
        line = first_line(head)
        return line is not None and bool(_HEADER.fullmatch(line))

    def parse(self, src: SourceFile, sink: Sink) -> None:
        tz, tz_error = _manifest_tz(src)
        columns: dict[str, int] | None = None
        header = ""
        for number, line in src.lines():
            if not line.strip():
                continue
            if _HEADER.fullmatch(line):  # sacct's header, also when several runs were concatenated
                header, columns = line.strip(), _columns(line)
                continue
            if columns is None:
                sink.reject(number, "sacct line before the header line (JobID|...)", line)
                continue
            if tz_error:
                sink.reject(number, tz_error, line)
                continue
            self._line(number, line, header, columns, tz, sink)

    @staticmethod
    def _line(number: int, line: str, header: str, columns: dict[str, int], tz: tzinfo,
              sink: Sink) -> None:
        fields = line.rstrip().split("|")
        if header.endswith("|") and fields and fields[-1] == "":
            fields.pop()
        expected = len(columns)
        if len(fields) != expected:
            sink.reject(number, f"expected {expected} '|'-separated fields, found {len(fields)}",
                        line)
            return
        row = {name: fields[i].strip() for name, i in columns.items()}
        job_id = row.get("jobidraw") or row.get("jobid", "")
        if not job_id:
            sink.reject(number, "empty JobID", line)
            return
        if _STEP.match(row.get("jobid", job_id)):
            sink.current_line = number
            sink.accept()
            return
        try:
            start = _sacct_time(row.get("start", ""), "Start", tz)
            end = _sacct_time(row.get("end", ""), "End", tz)
            nodelist, hosts = hosts_of(row.get("nodelist", ""))
        except (TimeError, HostlistError) as exc:
            sink.reject(number, str(exc), line)
            return
        state = row.get("state", "").split(" ")[0]  # "CANCELLED by 1234" -> CANCELLED
        sink.current_line = number
        sink.job(job_id, row.get("account", ""), start, end, state, nodelist, hosts)
        sink.accept()


def _columns(header: str) -> dict[str, int]:
    names = header.strip().split("|")
    if names and names[-1] == "":
        names.pop()
    out: dict[str, int] = {}
    for i, name in enumerate(names):
        out.setdefault(name.lower(), i)
    return out


def _manifest_tz(src: SourceFile) -> tuple[tzinfo, str]:
    try:
        return tz_from_name(src.manifest.timezone) or UTC, ""
    except TimeError as exc:
        return UTC, f"manifest.json: {exc}"


def _sacct_time(text: str, column: str, tz: tzinfo) -> int | None:
    if text.lower() in _NO_TIME:
        return None
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}", text):
        raise TimeError(f"{column} {text[:40]!r} is not sacct's YYYY-MM-DDTHH:MM:SS "
                        "(was SLURM_TIME_FORMAT set?)")
    try:
        return parse_iso(text, tz)
    except TimeError as exc:
        raise TimeError(f"{column}: {exc}") from exc


# -- sacct --json / squeue --json --------------------------------------------------------------

_JSON_HEAD = re.compile(r'\s*\{')
_JSON_JOBS = re.compile(r'"jobs"\s*:\s*\[')
_JSON_SLURM = re.compile(r'"(?:job_id|data_parser|Slurm|slurm)"\s*:|openapi/')


class SlurmJsonParser:
    """`sacct --json` and `squeue --json` (one JSON document with a `jobs` array)."""

    name = "slurm_json"
    family = "jobs"
    priority = 20

    def sniff(self, head: str, rel: str) -> bool:
        return bool(_JSON_HEAD.match(head) and _JSON_JOBS.search(head)
                    and _JSON_SLURM.search(head))

    def parse(self, src: SourceFile, sink: Sink) -> None:
        with src.open_text() as fh:
            text = fh.read()
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            sink.reject(exc.lineno, f"invalid JSON at line {exc.lineno} column {exc.colno}: "
                        f"{exc.msg}", text[max(0, exc.pos - 100):exc.pos + 100])
            return
        except RecursionError:
            sink.reject(1, "JSON nested too deeply", text[:200])
            return
        jobs = doc.get("jobs") if isinstance(doc, dict) else None
        if not isinstance(jobs, list):
            sink.reject(1, "not Slurm JSON output: no top-level 'jobs' list", text[:200])
            return
        lines = _item_lines(text, "jobs")
        if len(lines) != len(jobs):  # non-object elements: fall back to the line of "jobs"
            m = _JSON_JOBS.search(text)
            lines = [text.count("\n", 0, m.start()) + 1 if m else 1] * len(jobs)
        for job, line in zip(jobs, lines, strict=True):
            reason = self._job(job, line, sink)
            if reason:
                sink.reject(line, reason, json.dumps(job)[:4096])

    @staticmethod
    def _job(job: object, line: int, sink: Sink) -> str:
        """Append one job; return a reject reason instead when it cannot be read."""
        if not isinstance(job, dict):
            return "job entry is not a JSON object"
        job_id = _number(job.get("job_id"))
        if job_id is None:
            return "job without a numeric job_id"
        times = job.get("time") if isinstance(job.get("time"), dict) else {}
        start = _number(times.get("start", job.get("start_time")))
        end = _number(times.get("end", job.get("end_time")))
        for column, secs in (("start", start), ("end", end)):
            why = time_problem(secs * NS, secs) if secs else None  # 0: not set
            if why:
                return f"{column}: {why}"
        state_obj = job.get("state")
        state = state_obj.get("current") if isinstance(state_obj, dict) else job.get("job_state")
        if isinstance(state, list):
            state = ",".join(str(s) for s in state)
        nodes = job.get("nodes")
        try:
            nodelist, hosts = hosts_of(nodes if isinstance(nodes, str) else "")
        except HostlistError as exc:
            return str(exc)
        account = job.get("account")
        sink.current_line = line
        sink.job(str(job_id), account if isinstance(account, str) else "",
                 start * NS if start else None, end * NS if end else None,
                 state if isinstance(state, str) else "", nodelist, hosts)
        sink.accept()
        return ""


def _number(x: object) -> int | None:
    """An int from `5`, `"5"` or `{"set": true, "infinite": false, "number": 5}`."""
    if isinstance(x, dict):
        if not x.get("set", True) or x.get("infinite"):
            return None
        x = x.get("number")
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, str) and x.strip().isdigit():
        return int(x)
    return None


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},]')
_NONSPACE = re.compile(r"\S")


def _item_lines(text: str, key: str) -> list[int]:
    """1-based start lines of the elements of the root object's `key` array."""
    newlines = [m.start() for m in re.finditer("\n", text)]
    wanted = json.dumps(key)
    depth, inside, last_key, starts = 0, False, "", []

    def element_after(pos: int) -> None:
        m = _NONSPACE.search(text, pos)
        if m and text[m.start()] != "]":
            starts.append(bisect.bisect_left(newlines, m.start()) + 1)

    for m in _TOKENS.finditer(text):
        c = m.group()[0]
        if c == '"':
            if depth == 1:
                last_key = m.group()
        elif c == ",":
            if inside and depth == 2:
                element_after(m.end())
        elif c in "[{":
            depth += 1
            if depth == 2 and c == "[" and last_key == wanted:
                inside = True
                element_after(m.end())
        else:
            depth -= 1
            if depth == 1:
                inside = False
    return starts


# -- writers ------------------------------------------------------------------------------------

SACCT_COLUMNS = ("JobID", "Account", "Start", "End", "NodeList")


def _sacct_clock(ns: int | None, tz: tzinfo) -> str:
    if ns is None:
        return "Unknown"
    return datetime.fromtimestamp(ns // NS, tz).strftime("%Y-%m-%dT%H:%M:%S")


def write_sacct_pipe(jobs: Iterable[Job], fh: IO[str], tz: tzinfo = UTC) -> None:
    """What `sacct -a -X -P -o JobID,Account,Start,End,NodeList` prints, times in `tz`.

    Host lists come out sorted and deduplicated, as sacct prints them.
    """
    fh.write("|".join(SACCT_COLUMNS) + "\n")
    for job in jobs:
        nodes = compress(job.hosts, sort=True) if job.hosts else "None assigned"
        fields = (job.job_id, job.account, _sacct_clock(job.start, tz),
                  _sacct_clock(job.end, tz), nodes)
        fh.write("|".join(fields) + "\n")


PARSERS = [SacctPipeParser(), SlurmJsonParser(), SqueueTableParser()]

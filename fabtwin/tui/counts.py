"""How the screens say how many things they show: one rule for every count.

A count names what it counts in the store's words: `events` are rows of the events table (what
the telemetry logged), job starts and ends are told apart; a filtered list says how many of how
many (`1 of 2 incidents`), an unfiltered one the total (`2 incidents`).
"""

from __future__ import annotations


def plural(n: int, noun: str) -> str:
    """`1 incident`, `2 incidents`, `1,204 events`."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def shown_of(shown: int, total: int, noun: str, filtered: bool) -> str:
    """`1 of 2 incidents` when a filter is on, else `2 incidents`."""
    return f"{shown:,} of {plural(total, noun)}" if filtered else plural(total, noun)


def event_rows(kinds: list[str], total_events: int, filtered: bool) -> str:
    """The count line of a list of event rows whose kinds are `kinds` (job_start and job_end
    rows are the jobs table's, not events): `14 events + 1 job start/end`."""
    jobs = sum(1 for k in kinds if k.startswith("job_"))
    text = shown_of(len(kinds) - jobs, total_events, "event", filtered)
    return text + (f" + {jobs:,} job start/end" if jobs else "")

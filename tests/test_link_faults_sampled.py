"""A flap's reroute on the twin, when only oper-status reads time the outage (issue 17: flaps
shorter than a sample). One read down between two up reads says the link was down at that
instant, for anything from a blink to two intervals: writer3 seed 600 w3_033's flap was down
0.9 s, read as 9.9 s, and the twin's reroute for 9.9 s explained less than nothing, which capped
the flap at 0.225, tied with a false loss. Such a reroute's size is fitted, and so is one that
event lines time: where the traffic goes depends on how the fabric reacts, not on the timing
(writer2 seed 25001: a spine-super flap logged by both ends, its fixed reroute explained -30.7,
the flap capped at 0.23, fourth). sample_traces/two_faults' flap (leaf-p0-02:swp5, logged by
syslog and read by oper-status), investigated once, then its event lines removed."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from replay.explain import _model
from replay.hypotheses import link_hypothesis
from replay.investigate import views_once

LINK = "leaf-p0-02:swp5--spine-p0-01:swp2"


@pytest.fixture(scope="module")
def store(sample_stores) -> Path:
    """two_faults investigated: the session's (conftest's `sample_stores`; _reroute copies it)."""
    return sample_stores.investigated("two_faults")


def _reroute(db: Path, tmp_path: Path, events: bool):
    copy = tmp_path / "c.duckdb"
    shutil.copy(db, copy)
    con = duckdb.connect(str(copy))
    if not events:  # the same outages, seen only by the oper-status reads of its spine end
        con.execute("DELETE FROM events WHERE kind IN ('link_down', 'link_up')")
    with views_once(con):
        m = _model(con)
        flap = con.execute("SELECT min(start), max(\"end\") FROM link_state_intervals "
                           "WHERE state = 'down'").fetchall()[0]
        h = link_hypothesis(m, "link_flap", LINK, *flap, None)
    con.close()
    return next(t for t in h.templates if t.name == "reroute")


@pytest.mark.parametrize("events", [True, False], ids=["event-timed", "read-bounded"])
def test_an_outage_has_its_reroute_fitted_however_it_is_timed(store, tmp_path, events):
    t = _reroute(store, tmp_path, events=events)
    assert not t.fixed and t.amax == 1.0


def test_an_outage_read_from_oper_status_starts_where_the_carrier_counters_allow():
    # w3_033: read down at 05:43:32.9 (a clock 1.2 s ahead) for a flap of 05:43:31.7-32.6; the
    # spine's carrier counter moved over 05:43:22.4-32.9, the leaf's over 05:43:29.3-39.3
    from datetime import datetime, timedelta

    from replay.detectors import _read_bounds

    def t(s: float) -> datetime:
        return datetime(2026, 5, 15, 5, 43) + timedelta(seconds=s)

    moves = [{"ts_start": t(22.4), "ts": t(32.9)}, {"ts_start": t(29.3), "ts": t(39.3)},
             {"ts_start": t(50.0), "ts": t(60.0)}]  # a later move: another transition
    assert _read_bounds([(t(32.9), t(42.7))], moves) == [(t(22.4), t(42.7))]
    assert _read_bounds([(t(32.9), t(42.7))], []) == [(t(32.9), t(42.7))]


def test_one_carrier_transition_just_before_an_outage_is_its_onset_not_a_flap():
    # the project's seed 18023: carrier_transitions 1 -> 2 over 03:00:47.9-58.4 at a read that
    # still says up, oper status down from 03:01:07.9 to the end: one transition, the link
    # down once. Two transitions there (down and up) are a flap before the outage.
    from datetime import datetime, timedelta

    from replay.link_faults import short_flaps

    def t(s: float) -> datetime:
        return datetime(2026, 11, 30, 3) + timedelta(seconds=s)

    def move(delta: float, counter: str = "carrier_transitions") -> dict:
        return {"link": "L", "port": "leaf:e1", "counter": counter, "delta": delta,
                "ts_start": t(47.9), "ts": t(58.4)}

    outage = {"L": [(t(67.9), t(300.0))]}
    assert short_flaps([move(1)], outage) == {}
    assert short_flaps([move(2)], outage) == {"L": [move(2)]}
    far = {"L": [(t(90.0), t(300.0))]}  # more than a sample interval later: not its onset
    assert short_flaps([move(1)], far) == {"L": [move(1)]}


def test_a_down_counted_just_before_an_outage_is_its_own_down_unless_the_outage_counts_one():
    # writer2 seed 21038: the NIC's link_down_events +1 over 07:00:47.9-57.9, the down logged
    # at 07:00:58.1 (leaf) and 58.5 (NIC), no move at the outage itself: the read was stamped
    # before the down it counted. Where the interval over the outage's start counts a down of
    # its own, the earlier one is a flap; of two downs before it, one is.
    from datetime import datetime, timedelta

    from replay.link_faults import short_flaps

    def t(s: float) -> datetime:
        return datetime(2026, 10, 15, 7) + timedelta(seconds=s)

    def move(delta: float, start: float = 47.9, end: float = 57.9) -> dict:
        return {"link": "L", "port": "nic:e1", "counter": "link_down_events", "delta": delta,
                "ts_start": t(start), "ts": t(end)}

    outage = {"L": [(t(58.1), t(300.0))]}
    assert short_flaps([move(1)], outage) == {}
    assert short_flaps([move(2)], outage) == {"L": [move(1)]}
    own = move(1, 57.9, 67.9)  # the outage's down counted where it happened
    assert short_flaps([move(1), own], outage) == {"L": [move(1)]}
    far = {"L": [(t(90.0), t(300.0))]}
    assert short_flaps([move(1)], far) == {"L": [move(1)]}

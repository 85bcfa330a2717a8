"""find_silent_loss reads only the link directions `_SUSPECT_SQL` names: that set must hold every
direction with a window `_z` scores above Z_RUN, whatever the rows (else a loss goes unseen),
each row carrying its direction's `timing_share` as find_silent_loss reads it."""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb
import numpy as np

from replay.link_faults import _SHARES_CTE, _SUSPECT_SQL, Z_RUN, _suspect_params, _z
from replay.residuals import NoiseFloor
from replay.results import ensure_results

COLS = ("window_start", "window_end", "link_id", "tx_port", "rx_port", "status", "deficit_ratio", "basis",
        "deficit_packets_per_s", "sender_pause_per_s", "sample_s", "granularity", "rate_change")


def _rows(rng: np.random.Generator, n: int) -> list[dict]:
    """Residual rows near and around the floors: every column sometimes missing or zero."""
    t0 = datetime(2026, 11, 30, 3)
    out = []
    for i in range(n):
        start = t0 + timedelta(seconds=60 * int(rng.integers(0, 30)))
        maybe = (lambda v: None if rng.random() < 0.15 else v)  # noqa: E731
        out.append({
            "window_start": start,
            "window_end": start + timedelta(seconds=float(rng.choice([60.0, 59.5, 1e-4, 30.0]))),
            "link_id": f"l{i % 23}", "tx_port": f"p{i % 23}:{i % 2}", "rx_port": f"q{i % 23}",
            "status": str(rng.choice(["ok", "ok", "ok", "idle", "partial"])),
            "deficit_ratio": maybe(float(rng.choice([0.0, 1e-3, 0.02, 0.05, 0.3, -0.01]))
                                   * float(rng.random() * 2)),
            "basis": str(rng.choice(["packets", "bytes"])),
            # (a packets basis has both packet counts: never missing)
            "deficit_packets_per_s": float(rng.normal(50, 100)),
            "sender_pause_per_s": maybe(float(rng.choice([0.0, 10.0, 1e3]))),
            "sample_s": maybe(float(rng.choice([0.0, 1.0, 10.0, 2.8, 11.3]))),
            "granularity": maybe(float(rng.choice([0.0, 1e-4, 3e-3, 0.02]))),
            "rate_change": maybe(float(rng.choice([0.0, 0.01, 0.2, 1.5]))),
        })
    return out


def test_suspects_hold_every_direction_z_scores_above_the_run_threshold() -> None:
    rng = np.random.default_rng(17)
    con = duckdb.connect()
    ensure_results(con)
    floors = {None: NoiseFloor(None, 1e-4, 2e-3, 500), 3: NoiseFloor(3, -2e-4, 1e-3, 400),
              4: NoiseFloor(4, 5e-4, 4e-3, 60)}
    measured, rounds = set(), []
    for n in (400, 200, 100, 60):  # fewer rows: fewer directions with a loud window
        flagged, directions = set(), set()
        rows = _rows(rng, n)
        con.execute("DELETE FROM link_residuals")
        con.executemany(f"INSERT INTO link_residuals ({', '.join(COLS)}) VALUES "
                        f"({', '.join('?' * len(COLS))})", [[r[c] for c in COLS] for r in rows])
        suspects = set(con.execute(_SUSPECT_SQL, _suspect_params(floors)).fetchall())
        shares = {(link, tx): share for link, tx, share in con.execute(
            f"WITH {_SHARES_CTE} SELECT * FROM shares", {"median": floors[None].median}).fetchall()}
        measured.update(v for v in shares.values() if v < 1)
        for r in rows:
            r["timing_share"] = shares[(r["link_id"], r["tx_port"])]
            directions.add((r["link_id"], r["tx_port"]))
            z = _z(r, floors)
            if z is not None and z > Z_RUN:
                flagged.add((r["link_id"], r["tx_port"]))
                assert (r["link_id"], r["tx_port"]) in suspects, r
        rounds.append(bool(flagged) and len(flagged) < len(directions))
    # the rows reach both sides of the threshold, and the filter leaves quiet directions out
    assert any(rounds)
    assert measured  # some directions' read offset was measured below a whole interval
    con.execute("DELETE FROM link_residuals")
    quiet = [{**r, "deficit_ratio": 0.0} for r in _rows(rng, 50)]
    con.executemany(f"INSERT INTO link_residuals ({', '.join(COLS)}) VALUES "
                    f"({', '.join('?' * len(COLS))})", [[r[c] for c in COLS] for r in quiet])
    assert not con.execute(_SUSPECT_SQL, _suspect_params(floors)).fetchall()

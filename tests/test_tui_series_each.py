"""A drill-down's lines in one scan (StoreData.port_series_each): the same series as each port
read alone, and a time range that bounds every device's samples, not only the last one's."""

from __future__ import annotations

from datetime import datetime

from fabtwin.tui.data import StoreData

pytest_plugins = ["tui_fixtures"]  # the stores these tests open

# ports of three devices: the flap's ends and a host port
PORTS = ["leaf-p0-02:swp5", "spine-p0-01:swp2", "leaf-p0-02:swp6", "gpu-node-0011:eth0"]
T0, T1 = datetime(2026, 11, 30, 3, 3, 0), datetime(2026, 11, 30, 3, 6, 0)


def test_each_port_in_one_scan_is_that_port_read_alone(two_faults_db):
    data = StoreData(two_faults_db)
    try:
        for counter in ("tx_bytes_per_s", "errors_per_s", "tx_pause_per_s"):
            each = data.port_series_each(PORTS, counter, T0, T1)
            alone = [data.port_series_many([p], [counter], T0, T1)[0] for p in PORTS]
            assert [s.ts for s in each] == [s.ts for s in alone], counter
            for a, b in zip(each, alone, strict=True):
                assert a.observed == b.observed or all(
                    abs(x - y) <= 1e-9 * max(1.0, abs(y)) for x, y in zip(a.observed, b.observed,
                                                                          strict=True))
        assert all(s.ts for s in data.port_series_each(PORTS, "tx_bytes_per_s", T0, T1))
    finally:
        data.close()


def test_a_time_range_bounds_the_samples_of_every_device(two_faults_db):
    data = StoreData(two_faults_db)
    try:
        (summed,) = data.port_series_many(PORTS, ["tx_bytes_per_s"], T0, T1)
    finally:
        data.close()
    # before, the range bounded only the last device's term of the WHERE clause: the other
    # devices' samples of the whole store were summed in
    assert summed.ts and min(summed.ts) >= T0 and max(summed.ts) <= T1

"""The fabric of a store is discovered once per store version in a process (fabric_cache)."""

from __future__ import annotations

import os

import replay.fabric
from fabtwin.tui.data import StoreData

pytest_plugins = ["tui_fixtures"]  # store_copy: a private copy of the two_faults store


def test_a_second_store_data_of_the_same_store_does_not_discover_again(store_copy, monkeypatch):
    calls = []
    real = replay.fabric.fabric_from_store

    def counted(con, speeds=True):
        calls.append(speeds)
        return real(con, speeds=speeds)

    monkeypatch.setattr(replay.fabric, "fabric_from_store", counted)
    first = StoreData(store_copy)
    fab = first.fabric()
    first.close()
    assert fab is not None and len(calls) == 1
    second = StoreData(store_copy)
    assert second.fabric() is fab and second.fabric_error is None and len(calls) == 1
    second.close()
    st = os.stat(store_copy)  # the store rewritten meanwhile: discovered again, not stale
    os.utime(store_copy, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    third = StoreData(store_copy)
    assert third.fabric() is not fab and third.fabric() is not None and len(calls) == 2
    third.close()


def test_a_store_without_cabling_keeps_its_error_for_the_second_reader(empty_db):
    for _ in range(2):
        data = StoreData(empty_db)
        assert data.fabric() is None and "no cabling" in (data.fabric_error or "")
        data.close()

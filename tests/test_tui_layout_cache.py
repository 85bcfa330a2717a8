"""The fabric screen's cells are kept on disk per cabling (layout_cache): a later StoreData of
the same cabling loads them without discovering the fabric; another cabling, other code or a
damaged file is never trusted; nothing is written beside the store."""

from __future__ import annotations

import shutil

import duckdb
import numpy as np
import pytest

import replay.fabric
from fabtwin.tui import fabric_cache, layout_cache
from fabtwin.tui.data import StoreData
from fabtwin.tui.fabric_windows import cell_layout

pytest_plugins = ["tui_fixtures"]  # store_copy: a private copy of the two_faults store


@pytest.fixture
def discoveries(monkeypatch, tmp_path_factory) -> list:
    """Each discovery of a fabric from a store (the per-process fabric cache emptied), into a
    private cache folder (not the store's)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setattr(fabric_cache, "_fabrics", type(fabric_cache._fabrics)())
    calls: list = []
    real = replay.fabric.fabric_from_store

    def counted(con, speeds=True):
        calls.append(speeds)
        return real(con, speeds=speeds)

    monkeypatch.setattr(replay.fabric, "fabric_from_store", counted)
    return calls


def _cells(db):
    data = StoreData(db)
    try:
        return data.cells(), data.fabric_error
    finally:
        data.close()


def _same(x, y) -> None:
    assert x.ports == y.ports and len(x.planes) == len(y.planes)
    for p, q in zip(x.planes, y.planes, strict=True):
        assert (p.plane, p.leaves, p.spines) == (q.plane, q.leaves, q.spines)
        for c, d in ((p.spine_cells, q.spine_cells), (p.host_cells, q.host_cells)):
            assert (c.rows, c.cols, c.links) == (d.rows, d.cols, d.links)
            for name in ("cell", "a", "b", "cap"):
                assert np.array_equal(getattr(c, name), getattr(d, name)), name


def _forget_process_cache(monkeypatch) -> None:
    monkeypatch.setattr(fabric_cache, "_fabrics", type(fabric_cache._fabrics)())


def test_the_same_cabling_is_loaded_not_discovered_and_nothing_lands_beside_the_store(
        store_copy, discoveries, monkeypatch):
    beside = sorted(p.name for p in store_copy.parent.iterdir())
    first, err = _cells(store_copy)
    assert first is not None and err is None and len(discoveries) == 1
    assert len(list(layout_cache.cache_dir().glob("cells-*.npz"))) == 1
    _forget_process_cache(monkeypatch)
    second, _ = _cells(store_copy)
    assert len(discoveries) == 1  # loaded from the file
    _same(first, second)
    # and what the file gives is what the cabling gives (each cable of its line rate: the
    # replay's capacities are read per window, fabric_windows.replayed_window)
    data = StoreData(store_copy)
    _same(second, cell_layout(data.fabric()))
    data.close()
    assert sorted(p.name for p in store_copy.parent.iterdir()) == beside


def test_another_cabling_or_other_code_is_discovered_again(store_copy, tmp_path, discoveries,
                                                           monkeypatch):
    first, _ = _cells(store_copy)
    other = tmp_path / "other.duckdb"
    shutil.copy(store_copy, other)
    with duckdb.connect(str(other)) as con:  # one cable less (both of its LLDP rows)
        con.execute("DELETE FROM neighbors WHERE (device = 'leaf-p0-01' AND ifname = 'swp5') "
                    "OR (peer_device = 'leaf-p0-01' AND peer_ifname = 'swp5')")
    _forget_process_cache(monkeypatch)
    second, _ = _cells(other)
    assert len(discoveries) == 2
    assert "leaf-p0-01:swp5--spine-p0-01:swp1" in {x for row in first.planes[0].spine_cells.links
                                                  for x in row}
    assert "leaf-p0-01:swp5--spine-p0-01:swp1" not in {
        x for row in second.planes[0].spine_cells.links for x in row}
    monkeypatch.setattr(layout_cache, "_code_digest", lambda: "another version of the code")
    _forget_process_cache(monkeypatch)
    _cells(store_copy)
    assert len(discoveries) == 3


def test_a_damaged_file_is_not_trusted_and_is_replaced(store_copy, discoveries, monkeypatch):
    first, _ = _cells(store_copy)
    (path,) = layout_cache.cache_dir().glob("cells-*.npz")
    path.write_bytes(path.read_bytes()[:200])  # cut short
    _forget_process_cache(monkeypatch)
    second, _ = _cells(store_copy)
    assert len(discoveries) == 2
    _same(first, second)
    key = path.name[len("cells-"):-len(".npz")]
    assert layout_cache.load(key) is not None  # written whole again


def test_a_cabling_that_gives_no_fabric_keeps_its_error(empty_db, discoveries, monkeypatch):
    for _ in range(2):
        cells, err = _cells(empty_db)
        assert cells is None and "no cabling" in (err or "")
        _forget_process_cache(monkeypatch)
    assert len(discoveries) == 1


def test_an_unwritable_cache_folder_only_means_no_cache(store_copy, discoveries, monkeypatch,
                                                        tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    cells, err = _cells(store_copy)
    assert cells is not None and err is None and blocker.read_text() == "not a folder"


def test_the_warm_up_saves_a_new_cablings_cells_once_its_first_window_is_computed(
        store_copy, discoveries, monkeypatch):
    """The app's warm-up (StoreData.warm_fabric, from the app's start) computes the window the
    fabric screen opens on first, and only then writes the cache's file."""
    data = StoreData(store_copy)
    computed_at_save: list[int] = []
    real = layout_cache.save

    def save(key, found):
        computed_at_save.append(len(data._maps))  # windows' heatmaps computed by then
        real(key, found)

    monkeypatch.setattr(layout_cache, "save", save)
    try:
        data.warm_fabric()
    finally:
        data.close()
    assert computed_at_save == [1] and len(discoveries) == 1
    assert len(list(layout_cache.cache_dir().glob("cells-*.npz"))) == 1


def test_the_apps_start_computes_the_first_window_only_for_a_kept_cabling(
        store_copy, discoveries, monkeypatch):
    """FabtwinApp's construction computes the fabric's first window for a cabling in the
    cache; for another it leaves no thread behind and discovers nothing (that waits for the
    first paint; an empty cache: not even the cabling's key is read), and a later cells()
    still discovers it."""
    from fabtwin.tui.app import FabtwinApp

    keys: list = []
    real_key = layout_cache.cabling_key
    monkeypatch.setattr(layout_cache, "cabling_key", lambda cur: keys.append(1) or real_key(cur))
    app = FabtwinApp(str(store_copy))  # an empty cache: not kept
    try:
        app._fabric_thread.join(timeout=20)
        assert not app._fabric_thread.is_alive() and app._fabric_failure is None
        assert not app._fabric_kept and discoveries == [] and not app.data.cells_ready()
        assert keys == []
        assert app.data.warm_fabric(discover=False) is False and discoveries == []
        assert app.data.cells() is not None and len(discoveries) == 1  # nothing was kept
    finally:
        app.data.close()
    _forget_process_cache(monkeypatch)  # a second `fabtwin tui`: only the file is left
    assert len(list(layout_cache.cache_dir().glob("cells-*.npz"))) == 1

    app = FabtwinApp(str(store_copy))  # now kept: the first window is computed from here
    try:
        app._fabric_thread.join(timeout=20)
        assert app._fabric_kept and app.data.fabric_drawn() and len(discoveries) == 1
    finally:
        app.data.close()

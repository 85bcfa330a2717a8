"""Shared test helpers: run a parser on a file the way ingest does, and find the real samples."""

from __future__ import annotations

import copy
import hashlib
import importlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from collectors.core.source import Manifest, Parser, Sink, SourceFile
from collectors.registry import recognize
from collectors.store.ingest import head_of

REPO = Path(__file__).resolve().parents[1]
REAL_SAMPLES = REPO.parent / "shared" / "real-samples"
HTSIM_REFERENCE = REPO.parent / "shared" / "reference" / "htsim"
# inputs copied from HTSIM_REFERENCE (tests/data/htsim/README.md): the tests that need only
# these run where ../shared is absent
HTSIM_DATA = REPO / "tests" / "data" / "htsim"


# `-n auto` (pyproject's addopts) starts one pytest-xdist worker per CPU this process may run on,
# at most this many
MAX_WORKERS = 2


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """How many workers `-n auto` starts: none (the tests run in this process) when the command
    line names tests of one file only (`pytest tests/test_x.py[::test_y]`: starting workers
    would cost more than the file's tests gain), else one per CPU in this process's affinity
    mask, at most MAX_WORKERS (none on one CPU). xdist's own count would be the physical cores (with psutil
    installed), one on a 2-vCPU machine with hyperthreads. PYTEST_XDIST_AUTO_NUM_WORKERS, when
    set, is xdist's to read; `-n N` on the command line bypasses this hook."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    named = {Path(config.invocation_params.dir, arg.split("::")[0]).resolve()
             for arg in config.args}
    if len(named) == 1 and next(iter(named)).is_file():
        return 0
    workers = min(MAX_WORKERS, len(os.sched_getaffinity(0)))
    return workers if workers > 1 else 0  # one worker would only add its start to one CPU


def run_parser(path: Path, rel: str | None = None, manifest: Manifest | None = None,
               parser: Parser | None = None, sink: Sink | None = None) -> tuple[Parser | None, Sink]:
    """Recognize `path` by content (unless `parser` is given) and parse it into a bufferless Sink.

    `rel` is the bundle-relative name the parser sees (defaults to the file name), so tests can
    say `nic/gpu-node-0001/eth2.ethtool` without building a bundle. The accounting invariant is
    checked here for every test that uses it.
    """
    rel = rel or path.name
    parser = parser or recognize(head_of(path), rel)
    sink = sink or Sink()
    if parser is not None:
        parser.parse(SourceFile(path, rel, manifest or Manifest()), sink)
        assert sink.loaded >= 0 and sink.rejected == len(sink.rejects)
    return parser, sink


@pytest.fixture(scope="session", autouse=True)
def private_cache_home(tmp_path_factory) -> Iterator[Path]:
    """What the code caches ($XDG_CACHE_HOME: the TUI's fabric cells, fabtwin/tui/
    layout_cache.py) goes to a temporary folder, never to the tester's home (subprocesses of
    the CLI inherit it)."""
    home = tmp_path_factory.mktemp("xdg-cache")
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(home)
    yield home
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


@pytest.fixture
def real_samples() -> Path:
    """../shared/real-samples, or skip where it is absent (it is never copied into the repo)."""
    if not REAL_SAMPLES.is_dir():
        pytest.skip("../shared/real-samples not present")
    return REAL_SAMPLES


@pytest.fixture
def pool_any_size(monkeypatch):
    """Ingest's pool for a bundle of any size (it starts at `POOL_MIN_BYTES` otherwise): the
    tests of the pool use small bundles."""
    import collectors.store.ingest as ingest_mod

    monkeypatch.setattr(ingest_mod, "POOL_MIN_BYTES", 0)


@pytest.fixture
def write(tmp_path: Path):
    """write("nic/h/eth2.ethtool", text, gz=False) -> Path inside a temporary bundle."""
    import gzip

    def _write(rel: str, text: str, gz: bool = False) -> Path:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if gz:
            p.write_bytes(gzip.compress(text.encode()))
        else:
            p.write_text(text)
        return p

    return _write


# set by `ray_cluster`: True once this session started its Ray the way `--ray local` does while
# RAY_ADDRESS named a cluster that is down (test_replay's test_ray_local_ignores_ray_address)
RAY_LOCAL_IGNORED_RAY_ADDRESS: list[bool] = []


@pytest.fixture(scope="session")
def ray_cluster():
    """A real local Ray with 2 CPUs for the whole session (about 8 s to start here), shared by
    the sweep and replay tests; skipped where Ray is not installed (`pip install fabtwin[ray]`).

    Started by `twin.parallel.ray_init("local")`, what `--ray local` runs, with RAY_ADDRESS
    naming a port nobody listens on: a Ray started so proves that "local" never joins the
    cluster RAY_ADDRESS names (one start for that proof and the tests that use it; a start in
    a subprocess of its own took 8-11 s)."""
    ray = pytest.importorskip("ray")
    from twin.parallel import ray_init

    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAY_ADDRESS", "127.0.0.1:1")
        started = ray_init("local", workers=2)
    RAY_LOCAL_IGNORED_RAY_ADDRESS.append(started)
    yield ray
    if started:
        ray.shutdown()


def ingested_facts(con) -> dict:
    """What a writer's bundle became in a store: its ports, devices, links and rejects (the
    writer tests check them against the bundle's labels and planted bad lines)."""
    return {
        "ports": {d + ":" + i for d, i in con.execute(
            "SELECT DISTINCT device, ifname FROM samples WHERE ifname IS NOT NULL").fetchall()},
        "devices": {r[0] for r in con.execute("SELECT DISTINCT device FROM samples").fetchall()},
        "links": {r[0] for r in con.execute("SELECT link_id FROM links").fetchall()},
        "rejects": con.execute("SELECT path, reason FROM rejects").fetchall(),
    }



# modules whose constants tests monkeypatch (pool and child thresholds, commit sizes), with their
# values at collection, before any test: SampleStores builds with these, whichever test asks first
TUNED = ("collectors.store.ingest", "collectors.store.child", "collectors.store.writer")
_SHIPPED = [(mod, name, getattr(mod, name)) for mod in map(importlib.import_module, TUNED)
            for name in dir(mod) if name.isupper()]


class SampleStores:
    """Stores of sample_traces/NAME built once per session, for the tests that only read them:
    `ingested(name)` (`ingest_bundle` into a new store) and `investigated(name)`
    (`replay.investigate.investigate` into a copy of `ingested(name)`; `document(name)` is what
    it returned, as `investigate --json` prints it). Each costs 1-3 s to build, and several files read the same ones. A test
    reads a store (`open_readonly`, `fabtwin report`) or writes to its own `copy`; the session
    ends with an error if a test changed one."""

    def __init__(self, root: Path):
        self.root = root
        self._docs: dict[str, dict] = {}
        self._sha: dict[Path, str] = {}

    @staticmethod
    def _as_shipped() -> pytest.MonkeyPatch:
        """The TUNED modules' constants as they were before any test ran (undo() ends it)."""
        env = pytest.MonkeyPatch()
        for mod, name, value in _SHIPPED:
            env.setattr(mod, name, value)
        return env

    def _built(self, db: Path, make: Callable[[Path], object]) -> Path:
        """`db`, made by `make(db)` with the TUNED constants as shipped on its first ask, and
        its digest kept (`changed`)."""
        if db not in self._sha:
            env = self._as_shipped()
            try:
                make(db)
            finally:
                env.undo()
            self._sha[db] = _sha256(db)
        return db

    def ingested(self, name: str) -> Path:
        from collectors.store.ingest import ingest_bundle
        from collectors.store.writer import Store

        def make(db: Path) -> None:
            with Store.open(db) as store:
                ingest_bundle(store, REPO / "sample_traces" / name)

        return self._built(self.root / f"{name}.ingested.duckdb", make)

    def investigated(self, name: str) -> Path:
        from replay.investigate import investigate

        def make(db: Path) -> None:
            # investigate into a copy of the session's ingest of the bundle (as after `fabtwin
            # ingest`: it finds the files loaded; 0.7-0.8 s of CPU against 1.3-1.7 s from
            # nothing, the same incidents whole). A new store's investigate stays tested:
            # test_investigate_startup, test_investigate's sequence, test_lake's new lake
            self._docs[name] = investigate(REPO / "sample_traces" / name,
                                           self.copy(self.ingested(name), db))

        return self._built(self.root / f"{name}.investigated.duckdb", make)

    def document(self, name: str) -> dict:
        """investigate()'s document for `name` (a copy: the test may change it)."""
        self.investigated(name)
        return copy.deepcopy(self._docs[name])

    @staticmethod
    def copy(db: Path, to: Path) -> Path:
        """A private copy of a store, at `to`, to write to."""
        shutil.copy(db, to)
        return to

    def changed(self) -> list[Path]:
        return [db for db, sha in self._sha.items() if _sha256(db) != sha]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="session")
def sample_stores(tmp_path_factory) -> Iterator[SampleStores]:
    """The session's `SampleStores`; fails the session's last test if a store was written."""
    stores = SampleStores(tmp_path_factory.mktemp("sample-stores"))
    yield stores
    changed = stores.changed()
    assert not changed, f"tests wrote to shared stores (copy them first): {changed}"

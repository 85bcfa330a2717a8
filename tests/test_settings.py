"""collectors.settings: every environment variable's default, its parsing, its one-line error,
the README's table of them, and the CLI refusing a malformed one before it makes any file."""

from __future__ import annotations

import os
import re

import pytest
from click.testing import CliRunner
from conftest import REPO

from collectors import settings
from collectors.settings import SETTINGS, SettingError
from collectors.store.writer import Store
from fabtwin.cli import main

NAMES = [s.name for s in SETTINGS]


@pytest.fixture
def clean_env(monkeypatch):
    """No FABTWIN_* variable set."""
    for name in [n for n in os.environ if n.startswith("FABTWIN_")]:
        monkeypatch.delenv(name)
    return monkeypatch


def test_defaults_when_unset_or_empty(clean_env):
    for value in (None, "", "  "):
        for name in NAMES:
            if value is None:
                clean_env.delenv(name, raising=False)
            else:
                clean_env.setenv(name, value)
        assert settings.db() == "fabtwin.duckdb"
        assert settings.db_override() is None
        assert [settings.duckdb_memory(u) for u in ("ingest", "write", "read")] == \
            ["256MB", "512MB", "2GB"]
        assert settings.analysis_memory() == "4GB"
        assert settings.ingest_workers() == max(1, min(os.cpu_count() or 1, 8))
        assert settings.ray_timeout_s() == 30.0
        settings.check_all()


def test_values_set_are_used(clean_env):
    clean_env.setenv("FABTWIN_DB", "x.duckdb")
    clean_env.setenv("FABTWIN_DUCKDB_MEMORY", " 64MB ")
    clean_env.setenv("FABTWIN_ANALYSIS_MEMORY", "1.5GiB")
    clean_env.setenv("FABTWIN_INGEST_WORKERS", "3")
    clean_env.setenv("FABTWIN_RAY_TIMEOUT_S", "2.5")
    assert settings.db() == settings.db_override() == "x.duckdb"
    assert {settings.duckdb_memory(u) for u in ("ingest", "write", "read")} == {"64MB"}
    assert settings.analysis_memory() == "1.5GiB"
    assert settings.ingest_workers() == 3
    assert settings.ray_timeout_s() == 2.5
    clean_env.setenv("FABTWIN_RAY_TIMEOUT_S", "0.001")
    assert settings.ray_timeout_s() == 0.1  # the floor the doc states


BAD = [("FABTWIN_INGEST_WORKERS", "abc"), ("FABTWIN_INGEST_WORKERS", "0"),
       ("FABTWIN_INGEST_WORKERS", "2.5"), ("FABTWIN_RAY_TIMEOUT_S", "soon"),
       ("FABTWIN_RAY_TIMEOUT_S", "-1"), ("FABTWIN_RAY_TIMEOUT_S", "nan"),
       ("FABTWIN_RAY_TIMEOUT_S", "inf"), ("FABTWIN_DUCKDB_MEMORY", "lots"),
       ("FABTWIN_DUCKDB_MEMORY", "512"), ("FABTWIN_ANALYSIS_MEMORY", "4G")]


@pytest.mark.parametrize(("name", "value"), BAD)
def test_a_bad_value_is_one_line_naming_the_variable(clean_env, name, value):
    clean_env.setenv(name, value)
    with pytest.raises(SettingError) as err:
        settings.check_all()
    text = str(err.value)
    assert text.startswith(f"{name}={value!r} is not ") and "\n" not in text


def test_the_store_takes_the_memory_limit_of_its_use(clean_env, tmp_path):
    with Store.open(tmp_path / "a.duckdb") as store:
        assert store.con.execute("SELECT current_setting('memory_limit')").fetchone()[0] == "488.2 MiB"
        assert not store.memory_chosen  # ingest then applies its own 256MB
    clean_env.setenv("FABTWIN_DUCKDB_MEMORY", "100MB")
    with Store.open(tmp_path / "b.duckdb") as store:
        assert store.con.execute("SELECT current_setting('memory_limit')").fetchone()[0] == "95.3 MiB"
        assert store.memory_chosen


def test_cli_refuses_a_bad_variable_before_making_any_file(clean_env, tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.prom").write_text("up 1 1700000000000\n")
    clean_env.setenv("FABTWIN_INGEST_WORKERS", "abc")
    db = tmp_path / "s.duckdb"
    out = CliRunner().invoke(main, ["ingest", str(tmp_path / "b"), "--db", str(db)])
    assert out.exit_code == 2, out.output
    assert out.stderr == ("fabtwin: error: FABTWIN_INGEST_WORKERS='abc' is not a whole number of "
                          "at least 1 (unset it for the default: the cores, at most 8)\n")
    assert not db.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["b"]
    assert CliRunner().invoke(main, ["ingest", "--help"]).exit_code == 0  # help still works
    clean_env.delenv("FABTWIN_INGEST_WORKERS")
    clean_env.setenv("FABTWIN_DUCKDB_MEMORY", "lots")
    out = CliRunner().invoke(main, ["sql", "SELECT 1", "--db", str(db)])
    assert out.exit_code == 2 and out.stderr.startswith("fabtwin: error: FABTWIN_DUCKDB_MEMORY=")


def _readme_section() -> str:
    text = (REPO / "README.md").read_text()
    return text.split("\n## Environment variables\n", 1)[1].split("\n## ", 1)[0]


def test_readme_table_is_the_modules():
    table = "".join(line + "\n" for line in _readme_section().splitlines() if line.startswith("|"))
    assert table == settings.markdown_table(), "run: python -m collectors.settings"
    rows = [line.split(" | ") for line in table.splitlines()[2:]]
    assert [(r[0].strip("|` "), r[1]) for r in rows] == [(s.name, s.default) for s in SETTINGS]


def test_no_variable_is_read_outside_the_settings_module():
    """Every FABTWIN_ name the code mentions is one of the module's, and only it reads them."""
    mentioned, readers = set(), []
    for folder in ("collectors", "twin", "replay", "fabtwin"):
        for path in (REPO / folder).rglob("*.py"):
            text = path.read_text()
            mentioned |= set(re.findall(r"\bFABTWIN_[A-Z_]+[A-Z]\b", text))
            if re.search(r"(environ|getenv)\b[^\n]*FABTWIN_", text):
                readers.append(path.relative_to(REPO).as_posix())
    assert mentioned == set(NAMES)
    assert readers == []  # settings.py reads `self.name`, never a literal

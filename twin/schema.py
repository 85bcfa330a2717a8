"""Checked TOML: a file read as UTF-8 TOML and converted to msgspec structs, every error one line
naming the file, the key path and its line.

tomllib keeps no positions, so `Source.line_of` finds a key path's line in the text itself,
walking table headers (`[a.b]`, `[[a]]` counted per array) and `key =` lines. This module imports
only msgspec and the standard library: the TUI reaches the fault declarations through it.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import msgspec

# value types a scenario file uses over and over
Count = Annotated[int, msgspec.Meta(ge=1)]  # hosts, radixes, repeats
Index = Annotated[int, msgspec.Meta(ge=0)]  # a plane, a NIC, a seed
NonNegative = Annotated[float, msgspec.Meta(ge=0)]  # times
Positive = Annotated[float, msgspec.Meta(gt=0)]  # durations, speeds, ratios


Share = Annotated[float, msgspec.Meta(gt=0, le=1)]  # a fraction of something, above 0


class LinkSelector(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`links = {...}` of a link fault: links chosen by the fabric's structure, not by name.

    - `{leaf_uplinks_to_first_spines = K}`: at every leaf, its uplinks to the first K switches
      of the tier above (spines on 2 tiers, the pod's aggs on 3), in switch order: what htsim's
      `-failed K` slows on a 2-tier fabric;
    - `{fraction = 0.1}`: that share of the fabric links (not the host links), drawn with
      `seed` (default: the scenario's `[balancing] seed`); with `per_tier = true` the share
      of each tier (leaf-spine, agg-core) apart, so that every tier loses the same fraction;
    - `plane = N` in either: only the links of plane N.
    """

    leaf_uplinks_to_first_spines: Count | None = None
    fraction: Share | None = None
    per_tier: bool = False
    seed: Index | None = None
    plane: Index | None = None


T = TypeVar("T")


class ScenarioError(ValueError):
    """A scenario file that cannot be run as written."""


Key = str | int
_BARE_OR_QUOTED = r'[A-Za-z0-9_-]+|"[^"]*"|\'[^\']*\''
_KEY_PATH = rf"(?:{_BARE_OR_QUOTED})(?:\s*\.\s*(?:{_BARE_OR_QUOTED}))*"
_HEADER = re.compile(rf"^\s*(\[\[?)\s*({_KEY_PATH})\s*\]\]?\s*(?:#.*)?$")
_ASSIGN = re.compile(rf"^\s*({_KEY_PATH})\s*=")
_MSGSPEC = re.compile(r"^(?P<msg>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)
_PATH_PART = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


def _parts(key_path: str) -> list[str]:
    return [p.strip("\"'") for p in re.findall(_BARE_OR_QUOTED, key_path)]


def render(keys: Sequence[Key]) -> str:
    """`["jobs", 0, "size"]` -> `jobs[0].size` (how a TOML user names it)."""
    out = ""
    for k in keys:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out


@dataclass(frozen=True)
class Source:
    """A TOML file's name and text: to locate keys and word errors."""

    path: Path
    text: str

    def line_of(self, keys: Sequence[Key]) -> int | None:
        """The line that defines `keys` (or its nearest enclosing table), 1-based."""
        target = [str(k) for k in keys]
        table: list[str] = []
        arrays: dict[tuple[str, ...], int] = {}
        best, best_len = None, -1
        for n, line in enumerate(self.text.splitlines(), 1):
            if m := _HEADER.match(line):
                table = _parts(m.group(2))
                if m.group(1) == "[[":  # the n-th [[jobs]] is jobs[n-1]
                    i = arrays[tuple(table)] = arrays.get(tuple(table), -1) + 1
                    table = [*table, str(i)]
                path = table
            elif m := _ASSIGN.match(line):
                path = table + _parts(m.group(1))
            else:
                continue
            if len(path) > best_len and target[:len(path)] == path:
                best, best_len = n, len(path)
        return best

    def error(self, keys: Sequence[Key], message: str) -> ScenarioError:
        """`file: key.path: message (line N)`, one line."""
        line = self.line_of(keys) if keys else None
        where = f"{render(keys)}: " if keys else ""
        return ScenarioError(f"{self.path}: {where}{message}" + (f" (line {line})" if line else ""))


def read(path: str | Path) -> tuple[dict, Source]:
    """A TOML file as a dict and its Source; ScenarioError on a read, encoding or syntax error."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"{p}: {exc.strerror}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ScenarioError(f"{p}: not UTF-8 text (byte {exc.start}: a binary file?) (line {line})") from exc
    try:
        return tomllib.loads(text), Source(p, text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{p}: {exc}") from exc


def _value_at(doc: Any, keys: Sequence[Key]) -> Any:
    for k in keys:
        try:
            doc = doc[k]
        except (KeyError, IndexError, TypeError):
            return None
    return doc


def convert(doc: Mapping, kind: type[T], source: Source, choices: Mapping[str, Sequence] = {}) -> T:
    """`doc` as a `kind` struct (unknown keys, wrong types and out-of-range values refused).
    `choices`: the allowed values per key name (or dotted table path, which wins), listed
    when a value is not one of them."""
    try:
        return msgspec.convert(doc, kind)
    except msgspec.ValidationError as exc:
        m = _MSGSPEC.match(str(exc))
        assert m is not None  # the pattern matches any text
        msg, path = m.group("msg"), m.group("path") or ""
        keys: list[Key] = [a if a else int(b) for a, b in _PATH_PART.findall(path)]
        if field := re.fullmatch(r"Object contains unknown field `(.*)`", msg):
            name = field.group(1)
            if not keys:
                what = "table" if isinstance(doc.get(name), dict) else "key"
                raise source.error([name], f"unknown {what} {name!r}") from None
            raise ScenarioError(f"{source.path}: [{render(keys)}] has unknown keys [{name!r}]"
                                f" (line {source.line_of([*keys, name])})") from None
        if field := re.fullmatch(r"Object missing required field `(.*)`", msg):
            raise source.error(keys, f"needs {field.group(1)}") from None
        value = _value_at(doc, keys)
        msg = msg.replace("`", "")
        named = [k for k in keys if isinstance(k, str)]
        # a choice list by the key's table path (`transport.kind`), else by its name (`kind`)
        allowed = choices.get(".".join(named), choices.get(named[-1] if named else ""))
        if allowed is not None and msg.startswith("Invalid"):
            msg = f"{value!r} is not one of {', '.join(map(str, allowed))}"
        elif msg.startswith("Expected ") and not isinstance(value, dict | list):
            msg = f"expected {msg.removeprefix('Expected ').split(', got')[0]}, got {value!r}"
        raise source.error(keys, msg) from None

"""The checks and the write-then-replace of the files that commands write: no DuckDB here, so
a command that writes a file without opening a store (`fabtwin simulate --fct-csv`) starts
without importing it. `collectors.store.readonly` re-exports these with its store checks."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class OutputError(ValueError):
    """An output path a read-only command refuses to write."""


def check_output_folder(output: str | Path) -> None:
    """OutputError naming the folder of the file `output` when it is missing or not writable."""
    folder = Path(output).expanduser().resolve().parent
    if not folder.is_dir():
        raise OutputError(f"{folder}: no such folder for {output} (create it first)")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{folder}: folder not writable, cannot write {output}")
    if Path(output).is_dir():
        raise OutputError(f"{output}: is a folder; name a file")


def check_output_dir(output: str | Path) -> None:
    """OutputError when the directory `output` cannot be written: it is a file, or it (or, when
    it is to be created, its nearest existing parent) is not writable."""
    out = Path(output).expanduser().resolve()
    if out.exists() and not out.is_dir():
        raise OutputError(f"{output}: is a file, not a folder")
    here = next(p for p in (out, *out.parents) if p.exists())
    if not here.is_dir() or not os.access(here, os.W_OK | os.X_OK):
        raise OutputError(f"{here}: folder not writable, cannot write {output}")


@contextmanager
def replacing(output: str | Path) -> Iterator[Path]:
    """A path beside `output` to write (not created yet); it replaces `output` only when the
    block ends without an error, so a failing query leaves an existing file as it was."""
    target = Path(output).expanduser().resolve()  # through a symlink: replace what it points at
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.part")
    try:
        yield tmp
        if target.exists():
            shutil.copymode(target, tmp)  # the user's permissions stay
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise

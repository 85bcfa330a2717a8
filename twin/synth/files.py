"""Writing a bundle's files reproducibly."""

from __future__ import annotations

import gzip
from pathlib import Path

NS = 1_000_000_000


def write_gz(path: Path, text: str) -> None:
    """Write text gzip-compressed, reproducibly (no timestamp in the header)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode(), mtime=0))


def write_text(path: Path, text: str) -> None:
    """Write text, making the folders it needs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)

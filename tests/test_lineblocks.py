"""Blocks of lines read as bytes give exactly the lines the text stream gives."""

from __future__ import annotations

import gzip
import io

from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.core.lineblocks import line_blocks
from collectors.core.source import SourceFile

PIECES = [b"a", b"{}", b"\n", b"\r", b"\r\n", b"\xff", "é".encode(), b"\xe2\x82", b" ", b"\t"]


def _text_lines(data: bytes) -> list[str]:
    fh = io.TextIOWrapper(io.BufferedReader(io.BytesIO(data)), encoding="utf-8", errors="replace")
    return [line.removesuffix("\n") for line in fh]


@settings(max_examples=400, deadline=None)
@given(data=st.lists(st.sampled_from(PIECES), max_size=60).map(b"".join),
       size=st.integers(1, 12))
def test_blocks_are_the_text_streams_lines(data, size):
    fh = io.TextIOWrapper(io.BufferedReader(io.BytesIO(data)), encoding="utf-8", errors="replace")
    got: list[str] = []
    for block in line_blocks(fh, size):
        assert block.first == len(got) + 1
        texts = block.texts()
        assert len(texts) == len(block)
        assert [block.text(i) for i in range(len(block))] == texts
        assert [s.removesuffix("\n") for s in block.series().to_list()] == texts
        assert all(s.endswith("\n") for s in block.series().to_list())
        got += texts
    assert got == _text_lines(data)


def test_gzip_file_and_plain_text_stream(tmp_path):
    data = b"".join(b"line %d \xc3\xa9\r\n" % i for i in range(5000)) + b"last"
    path = tmp_path / "x.gz"
    path.write_bytes(gzip.compress(data))
    with SourceFile(path, "x.gz").open_text() as fh:
        blocks = list(line_blocks(fh, 1000))
    assert len(blocks) > 10
    lines = [t for b in blocks for t in b.texts()]
    assert lines == _text_lines(data) and lines[-1] == "last" and lines[0] == "line 0 é"
    assert [t for b in line_blocks(io.StringIO("a\nb"), 1) for t in b.texts()] == ["a", "b"]
    assert blocks[0].head(2).texts() == ["line 0 é", "line 1 é"]

"""The two gnmic parsers (json and event formats) and their sniffing."""

from __future__ import annotations

import re

from collectors.core.source import Sink, SourceFile
from collectors.formats.gnmi.lines import parse_stream
from collectors.formats.gnmi.paths import FAMILY

# -- sniffing --------------------------------------------------------------------------------
_JSON_MARK = re.compile(r'"updates"\s*:\s*\[|"sync-response"\s*:')
_EVENT_VALUES = re.compile(r'"values"\s*:\s*\{')
_EVENT_OTHER = re.compile(r'"(?:tags|name)"\s*:')
_TIMESTAMP = re.compile(r'"timestamp"\s*:')


def _starts_like_gnmic(head: str) -> bool:
    s = head.lstrip("\ufeff \t\r\n")
    return s[:1] in ("{", "[") or s.startswith("received sync response")


class _GnmicParser:
    family = FAMILY
    priority = 50
    # its per-record work is Python (orjson, plans, floats): a big file is parsed in a child
    # process, so that it does not take turns for the GIL with the inserts (collectors.store.child)
    python_bound = True

    def __init__(self, vectorized: bool = True) -> None:
        self.vectorized = vectorized  # False: every line through the one-by-one reader (tests)

    def parse(self, src: SourceFile, sink: Sink) -> None:
        parse_stream(src, sink, self.vectorized)


class GnmicJsonParser(_GnmicParser):
    """gnmic's default `json` format: notifications with `updates[{Path, values}]`."""

    name = "gnmic_json"

    def sniff(self, head: str, rel: str) -> bool:
        try:
            return _starts_like_gnmic(head) and _JSON_MARK.search(head) is not None
        except Exception:  # noqa: BLE001 - sniff must never raise
            return False


class GnmicEventParser(_GnmicParser):
    """gnmic's `event` format: `{name, timestamp, tags{...}, values{xpath: value}}`."""

    name = "gnmic_event"

    def sniff(self, head: str, rel: str) -> bool:
        try:
            return (_starts_like_gnmic(head) and _EVENT_VALUES.search(head) is not None
                    and _TIMESTAMP.search(head) is not None
                    and _EVENT_OTHER.search(head) is not None)
        except Exception:  # noqa: BLE001 - sniff must never raise
            return False


PARSERS: list = [GnmicJsonParser(), GnmicEventParser()]

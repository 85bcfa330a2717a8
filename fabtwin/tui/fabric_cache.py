"""The fabric discovered from a store's cabling, kept per store for the life of the process.

The TUI opens a store read-only, so its cabling cannot change under it: discovering the fabric
(twin.discover.from_cabling, about 0.5 s of CPU on 256 switches) once per store is enough, and
a second StoreData of the same store (another app, a reopened store) gets it for free. The key
holds the file's size and modification time, so a store rewritten in between is discovered
again rather than served stale.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

KEPT = 4  # stores whose fabric is kept (one is the usual: the store the TUI shows)

_fabrics: OrderedDict[tuple, tuple[Any, str | None]] = OrderedDict()
_lock = threading.Lock()


def store_key(db: str) -> tuple | None:
    """(real path, mtime in ns, size) of the store file; None when it cannot be read."""
    try:
        st = os.stat(db)
    except OSError:
        return None
    return os.path.realpath(db), st.st_mtime_ns, st.st_size


def cached_fabric(db: str, discover: Callable[[], tuple[Any, str | None]]
                  ) -> tuple[Any, str | None]:
    """discover()'s (fabric or None, error or None) for store `db`, computed once per store
    version; a second thread asking meanwhile waits for the first one's answer."""
    key = store_key(db)
    if key is None:
        return discover()
    with _lock:  # one discovery at a time: they are CPU-bound Python anyway (the GIL)
        if key not in _fabrics:
            _fabrics[key] = discover()
            while len(_fabrics) > KEPT:
                _fabrics.popitem(last=False)
        _fabrics.move_to_end(key)
        return _fabrics[key]

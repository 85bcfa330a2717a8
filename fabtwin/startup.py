"""Start-up costs a command pays for nothing: numpy's developer tools that scipy imports.

`import scipy.sparse` (the twin's routing) builds scipy's array-API wrapper of numpy by asking
numpy for every name `dir(numpy)` lists, which imports the submodules numpy itself keeps lazy:
`numpy.f2py` (the Fortran wrapper generator: 60 modules, charset_normalizer, 58 regexes compiled)
and `numpy.testing` (unittest). Registered as lazy modules first, they are imported only if an
attribute of theirs is ever read, which no fabtwin command does: `import scipy.sparse` after
numpy measured 0.237 s of CPU with them and 0.072 s without (load 12, /tmp probe).
"""

from __future__ import annotations

import importlib.util
import sys

# numpy's lazily imported submodules (numpy.__getattr__) that are tools, never used at run time
DEFERRED = ("numpy.f2py", "numpy.testing")


def defer_numpy_tools() -> None:
    """Make `DEFERRED` lazy modules (importlib.util.LazyLoader), unless already imported: they
    load, whole and unchanged, at the first read of one of their attributes."""
    import numpy

    for name in DEFERRED:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            continue
        spec.loader = importlib.util.LazyLoader(spec.loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        # numpy.__getattr__ imports the submodule when the attribute is missing: set it, so a
        # read of numpy.f2py finds the lazy module instead of importing the real one
        setattr(numpy, name.rpartition(".")[2], module)


# glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4


def keep_freed_memory() -> bool:
    """Let numpy and polars reuse the memory they free in this process, on glibc (False
    elsewhere: nothing changed). By default glibc maps each block above 32 MB afresh and unmaps
    it when freed, and numpy asks the kernel for huge pages for each big array (which it then
    compacts memory for, on this machine's `defrag=madvise`): each of the replay's temporary
    arrays (grids of 20M cells on the 256-switch hour) is faulted in again page by page, system
    time that was a third of an investigate of that hour. Here blocks come from the heap, the
    heap is never trimmed (the process keeps its peak: it exits after one analysis), and numpy
    asks for no huge page unless NUMPY_MADVISE_HUGEPAGE says otherwise."""
    import ctypes
    import ctypes.util
    import os

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    if "NUMPY_MADVISE_HUGEPAGE" not in os.environ:
        import numpy

        # numpy's own switch (read at its import, which has happened: set it as it would)
        setter = getattr(getattr(getattr(numpy, "_core", None), "multiarray", None),
                         "_set_madvise_hugepage", None)
        if setter is not None:
            setter(False)
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, 2**31 - 1))

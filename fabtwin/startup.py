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

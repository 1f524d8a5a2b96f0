"""numpy's BLAS held to one thread: a render's small matrix products (the courtyard's polyphase
filters) run on the render's own processes, where BLAS's worker threads only wait for a core.

``one_blas_thread()`` asks the OpenBLAS that numpy loaded (found among the loaded libraries by
its ``*_set_num_threads*`` symbol) for one thread; with another BLAS, or none found, it does
nothing.  The answer is the same bytes either way (a product's sums are split by rows, not
reordered), only the time differs.
"""

from __future__ import annotations

import ctypes
from functools import cache

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads")


@cache
def one_blas_thread() -> bool:
    """Hold numpy's OpenBLAS to one thread (once per process); whether it was found."""
    import numpy as np

    np.ones(1) @ np.ones(1)  # numpy's BLAS loaded
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
    except OSError:
        return False
    found = False
    for path in sorted(paths):  # numpy's and scipy's, when both are loaded
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _SETTERS:
            setter = getattr(lib, name, None)
            if setter is not None:
                setter(ctypes.c_int(1))
                found = True
                break
    return found

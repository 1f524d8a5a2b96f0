"""A render's arrays from a heap that is kept: glibc's malloc told to serve blocks up to 32 MiB
from its heap and to keep up to 128 MiB of it free, instead of mapping each large array afresh.

By default glibc maps an allocation over a threshold (128 KiB, raised to the largest one freed
so far) straight from the kernel and unmaps it when freed: every new note's arrays — a drum's
complex products, a song's tables — are then page-faulted in again, zeroed by the kernel.  A
render's notes' processes spent ~0.5 CPU-s a 鄉射 in the kernel so, and more when nothing large
had been freed before they forked (the threshold still low).  ``keep_heap()`` sets the two
thresholds once per process (children forked after it inherit them); elsewhere than glibc it
does nothing.  The numbers are the same; only the time differs.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's largest (64-bit): arrays up to it come from the heap
TRIM_THRESHOLD = 128 << 20  # free heap kept before it is given back


@cache
def keep_heap() -> bool:
    """Set malloc's thresholds for this process (once); whether glibc took them."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))

"""The cyclic garbage collector held off while a bulk load builds many small containers that hold no cycle.

Filling a catalogue or recall index of 100,000 documents makes millions of
dicts, tuples and dataclass instances, and CPython's collector walks the
growing heap again every time the young generations fill: at 100k items that
was ~40 % of a first recall. What a load builds is acyclic (strings, numbers,
dicts and lists of them), so nothing it makes needs the collector, and pausing
it for the load changes no behaviour. Nested and concurrent pauses count
holders; the collector is enabled again when the last one leaves, and only if
it was enabled when the first came.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0
_resume = False


@contextmanager
def paused_gc() -> Iterator[None]:
    """Run the body with the cyclic collector disabled (reference counting still frees everything it can)."""
    global _holders, _resume
    with _lock:
        if _holders == 0:
            _resume = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _resume:
                gc.enable()

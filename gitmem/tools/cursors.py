"""Per-thread cursors: where each memory's last delivered context ended.

A cursor is whatever the store's ``changes()`` returned as the read boundary of
the context a thread was given (a commit id in the git store). The next run asks
the store for the changes since that boundary, so it is sent only what is new.
Keep one :class:`MemoryCursors` per thread and persist :meth:`snapshot` next to
the thread's history; :meth:`clear` when that history is replaced (compaction or
a handoff), because the model no longer holds what the cursors say it was given.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping


class MemoryCursors:
    """A small, thread-safe map from a mount's cursor key to its last delivered cursor."""

    def __init__(self, saved: Mapping[str, str] | None = None) -> None:
        self._lock = threading.Lock()
        self._cursors: dict[str, str] = _checked(saved) if saved is not None else {}

    def __repr__(self) -> str:
        return f"MemoryCursors({self.snapshot()!r})"

    def get(self, key: str) -> str | None:
        with self._lock:
            return self._cursors.get(key)

    def set(self, key: str, cursor: str) -> None:
        """Record the read boundary of the context just delivered for ``key``."""
        if not isinstance(key, str) or not isinstance(cursor, str):
            raise TypeError("cursor keys and cursors are strings")
        with self._lock:
            self._cursors[key] = cursor

    def snapshot(self) -> dict[str, str]:
        """A JSON-ready copy to persist; pass it back to ``MemoryCursors(saved)``."""
        with self._lock:
            return dict(self._cursors)

    def restore(self, saved: Mapping[str, str]) -> None:
        """Replace every cursor with those of a snapshot."""
        checked = _checked(saved)
        with self._lock:
            self._cursors = checked

    def clear(self, keys: Iterable[str] | None = None) -> None:
        """Forget cursors (all, or only ``keys``) so the next run gets full context."""
        with self._lock:
            if keys is None:
                self._cursors.clear()
            else:
                for key in keys:
                    self._cursors.pop(key, None)


def _checked(saved: Mapping[str, str]) -> dict[str, str]:
    if not isinstance(saved, Mapping):
        raise TypeError("a cursor snapshot is a mapping of cursor keys to cursors")
    out: dict[str, str] = {}
    for key, cursor in saved.items():
        if not isinstance(key, str) or not isinstance(cursor, str):
            raise ValueError(f"bad cursor entry {key!r}: {cursor!r}; keys and cursors are strings")
        out[key] = cursor
    return out

"""The per-run views of a store, kept so that asking for one on every tool call costs nothing.

Agents name their run on every tool call, and under the review gate each run
reads its own proposal branch, so :meth:`gitmem.gitstore.SyncGitFileStore.for_run`
returns a view bound to the run. The views are kept here, least recently used
first out, a few dozen per store; a view holds no state of its own beyond its run
id, so dropping one only costs building it again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Final, Generic, TypeVar

V = TypeVar("V")

KEPT_VIEWS: Final = 64
"""Run views kept per store."""


class RunViews(Generic[V]):
    """Views by run id, at most ``limit`` of them; safe across threads."""

    def __init__(self, limit: int = KEPT_VIEWS) -> None:
        self.limit = limit
        self._guard = threading.Lock()
        self._views: OrderedDict[str, V] = OrderedDict()

    def get(self, run_id: str, fits: Callable[[V], bool], make: Callable[[], V]) -> V:
        """The kept view of ``run_id`` if ``fits`` accepts it, else a new one from ``make``."""
        with self._guard:
            view = self._views.get(run_id)
            if view is None or not fits(view):
                view = make()
                self._views[run_id] = view
                while len(self._views) > self.limit:
                    self._views.popitem(last=False)
            else:
                self._views.move_to_end(run_id)
            return view

    def __len__(self) -> int:
        return len(self._views)

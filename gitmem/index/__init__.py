"""The search index of a mount: a Whoosh projection of git that never decides an answer.

- :class:`MountIndex` picks the files a grep has to read and ranks files for
  ``find``; it stays current lazily (on search), never on the write path.
- :mod:`gitmem.index.needles` says what text a pattern's matches must contain,
  :mod:`gitmem.index.grams` turns text into trigram signatures,
  :mod:`gitmem.index.engine` is the only module that imports whoosh (loaded on
  first use, so ``import gitmem`` stays light).

The four names below are loaded on first use: importing one of the package's
small modules (``gitmem.index.needles``, ``fallback``) for a first grep without
an index must not load :mod:`gitmem.index.mount` and what it imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitmem.lazyexports import exports as _exports

if TYPE_CHECKING:
    from gitmem.index.mount import MountIndex, catch_up
    from gitmem.index.results import FindHit, IndexStatus

__all__ = ["FindHit", "IndexStatus", "MountIndex", "catch_up"]
_LAZY = {
    "MountIndex": "gitmem.index.mount",
    "catch_up": "gitmem.index.mount",
    "FindHit": "gitmem.index.results",
    "IndexStatus": "gitmem.index.results",
}

__getattr__, __dir__ = _exports(__name__, _LAZY, globals(), __all__)

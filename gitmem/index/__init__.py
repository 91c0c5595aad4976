"""The search index of a mount: a Whoosh projection of git that never decides an answer.

- :class:`MountIndex` picks the files a grep has to read and ranks files for
  ``find``; it stays current lazily (on search), never on the write path.
- :mod:`gitmem.index.needles` says what text a pattern's matches must contain,
  :mod:`gitmem.index.grams` turns text into trigram signatures,
  :mod:`gitmem.index.engine` is the only module that imports whoosh (loaded on
  first use, so ``import gitmem`` stays light).
"""

from gitmem.index.mount import MountIndex, catch_up
from gitmem.index.results import FindHit, IndexStatus

__all__ = ["FindHit", "IndexStatus", "MountIndex", "catch_up"]

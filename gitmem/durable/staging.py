"""What a repository last wrote, so the next change set can stage without reading it back.

A change set that activates 128 candidates created by the previous one used to
read and parse those 128 node files again, which cost more than the commit
itself. :class:`WriteCache` keeps, per repository handle, the node files this
process wrote or read (text, version and parsed node) together with the head
they were known at:

- before staging, :meth:`WriteCache.catch_up` compares the store's head with
  that cursor (one ref read); when another writer moved it, the paths it
  changed are dropped (or everything, when the store cannot say);
- after a commit, :meth:`WriteCache.learn` records what the batch left and moves
  the cursor to the new commit.

The cache is only ever a guess: every file staging took from it goes into the
batch with the version it had (the store's compare-and-swap checks them all),
and a refusal or store conflict under the guess is decided again with real
reads. So a stale entry can cost a retry, never a wrong write or a wrong error.
(A writer that committed between this process's staging and its commit is not
seen until such a conflict, which then clears the cache.)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Protocol

from gitmem.durable.node import Node
from gitmem.model import Changes, FileText, FullResync

#: Entries kept (least recently used go first): two full change sets and then some.
CACHE_ENTRIES: Final = 4096
#: Larger node files are not kept (they are rare; the cache stays a few megabytes at most).
CACHE_TEXT_CHARS: Final = 16_384


class HeadSource(Protocol):
    def head(self) -> str: ...

    def changes(self, since: str | None) -> Changes | FullResync: ...


@dataclass(frozen=True, slots=True)
class Known:
    """One node file as this process last saw it: its text and version, and the node it holds."""

    file: FileText
    node: Node


class WriteCache:
    """Node files by path, as of ``cursor`` (the head they are believed current at)."""

    def __init__(self, limit: int = CACHE_ENTRIES) -> None:
        self.limit = limit
        self.cursor: str | None = None
        self._entries: OrderedDict[str, Known] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, path: str) -> Known | None:
        with self._lock:
            found = self._entries.get(path)
            if found is not None:
                self._entries.move_to_end(path)
            return found

    def put(self, known: Known) -> None:
        with self._lock:
            self._put(known)

    def _put(self, known: Known) -> None:
        path = known.file.path
        if len(known.file.text) > CACHE_TEXT_CHARS:
            self._entries.pop(path, None)
            return
        self._entries[path] = known
        self._entries.move_to_end(path)
        while len(self._entries) > self.limit:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.cursor = None

    def catch_up(self, store: HeadSource) -> None:
        """Forget what other writers changed since :attr:`cursor` (nothing to do when the head is ours)."""
        head = store.head()
        with self._lock:
            cursor = self.cursor
            if head == cursor:
                return
            if cursor is None or not self._entries:
                self._entries.clear()
                self.cursor = head
                return
        moved = store.changes(cursor)  # outside the lock: it reads the store
        with self._lock:
            if self.cursor != cursor:
                return  # another thread moved it meanwhile; the next call looks again
            if isinstance(moved, FullResync):
                self._entries.clear()
            else:
                for path in moved.paths:
                    self._entries.pop(path, None)
            self.cursor = moved.cursor

    def learn(self, commit: str | None, files: Iterable[Known], gone: Iterable[str] = ()) -> None:
        """After a commit: ``files`` are as written (or read and unchanged), ``gone`` paths absent."""
        with self._lock:
            for known in files:
                self._put(known)
            for path in gone:
                self._entries.pop(path, None)
            if commit is not None:
                self.cursor = commit

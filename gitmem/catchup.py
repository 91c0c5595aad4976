"""A cache of a store's files kept caught up through the store's change cursor: the one way it is done.

Recall over a store (:class:`gitmem.recall.StoreRecall`), the session catalogue and
the LangGraph item catalogue each hold what they parsed from a store's files and
catch it up here. The first refresh, or one the store answers ``FullResync`` (first
use, purge, a rewritten history), reads every file the cache covers at the answer's
cursor, in one walk of the tree when the store can; later ones re-read only the
paths ``changes(cursor)`` names (one file after one write), dropping those gone.
The cursor is asked for *before* reading, so a write landing meanwhile is seen by
the next refresh: the cache can be briefly behind a write, never wrong after it.
A rebuild that fails part-way leaves no cursor, so the next refresh rebuilds.

A reader of the cache goes through :meth:`CatchUp.caught_up`: it catches up and
holds the cache still until the reader is done. A rebuild empties the cache before
it fills it again, so a search running beside one would see a part of the index
(nothing, right after a purge); answering from the old index instead would show
what a purge or forget erased. Readers and refreshes take turns on one lock.

With a ``snapshot`` file the first refresh resumes from it (made under the mount's
current history generation, :mod:`gitmem.derived`; any other means a rebuild),
and it is saved after a rebuild and after every ``save_every`` re-read files; a
failure to save is noted in :attr:`CatchUp.snapshot_error`, never raised.
"""

from __future__ import annotations

import json
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, ClassVar, Final, Protocol, runtime_checkable

from gitmem import derived
from gitmem.errors import if_found
from gitmem.localfile import load_local_json, replace_file
from gitmem.model import Changes, FileEntry, FileText, FullResync

SNAPSHOT_LIMIT: Final = 1 << 30  # bytes of a snapshot read at most: a bigger file is not ours, and is rebuilt


class SyncSource(Protocol):
    """The three reads a cache needs of a store: every :class:`~gitmem.store.FileStore` has them,
    and so does a read-only view or a wrapper that only forwards reads."""

    def list(self) -> list[FileEntry]: ...

    def read(self, path: str) -> FileText: ...

    def changes(self, since: str | None) -> Changes | FullResync: ...


@runtime_checkable
class BulkSource(Protocol):
    """A source that can also read every file under a folder of one commit in one go.

    :class:`~gitmem.gitstore.SyncGitFileStore` can (one walk of the tree instead of
    a lookup per path): at 10,000 files a lookup per path was most of a rebuild. It
    returns what :meth:`SyncSource.read` would for each file.
    """

    def read_under(self, prefix: str = "", rev: str | None = None) -> list[FileText]: ...


def files_under(
    store: SyncSource, prefix: str, rev: str | None = None, keep: Callable[[str], bool] | None = None
) -> list[FileText]:
    """Every file under folder ``prefix`` (at ``rev``) whose path ``keep`` accepts: from one tree when
    the store reads a folder at once, else listed and read one by one (one deleted meanwhile left out)."""
    if isinstance(store, BulkSource):
        files = store.read_under(prefix, rev)
        return files if keep is None else [f for f in files if keep(f.path)]
    paths = [e.path for e in store.list() if e.path.startswith(prefix) and (keep is None or keep(e.path))]
    return [f for f in (if_found(store.read, p) for p in paths) if f is not None]


def publish_json(
    path: str | os.PathLike[str], body: Mapping[str, object], seen: derived.Generation, *, fsync: bool = False
) -> bool:
    """Write ``body`` as JSON to ``path`` atomically unless history was erased since ``seen``; whether it stands.

    JSON, never pickle: loading a file must not run code, whoever wrote it. Written
    to a temporary file and renamed, so a reader sees the old file or the new one.
    """
    return derived.publish(seen, path, lambda folder, name: _write_json(folder, name, body, fsync))


def _write_json(folder: int, name: str, body: Mapping[str, object], fsync: bool) -> None:
    # dumps, not dump: only dumps uses the C encoder (dump streams through Python).
    replace_file(name, json.dumps(body, ensure_ascii=False, separators=(",", ":")), fsync=fsync, dir_fd=folder)


class CatchUp(ABC):
    """A cache of the files of ``store`` under ``prefix``, caught up on :meth:`refresh`.

    A subclass says what a file becomes: :meth:`_put` (a path now holds this file,
    or nothing), :meth:`_forget` (hold nothing), optionally :meth:`_fill` (many
    files into an empty cache at once) and :meth:`covers` (which paths are its
    own), and with a snapshot :meth:`_snapshot_header`, :meth:`_snapshot_fields`
    and :meth:`_restore`. A file it cannot parse it leaves out and lists in
    :attr:`skipped`, which a rebuild empties and a re-read of the path clears.
    """

    SNAPSHOT_FSYNC: ClassVar[bool] = False  # whether a saved snapshot is flushed to disk before its rename

    def __init__(
        self,
        store: SyncSource,
        *,
        prefix: str = "",
        snapshot: str | os.PathLike[str] | None = None,
        stamp: str | None = None,
        save_every: int = 256,
    ) -> None:
        self.store = store
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.cursor: str | None = None  # the store's cursor the cache reflects; None: rebuild next
        self.skipped: dict[str, str] = {}  # files that do not parse, with the reason
        self.full_rebuilds = 0
        self.snapshot = snapshot
        self.stamp = stamp  # the mount's history generation stamp (derived.stamp_of); None: unguarded
        self.save_every = save_every
        self.resumed_from_snapshot = False
        self.snapshot_error: str | None = None  # the last failure to save one
        self._tried_snapshot = snapshot is None
        self._unsaved = 0  # files re-read since the snapshot was last saved
        self._seen = derived.UNGUARDED  # the history generation read before what is held was
        self._lock = threading.RLock()  # re-entered: a reader holding it may refresh or look up

    def covers(self, path: str) -> bool:
        return path.startswith(self.prefix)

    def caught_up(self) -> CaughtUp:
        """Catch up, then hold the cache still while the caller reads it (``with cache.caught_up() as cursor:``).

        No refresh (and so no rebuild) runs until the block ends, so what the block
        reads is the whole cache as of that cursor, never a rebuild half-way.
        """
        return CaughtUp(self)

    def refresh(self) -> str | None:
        """Catch up with the store's head; the cursor the cache now reflects."""
        with self._lock:
            seen = derived.Generation.read(self.stamp)
            if not self._tried_snapshot:
                self._tried_snapshot = True
                self.resumed_from_snapshot = self._resume(seen.value)
            answer = self.store.changes(self.cursor)
            self._seen = seen
            if isinstance(answer, FullResync):
                self.cursor = None
                self._forget()
                self.skipped.clear()
                self._fill(files_under(self.store, self.prefix, answer.cursor, self.covers))
                self.full_rebuilds += 1
                self._unsaved = self.save_every  # a rebuild is always saved
            else:
                for path in self._to_read(answer.paths):
                    if self.covers(path):
                        self._reload(path)
                        self._unsaved += 1
            self.cursor = answer.cursor
            if self.snapshot is not None and self._unsaved >= self.save_every:
                self._save()
            return self.cursor

    def _reload(self, path: str) -> None:
        """Re-read ``path`` and hold what it holds now."""
        self.skipped.pop(path, None)
        self._put(path, if_found(self.store.read, path))

    def _resume(self, generation: str | None) -> bool:
        """Start from the snapshot when it is this cache's, made under ``generation``; whether it was."""
        assert self.snapshot is not None
        header = {**self._snapshot_header(), "generation": generation}
        try:
            body = load_local_json(self.snapshot, SNAPSHOT_LIMIT)
            if not isinstance(body, dict) or not isinstance(body.get("cursor"), str):
                return False
            if any(body.get(k) != v for k, v in header.items()):
                return False
            self._restore(body)
            self.skipped.update((str(p), str(why)) for p, why in body.get("skipped", []))
        except (OSError, ValueError, TypeError, KeyError, ArithmeticError):  # JSON's 10**400: no float holds it
            return False  # not a usable one: the rebuild ``changes(None)`` asks for forgets what it left
        self.cursor = body["cursor"]
        return True

    def _save(self) -> None:
        """Save the snapshot; a failure to write (disk full, read-only) is noted, never raised: it is a cache."""
        self._unsaved = 0
        if self.snapshot is None or self.cursor is None:
            return
        body = {
            **self._snapshot_header(),
            "cursor": self.cursor,
            "generation": self._seen.value,
            "skipped": sorted(self.skipped.items()),
            **self._snapshot_fields(),
        }
        try:
            publish_json(self.snapshot, body, self._seen, fsync=self.SNAPSHOT_FSYNC)
        except OSError as error:
            self.snapshot_error = f"{type(error).__name__}: {error}"
        else:
            self.snapshot_error = None

    # -- what a subclass says --

    @abstractmethod
    def _put(self, path: str, file: FileText | None) -> None:
        """``path`` holds ``file`` now (``None``: it is gone): hold what it parses to, drop what it held."""

    @abstractmethod
    def _forget(self) -> None:
        """Hold nothing (before a rebuild): drop everything read from files, parse caches by blob id included.

        A rebuild follows a purge or forget, whose erased texts must not stay in the process.
        """

    def _fill(self, files: Iterable[FileText]) -> None:
        """Hold ``files`` (the covered ones) in the empty cache, as putting each in turn would."""
        for file in files:
            self._put(file.path, file)

    def _to_read(self, paths: tuple[str, ...]) -> Iterable[str]:
        """The paths to re-read when the store names ``paths`` as changed."""
        return paths

    def _snapshot_header(self) -> dict[str, object]:
        """What a snapshot says it is (format, schema...): one that says anything else is not loaded."""
        raise NotImplementedError(f"{type(self).__name__} keeps no snapshot")

    def _snapshot_fields(self) -> dict[str, object]:
        """What is held, as JSON fields of the snapshot (beside the header, cursor, generation and skipped files)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no snapshot")

    def _restore(self, body: dict[str, Any]) -> None:
        """Hold what a snapshot's ``body`` holds; ``ValueError``, ``TypeError``, ``KeyError`` or
        ``ArithmeticError`` (a number no float holds) when unusable."""
        raise NotImplementedError(f"{type(self).__name__} keeps no snapshot")


class CaughtUp:
    """The block of :meth:`CatchUp.caught_up`: the cache's lock held, caught up on entry; entering gives the cursor.

    A class, not a generator context: every search enters one, and this costs
    about half of what a ``contextlib.contextmanager`` one does (about a microsecond less).
    """

    __slots__ = ("_cache",)

    def __init__(self, cache: CatchUp) -> None:
        self._cache = cache

    def __enter__(self) -> str | None:
        lock = self._cache._lock
        lock.acquire()
        try:
            return self._cache.refresh()
        except BaseException:
            lock.release()
            raise

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._cache._lock.release()

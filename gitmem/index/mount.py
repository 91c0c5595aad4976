"""A mount's index as the store sees it: pick grep candidates, rank files, stay current.

The index is a projection of git, kept in ``<repo>/gitmem/index/`` and stamped
with the commit it reflects. Writes never touch it. A search first *tries* to
bring it up to the head: a catch-up from the tree diff of at most
:data:`INLINE_DOCS` files, one Whoosh commit. More work than that (a long
catch-up, or a rebuild when the index is missing, unreadable, of an older
format, or stamped with a commit that is gone or no longer an ancestor after a
purge or forget) is handed off (:mod:`gitmem.index.background`): no request
waits for a build. Whether or not the catch-up happened, the search then reads
the last committed index and treats every path that changed between its commit
and the head as a candidate, so answers always reflect the head exactly; with
no usable index it picks candidates without one (:mod:`gitmem.index.fallback`)::

    head ──► try index.lock ──► catch up ≤ INLINE_DOCS ──► read committed index (commit C)
                 (busy: skip)     (more: hand off)           │ (none, or > FAR_BEHIND: fallback)
    candidates = (signature hits not changed since C) + (paths changed C..head)
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from gitmem import derived
from gitmem.errors import MemoryStoreError
from gitmem.fileformat import decode_stored
from gitmem.index.lock import IndexLock
from gitmem.index.needles import Need, literal_need, regex_need
from gitmem.index.results import FindHit, IndexStatus, snippet
from gitmem.index.source import INLINE_DOCS as INLINE_DOCS  # re-exported: tests lower it here for this module
from gitmem.index.source import Busy, GitSource, git_order, regular_files, warn
from gitmem.index.source import index_folder as index_folder
from gitmem.index.source import lock_file as lock_file

if TYPE_CHECKING:
    from whoosh.index import FileIndex


REBUILD_WAIT = 120.0
ERASE_WAIT = REBUILD_WAIT  # forget and purge wait this long for an indexer before changing anything
RETRY_AFTER_FAILURE = 30.0
MAX_FIND_LIMIT = 1000
KEPT_MOUNTS = 32  # indexes catch_up keeps open, most recently used first
FAR_BEHIND = 1024
"""Changed files past which an index that lags is not used: the fallback reads less than this."""
REBUILD_BATCH = 2000
"""Files per Whoosh commit (one segment each) of a rebuild: memory stays bounded and each commit
costs the same. Larger batches with a smaller posting pool (``limitmb=16``, one segment per
25k files) kept memory as flat but took ~45 % more CPU: the pool then spills every posting
to a run file and reads it back, one ``marshal`` call each."""


class _Deferred(Exception):
    """The catch-up is more than a request may do (:data:`INLINE_DOCS`): hand it off."""


class MountIndex:
    """The index of one mount; safe for many threads and processes."""

    def __init__(self, repo: GitSource) -> None:
        self.repo = repo
        self.directory = index_folder(repo.path)
        self.lock = IndexLock(lock_file(repo.path))
        self._cache: dict[str, Any] = {}  # Whoosh segment id -> decoded signatures
        self._ix: FileIndex | None = None
        self._current: str | None = None  # a head this process saw the index reach
        self._retry_at = 0.0

    # -- grep --

    def files_for(
        self, pattern: str, *, regex: bool, case_sensitive: bool, prefix: str, head: str
    ) -> list[tuple[str, str]]:
        """Every file under ``prefix`` at ``head`` that may hold a matching line, in path order.

        ``pattern`` must already have compiled (see :func:`gitmem.grep.compile_pattern`).
        A pattern the index cannot narrow gets every file.
        """
        need = regex_need(pattern, case_sensitive) if regex else literal_need(pattern)
        if need is None:
            return list(self.repo.files_at(head, prefix))
        # No folder before the refresh and none made by it: any folder that appears meanwhile is
        # the detached indexer's, with nothing committed yet, and opening it would only load whoosh.
        absent = not os.path.isdir(self.directory)
        found = None
        if self.refresh(head) or not absent:
            found = self._candidates(need, prefix, head)
        if found is None:  # missing, outdated or far behind: picked without it while it is built
            from gitmem.index import fallback

            found = fallback.grep_candidates(self.repo, need, prefix, head)
        return found

    def _candidates(self, need: Need, prefix: str, head: str) -> list[tuple[str, str]] | None:
        if not os.path.isdir(self.directory):
            self._ix = self._current = None
            return None
        from gitmem.index import engine

        try:
            ix = self._open()
            if ix is None:
                self._current = None
                return None
            with engine.searching(ix) as searcher:
                meta = engine.read_meta(searcher, self._cache)
                if meta is None or meta.format != engine.FORMAT:
                    self._current = None
                    return None
                hits = engine.candidates(searcher, need, prefix, self._cache)
        except MemoryStoreError:
            raise
        except Exception as exc:
            warn("index of %s unreadable, scanning instead: %r", self.repo.path, exc)
            self._ix = None
            self._current = None
            return None
        if meta.commit != head:
            changed = self._changed_since(meta.commit, head)
            if changed is None or len(changed) > FAR_BEHIND:
                self._current = None
                return None
            hits = [hit for hit in hits if hit[0] not in changed] + regular_files(self.repo, head, prefix, changed)
        hits.sort(key=lambda hit: git_order(hit[0]))
        return hits

    def _changed_since(self, commit: str, head: str) -> set[str] | None:
        """Paths changed from ``commit`` to ``head``; ``None`` when ``commit`` cannot serve."""
        try:
            paths = self.repo.changes_since(commit, head)
            return None if paths is None else set(paths)
        except MemoryStoreError:
            raise
        except Exception:  # objects pruned under a stale handle: the commit cannot serve
            return None

    # -- keeping up --

    def _open(self) -> FileIndex | None:
        from gitmem.index import engine

        ix = self._ix
        if ix is None or not os.path.isdir(self.directory):
            ix = self._ix = engine.open_index(self.directory)
        return ix

    def refresh(self, head: str, *, wait: float = 0.0, inline: bool = True) -> bool:
        """Bring the index to ``head`` if the index lock can be had within ``wait`` seconds.

        Returns whether the index now reflects ``head``. Failures never escape
        (a search scans instead) except store errors from git itself. ``inline``
        (a request) does at most :data:`INLINE_DOCS` documents of work; a longer
        catch-up or a rebuild is handed to :mod:`gitmem.index.background` and
        this returns ``False`` at once.
        """
        if self._current == head and os.path.isdir(self.directory):
            return True
        if time.monotonic() < self._retry_at:
            return False
        deferred = False
        with self.lock.attempt(wait) as held:
            if not held:
                return False
            try:
                # The rule of every derived file (gitmem.derived). The index lock already keeps
                # an erasure out while this runs (see erasing); the stamp says so independently.
                seen = derived.Generation.read(os.path.join(self.repo.path, "gitmem", "generation"))
                self.repo.head()  # reopens a handle that predates a forget or purge...
                if not self.repo.is_commit(head):
                    return False  # ...whose erased history must not be indexed again
                self._catch_up(head, INLINE_DOCS if inline else None)
                if not seen.current():
                    self._delete()
                    return False
            except MemoryStoreError:
                raise
            except _Deferred:
                deferred = True
            except Busy:
                return False
            except Exception as exc:
                warn("cannot update the index of %s: %r", self.repo.path, exc)
                self._retry_at = time.monotonic() + RETRY_AFTER_FAILURE
                self._ix = None
                return False
        if deferred:  # after the lock is let go, so the one taking over can have it
            from gitmem.index import background

            background.hand_off(self.repo.path, self._catch_up_off_request)
            return False
        self._current = head
        return True

    def _catch_up_off_request(self) -> None:
        """What :mod:`gitmem.index.background` runs in its thread: the whole catch-up, waiting for the lock."""
        self.refresh(self.repo.head(), wait=REBUILD_WAIT, inline=False)

    def _catch_up(self, head: str, budget: int | None = None) -> None:
        """Under the index lock: apply the tree diff since the index's commit, or rebuild.

        More than ``budget`` documents of work raises :class:`_Deferred` before any is done.
        """
        if budget is not None and not os.path.isdir(self.directory) and self._more_files_than(head, budget):
            raise _Deferred  # a fresh clone: whoosh need not even be loaded
        from gitmem.index import engine

        try:
            ix = engine.open_index(self.directory)
            if ix is not None and self._stamped(ix, head):
                # Already at head (every read of a new process asks this): no writer, whose
                # opening makes a segment's files and reads the index a second time.
                self._ix = ix
                return
            if ix is not None:
                with engine.writing(ix) as writer:
                    meta, documents = engine.stamp(ix, writer, self._cache)
                    if meta is not None and meta.format == engine.FORMAT:
                        if meta.commit == head:
                            self._ix = ix
                            return
                        changed = self._changed_since(meta.commit, head)
                        if changed is not None and len(changed) <= max(256, documents // 2):
                            if budget is not None and len(changed) > budget:
                                raise _Deferred
                            engine.apply(writer, self._documents(head, sorted(changed)), head)
                            self._ix = ix
                            return
        except (MemoryStoreError, engine.Busy, _Deferred):
            raise
        except Exception as exc:
            warn("rebuilding the index of %s: %r", self.repo.path, exc)
        if budget is not None and self._more_files_than(head, budget):
            raise _Deferred
        self._rebuild(head)

    def _stamped(self, ix: FileIndex, head: str) -> bool:
        """Whether the committed index already reflects ``head`` (its stamp, read without a writer)."""
        from gitmem.index import engine

        with engine.searching(ix) as searcher:
            meta = engine.read_meta(searcher, self._cache)
        return meta is not None and meta.format == engine.FORMAT and meta.commit == head

    def _more_files_than(self, head: str, count: int) -> bool:
        return sum(1 for _ in itertools.islice(self.repo.files_at(head), count + 1)) > count

    def _documents(self, head: str, paths: list[str]) -> Iterator[dict[str, Any] | str]:
        from gitmem.index import engine

        for path in paths:
            found = self.repo.read_at(head, path)
            if found is None:
                yield path
            else:
                yield engine.file_document(path, found[0], decode_stored(found[1]))

    def _rebuild(self, head: str) -> None:
        """A new index of ``head``, :data:`REBUILD_BATCH` files per Whoosh commit.

        One commit of everything keeps every posting of the memory in the
        writer's pools and merges them at the end: memory grew with the memory
        and time faster than it (714 MB and 14-17x the time for 10x the files
        at 100k). A segment per batch costs the same for every batch, and only
        the last commit carries the stamp, so until it lands a reader sees an
        index without a commit and answers without it.
        """
        from gitmem.index import engine

        self._ix = None
        self._cache.clear()
        ix = engine.create_index(self.directory)
        files = self.repo.files_at(head)
        while True:
            batch = list(itertools.islice(files, REBUILD_BATCH))
            docs = (engine.file_document(path, oid, decode_stored(self.repo.blob(oid))) for path, oid in batch)
            last = len(batch) < REBUILD_BATCH
            with engine.writing(ix) as writer:
                engine.apply(writer, docs, head if last else None, fresh=True, merge=False)
            if last:
                break
        self._ix = ix

    def rebuild(self) -> IndexStatus:
        """Recreate the index from the head, waiting for another indexer if needed."""
        head = self.repo.head()
        with self.lock.attempt(REBUILD_WAIT) as held:
            if not held:
                raise MemoryStoreError("unavailable", f"another process keeps the index of {self.repo.path} busy")
            try:
                self._rebuild(head)
            except MemoryStoreError:
                raise
            except Exception as exc:
                raise MemoryStoreError("unavailable", f"cannot rebuild the index: {exc!r}") from exc
            self._current = head
            self._retry_at = 0.0
            # Under the lock, from the index just written: status() would open every segment.
            from gitmem.index import engine

            assert self._ix is not None
            counts = engine.written(self._ix)
        now = self.repo.head()
        state = "current" if now == head else "behind"
        return IndexStatus(self.directory, state, now, head, counts.documents, counts.deleted, counts.segments)

    def clear(self) -> None:
        """Delete the index (it holds words of the files); the next search rebuilds it."""
        with self.erasing():
            pass

    @contextmanager
    def erasing(self) -> Iterator[None]:
        """Hold the index lock around an erasure of history, then delete the index.

        Taken *before* history changes (``unavailable`` if another process keeps
        the index busy for ``ERASE_WAIT`` seconds, with nothing changed yet), so
        no indexer can be halfway through writing words of the old history while
        it is erased, and the deletion afterwards cannot be skipped for a busy
        lock. The index is deleted however the block ends: it is disposable, and
        a failed erasure may already have moved refs.
        """
        with self.lock.attempt(ERASE_WAIT) as held:
            if not held:
                raise MemoryStoreError(
                    "unavailable",
                    f"another process kept the index of {self.repo.path} busy for {ERASE_WAIT:g} s; nothing was changed",
                )
            try:
                yield
            finally:
                self._delete()

    def _delete(self) -> None:
        """Under the index lock: remove the index folder and everything cached from it."""
        import shutil

        self._ix = None
        self._current = None
        self._cache.clear()
        try:
            shutil.rmtree(self.directory)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise MemoryStoreError("unavailable", f"cannot remove the index: {exc}") from exc

    def status(self) -> IndexStatus:
        from gitmem.index import engine

        head = self.repo.head()
        try:
            ix = engine.open_index(self.directory)
            if ix is None:
                return IndexStatus(self.directory, "missing", head, None)
            with engine.searching(ix) as searcher:
                meta = engine.read_meta(searcher, self._cache)
                counts = engine.stats(searcher)
        except Exception:  # engine.Broken, or whatever Whoosh raises on a damaged index
            return IndexStatus(self.directory, "broken", head, None)
        if meta is None:
            return IndexStatus(self.directory, "missing", head, None, counts.documents, counts.deleted, counts.segments)
        if meta.format != engine.FORMAT:
            state = "outdated"
        elif meta.commit == head:
            state = "current"
        else:
            state = "behind" if self._changed_since(meta.commit, head) is not None else "outdated"
        return IndexStatus(
            self.directory, state, head, meta.commit, counts.documents, counts.deleted, counts.segments
        )

    # -- ranked search --

    def find(self, query: str, *, prefix: str = "", limit: int = 10, at: str | None = None) -> list[FindHit]:
        """Files ranked by BM25F over the words of ``query``, best first, with a snippet.

        Ranked search never waits for an indexer. If the index lags a little,
        files changed since its commit keep their old rank (deleted ones are
        dropped, new ones are missing) while snippets and versions come from the
        head; missing, outdated or more than :data:`FAR_BEHIND` files behind, it
        is not used at all (:mod:`gitmem.index.fallback`) while it is rebuilt.

        ``at`` ranks the files of another commit (a run's proposal) instead of the
        head. The index follows ``main`` only, so those files are read and ranked
        in memory (:func:`engine.rank_files`), as a proposal's grep scans.
        """
        from gitmem.index import engine

        if not isinstance(query, str) or not query.strip():
            raise MemoryStoreError("invalid_pattern", "the query must be a non-empty string")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_FIND_LIMIT:
            raise MemoryStoreError("invalid_pattern", f"limit must be an integer from 1 to {MAX_FIND_LIMIT}")
        terms = engine.words(query)
        if not terms:
            return []
        if at is not None:
            return self._rank_at(at, terms, prefix, limit)
        head = self.repo.head()
        self.refresh(head)
        try:
            ix = self._open()
            if ix is None:
                return self._rank_unindexed(head, terms, prefix, limit)
            with engine.searching(ix) as searcher:
                meta = engine.read_meta(searcher, self._cache)
                ranked = engine.ranked(searcher, terms, prefix, limit) if meta is not None else []
        except MemoryStoreError:
            raise
        except Exception as exc:
            warn("index of %s unreadable, ranking without it: %r", self.repo.path, exc)
            self._ix = None
            return self._rank_unindexed(head, terms, prefix, limit)
        if meta is None or meta.format != engine.FORMAT:
            return self._rank_unindexed(head, terms, prefix, limit)
        changed = self._changed_since(meta.commit, head) if meta.commit != head else set()
        if changed is None or len(changed) > FAR_BEHIND:
            return self._rank_unindexed(head, terms, prefix, limit)
        hits: list[FindHit] = []
        for path, version, score in ranked:
            if path in changed:
                found = self.repo.read_at(head, path)
                if found is None:
                    continue
                version, data = found
            else:
                data = self.repo.blob(version)
            hits.append(FindHit(path, score, snippet(decode_stored(data), terms), version))
        return hits

    def _rank_unindexed(self, head: str, terms: list[str], prefix: str, limit: int) -> list[FindHit]:
        """Rank without the index (missing, being built, or far behind): see :mod:`gitmem.index.fallback`."""
        from gitmem.index import engine, fallback

        files = fallback.find_candidates(self.repo, terms, prefix, head)
        texts = {path: text for path, _oid, text in files}
        ranked = engine.rank_files(files, terms, prefix, limit)
        return [FindHit(path, score, snippet(texts[path], terms), version) for path, version, score in ranked]

    def _rank_at(self, commit: str, terms: list[str], prefix: str, limit: int) -> list[FindHit]:
        from gitmem.index import engine

        files = ((p, oid, decode_stored(self.repo.blob(oid))) for p, oid in self.repo.files_at(commit))
        # An in-memory index has no damaged state to recover from; git errors reach the store's translation.
        ranked = engine.rank_files(files, terms, prefix, limit)
        return [
            FindHit(path, score, snippet(decode_stored(self.repo.blob(version)), terms), version)
            for path, version, score in ranked
        ]


_kept: OrderedDict[tuple[str, int, int], MountIndex] = OrderedDict()
_kept_guard = threading.Lock()


def _index_of(mount_path: str) -> MountIndex:
    """The kept index of a mount, keyed by its path and the identity of its folder.

    Hooks and watchers call :func:`catch_up` after every change; a new index per
    call would reopen Whoosh and its lock file each time. A memory removed and
    created again at the same path is a new folder, so it gets a new index.
    """
    from gitmem.git.repo import GitRepo

    path = os.path.abspath(mount_path)
    try:
        st = os.stat(os.path.join(path, "objects"))
    except OSError:
        return MountIndex(GitRepo.open(path))  # memory_deleted, or a race with its creation
    key = (path, st.st_dev, st.st_ino)
    with _kept_guard:
        index = _kept.get(key)
        if index is not None:
            _kept.move_to_end(key)
            return index
    index = MountIndex(GitRepo.open(path))
    with _kept_guard:
        index = _kept.setdefault(key, index)
        _kept.move_to_end(key)
        while len(_kept) > KEPT_MOUNTS:
            _kept.popitem(last=False)
    return index


def catch_up(mount_path: str, *, wait: float = 30.0, inline: bool = True) -> bool:
    """Bring the index of the mount at ``mount_path`` to its head (hooks, watchers, the background indexer).

    Waits up to ``wait`` seconds for another indexer; returns whether the index
    now reflects the head. ``inline`` as for :meth:`MountIndex.refresh`: a hook
    answering a push hands a rebuild off; the background indexer does it.
    """
    from gitmem.git.repo import translate_errors

    index = _index_of(mount_path)
    with translate_errors(index.repo.path):
        return index.refresh(index.repo.head(), wait=wait, inline=inline)

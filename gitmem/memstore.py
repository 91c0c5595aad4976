"""An in-memory store that follows the contract exactly.

It is the twin of :class:`~gitmem.gitstore.GitFileStore`: the contract tests run
on both, and property tests drive both with the same random operations and
compare every answer. Versions are git blob ids here too, so answers are equal
byte for byte; cursors are ``"mem:<epoch>:<sequence>"`` strings.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import (
    DEFAULT_FORMAT,
    FileFormat,
    decode_stored,
    describe_stored,
    validate_directory,
    validate_path,
)
from gitmem.grep import check_limit, compile_pattern, scan
from gitmem.model import Applied, Changes, Edit, FileEntry, FileText, FullResync, Origin, SearchResult, blob_version
from gitmem.provenance import check_identity_extras
from gitmem.store import (
    Batch,
    BatchFileStore,
    Decision,
    SearchableFileStore,
    applied,
    apply_batch,
    check_batch_room,
    decide,
    delete_batch,
    file_dir_conflict,
    move_batch,
    moved,
    write_batch,
)


class InMemoryFileStore:
    """A :class:`~gitmem.store.SearchableFileStore` and :class:`~gitmem.store.BatchFileStore` in a dict.

    Safe for many threads: one lock serialises every change, as the git store's
    writer lock does.
    """

    def __init__(self, fmt: FileFormat = DEFAULT_FORMAT) -> None:
        self.format = fmt
        self._files: dict[str, bytes] = {}
        # One entry per change: each path it touched and the version it held before.
        self._journal: list[dict[str, str | None]] = []
        self._epoch = 0
        self._lock = threading.Lock()
        self.origins: list[tuple[str, Origin]] = []

    # -- helpers (call with the lock held) --

    def _cursor(self) -> str:
        return f"mem:{self._epoch}:{len(self._journal)}"

    def _current(self, path: str) -> FileText | None:
        data = self._files.get(path)
        if data is None:
            return None
        return FileText(path, decode_stored(data), blob_version(data))

    def _check_shape(self, path: str) -> None:
        parts = path.split("/")
        for i in range(1, len(parts)):
            if "/".join(parts[:i]) in self._files:
                raise file_dir_conflict(path, is_file=True)
        prefix = path + "/"
        if any(p.startswith(prefix) for p in self._files):
            raise file_dir_conflict(path, is_file=False)

    def _version(self, path: str) -> str | None:
        data = self._files.get(path)
        return None if data is None else blob_version(data)

    def _commit(self, batch: Batch, origin: Origin | None) -> tuple[str | None, Decision | None]:
        """The one write path: decide ``batch`` on the files now and apply it, all or nothing."""
        with self._lock:
            decision = decide(batch, self._current, blob_version)
            if decision is None:
                return None, None
            fmt = self.format
            writes = any(e.data is not None for e in decision.effects)
            if writes and (fmt.max_files is not None or fmt.max_memory_bytes is not None):
                for effect in decision.creates:  # a file/folder collision is the answer even when the memory is full
                    self._check_shape(effect.path)
                total = sum(len(d) for d in self._files.values()) if fmt.max_memory_bytes else 0
                check_batch_room(
                    decision,
                    files=len(self._files),
                    total_bytes=total,
                    max_files=fmt.max_files,
                    max_bytes=fmt.max_memory_bytes,
                )
            saved = dict(self._files)
            try:
                for effect in decision.effects:
                    if effect.version is None:
                        self._files.pop(effect.path, None)
                        continue
                    data = effect.data if effect.source is None else saved[effect.source]
                    assert data is not None
                    if effect.before is None:
                        self._check_shape(effect.path)
                    self._files[effect.path] = data
            except MemoryStoreError:
                self._files = saved
                raise
            self._journal.append({e.path: e.before.version if e.before is not None else None for e in decision.effects})
            self.origins.append((decision.op, origin or Origin()))
            return self._cursor(), decision

    # -- the contract --

    def list(self) -> builtins.list[FileEntry]:
        with self._lock:
            items = sorted(self._files.items())
        return [
            FileEntry(path, blob_version(data), len(data), describe_stored(decode_stored(data), self.format))
            for path, data in items
        ]

    def read(self, path: str) -> FileText:
        path = validate_path(path, self.format)
        with self._lock:
            current = self._current(path)
        if current is None:
            raise MemoryStoreError("not_found", f"{path} does not exist")
        return current

    def write(self, path: str, text: str, *, expected: str | None, origin: Origin | None = None) -> str:
        batch, version = write_batch(path, text, expected, self.format)
        self._commit(batch, origin)
        return version

    def move(self, source: str, destination: str, *, expected: str, origin: Origin | None = None) -> str:
        return self.move_many([(source, destination, expected)], origin=origin)[0]

    def delete(self, path: str, *, expected: str, origin: Origin | None = None) -> None:
        self.delete_many([(path, expected)], origin=origin)

    def move_many(
        self, pairs: Sequence[tuple[str, str, str]], *, origin: Origin | None = None
    ) -> builtins.list[str]:
        """Move each ``(source, destination, expected)`` at once, or none of them."""
        return moved(self._commit(move_batch(pairs, self.format), origin)[1])

    def delete_many(self, items: Sequence[tuple[str, str]], *, origin: Origin | None = None) -> None:
        """Delete each ``(path, expected)`` at once, or none of them."""
        self._commit(delete_batch(items, self.format), origin)

    def apply(
        self,
        edits: Sequence[Edit],
        *,
        origin: Origin | None = None,
        op: str = "apply",
        summary: str | None = None,
        trailers: Sequence[tuple[str, str]] = (),
    ) -> Applied:
        """Every edit at once, or none (see :meth:`gitmem.store.BatchFileStore.apply`); the commit is a cursor."""
        batch = apply_batch(edits, self.format, op=op, summary=summary, trailers=trailers)
        check_identity_extras(batch.trailers, origin or Origin())  # as the git store's commit message does
        cursor, decision = self._commit(batch, origin)
        return applied(cursor, decision, batch, blob_version)

    def changes(self, since: str | None) -> Changes | FullResync:
        with self._lock:
            cursor = self._cursor()
            if not isinstance(since, str):
                return FullResync(cursor)
            parts = since.split(":")
            if len(parts) != 3 or parts[0] != "mem" or not parts[1].isdigit() or not parts[2].isdigit():
                return FullResync(cursor)
            epoch, seq = int(parts[1]), int(parts[2])
            if epoch != self._epoch or seq > len(self._journal):
                return FullResync(cursor)
            # Net change, as git's tree diff reports it: a path edited and edited
            # back, or created and deleted again, is not listed.
            then: dict[str, str | None] = {}
            for before in self._journal[seq:]:
                for path, version in before.items():
                    then.setdefault(path, version)
            changed = sorted(path for path, version in then.items() if version != self._version(path))
        return Changes(cursor, tuple(changed))

    def head(self) -> str:
        with self._lock:
            return self._cursor()

    def purge(self, origin: Origin | None = None) -> None:
        with self._lock:
            self._files.clear()
            self._journal.clear()
            self._epoch += 1

    def search(
        self,
        pattern: str,
        *,
        regex: bool = False,
        case_sensitive: bool = False,
        path: str = "",
        limit: int = 100,
    ) -> SearchResult:
        matcher = compile_pattern(pattern, regex=regex, case_sensitive=case_sensitive)
        prefix = validate_directory(path, self.format)
        limit = check_limit(limit)
        with self._lock:
            items = sorted((p, d) for p, d in self._files.items() if p.startswith(prefix))
        return scan(((p, decode_stored(d)) for p, d in items), matcher, limit)


if TYPE_CHECKING:  # mypy checks that the twin keeps every promise it claims

    def _conforms(store: InMemoryFileStore) -> tuple[SearchableFileStore, BatchFileStore]:
        return store, store

"""An in-memory store that follows the contract exactly.

It is the twin of :class:`~gitmem.gitstore.GitFileStore`: the contract tests run
on both, and property tests drive both with the same random operations and
compare every answer. Versions are git blob ids here too, so answers are equal
byte for byte; cursors are ``"mem:<epoch>:<sequence>"`` strings.
"""

from __future__ import annotations

import threading

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import (
    DEFAULT_FORMAT,
    FileFormat,
    decode_stored,
    describe_stored,
    encode_text,
    validate_directory,
    validate_path,
)
from gitmem.grep import check_limit, compile_pattern, scan
from gitmem.model import Changes, FileEntry, FileText, FullResync, Origin, SearchResult, blob_version
from gitmem.store import check_capacity, check_destination, check_existing, check_expected, file_dir_conflict


class InMemoryFileStore:
    """A :class:`~gitmem.store.SearchableFileStore` kept in a dict, safe for many threads."""

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

    def _commit(self, op: str, before: dict[str, str | None], origin: Origin | None) -> None:
        self._journal.append(before)
        self.origins.append((op, origin or Origin()))

    def _version(self, path: str) -> str | None:
        data = self._files.get(path)
        return None if data is None else blob_version(data)

    # -- the contract --

    async def list(self) -> list[FileEntry]:
        with self._lock:
            items = sorted(self._files.items())
        return [
            FileEntry(path, blob_version(data), len(data), describe_stored(decode_stored(data), self.format))
            for path, data in items
        ]

    async def read(self, path: str) -> FileText:
        path = validate_path(path, self.format)
        with self._lock:
            current = self._current(path)
        if current is None:
            raise MemoryStoreError("not_found", f"{path} does not exist")
        return current

    async def write(self, path: str, text: str, *, expected: str | None, origin: Origin | None = None) -> str:
        path = validate_path(path, self.format)
        data = encode_text(text, self.format)
        with self._lock:
            current = self._current(path)
            check_expected(path, current, expected)
            version = blob_version(data)
            if current is not None and current.version == version:
                return version
            if current is None:
                self._check_shape(path)
            old = self._files.get(path, b"")
            check_capacity(
                path,
                creating=current is None,
                files=len(self._files),
                total_bytes=sum(len(d) for d in self._files.values()) if self.format.max_memory_bytes else 0,
                new_size=len(data),
                old_size=len(old),
                max_files=self.format.max_files,
                max_bytes=self.format.max_memory_bytes,
            )
            self._files[path] = data
            before = None if current is None else current.version
            self._commit("create" if current is None else "edit", {path: before}, origin)
            return version

    async def move(self, source: str, destination: str, *, expected: str, origin: Origin | None = None) -> str:
        source = validate_path(source, self.format)
        destination = validate_path(destination, self.format)
        with self._lock:
            check_existing(source, self._current(source), expected)
            check_destination(destination, self._current(destination))
            data = self._files.pop(source)
            try:
                self._check_shape(destination)
            except MemoryStoreError:
                self._files[source] = data
                raise
            self._files[destination] = data
            version = blob_version(data)
            self._commit("move", {source: version, destination: None}, origin)
            return version

    async def delete(self, path: str, *, expected: str, origin: Origin | None = None) -> None:
        path = validate_path(path, self.format)
        with self._lock:
            current = check_existing(path, self._current(path), expected)
            del self._files[path]
            self._commit("delete", {path: current.version}, origin)

    async def changes(self, since: str | None) -> Changes | FullResync:
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

    async def purge(self) -> None:
        with self._lock:
            self._files.clear()
            self._journal.clear()
            self._epoch += 1

    async def search(
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

"""The store seam: what every memory backend promises.

Two implementations follow it exactly: :class:`gitmem.memstore.InMemoryFileStore`
(the reference twin and test double) and :class:`gitmem.gitstore.GitFileStore`.
One contract test suite runs against both. The rules that decide a write's
outcome live here as pure functions, so the two cannot drift apart.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from gitmem.errors import MemoryStoreError
from gitmem.model import Changes, FileEntry, FileText, FullResync, Origin, SearchResult


@runtime_checkable
class FileStore(Protocol):
    """A memory: a tree of UTF-8 files with compare-and-swap writes and change cursors."""

    async def list(self) -> list[FileEntry]: ...

    async def read(self, path: str) -> FileText: ...

    async def write(self, path: str, text: str, *, expected: str | None, origin: Origin | None = None) -> str: ...

    async def move(self, source: str, destination: str, *, expected: str, origin: Origin | None = None) -> str: ...

    async def delete(self, path: str, *, expected: str, origin: Origin | None = None) -> None: ...

    async def changes(self, since: str | None) -> Changes | FullResync: ...

    async def purge(self) -> None: ...


@runtime_checkable
class SearchableFileStore(FileStore, Protocol):
    """A store that answers grep itself (the git store narrows with its index)."""

    async def search(
        self,
        pattern: str,
        *,
        regex: bool = False,
        case_sensitive: bool = False,
        path: str = "",
        limit: int = 100,
    ) -> SearchResult: ...


class ForwardingFileStore:
    """A :class:`FileStore` that hands every call to ``inner``: subclass it to change one behaviour.

    It forwards the contract only (no ``search``), so a wrapper is a plain
    ``FileStore`` unless it adds ``search`` itself. Tests use it for stores that
    interfere with writes or cannot list changes; the benchmarks for a baseline
    that can only resync.
    """

    def __init__(self, inner: FileStore) -> None:
        self.inner = inner

    async def list(self) -> list[FileEntry]:
        return await self.inner.list()

    async def read(self, path: str) -> FileText:
        return await self.inner.read(path)

    async def write(self, path: str, text: str, *, expected: str | None, origin: Origin | None = None) -> str:
        return await self.inner.write(path, text, expected=expected, origin=origin)

    async def move(self, source: str, destination: str, *, expected: str, origin: Origin | None = None) -> str:
        return await self.inner.move(source, destination, expected=expected, origin=origin)

    async def delete(self, path: str, *, expected: str, origin: Origin | None = None) -> None:
        await self.inner.delete(path, expected=expected, origin=origin)

    async def changes(self, since: str | None) -> Changes | FullResync:
        return await self.inner.changes(since)

    async def purge(self) -> None:
        await self.inner.purge()


# --- shared decision rules -------------------------------------------------------


def check_expected(path: str, current: FileText | None, expected: str | None) -> None:
    """Refuse a write whose expectation does not hold; ``None`` expects no file."""
    if expected is not None and not isinstance(expected, str):
        raise MemoryStoreError("version_mismatch", f"{path}: a version is a string", current=current)
    have = current.version if current is not None else None
    if have == expected:
        return
    if expected is None:
        message = f"{path} already exists (version {have}); read it and edit instead of creating"
    elif current is None:
        message = f"{path} does not exist (expected version {expected})"
    else:
        message = f"{path} changed: expected version {expected}, it is now {have}"
    raise MemoryStoreError("version_mismatch", message, current=current)


def check_existing(path: str, current: FileText | None, expected: object) -> FileText:
    """Refuse a move or delete unless the file exists at exactly ``expected``."""
    if current is None or not isinstance(expected, str) or current.version != expected:
        check_expected(path, current, expected if isinstance(expected, str) else "")
        raise MemoryStoreError("version_mismatch", f"{path}: a version is a string", current=current)
    return current


def check_destination(destination: str, current: FileText | None) -> None:
    if current is not None:
        raise MemoryStoreError("already_exists", f"{destination} already exists", current=current)


def file_dir_conflict(path: str, is_file: bool) -> MemoryStoreError:
    """The error for a path that collides with a folder, or runs through a file."""
    if is_file:
        return MemoryStoreError("invalid_path", f"{path}: a parent of this path is a file, not a folder")
    return MemoryStoreError("invalid_path", f"{path} is a folder; a file cannot have the same path")


def check_capacity(
    path: str,
    *,
    creating: bool,
    files: int,
    total_bytes: int,
    new_size: int,
    old_size: int,
    max_files: int | None,
    max_bytes: int | None,
) -> None:
    if creating and max_files is not None and files + 1 > max_files:
        raise MemoryStoreError("memory_full", f"cannot create {path}: the memory holds its limit of {max_files} files")
    if max_bytes is not None and total_bytes - old_size + new_size > max_bytes:
        raise MemoryStoreError("memory_full", f"cannot write {path}: the memory would exceed {max_bytes} bytes")

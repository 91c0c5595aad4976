"""Record-store subjects for the contract tests: one over a git record mount, one over the twin."""

from __future__ import annotations

import builtins
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from gitmem import InMemoryFileStore, Root
from gitmem.model import Changes, FileEntry, FileText, FullResync, Origin

T = TypeVar("T")
KINDS = ("memory", "git")


def drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends (the in-memory store's calls) to its end."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise AssertionError("the in-memory store suspended")


class SyncMemoryStore:
    """The in-memory twin with a synchronous face, as the sync store seam offers it."""

    kind = "record"

    def __init__(self) -> None:
        self.inner = InMemoryFileStore()

    def list(self) -> builtins.list[FileEntry]:
        return drive(self.inner.list())

    def read(self, path: str) -> FileText:
        return drive(self.inner.read(path))

    def write(self, path: str, text: str, *, expected: str | None, origin: Origin | None = None) -> str:
        return drive(self.inner.write(path, text, expected=expected, origin=origin))

    def delete(self, path: str, *, expected: str, origin: Origin | None = None) -> None:
        drive(self.inner.delete(path, expected=expected, origin=origin))

    def changes(self, since: str | None) -> Changes | FullResync:
        return drive(self.inner.changes(since))


def new_backend(kind: str, where: Path) -> Any:
    if kind == "memory":
        return SyncMemoryStore()
    return Root(where).mount("facts", create=True, kind="record").sync

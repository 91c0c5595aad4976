"""Shared helpers for the recall tests: stores to index and a file format for items."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from gitmem.gitstore import GitFileStore, SyncGitFileStore
from gitmem.memstore import InMemoryFileStore
from gitmem.model import Changes, FileEntry, FileText, FullResync
from gitmem.recall import RecallDoc


class SyncMemStore:
    """The synchronous face of an :class:`InMemoryFileStore` (until the store seam is sync itself)."""

    def __init__(self, inner: InMemoryFileStore | None = None) -> None:
        self.inner = inner or InMemoryFileStore()
        self.reads = 0

    def list(self) -> list[FileEntry]:
        return asyncio.run(self.inner.list())

    def read(self, path: str) -> FileText:
        self.reads += 1
        return asyncio.run(self.inner.read(path))

    def changes(self, since: str | None) -> Changes | FullResync:
        return asyncio.run(self.inner.changes(since))

    def write(self, path: str, text: str, *, expected: str | None = None) -> str:
        return asyncio.run(self.inner.write(path, text, expected=expected))

    def delete(self, path: str, *, expected: str) -> None:
        asyncio.run(self.inner.delete(path, expected=expected))

    def move(self, source: str, destination: str, *, expected: str) -> str:
        return asyncio.run(self.inner.move(source, destination, expected=expected))

    def purge(self) -> None:
        asyncio.run(self.inner.purge())


def git_store(tmp_path: Path) -> SyncGitFileStore:
    return GitFileStore.init(tmp_path / "m.git").sync


def item(text: str, updated_at: float = 0.0, *, status: str = "active", id: str | None = None) -> str:
    """An item file as the tests store it: one JSON object."""
    body: dict[str, object] = {"text": text, "updated_at": updated_at, "status": status}
    if id is not None:
        body["id"] = id
    return json.dumps(body, ensure_ascii=False) + "\n"


def to_doc(file: FileText) -> RecallDoc | None:
    """Items are JSON; a tombstoned one is not indexed; the id is the file name unless the item names one."""
    body = json.loads(file.text)  # a ValueError here marks the file skipped
    if body.get("status") == "tombstoned":
        return None
    doc_id = body.get("id") or file.path.rsplit("/", 1)[-1].removesuffix(".json")
    return RecallDoc(doc_id, body["text"], float(body["updated_at"]))

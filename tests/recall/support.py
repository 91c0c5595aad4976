"""Shared helpers for the recall tests: stores to index and a file format for items."""

from __future__ import annotations

import json
from pathlib import Path

from gitmem.gitstore import SyncGitFileStore
from gitmem.memstore import InMemoryFileStore
from gitmem.model import FileText
from gitmem.recall import RecallDoc
from gitmem.store import ForwardingFileStore


class SyncMemStore(ForwardingFileStore):
    """An :class:`InMemoryFileStore` that counts the files read through it."""

    def __init__(self, inner: InMemoryFileStore | None = None) -> None:
        super().__init__(inner or InMemoryFileStore())
        self.reads = 0

    def read(self, path: str) -> FileText:
        self.reads += 1
        return super().read(path)


def git_store(tmp_path: Path) -> SyncGitFileStore:
    return SyncGitFileStore.init(tmp_path / "m.git")


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

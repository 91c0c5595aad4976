"""A small in-memory store with atomic batches, so the repository's logic is tested without git.

It keeps the seam's rules that the durable repository depends on: an edit's
``expected`` is checked (``ANY``, ``None`` = absent, or a version), a failed
check is ``version_mismatch`` / ``already_exists`` carrying the file and writes
nothing, writing a file's own content is no change, and every batch that changes
something is one step of history with a change cursor.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat
from gitmem.model import ANY, Applied, Changes, Edit, FileEntry, FileText, FullResync, Origin, blob_version


class BatchMemStore:
    def __init__(self) -> None:
        self.format = FileFormat(max_file_bytes=1 << 20, max_frontmatter_bytes=1 << 20)
        self.files: dict[str, str] = {}
        self.history: list[tuple[str, frozenset[str]]] = [("c0", frozenset())]
        self.applies = 0

    def head(self) -> str:
        return self.history[-1][0]

    def list(self) -> builtins.list[FileEntry]:
        return [FileEntry(p, blob_version(t.encode()), len(t.encode()), None) for p, t in sorted(self.files.items())]

    def read(self, path: str) -> FileText:
        if path not in self.files:
            raise MemoryStoreError("not_found", path)
        text = self.files[path]
        return FileText(path, text, blob_version(text.encode()))

    def _current(self, path: str) -> FileText | None:
        return self.read(path) if path in self.files else None

    def write(self, path: str, text: str, *, expected: str | None, origin: Origin | None = None) -> str:
        self.apply([Edit(path, text, expected)], origin=origin)
        return blob_version(text.encode())

    def changes(self, since: str | None) -> Changes | FullResync:
        ids = [c for c, _ in self.history]
        if since is None or since not in ids:
            return FullResync(self.head())
        paths: set[str] = set()
        for _, changed in self.history[ids.index(since) + 1 :]:
            paths |= changed
        return Changes(self.head(), tuple(sorted(paths)))

    def apply(
        self,
        edits: Sequence[Edit],
        *,
        origin: Origin | None = None,
        op: str = "apply",
        summary: str | None = None,
        trailers: Sequence[tuple[str, str]] = (),
    ) -> Applied:
        self.applies += 1
        for edit in edits:
            now = self._current(edit.path)
            if edit.expected is ANY:
                continue
            if edit.expected is None and now is not None:
                raise MemoryStoreError("already_exists", edit.path, now)
            if isinstance(edit.expected, str) and (now is None or now.version != edit.expected):
                raise MemoryStoreError("version_mismatch", edit.path, now)
        changed = set()
        for edit in edits:
            if edit.text is None:
                if self.files.pop(edit.path, None) is not None:
                    changed.add(edit.path)
            elif self.files.get(edit.path) != edit.text:
                self.files[edit.path] = edit.text
                changed.add(edit.path)
        versions = tuple(None if e.text is None else blob_version(e.text.encode()) for e in edits)
        if not changed:
            return Applied(None, versions)
        commit = f"c{len(self.history)}"
        self.history.append((commit, frozenset(changed)))
        return Applied(commit, versions)

"""Helpers for the tool and context tests: stores, wrappers that misbehave on purpose, an agent.

The tools and the stores under them are synchronous, so a test reads like the
sequence of tool calls a model makes.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from gitmem import FileStore, ForwardingFileStore, InMemoryFileStore, SyncGitFileStore
from gitmem.model import Changes, FullResync, Origin
from gitmem.tools import FileMemoryCapability, FileMemoryLimits, FileMount, MemoryContext, MemoryCursors

KINDS = ("memory", "git")


def new_store(kind: str, where: Path) -> Any:
    if kind == "memory":
        return InMemoryFileStore()
    return SyncGitFileStore.init(where / f"m{len(list(where.glob('m*.git')))}.git")


def reopen(store: Any) -> Any:
    """A second handle on the same memory, as another process would hold it."""
    if isinstance(store, SyncGitFileStore):
        return SyncGitFileStore.open(store.path)
    return store


def git(repo: str, *args: str) -> str:
    proc = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=True)
    return proc.stdout


class Agent:
    """A capability driven synchronously, the way a model's tool calls arrive one by one."""

    def __init__(
        self,
        mounts: list[FileMount],
        *,
        limits: FileMemoryLimits | None = None,
        cursors: MemoryCursors | None = None,
        tools: tuple[str, ...] | None = None,
        origin: Origin | None = None,
    ) -> None:
        self.capability = FileMemoryCapability(mounts, limits=limits, cursors=cursors, tools=tools)
        self.origin = origin
        self.calls = 0

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        self.calls += 1
        result = self.capability.call(
            f"memory_file_{tool}", arguments, tool_call_id=f"call-{self.calls}", origin=self.origin
        )
        
        json.dumps(result)  # every answer must be JSON-ready
        return result

    def context(self) -> MemoryContext:
        return self.capability.context()


def one(store: Any, access: str = "write", **kwargs: Any) -> FileMount:
    return FileMount("user", store, access, **kwargs)  # type: ignore[arg-type]


class PlainStore(ForwardingFileStore):
    """Only the :class:`FileStore` contract (no ``search``), delegating to another store."""


class ResyncStore(PlainStore):
    """A store that cannot list changes, like a plain directory: every cursor resyncs."""

    def changes(self, since: str | None) -> Changes | FullResync:
        return FullResync(self.inner.changes(None).cursor)


class MovingStore(PlainStore):
    """Another writer always gets in first: each write or move finds the file changed under it."""

    def __init__(self, inner: FileStore) -> None:
        super().__init__(inner)
        self.attempts = 0
        self.deletes = 0

    def _interfere(self, path: str) -> None:
        current = self.inner.read(path)
        self.inner.write(path, current.text + "!", expected=current.version, origin=Origin(run_id="other"))

    def write(self, path: str, text: str, *, expected: str | None, origin: Origin | None = None) -> str:
        self.attempts += 1
        self._interfere(path)
        return super().write(path, text, expected=expected, origin=origin)

    def move(self, source: str, destination: str, *, expected: str, origin: Origin | None = None) -> str:
        self.attempts += 1
        self._interfere(source)
        return super().move(source, destination, expected=expected, origin=origin)

    def delete(self, path: str, *, expected: str, origin: Origin | None = None) -> None:
        self.deletes += 1
        self._interfere(path)
        super().delete(path, expected=expected, origin=origin)


def parse_block(text: str) -> tuple[dict[str, str], str, dict[str, Any]]:
    """Split one ``<memory-context>`` block into its attributes, its note line and its JSON."""
    lines = text.split("\n")
    assert lines[-1] == "" and lines[-2] == "</memory-context>", text
    assert len(lines) == 5, text
    head = lines[0]
    assert head.startswith("<memory-context ") and head.endswith(">")
    attrs = dict(part.split("=", 1) for part in head[len("<memory-context ") : -1].split(" "))
    return {k: v.strip('"') for k, v in attrs.items()}, lines[1], json.loads(lines[2])


def fsck(repo: str) -> None:
    proc = subprocess.run(["git", "-C", repo, "fsck", "--strict"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr

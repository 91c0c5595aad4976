"""The SDK's local-filesystem memory tool, as its own tests see it, played by ``GitMemoryTool``.

The SDK's tests set up situations on disk (a file with CRLF endings, a symbolic
link, a file swapped for a link just before it is opened) and then run commands.
Here the memory lives in a gitmem mount, so each situation is carried into git the
way a person with plain git would make it: before every command the folder
``memory_root`` is committed onto ``main`` as it is (files as blobs, symbolic links
as link entries, mode 120000) when it differs from the mount; after a command that
changed the mount, the mount is written back into the folder, so tests that read
files on disk see what the mount holds. The commands themselves run on
:class:`~gitmem.adapters.anthropic_memory.GitMemoryTool` (or its async twin)
unchanged.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path
from typing import Any

import pygit2
from anthropic.lib.tools import ToolError
from anyio import Path as AsyncPath

from gitmem import GitFileStore
from gitmem.adapters.anthropic_memory import AsyncGitMemoryTool, GitMemoryTool, store_path

_LINK = pygit2.enums.FileMode.LINK
_BLOB = pygit2.enums.FileMode.BLOB
Entries = dict[str, tuple[int, bytes]]
_OPEN: dict[str, GitBacked] = {}  # by base_path, for the tests' directory snapshots


def snapshot(base_path: str) -> dict[str, str]:
    """What the mount behind ``base_path`` holds, shaped like the SDK test's directory snapshot."""
    return _OPEN[str(base_path)].snapshot()


def close_all() -> None:
    for tool in list(_OPEN.values()):
        tool.close()


def read_folder(root: Path) -> Entries:
    """Every file and symbolic link under ``root`` (links are not followed), by relative path."""
    found: Entries = {}

    def visit(folder: Path, prefix: str) -> None:
        for item in sorted(os.scandir(folder), key=lambda e: e.name):
            rel = prefix + item.name
            path = Path(item.path)
            if item.is_symlink():
                found[rel] = (_LINK, os.fsencode(os.readlink(path)))
            elif item.is_dir(follow_symlinks=False):
                visit(path, rel + "/")
            else:
                # os.open, as the SDK opens files, so a test that swaps the file for a link
                # at open time (it patches os.open) gets a link here too.
                try:
                    fd = os.open(path.resolve(), os.O_RDONLY | os.O_NOFOLLOW)
                except OSError as exc:
                    if exc.errno != errno.ELOOP:
                        raise
                    found[rel] = (_LINK, os.fsencode(os.readlink(path)))
                    continue
                with os.fdopen(fd, "rb") as fh:
                    found[rel] = (_BLOB, fh.read())

    visit(root, "")
    return found


def read_tree(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str = "") -> Entries:
    found: Entries = {}
    for entry in tree:
        rel = prefix + (entry.name or "")
        if entry.filemode == pygit2.enums.FileMode.TREE:
            found.update(read_tree(repo, repo[entry.id].peel(pygit2.Tree), rel + "/"))
        else:
            found[rel] = (int(entry.filemode), bytes(repo[entry.id].read_raw()))
    return found


def write_tree(repo: pygit2.Repository, entries: Entries) -> pygit2.Oid:
    folders: dict[str, Entries] = {}
    builder = repo.TreeBuilder()
    for rel, (mode, data) in entries.items():
        head, sep, rest = rel.partition("/")
        if sep:
            folders.setdefault(head, {})[rest] = (mode, data)
        else:
            builder.insert(head, repo.create_blob(data), mode)
    for name, inner in folders.items():
        builder.insert(name, write_tree(repo, inner), pygit2.enums.FileMode.TREE)
    return builder.write()


class GitBacked:
    """What the SDK's tests touch of its tool (``base_path``, ``memory_root``, the commands)."""

    asynchronous = False

    def __init__(self, base_path: str) -> None:
        self.base_path = Path(base_path)
        # The mount sits beside base_path, so the folder the tests look at holds only memories/.
        self.store = GitFileStore.init(str(self.base_path) + ".git")
        self.folder = self.base_path / "memories"
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.tool: Any = AsyncGitMemoryTool(self.store) if self.asynchronous else GitMemoryTool(self.store)
        self._repo = pygit2.Repository(self.store.path)
        _OPEN[str(self.base_path)] = self

    @property
    def memory_root(self) -> Any:
        return self.folder

    def close(self) -> None:
        _OPEN.pop(str(self.base_path), None)
        self._repo.free()
        shutil.rmtree(self.store.path, ignore_errors=True)

    def snapshot(self) -> dict[str, str]:
        """What the mount holds, in the shape of the SDK test's directory snapshot."""
        return {f"memories/{e.path}": self.store.sync.read(e.path).text for e in self.store.sync.list()}

    def _validate_path(self, path: str) -> Path | None:
        """Where a command's path lies in ``memory_root`` (the tests hook in here, as in the SDK)."""
        try:
            rel = store_path(path)
        except ToolError:
            return None  # the tool gives its own refusal
        return self.folder / rel if rel else self.folder

    def _head(self) -> pygit2.Commit:
        return self._repo.revparse_single("refs/heads/main").peel(pygit2.Commit)

    def _carry_in(self) -> str:
        """Commit the folder onto ``main`` as plain git would, if it differs; returns the head."""
        head = self._head()
        on_disk = read_folder(self.folder)
        if on_disk != read_tree(self._repo, head.tree):
            sig = pygit2.Signature("tester", "tester@example.com")
            tree = write_tree(self._repo, on_disk)
            self._repo.create_commit("refs/heads/main", sig, sig, "edited outside gitmem\n", tree, [head.id])
        return str(self._head().id)

    def _carry_out(self, before: str) -> None:
        """Write the mount back into the folder after a command that changed it."""
        head = self._head()
        if str(head.id) == before:
            return
        wanted, present = read_tree(self._repo, head.tree), read_folder(self.folder)
        for rel in present.keys() - wanted.keys():
            (self.folder / rel).unlink()
        for rel, (mode, data) in wanted.items():
            if present.get(rel) == (mode, data):
                continue
            path = self.folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.is_symlink() or path.exists():
                path.unlink()
            if mode == _LINK:
                path.symlink_to(os.fsdecode(data))
            else:
                path.write_bytes(data)
        for folder, _, _ in sorted(os.walk(self.folder), reverse=True):  # git keeps no empty folders
            if Path(folder) != self.folder and not os.listdir(folder):
                os.rmdir(folder)

    def _command(self, name: str, command: Any, *paths: str) -> Any:
        for path in paths:
            self._validate_path(path)
        before = self._carry_in()
        try:
            return getattr(self.tool, name)(command)
        finally:
            self._carry_out(before)

    def execute(self, command: Any) -> Any:
        return getattr(self, command.command)(command)

    def view(self, command: Any) -> Any:
        return self._command("view", command, command.path)

    def create(self, command: Any) -> Any:
        return self._command("create", command, command.path)

    def str_replace(self, command: Any) -> Any:
        return self._command("str_replace", command, command.path)

    def insert(self, command: Any) -> Any:
        return self._command("insert", command, command.path)

    def delete(self, command: Any) -> Any:
        return self._command("delete", command, command.path)

    def rename(self, command: Any) -> Any:
        return self._command("rename", command, command.old_path, command.new_path)


class AsyncGitBacked(GitBacked):
    """:class:`GitBacked` over :class:`AsyncGitMemoryTool`: the same commands, awaited."""

    asynchronous = True

    @property
    def memory_root(self) -> Any:
        return AsyncPath(self.folder)

    async def _ensure_memory_root(self) -> None:
        """The folder exists from the start (the SDK makes it lazily)."""

    async def _validate_path(self, path: str) -> AsyncPath | None:  # type: ignore[override]
        found = super()._validate_path(path)
        return None if found is None else AsyncPath(found)

    async def _command(self, name: str, command: Any, *paths: str) -> Any:
        for path in paths:
            await self._validate_path(path)
        before = self._carry_in()
        try:
            return await getattr(self.tool, name)(command)
        finally:
            self._carry_out(before)

    async def execute(self, command: Any) -> Any:
        return await getattr(self, command.command)(command)

"""Helpers shared by the contract, property and real-git tests.

The store contract is synchronous (the seam in ``gitmem.store``). The tests
drive it through :class:`Subject`, which adds the git CLI's view of the
repository, so a test reads like the sequence of calls a user makes.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitmem import FileFormat, InMemoryFileStore, MemoryStoreError, SyncGitFileStore
from gitmem.model import Origin

KINDS = ("memory", "git")


def git(
    repo: str | os.PathLike[str], *args: str, check: bool = True, cwd: str | None = None, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the git CLI on ``repo`` (a bare repo or a work tree); stdin is ``input`` or empty."""
    proc = subprocess.run(
        ["git", "-C", os.fspath(repo), *args], capture_output=True, text=True, cwd=cwd, input=input or ""
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc


def assert_fsck_clean(repo: str | os.PathLike[str]) -> None:
    proc = git(repo, "fsck", "--strict", "--no-dangling", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "error" not in proc.stderr.lower() and "warning" not in proc.stderr.lower(), proc.stderr


def error_of(call: Any, *args: Any, **kwargs: Any) -> MemoryStoreError:
    """Call ``call`` and return the store error it raised (the test fails if it returns)."""
    try:
        result = call(*args, **kwargs)
    except MemoryStoreError as exc:
        return exc
    raise AssertionError(f"expected a MemoryStoreError, got {result!r}")


@dataclass
class Subject:
    """A store under test and, for git, its bare repo (``repo``) for the git CLI's view."""

    kind: str
    store: Any
    repo: Path | None = None

    def __getattr__(self, name: str) -> Any:
        """The contract (list, read, write, ...) is the store's own: calls go straight to it."""
        if name.startswith("__") or name == "store":  # copying or pickling a half-built Subject
            raise AttributeError(name)
        return getattr(self.store, name)

    # -- conveniences --

    def create(self, path: str, text: str, origin: Origin | None = None) -> str:
        return self.write(path, text, expected=None, origin=origin)

    def files(self) -> dict[str, str]:
        """The whole memory as ``{path: text}``."""
        return {e.path: self.read(e.path).text for e in self.list()}

    def cursor(self) -> str:
        return self.changes(None).cursor

    def head(self) -> str | None:
        """The commit ``main`` points at (git only), read with the git CLI."""
        if self.repo is None:
            return None
        return git(self.repo, "rev-parse", "refs/heads/main").stdout.strip()

    def commit_count(self) -> int | None:
        if self.repo is None:
            return None
        return int(git(self.repo, "rev-list", "--count", "refs/heads/main").stdout)

    def other_handle(self) -> Subject:
        """A second, independent handle on the same memory (git: opened again from disk)."""
        if self.repo is None:
            return self
        return Subject(self.kind, SyncGitFileStore.open(self.repo), self.repo)

    def with_format(self, fmt: FileFormat) -> Subject:
        """The same memory seen under other limits (git: reopened from disk)."""
        if self.repo is None:
            self.store.format = fmt  # the twin has no disk to reopen from; its limits are an attribute
            return self
        return Subject(self.kind, SyncGitFileStore.open(self.repo, fmt), self.repo)


def new_subject(kind: str, where: Path, fmt: FileFormat | None = None) -> Subject:
    if kind == "memory":
        return Subject(kind, InMemoryFileStore(fmt) if fmt else InMemoryFileStore())
    repo = where / "memory.git"
    return Subject(kind, SyncGitFileStore.init(repo, fmt), repo)


def traced_syncs(code: str, log: Path) -> list[tuple[str, str]] | None:
    """The fsyncs (``("fsync", path)``) and renames (``("rename", destination)``) of ``python -c code``,
    in order, seen by strace: what libgit2 does in C is out of reach of a Python hook on ``os.fsync``.

    ``None`` where the machine has no strace or forbids tracing.
    """
    import shutil
    import sys

    strace = shutil.which("strace")
    if strace is None:
        return None
    traced = subprocess.run(
        [strace, "-f", "-qq", "-e", "trace=openat,fsync,rename", "-o", str(log), sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if traced.returncode != 0 and "ptrace" in traced.stderr:
        return None
    assert traced.returncode == 0, traced.stderr
    paths: dict[tuple[str, str], str] = {}  # (pid, fd) -> the path it was opened at
    events: list[tuple[str, str]] = []
    for line in log.read_text().splitlines():
        pid, _, call = line.partition(" ")
        call = call.strip()
        if call.startswith("openat(") and '"' in call and "= " in call:
            fd = call.rsplit("= ", 1)[1].split()[0]
            if fd.isdigit():
                paths[(pid, fd)] = call.split('"')[1]
        elif call.startswith("fsync("):
            fd = call[len("fsync(") :].split(")")[0].split()[0]
            events.append(("fsync", paths.get((pid, fd), f"fd {fd}")))
        elif call.startswith("rename(") and call.count('"') >= 4:
            events.append(("rename", call.split('"')[3]))
    return events

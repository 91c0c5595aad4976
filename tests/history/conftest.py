from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gitmem import GitFileStore, SyncGitFileStore

Git = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def store(tmp_path: Path) -> SyncGitFileStore:
    return GitFileStore.init(tmp_path / "mem.git").sync


@pytest.fixture
def git(store: SyncGitFileStore) -> Git:
    """Run the real git CLI on the store's bare repo; ``check=False`` to inspect failures."""

    def run(*args: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess[str]:
        cmd = ["git", f"--git-dir={store.path}", *args]
        return subprocess.run(cmd, capture_output=True, text=True, check=check, input=input)

    return run


@pytest.fixture
def worktree(tmp_path: Path, store: SyncGitFileStore) -> Callable[..., str]:
    """A plain git clone for commits made outside gitmem; pushes back to ``main``."""
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", store.path, str(work)], check=True, capture_output=True)

    def run(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(work), *args], capture_output=True, text=True, check=True)
        return done.stdout

    run.path = work  # type: ignore[attr-defined]
    return run


def secret_history(store: SyncGitFileStore, edits: int) -> list[str]:
    """``secret.md`` written ``edits`` + 1 times, a new note between each two: its versions, oldest first."""
    versions = [store.write("secret.md", "token 0\n", expected=None)]
    for i in range(1, edits + 1):
        store.write(f"notes/n{i}.md", f"note {i}\n", expected=None)
        versions.append(store.write("secret.md", f"token {i}\n", expected=versions[-1]))
    return versions

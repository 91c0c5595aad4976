"""``apply`` against a foreign writer (plain git) that moves ``main`` while the batch is planned.

The foreign commit lands between gitmem reading the head and its compare-and-swap,
so the swap fails and the batch is decided again on the new head, as a single
write is: a change to another path is kept under the batch's commit, a change to
a path the batch expected at a version refuses the whole batch.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from contract.support import assert_fsck_clean, git
from gitmem import MemoryStoreError, SyncGitFileStore
from gitmem.git import engine
from gitmem.model import Edit
from gitmem.store import Batch, Decision


def foreign_commit(repo: Path, path: str, text: str) -> str:
    """Commit ``path`` = ``text`` on main with git plumbing, moving main by git's own CAS."""
    index = repo / "foreign.index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    old = git(repo, "rev-parse", "refs/heads/main").stdout.strip()

    def run(*args: str, input: str | None = None) -> str:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, input=input)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    run("read-tree", old)
    blob = run("hash-object", "-w", "--stdin", input=text)
    run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
    tree = run("write-tree")
    new = run("commit-tree", tree, "-p", old, "-m", "foreign")
    run("update-ref", "refs/heads/main", new, old)
    index.unlink()
    return new


def race_once(monkeypatch: pytest.MonkeyPatch, foreign: Callable[[], str]) -> list[str]:
    """Make ``foreign`` commit right after the batch's first decision; returns the foreign commit."""
    real = engine.decide
    done: list[str] = []

    def decide_then_race(batch: Batch, current: Callable[..., object], version_of: Callable[..., object]) -> Decision | None:
        decision = real(batch, current, version_of)  # type: ignore[arg-type]
        if not done:
            done.append(foreign())
        return decision

    monkeypatch.setattr(engine, "decide", decide_then_race)
    return done


def test_a_foreign_commit_on_another_path_is_kept_and_the_batch_rebuilt_on_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "m.git"
    store = SyncGitFileStore.init(repo)
    va = store.write("a.md", "a\n", expected=None)
    raced = race_once(monkeypatch, lambda: foreign_commit(repo, "foreign.md", "from git\n"))
    done = store.apply([Edit("a.md", "a2\n", expected=va), Edit("b.md", "b\n", expected=None)], op="import")
    assert raced, "the foreign commit landed mid-batch"
    assert {e.path: store.read(e.path).text for e in store.list()} == {
        "a.md": "a2\n",
        "b.md": "b\n",
        "foreign.md": "from git\n",
    }
    assert git(repo, "rev-parse", f"{done.commit}^").stdout.strip() == raced[0], "rebuilt on the foreign head"
    assert_fsck_clean(repo)


def test_a_foreign_change_to_an_expected_path_refuses_the_whole_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "m.git"
    store = SyncGitFileStore.init(repo)
    va = store.write("a.md", "a\n", expected=None)
    raced = race_once(monkeypatch, lambda: foreign_commit(repo, "a.md", "changed by git\n"))
    with pytest.raises(MemoryStoreError) as caught:
        store.apply([Edit("a.md", "a2\n", expected=va), Edit("b.md", "b\n", expected=None)])
    assert raced
    assert caught.value.code == "version_mismatch"
    assert caught.value.current is not None and caught.value.current.text == "changed by git\n"
    assert sorted(e.path for e in store.list()) == ["a.md"], "nothing of the batch landed"
    assert git(repo, "rev-parse", "refs/heads/main").stdout.strip() == raced[0]
    assert_fsck_clean(repo)

"""A ref moves only from the value its caller saw: the compare-and-swap every write and push relies on.

One ref moved from one commit to another goes through libgit2's single-ref
compare-and-swap, which re-reads the ref under its lock; creating, deleting and
moving several refs go through a ref transaction. Each must refuse a stale value
and leave the ref as it was, and a ref in ``packed-refs`` only moves like a loose one.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2
from contract.support import assert_fsck_clean

from gitmem import GitFileStore
from gitmem.git.refs import MAIN, read_ref, swap_ref


def _two_commits(tmp_path: Path) -> tuple[Path, pygit2.Repository, str, str]:
    path = tmp_path / "m.git"
    store = GitFileStore.init(path).sync
    store.write("a.md", "one\n", expected=None)
    first = store.head()
    store.write("a.md", "two\n", expected=store.read("a.md").version)
    return path, pygit2.Repository(str(path)), first, store.head()


def test_a_move_from_a_stale_value_changes_nothing(tmp_path: Path) -> None:
    path, repo, first, second = _two_commits(tmp_path)
    assert not swap_ref(repo, str(path), MAIN, first, first, message="stale")  # main holds second
    assert read_ref(repo, MAIN) == second
    assert swap_ref(repo, str(path), MAIN, second, first, message="back")
    assert read_ref(repo, MAIN) == first
    assert not swap_ref(repo, str(path), MAIN, second, first, message="again, from the old value")
    assert not (path / "refs" / "heads" / "main.lock").exists()
    assert_fsck_clean(path)


def test_a_ref_in_packed_refs_only_moves_and_refuses_like_a_loose_one(tmp_path: Path) -> None:
    path, repo, first, second = _two_commits(tmp_path)
    subprocess.run(["git", "--git-dir", str(path), "pack-refs", "--all", "--prune"], check=True)
    assert not (path / "refs" / "heads" / "main").exists()
    repo = pygit2.Repository(str(path))
    assert not swap_ref(repo, str(path), MAIN, first, first, message="stale")
    assert swap_ref(repo, str(path), MAIN, second, first, message="packed")
    assert read_ref(pygit2.Repository(str(path)), MAIN) == first
    assert_fsck_clean(path)


def test_create_and_delete_refuse_when_the_ref_is_not_as_expected(tmp_path: Path) -> None:
    path, repo, first, second = _two_commits(tmp_path)
    name = "refs/heads/proposals/run-1"
    assert swap_ref(repo, str(path), name, None, first, message="create")
    assert not swap_ref(repo, str(path), name, None, second, message="create again")
    assert read_ref(repo, name) == first
    assert not swap_ref(repo, str(path), name, second, None, message="delete from a stale value")
    assert swap_ref(repo, str(path), name, first, None, message="delete")
    assert read_ref(repo, name) is None

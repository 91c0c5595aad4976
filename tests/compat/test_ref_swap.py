"""A ref moves only from the value its caller saw: the compare-and-swap every write and push relies on.

One loose ref moved from one commit to another is swapped by hand (its lock
file, the ref re-read under it, a rename); creating, deleting, packed refs and
moving several refs go through libgit2's ref transaction. Each must refuse a stale value
and leave the ref as it was, and a ref in ``packed-refs`` only moves like a loose one.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pygit2
import pytest
from contract.support import assert_fsck_clean

from gitmem import GitFileStore
from gitmem.errors import MemoryStoreError
from gitmem.git.refs import MAIN, read_ref, swap_ref


def _two_commits(tmp_path: Path) -> tuple[Path, pygit2.Repository, str, str]:
    path = tmp_path / "m.git"
    store = GitFileStore.init(path).sync
    store.write("a.md", "one\n", expected=None)
    first = store.head()
    store.write("a.md", "two\n", expected=store.read("a.md").version)
    return path, pygit2.Repository(str(path)), first, store.head()


@pytest.mark.parametrize("durable", [None, False, True])  # None: the transaction; else by hand
def test_a_move_from_a_stale_value_changes_nothing(tmp_path: Path, durable: bool | None) -> None:
    path, repo, first, second = _two_commits(tmp_path)
    assert not swap_ref(repo, str(path), MAIN, first, first, message="stale", durable=durable)  # main holds second
    assert read_ref(repo, MAIN) == second
    assert swap_ref(repo, str(path), MAIN, second, first, message="back", durable=durable)
    assert read_ref(pygit2.Repository(str(path)), MAIN) == first
    assert (path / "refs" / "heads" / "main").read_text() == first + "\n"
    assert not swap_ref(repo, str(path), MAIN, second, first, message="again, from the old value", durable=durable)
    assert not (path / "refs" / "heads" / "main.lock").exists()
    assert_fsck_clean(path)


def test_a_ref_in_packed_refs_only_moves_and_refuses_like_a_loose_one(tmp_path: Path) -> None:
    path, repo, first, second = _two_commits(tmp_path)
    subprocess.run(["git", "--git-dir", str(path), "pack-refs", "--all", "--prune"], check=True)
    assert not (path / "refs" / "heads" / "main").exists()
    repo = pygit2.Repository(str(path))
    assert not swap_ref(repo, str(path), MAIN, first, first, message="stale", durable=False)
    assert swap_ref(repo, str(path), MAIN, second, first, message="packed", durable=False)
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


@pytest.mark.parametrize("planted", ["lock-link", "lock-fifo", "ref-link", "ref-fifo"])
def test_a_link_or_fifo_planted_at_the_lock_or_the_ref_is_refused_and_nothing_moves(
    tmp_path: Path, planted: str
) -> None:
    path, repo, first, second = _two_commits(tmp_path)
    heads = path / "refs" / "heads"
    outside = tmp_path / "outside"
    outside.write_text(second + "\n")
    target = heads / ("main.lock" if planted.startswith("lock") else "main")
    if planted.startswith("ref"):
        target.unlink()
    if planted.endswith("link"):
        target.symlink_to(outside)
    else:
        os.mkfifo(target)
    with pytest.raises(MemoryStoreError) as caught:
        swap_ref(repo, str(path), MAIN, second, first, message="planted", durable=False, timeout=0.2, stale_after=60)
    assert caught.value.code == "unavailable"
    assert outside.read_text() == second + "\n"  # nothing written through the link
    assert target.is_symlink() or target.is_fifo()  # left as found, for its owner to look at
    assert planted.startswith("lock") or not os.path.lexists(heads / "main.lock")

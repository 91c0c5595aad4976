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


def test_main_moves_by_its_lock_and_git_reads_every_value_with_no_lock_left(tmp_path: Path) -> None:
    path = tmp_path / "m.git"
    store = GitFileStore.init(path).sync
    heads: list[str] = []
    version = None
    for i in range(5):
        version = store.write("a.md", f"v{i}\n", expected=version)
        heads.append(store.head())
        assert (path / "refs" / "heads" / "main").read_text() == heads[-1] + "\n"
        assert sorted(os.listdir(path / "refs" / "heads")) == ["main"]  # no lock left behind
        git = subprocess.run(["git", "-C", str(path), "rev-parse", "main"], capture_output=True, text=True)
        assert git.stdout.strip() == heads[-1]
    assert os.stat(path / "refs" / "heads" / "main").st_mode & 0o777 == 0o644  # as git makes a ref
    log = subprocess.run(["git", "-C", str(path), "log", "--format=%H"], capture_output=True, text=True, check=True)
    assert log.stdout.split()[:5] == heads[::-1]
    assert_fsck_clean(path)


def test_a_forget_leaves_no_file_naming_a_head_it_replaced(tmp_path: Path) -> None:
    path = tmp_path / "m.git"
    store = GitFileStore.init(path).sync
    store.write("secret.md", "the code is 1234\n", expected=None)
    store.write("b.md", "other\n", expected=None)
    before = {store.head(), *(e.commit for e in store.log("secret.md"))}
    store.forget("secret.md")
    named = set()
    for folder, _, names in os.walk(path):
        if "objects" in Path(folder).parts:
            continue
        for name in names:
            data = (Path(folder) / name).read_bytes()
            named |= {f"{folder}/{name}" for commit in before if commit.encode() in data}
    assert not named
    assert_fsck_clean(path)

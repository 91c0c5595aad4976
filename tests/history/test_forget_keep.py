"""forget's prune keeps the pack the rewrite wrote, and never a pack holding an object no commit reaches."""

from __future__ import annotations

import os
from pathlib import Path

import pygit2
import pytest

from gitmem import SyncGitFileStore
from gitmem.git import packwrite, rewrite
from gitmem.git.loose import open_repository
from gitmem.git.rewritepack import RewrittenObjects

from .conftest import Git, secret_history


def _packs(store: SyncGitFileStore) -> list[str]:
    return sorted(os.listdir(os.path.join(store.path, "objects", "pack")))


def test_the_rewritten_pack_survives_the_prune_whole(
    store: SyncGitFileStore, git: Git, monkeypatch: pytest.MonkeyPatch
) -> None:
    versions = secret_history(store, 7)
    git("gc", "--quiet")  # one pack, a bitmap and a commit-graph naming every old commit
    written: list[str] = []
    real_write = packwrite.write_pack_files

    def record(repo_path: str, sha: str, pack: bytes, idx: bytes, *, durable: bool) -> str:
        written.append(sha)
        return real_write(repo_path, sha, pack, idx, durable=durable)

    monkeypatch.setattr(packwrite, "write_pack_files", record)
    store.forget("secret.md")

    (sha,) = written
    packs = _packs(store)
    assert f"pack-{sha}.pack" in packs and f"pack-{sha}.idx" in packs
    assert not [name for name in packs if name.endswith(".keep")]
    for blob in versions:
        assert git("cat-file", "-e", blob, check=False).returncode != 0, blob
    # Nothing unreachable is left in any pack, the kept one included.
    every = set(git("cat-file", "--batch-all-objects", "--batch-check=%(objectname)").stdout.split())
    reachable = {line.split(" ", 1)[0] for line in git("rev-list", "--objects", "--all").stdout.splitlines()}
    assert every <= reachable
    assert git("fsck", "--strict", "--no-dangling").returncode == 0


def test_a_keep_left_by_a_killed_prune_is_removed_by_the_next_gc(store: SyncGitFileStore, git: Git) -> None:
    secret_history(store, 7)
    git("gc", "--quiet")
    (pack,) = [name for name in _packs(store) if name.endswith(".pack")]
    keep = Path(store.path, "objects", "pack", pack).with_suffix(".keep")
    keep.write_text(rewrite._KEEP_NOTE)  # what a kill during forget's gc leaves, with the pending mark
    orphan = git("hash-object", "-w", "--stdin", input="leaked token\n").stdout.strip()
    Path(store.path, "gitmem", "forget-pending").write_text("forget x\n")

    store.gc()

    assert not keep.exists() and not Path(store.path, "gitmem", "forget-pending").exists()
    assert git("cat-file", "-e", orphan, check=False).returncode != 0
    keep.write_text(rewrite._KEEP_NOTE)
    store.forget("secret.md")  # gitmem's own note does not block a forget (another's .keep does)
    assert not keep.exists()


def test_a_tree_cut_twice_marks_the_pack_as_not_keepable(store: SyncGitFileStore) -> None:
    store.write("a.md", "a\n", expected=None)
    store.write("b.md", "b\n", expected=None)
    store.write("c.md", "c\n", expected=None)
    r = open_repository(store.path)
    tree = str(r.revparse_single("main").peel(pygit2.Tree).id)

    once = RewrittenObjects(r)
    once.erase(tree, "a.md")
    once.erase(tree, "b.md")  # from the commit's own tree each time: every new tree is some commit's
    assert not once.made_unreachable

    twice = RewrittenObjects(r)
    twice.erase(twice.erase(tree, "a.md"), "b.md")  # the first result (still naming b.md) is in no commit
    assert twice.made_unreachable

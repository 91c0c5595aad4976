"""diff, log and blame read only what changed, and answer exactly as the slow general paths do.

libgit2's tree diff visits every entry of both trees and its blame compares whole
trees at each step, so both grow with the memory. gitmem lists changed files by
comparing tree bytes (folders with an unchanged id are skipped), makes each file's
patch from its two blobs, and asks ``git blame`` where git is installed. These
tests hold each fast path to the general one on random histories.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from gitmem import SyncGitFileStore
from gitmem.git import gitblame, history

from .conftest import Git

NAMES = [f"{a}/{b}.md" for a in "xyz" for b in "abcd"] + ["top.md", "x.md", "x-y.md", "x/deep/er.md"]
TEXTS = [
    "",
    "one\n",
    "one\ntwo\n",
    "no newline at the end",
    "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n",
    "a\nb\nC\nd\ne\nf\ng\nh\nI\nj\n",
    "\u00e9t\u00e9 \u00e0 Z\u00fcrich\n",
]


def two_texts(rng: random.Random) -> str:
    return rng.choice(TEXTS) + rng.choice(TEXTS)


def random_history(
    store: SyncGitFileStore, seed: int, steps: int = 50, text: Callable[[random.Random], str] = two_texts
) -> list[str]:
    """Writes, deletes and moves chosen by ``seed``; the head after each step that committed."""
    rng = random.Random(seed)
    heads: list[str] = []
    for _ in range(steps):
        have = {e.path: e.version for e in store.list()}
        name = rng.choice(NAMES)
        roll = rng.random()
        try:
            if name in have and roll < 0.2:
                store.delete(name, expected=have[name])
            elif have and roll < 0.3:
                source = rng.choice(sorted(have))
                store.move(source, rng.choice(NAMES), expected=have[source])
            else:
                store.write(name, text(rng), expected=have.get(name))
        except Exception:  # a file where a folder is (or the reverse), a move onto a file: refused, skip
            continue
        heads.append(store.head())
    return heads


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_diff_of_plain_edits_equals_libgit2s_tree_diff(store: SyncGitFileStore, seed: int) -> None:
    heads = random_history(store, seed)
    r = pygit2.Repository(store.path)
    rng = random.Random(seed)
    fast = 0
    for new in heads:
        for old in rng.sample(heads, 5):
            old_tree, new_tree = r[old].peel(pygit2.Commit).tree, r[new].peel(pygit2.Commit).tree
            changes = history.file_changes(r, old_tree.id, new_tree.id)
            fast += not history._may_rename(changes)
            for path in (None, "x/", rng.choice(NAMES)):
                exact, prefix = history._path_filter(path, store.format)
                assert store.diff(old, new, path=path) == history._libgit2_diff(old_tree, new_tree, exact, prefix)
    assert fast > 20  # the byte-comparing path really ran


def test_a_mode_change_or_a_rename_takes_libgit2s_diff(store: SyncGitFileStore, worktree: Callable[..., str]) -> None:
    store.write("run.sh", "echo hi\n", expected=None)
    store.write("a.md", "same text\n", expected=None)
    base = store.head()
    work = Path(worktree.path)  # type: ignore[attr-defined]
    worktree("pull", "-q")
    (work / "run.sh").chmod(0o755)
    worktree("mv", "a.md", "b.md")
    worktree("commit", "-qam", "plain git: mode and move")
    worktree("push", "-q", "origin", "HEAD:main")

    diffs = {d.path: d for d in store.diff(base)}
    assert diffs["b.md"].status == "renamed" and diffs["b.md"].old_path == "a.md"
    assert "old mode 100644" in diffs["run.sh"].patch and "new mode 100755" in diffs["run.sh"].patch


def test_log_names_what_plain_git_commits_changed(store: SyncGitFileStore, worktree: Callable[..., str], git: Git) -> None:
    store.write("keep.md", "k\n", expected=None)
    store.write("notes/old.md", "moved text\n", expected=None)
    work = Path(worktree.path)  # type: ignore[attr-defined]
    worktree("pull", "-q")
    (work / "keep.md").write_text("k2\n")
    (work / "notes" / "new.md").write_text("fresh\n")
    worktree("add", "-A")
    worktree("commit", "-qm", "plain git: edit and add")
    worktree("mv", "notes/old.md", "moved.md")
    worktree("commit", "-qm", "plain git: move")
    worktree("push", "-q", "origin", "HEAD:main")

    moved, edited = store.log(limit=2)
    assert edited.paths == ("keep.md", "notes/new.md")
    assert moved.paths == ("notes/old.md", "moved.md")  # a rename: old name, then new
    shown = git("log", "-2", "--name-only", "--format=", "main").stdout.split()
    assert sorted(shown) == sorted([*edited.paths, "moved.md"])


@pytest.mark.parametrize("seed", [4, 5])
def test_blame_by_git_equals_blame_by_libgit2(
    store: SyncGitFileStore, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Lines unique within each version: where a line could come from two places, git and
    # libgit2 may each pick another (both right), and git's pick is the one gitmem shows.
    lines = [f"line {i}\n" for i in range(12)]
    heads = random_history(store, seed, steps=60, text=lambda rng: "".join(rng.sample(lines, 6)))
    asked: list[str] = []
    real = gitblame.blame

    def counting(git_dir: str, commit: str, path: str) -> list[gitblame.Hunk] | None:
        asked.append(path)
        return real(git_dir, commit, path)

    monkeypatch.setattr(gitblame, "blame", counting)
    cases = [(head, p) for head in heads[-4:] for p, _ in store.repo.files_at(head) if store.show(head, p).text]
    by_git = [history.blame(store.repo, store.format, path, head) for head, path in cases]
    assert len(asked) == len(cases) > 0
    monkeypatch.setattr(gitblame, "available", lambda: False)
    by_libgit2 = [history.blame(store.repo, store.format, path, head) for head, path in cases]
    assert by_git == by_libgit2


def test_blame_ignores_an_ignore_revs_file_in_git_config(store: SyncGitFileStore, git: Git, tmp_path: Path) -> None:
    v = store.write("a.md", "one\ntwo\n", expected=None)
    store.write("a.md", "one\nTWO\n", expected=v)
    edit = store.head()
    ignore = tmp_path / "ignore-revs"
    ignore.write_text(edit + "\n")
    git("config", "blame.ignoreRevsFile", str(ignore))
    assert git("blame", "--porcelain", "main", "--", "a.md").stdout.count(edit) == 0  # git itself now skips it
    assert [b.commit for b in store.blame("a.md")][1] == edit

"""Trailers are claims: ``forget`` and ``log`` follow a move only when the trees show it.

The commits here are written into the mount with plain git, as a push without
gitmem's checks (or one from before them) would leave them: gitmem's committer
identity and a ``move`` trailer that the trees contradict.
"""

from __future__ import annotations

import os
import subprocess

from gitmem import SyncGitFileStore
from gitmem.model import Origin
from gitmem.provenance import COMMITTER_EMAIL, COMMITTER_NAME, commit_message

from .conftest import Git


def plant(store: SyncGitFileStore, git: Git, files: dict[str, str], message: str) -> str:
    """A commit on main whose tree is main's plus ``files``, made with plain git under gitmem's name."""
    env = {
        **os.environ,
        "GIT_DIR": store.path,
        "GIT_INDEX_FILE": os.path.join(store.path, "plant-index"),
        "GIT_AUTHOR_NAME": COMMITTER_NAME,
        "GIT_AUTHOR_EMAIL": COMMITTER_EMAIL,
        "GIT_COMMITTER_NAME": COMMITTER_NAME,
        "GIT_COMMITTER_EMAIL": COMMITTER_EMAIL,
    }

    def run(*args: str, data: str | None = None) -> str:
        return subprocess.run(["git", *args], env=env, input=data, capture_output=True, text=True, check=True).stdout

    head = store.head()
    run("read-tree", head)
    for path, text in files.items():
        blob = run("hash-object", "-w", "--stdin", data=text).strip()
        run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
    tree = run("write-tree").strip()
    os.unlink(env["GIT_INDEX_FILE"])
    new = run("commit-tree", tree, "-p", head, "-m", message).strip()
    git("update-ref", "refs/heads/main", new, head)
    return new


def test_forget_does_not_follow_a_move_trailer_the_trees_contradict(store: SyncGitFileStore, git: Git) -> None:
    store.write("victim.md", "the victim's first notes\n", expected=None)
    version = store.read("victim.md").version
    store.write("victim.md", "the victim's second notes\n", expected=version)
    victim_commits = git("log", "--format=%H", "main", "--", "victim.md").stdout.split()
    assert len(victim_commits) == 2
    forged = commit_message("move", ("victim.md", "innocent.md"), Origin(principal_id="alice"))
    plant(store, git, {"innocent.md": "nothing to see here\n"}, forged)

    # log does not walk from innocent.md into victim.md's history either.
    assert [e.op for e in store.log("innocent.md")] == ["move"]

    store.forget("innocent.md")
    assert store.read("victim.md").text == "the victim's second notes\n"
    assert len(git("log", "--format=%H", "main", "--", "victim.md").stdout.split()) == 2
    assert [e.op for e in store.log("victim.md")] == ["edit", "create"]
    assert "innocent.md" not in {e.path for e in store.list()}
    assert git("fsck", "--strict", "--no-dangling").returncode == 0


def test_forget_still_follows_a_move_the_trees_show(store: SyncGitFileStore, git: Git) -> None:
    store.write("old.md", "text that moves\n", expected=None)
    store.move("old.md", "new.md", expected=store.read("old.md").version)
    store.write("other.md", "stays\n", expected=None)
    store.forget("new.md")
    assert git("log", "--format=%H", "--all", "--", "old.md").stdout.split() == []
    assert {e.path for e in store.list()} == {"other.md"}

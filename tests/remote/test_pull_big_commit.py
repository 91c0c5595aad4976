"""A hostile remote's one big commit cannot hold a pull for minutes.

The rules a pull applies read each new commit's trees and message. A ``move``
commit of 20,000 files named in 20,000 ``Path``/``From`` pairs had each path looked
up by scanning its whole tree (and the message scanned once per changed path):
20,000 squared steps, more than ten minutes of a ``gitmem pull`` holding the
mount's writer lock. Here the pull, a real ``gitmem`` process (the quick pull,
then the store's pull it hands the refusal to), answers within two minutes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from serve.support import GITMEM, fsck_clean, git

from gitmem import Root, remotes

FILES = 20_000


def plumb(repo: Path, *args: str, given: str) -> str:
    """``git ARGS`` in ``repo`` with ``given`` on its stdin; its output's one line."""
    done = subprocess.run(["git", *args], cwd=repo, input=given, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_a_pull_of_a_move_commit_of_many_files_is_answered_in_time(tmp_path: Path) -> None:
    root = Root(tmp_path / "mem")
    store = root.mount("user", create=True, hooks=False)
    store.sync.write("seed.md", "seed\n", expected=None)
    hosting = tmp_path / "hosting.git"
    git("init", "-q", "--bare", "-b", "main", str(hosting))
    remotes.add(store, "origin", str(hosting))
    remotes.push(store, "origin")
    head = store.sync.head()

    blob = plumb(hosting, "hash-object", "-w", "--stdin", given="a note\n")
    entries = "".join(f"100644 blob {blob}\tn{i:06d}.md\n" for i in range(FILES))
    folder = plumb(hosting, "mktree", given=entries)
    tree = plumb(hosting, "mktree", given=f"040000 tree {folder}\tnotes\n")
    pairs = "".join(f"Gitmem-Path: notes/n{i:06d}.md\nGitmem-From: old/o{i:06d}.md\n" for i in range(FILES))
    # seed.md goes unnamed: the pull is refused (provenance), after every rule read the whole commit.
    bad = plumb(hosting, "commit-tree", tree, "-p", head, given=f"move many\n\nGitmem-Op: move\n{pairs}")
    git("update-ref", "refs/heads/main", bad, cwd=hosting)

    done = subprocess.run(
        [*GITMEM, "--root", str(root.path), "pull", "user", "origin"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1 and "provenance" in done.stderr, done.stderr
    assert store.sync.head() == head
    fsck_clean(store.path)

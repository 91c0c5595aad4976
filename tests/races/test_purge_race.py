"""``purge`` while other processes keep writing, with packed objects in the repo.

A purge deletes every object but a new root while writers in other processes
hold pygit2 handles that still have the old packs mapped, and rewrite contents
whose blobs sat in those packs. Whatever interleaving happens, the repository
must stay whole (nothing on ``main`` missing, ``fsck --strict`` clean) and keep
taking writes from every handle.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from race_support import Worker, assert_fsck_clean, assert_linear, git, head_files

from gitmem import GitFileStore

pytestmark = pytest.mark.slow


def test_purge_racing_writers_in_other_processes_keeps_the_repo_whole(tmp_path: Path) -> None:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    go = tmp_path / "go"
    writers = [Worker(tmp_path, "churn", repo=str(repo), wid=w, writes=50, go=str(go)) for w in range(2)]
    go.touch()
    purges = 0
    while any(w.proc.poll() is None for w in writers):
        time.sleep(0.05)
        # Pack what is there, so the writers' handles have packs mapped when they vanish.
        subprocess.run(["git", "-C", str(repo), "repack", "-adq"], capture_output=True, check=False)
        store.purge()
        purges += 1
    for writer in writers:
        writer.join()

    assert purges >= 2, "the writers finished before the purges could race them"
    assert_fsck_clean(repo)
    assert_linear(repo)
    # Every file on main is readable, by git and by a fresh handle.
    fresh = GitFileStore.open(repo).sync
    for path, blob in head_files(repo).items():
        assert git(repo, "cat-file", "-t", blob).strip() == "blob"
        assert fresh.read(path).version == blob
    assert store.write("after.md", "still writable\n", expected=None)
    print(f"\n[purge race] {purges} purges during {sum(len(w.lines()) for w in writers)} acknowledged writes")

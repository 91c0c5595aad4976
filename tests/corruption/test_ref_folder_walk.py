"""The deep ref folders (one per principal under ``refs/heads/proposals``) are checked where a ref moves, not on every open.

Listing every folder under ``refs`` each time a repository was opened cost a
listing per principal on a team's memory (2,000 principals: ~40 ms a command,
past 4,096 folders ~90 ms on every open, the stamp cache cleared each time); a
link planted in place of one of them is still refused before a ref is written
through it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gitmem.errors import MemoryStoreError
from gitmem.git import control
from gitmem.git.loose import open_repository
from gitmem.git.looseref import swap_loose_ref
from gitmem.git.refs import swap_refs


def _repo(tmp_path: Path, principals: int) -> tuple[str, str]:
    repo = tmp_path / "m.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(repo)], check=True)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@x",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@x",
    }
    tree = subprocess.run(["git", "-C", str(repo), "mktree"], input=b"", capture_output=True, check=True).stdout
    commit = subprocess.run(
        ["git", "-C", str(repo), "commit-tree", tree.decode().strip(), "-m", "c"],
        capture_output=True,
        check=True,
        env=env,
        text=True,
    ).stdout.strip()
    lines = [f"create refs/heads/main {commit}"]
    lines += [f"create refs/heads/proposals/p{i}/t {commit}" for i in range(principals)]
    subprocess.run(
        ["git", "-C", str(repo), "update-ref", "--stdin"], input="\n".join(lines) + "\n", text=True, check=True
    )
    return str(repo), commit


def test_opening_lists_no_principal_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, _ = _repo(tmp_path, 50)
    listed: list[str] = []
    real_scandir = os.scandir

    def scandir(path: str) -> object:
        listed.append(os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(control.os, "scandir", scandir)
    control._STAMPS.clear()
    with open_repository(repo):
        pass
    deep = [p for p in listed if os.path.join("refs", "heads", "proposals") in p]
    assert deep == [], deep


@pytest.mark.parametrize("how", ["loose", "transaction"])
def test_a_principal_folder_planted_as_a_link_is_not_written_through(tmp_path: Path, how: str) -> None:
    repo, commit = _repo(tmp_path, 3)
    outside = tmp_path / "outside"
    os.rename(os.path.join(repo, "refs/heads/proposals/p1"), outside)
    os.symlink(outside, os.path.join(repo, "refs/heads/proposals/p1"))
    before = {p.name: p.read_bytes() for p in outside.iterdir()}
    with pytest.raises(MemoryStoreError) as caught:
        if how == "loose":
            swap_loose_ref(repo, "refs/heads/proposals/p1/t", commit, "0" * 39 + "1", durable=False)
        else:
            with open_repository(repo) as r:
                swap_refs(r, repo, {"refs/heads/proposals/p1/new": (None, commit)}, message="m")
    assert caught.value.code == "unavailable"
    assert "proposals/p1 is a link" in caught.value.message
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == before

"""A mount's settings are read from a kept parse of its config: it must follow every change.

The kind, the review gate, the limits and durability are asked on every call, so
:class:`~gitmem.git.repo.GitRepo` keeps the parsed config while the files' stats
hold. A setting changed by another process (the git CLI here), in the user's own
config, or a config file swapped for something hostile must be seen by the next
question of a handle that is already open, as libgit2 itself would see it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitmem import Root
from gitmem.errors import MemoryStoreError
from gitmem.git.repo import GitRepo

KEY = "gitmem.maxDescriptionChars"


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    root = Root(tmp_path / "root")
    root.mount("notes", create=True).sync.write("a.md", "a\n", expected=None)
    return GitRepo.open(str(root.mount_path("notes")))


def _git_config(repo: GitRepo, *args: str) -> None:
    subprocess.run(["git", "config", "--file", os.path.join(repo.path, "config"), *args], check=True)


def test_a_setting_another_process_changes_is_seen_by_the_next_question(repo: GitRepo) -> None:
    assert repo.config_get(KEY) is None
    _git_config(repo, KEY, "7")
    assert repo.config_get(KEY) == "7"
    _git_config(repo, KEY, "9")  # same size: the inode git's rename gives the file tells it apart
    assert repo.config_get(KEY) == "9"
    _git_config(repo, "--unset", KEY)
    assert repo.config_get(KEY) is None
    assert repo.durable() is False
    _git_config(repo, "gitmem.durable", "true")
    assert repo.durable() is True


FOLLOW_USER = r"""
import subprocess, sys
from pathlib import Path
from gitmem.git.repo import GitRepo
repo, user = GitRepo.open(sys.argv[1]), Path(sys.argv[2])
def git_config(*args):
    subprocess.run(["git", "config", "--file", sys.argv[1] + "/config", *args], check=True)
seen = [repo.config_get(KEY)]
user.write_text("[gitmem]\n\tmaxDescriptionChars = 3\n")
seen.append(repo.config_get(KEY))  # written after the handle read the config: followed
git_config(KEY, "5")
seen.append(repo.config_get(KEY))  # the mount's own file outranks the user's
git_config("--unset", KEY)
seen.append(repo.config_get(KEY))
user.write_text("")  # emptied (libgit2 keeps a deleted file's values until the process ends)
seen.append(repo.config_get(KEY))
print(seen)
"""


def test_the_users_own_config_counts_and_the_mounts_wins(repo: GitRepo, tmp_path: Path) -> None:
    # libgit2 finds the user's config from HOME once per process: a process of its own.
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "xdg")}
    script = f"KEY = {KEY!r}\n" + FOLLOW_USER
    done = subprocess.run(
        [sys.executable, "-c", script, repo.path, str(home / ".gitconfig")],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == "[None, '3', '5', '3', None]", done.stdout + done.stderr


def test_a_config_swapped_for_a_link_or_fifo_after_it_was_read_fails_closed(repo: GitRepo, tmp_path: Path) -> None:
    _git_config(repo, KEY, "7")
    assert repo.config_get(KEY) == "7"
    config = Path(repo.path, "config")
    kept = tmp_path / "kept-config"
    kept.write_bytes(config.read_bytes())
    config.unlink()
    config.symlink_to(kept)
    with pytest.raises(MemoryStoreError) as raised:
        repo.config_get(KEY)
    assert raised.value.code == "unavailable"
    config.unlink()
    os.mkfifo(config)
    with pytest.raises(MemoryStoreError) as raised:
        repo.durable()
    assert raised.value.code == "unavailable"

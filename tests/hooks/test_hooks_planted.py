"""The hooks' own files under a mount (``hooks.log``, the hook scripts) planted as a FIFO or a link: no hang."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from gitmem.errors import MemoryStoreError
from gitmem.hooks import install_hooks, log_line


def bare(tmp_path: Path) -> Path:
    repo = tmp_path / "m.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    return repo


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_a_planted_hooks_log_neither_hangs_a_push_nor_writes_outside(tmp_path: Path, kind: str) -> None:
    repo = bare(tmp_path)
    log = repo / "gitmem" / "hooks.log"
    log.parent.mkdir()
    outside = tmp_path / "outside.log"
    outside.write_text("theirs\n")
    if kind == "fifo":
        os.mkfifo(log)
    else:
        log.symlink_to(outside)
    started = time.monotonic()
    log_line(str(repo), "post-receive: a line")  # never raises: logging must not fail a push
    assert time.monotonic() - started < 5
    assert outside.read_text() == "theirs\n"


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_a_planted_hook_is_left_alone_not_read_through(tmp_path: Path, kind: str) -> None:
    repo = bare(tmp_path)
    hook = repo / "hooks" / "pre-receive"
    hook.unlink(missing_ok=True)
    outside = tmp_path / "outside"
    outside.write_text("# gitmem-hook\n")  # would pass for gitmem's own if followed
    if kind == "fifo":
        os.mkfifo(hook)
    else:
        hook.symlink_to(outside)
    started = time.monotonic()
    with pytest.raises(MemoryStoreError) as refused:
        install_hooks(repo)
    assert refused.value.code == "already_exists"
    assert time.monotonic() - started < 5
    assert outside.read_text() == "# gitmem-hook\n"


def test_a_planted_gitmem_folder_link_keeps_the_hooks_log_inside_the_mount(tmp_path: Path) -> None:
    # The hooks' log lives in <mount>/gitmem/; with that folder replaced by a link, a push over a
    # file path is refused (the store will not write through it) and the refusal was then logged
    # through the link, creating hooks.log in whatever folder it named.
    from gitmem import GitFileStore

    store = GitFileStore.init(tmp_path / "m.git")
    install_hooks(store.path)
    store.sync.write("a.md", "alpha\n", expected=None)
    outside = tmp_path / "outside"
    outside.mkdir()
    subprocess.run(["rm", "-rf", str(tmp_path / "m.git" / "gitmem")], check=True)
    (tmp_path / "m.git" / "gitmem").symlink_to(outside)
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(tmp_path / "m.git"), str(work)], check=True)
    (work / "a.md").write_text("alpha\nbeta\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "bob", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "bob",
           "GIT_COMMITTER_EMAIL": "b@x"}  # fmt: skip
    subprocess.run(["git", "-C", str(work), "commit", "-qam", "beta"], check=True, env=env)
    pushed = subprocess.run(["git", "-C", str(work), "push", "origin", "HEAD:main"], capture_output=True, text=True)
    assert pushed.returncode != 0 and "make it a folder again" in pushed.stderr
    log_line(str(tmp_path / "m.git"), "post-receive: a line")
    assert list(outside.iterdir()) == []


def test_a_hooks_folder_planted_as_a_link_is_not_written_through(tmp_path: Path) -> None:
    """``<mount>/hooks`` replaced by a link: the hook scripts were written wherever it pointed."""
    repo = bare(tmp_path)
    shutil.rmtree(repo / "hooks")
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "hooks").symlink_to(outside)
    with pytest.raises(MemoryStoreError) as refused:
        install_hooks(repo)
    assert refused.value.code == "unavailable"
    assert list(outside.iterdir()) == []

"""The hooks' own files under a mount (``hooks.log``, the hook scripts) planted as a FIFO or a link: no hang."""

from __future__ import annotations

import os
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

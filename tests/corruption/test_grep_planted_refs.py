"""`gitmem grep` of ``main`` runs ``git grep <head id>`` over the peek, without the store's checks.

git resolves that id as a name first (``refs/<id>``, ``refs/tags/<id>``, ``refs/heads/<id>``, ...,
then ``packed-refs``), with blocking opens: a FIFO planted at any of them hung ``gitmem grep`` for
good. The gate (``control.check_refs_of`` before a git process starts) refuses it with
``unavailable`` naming the file, as the store does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitmem.root import Root


def _release(fifo: Path) -> None:
    """Let a reader blocked opening ``fifo`` go on (it reads an empty file)."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return
    os.close(fd)


def _planted(tmp_path: Path, where: str, *command: str) -> tuple[int, str, Path, Path]:
    """``gitmem COMMAND`` (a real process) with a FIFO at ``where`` (``{head}``: the head's id) in a memory
    holding ``a.md``: its exit code and error output, the FIFO (released) and the repository."""
    root = Root(tmp_path / "root")
    root.mount("user", create=True).sync.write("a.md", "hello foo\n", expected=None)
    repo = Path(root.existing_folder("user"))
    head = (repo / "refs" / "heads" / "main").read_text().strip()
    fifo = repo / where.format(head=head)
    fifo.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(fifo)
    code = "from gitmem.adapters.cli import main; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "--root", str(tmp_path / "root"), *command],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        _release(fifo)
        proc.kill()
        proc.communicate()
        pytest.fail(f"gitmem {command[0]} blocked on a FIFO at {where}")
    finally:
        _release(fifo)
    return proc.returncode, err, fifo, repo


@pytest.mark.parametrize("where", ["packed-refs", "refs/heads/{head}", "refs/tags/{head}"])
def test_grep_refuses_a_fifo_planted_where_git_resolves_the_head(tmp_path: Path, where: str) -> None:
    code, err, fifo, repo = _planted(tmp_path, where, "grep", "user", "foo")
    assert code == 1 and "unavailable" in err and fifo.name in err, err
    fifo.unlink()
    assert subprocess.run(["git", "--git-dir", str(repo), "fsck", "--strict"], capture_output=True).returncode == 0


def test_blame_refuses_a_fifo_planted_where_git_resolves_the_commit(tmp_path: Path) -> None:
    """``git blame <id>`` resolves the id the same way: it waited out its 120 s deadline before libgit2 answered."""
    code, err, fifo, _ = _planted(tmp_path, "refs/tags/{head}", "blame", "user", "a.md")
    assert code == 1 and "unavailable" in err and fifo.name in err, err

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
    fifo.unlink(missing_ok=True)  # HEAD: in place of the file
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


#: Files git or libgit2 opens in a repository beside its refs, config and pack indexes: each blocks on a FIFO.
GIT_READS = [
    "HEAD",
    "shallow",
    "info/grafts",
    "info/attributes",
    "objects/info/commit-graph",
    "objects/info/commit-graphs/commit-graph-chain",
    "objects/pack/multi-pack-index",
]


@pytest.mark.parametrize("where", GIT_READS)
@pytest.mark.parametrize("command", [("grep", "user", "foo"), ("log", "user"), ("blame", "user", "a.md")])
def test_a_fifo_planted_where_git_or_libgit2_reads_is_refused(
    tmp_path: Path, where: str, command: tuple[str, ...]
) -> None:
    """Not a list of names: every entry of the folders git reads from (the repository's own, ``info``,
    ``objects/info``, its ``commit-graphs`` and ``objects/pack``) is a regular file or a folder, or the
    call is ``unavailable`` naming it. A FIFO at any of these hung ``gitmem grep``, ``log`` or ``blame``."""
    code, err, fifo, repo = _planted(tmp_path, where, *command)
    assert code == 1 and "unavailable" in err and fifo.name in err, err
    fifo.unlink()
    if where == "HEAD":
        fifo.write_text("ref: refs/heads/main\n")
    assert subprocess.run(["git", "--git-dir", str(repo), "fsck", "--strict"], capture_output=True).returncode == 0


@pytest.mark.parametrize("where", ["info", "objects/info/commit-graphs"])
@pytest.mark.parametrize("command", [("grep", "user", "foo"), ("log", "user"), ("blame", "user", "a.md")])
def test_a_file_planted_where_git_reads_a_folder_is_read_past_as_git_does(
    tmp_path: Path, where: str, command: tuple[str, ...]
) -> None:
    """A plain file where git looks for a folder holds nothing git could block on (it opens nothing under
    it): the call answers as git does, never a traceback (``gitmem grep`` died of ``NotADirectoryError``)."""
    root = Root(tmp_path / "root")
    root.mount("user", create=True).sync.write("a.md", "hello foo\n", expected=None)
    repo = Path(root.existing_folder("user"))
    planted = repo / where
    if planted.is_dir():
        for child in planted.iterdir():
            child.unlink()
        planted.rmdir()
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_text("not a folder\n")
    code = "from gitmem.adapters.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "--root", str(tmp_path / "root"), *command],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert ("a.md" if command[0] == "grep" else "hello foo" if command[0] == "blame" else "") in done.stdout
    planted.unlink()
    assert subprocess.run(["git", "--git-dir", str(repo), "fsck", "--strict"], capture_output=True).returncode == 0

"""A reader that opened ``refs/heads/main`` reads a value ``main`` held, whatever writers do meanwhile.

git, libgit2, dulwich and gitmem's own ``head`` each open the file, then read
it, and may be held up for any time between the two calls. A ref file is
therefore never written in place once it was ``main`` (a faster ref move that
rewrote it was tried and is not kept: a reader read a head ``main`` never held).
"""

from __future__ import annotations

import os
from pathlib import Path

from race_support import Worker, assert_fsck_clean, git, head_files, wait_stopped

from gitmem import GitFileStore


def _main(repo: Path) -> str:
    return git(repo, "rev-parse", "main").strip()


def test_a_reader_that_opened_main_reads_a_value_main_held_whatever_writers_do_meanwhile(tmp_path: Path) -> None:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    store.write("a.md", "0\n", expected=None)
    store.write("b.md", "1\n", expected=None)
    reader = os.open(repo / "refs" / "heads" / "main", os.O_RDONLY)  # opened, not read yet
    try:
        held = {_main(repo)}
        store.write("c.md", "2\n", expected=None)  # main moves on: the file the reader opened is left behind
        held.add(_main(repo))
        stopped = Worker(tmp_path, "stop_in_cas", repo=str(repo))
        stopped.wait_for("in-cas")
        wait_stopped(stopped.pid)  # its commit written and its new id on its way to main
        read = os.pread(reader, 64, 0).decode().strip()
        stopped.kill()  # that write is never acknowledged and never reaches main
    finally:
        os.close(reader)
    assert read in held, "the reader got a head main never held"
    assert _main(repo) in held and "stopped.md" not in head_files(repo)
    assert_fsck_clean(repo)

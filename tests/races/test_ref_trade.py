"""``main`` moved by trading names with its lock file: readers and crashes around the trade.

A reader that opened ``refs/heads/main`` (git, libgit2, dulwich, gitmem's own
``head``: each opens the file, then reads it) may be held up for any time
between the two calls; what it reads must still be a value ``main`` held. A
writer killed inside the trade must leave ``main`` whole and not hold up the
next writer.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
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
        stopped = Worker(tmp_path, "stop_in_trade", repo=str(repo), at="exchange")
        stopped.wait_for("in-trade")
        wait_stopped(stopped.pid)  # its commit written and its new id on its way to main
        read = os.pread(reader, 64, 0).decode().strip()
        stopped.kill()  # that write is never acknowledged and never reaches main
    finally:
        os.close(reader)
    assert read in held, "the reader got a head main never held"
    assert _main(repo) in held and "stopped.md" not in head_files(repo)
    assert_fsck_clean(repo)


@pytest.mark.parametrize("at", ["exchange", "unlock"])
def test_a_writer_killed_inside_the_trade_leaves_main_whole_and_the_next_writer_goes_on(
    tmp_path: Path, at: str
) -> None:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    version = store.write("a.md", "0\n", expected=None)
    store.write("b.md", "1\n", expected=None)
    before = _main(repo)
    stopped = Worker(tmp_path, "stop_in_trade", repo=str(repo), at=at)
    stopped.wait_for("in-trade")
    wait_stopped(stopped.pid)
    stopped.kill()
    moved = _main(repo)
    # killed before the exchange: main as it was; after it: main holds the unacknowledged write, whole
    assert (moved == before) == (at == "exchange")
    assert ("stopped.md" in head_files(repo)) == (at == "unlock")
    started = time.monotonic()
    version = store.write("a.md", "2\n", expected=version)
    assert time.monotonic() - started < 5  # not the 30 s a foreign git's lock is waited for
    assert store.read("a.md").text == "2\n" and git(repo, "rev-parse", "main~1").strip() == moved
    assert (repo / "refs" / "heads" / "main").read_text() == store.head() + "\n"
    assert not (repo / "refs" / "heads" / "main.lock").exists()
    assert_fsck_clean(repo)

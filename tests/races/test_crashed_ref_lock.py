"""A ref lock left by a writer that died holding the writer lock goes at once, however the lock file was made.

The next holder of the writer lock finds the dead holder's record still marked
held and deletes the ref lock files made since that record. "Made since" is the
file's change time: a lock made by ``link`` or ``rename`` of an older file keeps
that file's modification time, and was once taken for a foreign git's lock and
waited for until it turned stale (30 s a kill: the kill test hung under load).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from contract.support import assert_fsck_clean

from gitmem import GitFileStore


def test_a_linked_ref_lock_of_a_dead_holder_is_removed_at_once(tmp_path: Path) -> None:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    store.write("a.md", "one\n", expected=None)
    old = tmp_path / "old-file"  # a file made a moment before the dead holder took the lock
    old.write_text((repo / "refs" / "heads" / "main").read_text())
    a_second_ago = time.time() - 1
    os.utime(old, (a_second_ago, a_second_ago))
    record = f"{999_999} held write deadbeef0000 0".ljust(63) + "\n"
    fd = os.open(repo / "gitmem" / "write.lock", os.O_RDWR)
    try:
        os.pwrite(fd, record.encode(), 0)  # a holder that died with the flock: the kernel let it go
    finally:
        os.close(fd)
    time.sleep(0.02)
    # Its lock, made by a link: the mtime is older than the record (and far from stale); the ctime is now.
    os.link(old, repo / "refs" / "heads" / "main.lock")
    fresh = GitFileStore.open(repo).sync
    fresh.repo.stale_lock_seconds = 30
    started = time.monotonic()
    fresh.write("b.md", "two\n", expected=None)
    assert time.monotonic() - started < 10  # not waited for as a foreign git's lock
    assert not (repo / "refs" / "heads" / "main.lock").exists()
    assert fresh.read("b.md").text == "two\n"
    assert_fsck_clean(repo)

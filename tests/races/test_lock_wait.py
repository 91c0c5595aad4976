"""Contended takes of the writer lock: a short poll, then a blocking wait that a timed-out taker lets go of.

A writer that finds the lock taken polls it for a few milliseconds (most
writes hold it for about one), then waits in a blocking ``flock`` made in a
thread of its own (:mod:`gitmem.git.locks`). A taker that times out must not
keep the lock when the blocked ``flock`` is granted later.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from gitmem import GitFileStore, MemoryStoreError
from gitmem.git.repo import GitRepo


def _held_by_another(repo: GitRepo) -> tuple[threading.Event, threading.Thread]:
    other = GitRepo(repo.path)
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with other.lock.hold():
            taken.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert taken.wait(5)
    return release, holder


def test_a_short_hold_is_waited_for_by_polling(tmp_path: Path) -> None:
    repo = GitRepo(str(GitFileStore.init(tmp_path / "m.git").sync.repo.path))
    release, holder = _held_by_another(repo)
    threading.Timer(0.005, release.set).start()
    with repo.lock.hold() as held:
        assert held
    holder.join()
    assert not [t for t in threading.enumerate() if t.name == "gitmem-lock-wait"]


def test_a_taker_that_gave_up_lets_the_lock_go_once_its_wait_is_granted(tmp_path: Path) -> None:
    repo = GitRepo(str(GitFileStore.init(tmp_path / "m.git").sync.repo.path))
    repo.lock_timeout = 0.2
    release, holder = _held_by_another(repo)
    with pytest.raises(MemoryStoreError) as timed_out:
        with repo.lock.hold():
            pass
    assert timed_out.value.code == "unavailable"
    release.set()
    holder.join()
    deadline = time.monotonic() + 5
    while True:  # the abandoned wait got the lock and let it go at once
        with repo.lock.try_hold() as held:
            if held:
                break
        assert time.monotonic() < deadline
        time.sleep(0.01)
    repo.lock_timeout = 5
    store = GitFileStore.open(repo.path).sync
    store.write("after.md", "after\n", expected=None)
    assert store.read("after.md").text == "after\n"


def test_a_long_hold_is_waited_for_in_the_kernel_queue(tmp_path: Path) -> None:
    repo = GitRepo(str(GitFileStore.init(tmp_path / "m.git").sync.repo.path))
    release, holder = _held_by_another(repo)
    threading.Timer(0.3, release.set).start()  # longer than the poll: the blocking wait takes over
    started = time.monotonic()
    with repo.lock.hold() as held:
        assert held
    assert time.monotonic() - started >= 0.25
    holder.join()

"""Contended takes of the writer lock reuse their helper threads, and still hand the lock over fairly.

A writer that finds the lock taken waits for it in a helper thread (a blocking
``flock``) while it listens for its answer (:mod:`gitmem.git.locks`); the helper
is kept for the next wait instead of a thread started per take.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from gitmem import GitFileStore, MemoryStoreError
from gitmem.git import locks
from gitmem.git.repo import GitRepo


def _helpers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "gitmem-lock-wait"]


def _contended_take(lock: locks.WriterLock, blocker: locks.WriterLock) -> None:
    """Take ``lock`` while ``blocker`` (another descriptor) holds it for a moment."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with blocker.hold():
            holding.set()
            release.wait(5)

    other = threading.Thread(target=hold)
    other.start()
    holding.wait(5)
    threading.Timer(0.05, release.set).start()
    with lock.hold() as held:
        assert held
    other.join()


def test_contended_takes_reuse_one_helper_thread(tmp_path: Path) -> None:
    path = tmp_path / "write.lock"
    lock, blocker = locks.WriterLock(str(path), timeout=5), locks.WriterLock(str(path), timeout=5)
    _contended_take(lock, blocker)
    first = set(_helpers())
    assert first  # the wait ran in a helper
    for _ in range(5):
        _contended_take(lock, blocker)
    assert set(_helpers()) == first  # the same thread every time


def test_an_idle_helper_retires(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(locks, "HELPER_IDLE", 0.05)
    path = tmp_path / "write.lock"
    for _ in range(len(locks._idle_helpers)):  # earlier tests' helpers: one job each, then they retire too
        locks._in_helper(lambda: None)
    _contended_take(locks.WriterLock(str(path), timeout=5), locks.WriterLock(str(path), timeout=5))
    deadline = time.monotonic() + 5
    while _helpers() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _helpers() and not locks._idle_helpers


def test_a_helper_whose_caller_gave_up_lets_the_lock_go_and_serves_again(tmp_path: Path) -> None:
    repo = GitRepo(str(GitFileStore.init(tmp_path / "m.git").sync.repo.path))
    repo.lock_timeout = 0.2
    other = GitRepo(repo.path)
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with other.lock.hold():
            taken.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    taken.wait(5)
    with pytest.raises(MemoryStoreError) as timed_out:
        with repo.lock.hold():
            pass
    assert timed_out.value.code == "unavailable"
    release.set()
    holder.join()
    deadline = time.monotonic() + 5
    while True:  # the abandoned helper got the lock, let it go, and went back to the pool
        with repo.lock.try_hold() as held:
            if held:
                break
        assert time.monotonic() < deadline
        time.sleep(0.01)
    repo.lock_timeout = 5
    store = GitFileStore.open(repo.path).sync
    store.write("after.md", "after\n", expected=None)


def test_a_wait_given_up_when_answered_is_adopted_by_the_next_take(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answered waiter leaves its queued flock to its next take: one queued wait, no ghost turn of the lock."""
    made: list[object] = []
    original = locks._Wait

    class Counted(original):  # type: ignore[misc,valid-type]
        __slots__ = ()

        def __init__(self, *args: object) -> None:
            made.append(self)
            super().__init__(*args)

    monkeypatch.setattr(locks, "_Wait", Counted)
    fifo = tmp_path / "wake"
    os.mkfifo(fifo, 0o600)
    wake_fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    answered = threading.Event()
    path = str(tmp_path / "write.lock")
    lock, blocker = locks.WriterLock(path, timeout=5), locks.WriterLock(path, timeout=5)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with blocker.hold():
            holding.set()
            release.wait(10)

    other = threading.Thread(target=hold)
    other.start()
    holding.wait(5)
    try:
        threading.Timer(0.1, lambda: (answered.set(), os.write(wake_fd, b"d"))).start()
        with lock.hold(on_wait=lambda: locks.Wake(wake_fd, answered.is_set)) as held:
            assert not held  # answered while it waited: no lock
        answered.clear()
        threading.Timer(0.1, release.set).start()
        with lock.hold(on_wait=lambda: locks.Wake(wake_fd, answered.is_set)) as held:
            assert held
            assert blocker.holder() is not None and blocker.holder().is_this_process()  # type: ignore[union-attr]
        assert len(made) == 1  # the second take adopted the first one's queued flock
    finally:
        release.set()
        other.join()
        os.close(wake_fd)
    with lock.try_hold() as again:
        assert again


def test_an_abandoned_wait_is_adopted_once(tmp_path: Path) -> None:
    wait = locks._Wait(str(tmp_path / "write.lock"), None)
    assert not wait.adopt(None)  # not abandoned: its taker still wants it
    assert wait.abandon()
    assert wait.adopt(None) and not wait.adopt(None)  # two takers that read the same wait: one gets it
    wait.desc.close()

"""The index lock: one holder, a try that does not wait, and a wait that is handed the lock."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from gitmem.index.lock import IndexLock


def test_a_try_fails_while_another_thread_holds_it_and_a_wait_gets_it_on_release(tmp_path: Path) -> None:
    lock = IndexLock(str(tmp_path / "index.lock"))
    holding, release = threading.Event(), threading.Event()

    def holder() -> None:
        with lock.attempt() as held:
            assert held
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    assert holding.wait(10)
    with lock.attempt() as held:
        assert not held, "a try does not wait"
    with lock.attempt(0.05) as held:
        assert not held, "a short wait gives up while the holder keeps it"
    threading.Timer(0.2, release.set).start()
    with lock.attempt(10) as held:
        assert held, "the waiter is handed the lock when the holder lets go"
    thread.join(10)
    with lock.attempt() as held:
        assert held, "released after the waiter's block"


def test_a_waiter_that_gave_up_does_not_keep_the_lock(tmp_path: Path) -> None:
    lock = IndexLock(str(tmp_path / "index.lock"))
    holding, release = threading.Event(), threading.Event()

    def holder() -> None:
        with lock.attempt() as held:
            assert held
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    assert holding.wait(10)
    with lock.attempt(0.05) as held:
        assert not held
    release.set()
    thread.join(10)
    deadline = time.monotonic() + 10
    while True:  # the abandoned helper may be granted the lock first; it lets go at once
        with lock.attempt() as held:
            if held:
                break
        assert time.monotonic() < deadline, "an abandoned waiter kept the lock"
        time.sleep(0.01)

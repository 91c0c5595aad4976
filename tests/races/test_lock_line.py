"""Threads of one process wait for the writer lock in a line, in the order they came; processes still meet at the flock.

A server runs many writers as threads of one process. They queue in the
process first (:class:`gitmem.git.locks._Line`), each asleep until the one
before it lets go, so only the thread at the front polls the ``flock`` and no
thread starts a blocking wait of its own; a writer in another process is still
waited for at the ``flock`` (polling, then the kernel's queue).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gitmem import GitFileStore, MemoryStoreError
from gitmem.git.repo import GitRepo


def _repo(tmp_path: Path) -> GitRepo:
    return GitRepo(str(GitFileStore.init(tmp_path / "m.git").sync.repo.path))


def test_threads_take_the_lock_in_the_order_they_came_without_polling(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    order: list[int] = []
    release = threading.Event()
    waiting = threading.Semaphore(0)

    def take(n: int) -> None:
        waiting.release()
        with GitRepo(repo.path).lock.hold():
            order.append(n)
            if n == 0:
                release.wait(10)

    threads = [threading.Thread(target=take, args=(0,))]
    threads[0].start()
    deadline = time.monotonic() + 10
    while (holder := repo.lock.holder()) is None or not holder.held:
        assert time.monotonic() < deadline
        time.sleep(0.001)
    for n in range(1, 6):
        threads.append(threading.Thread(target=take, args=(n,)))
        threads[-1].start()
        assert waiting.acquire(timeout=10)
        time.sleep(0.05)  # in the line before the next one comes
    time.sleep(0.1)  # longer than a contended taker polls: the old way had started a wait per thread here
    assert not [t for t in threading.enumerate() if t.name == "gitmem-lock-wait"]
    release.set()
    for t in threads:
        t.join(30)
    assert order == [0, 1, 2, 3, 4, 5]


def test_a_thread_waiting_in_the_line_times_out_as_at_the_flock(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    other = GitRepo(repo.path)
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with other.lock.hold():
            taken.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert taken.wait(5)
    repo.lock_timeout = 0.2
    started = time.monotonic()
    with pytest.raises(MemoryStoreError) as timed_out:
        with repo.lock.hold():
            pass
    assert timed_out.value.code == "unavailable"
    assert time.monotonic() - started < 5  # the default wait is 30 s
    release.set()
    holder.join()
    with repo.lock.hold() as held:  # nobody is left in the line
        assert held


def test_a_writer_in_another_process_is_still_waited_for(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    script = (
        "import sys, time\n"
        "from gitmem.git.repo import GitRepo\n"
        "with GitRepo(sys.argv[1]).lock.hold():\n"
        "    print('held', flush=True)\n"
        "    time.sleep(0.4)\n"
    )
    with subprocess.Popen([sys.executable, "-c", script, repo.path], stdout=subprocess.PIPE, text=True) as child:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        started = time.monotonic()
        with repo.lock.hold() as held:
            assert held
        assert time.monotonic() - started >= 0.2  # it waited for the other process's hold
    assert child.returncode == 0


def test_a_wait_that_fails_on_a_planted_lock_file_leaves_the_line_open(tmp_path: Path) -> None:
    """A link planted as the lock file while a thread waits in the line fails that wait with an
    error naming it; once the link is gone, the next thread of the process takes the lock (the
    failed waiter's turn must not stay in the line, holding every later thread out for good)."""
    from gitmem.git.locks import WriterLock

    path = str(tmp_path / "write.lock")
    lock = WriterLock(path, timeout=1.0)
    held = threading.Event()
    failures: list[str] = []

    def first() -> None:
        with lock.hold("write"):
            held.set()
            time.sleep(2.5)

    def second() -> None:
        try:
            with lock.hold("write"):
                pass
        except MemoryStoreError as exc:
            failures.append(exc.code)

    a = threading.Thread(target=first)
    a.start()
    assert held.wait(10)
    b = threading.Thread(target=second)
    b.start()
    time.sleep(0.3)  # b waits in the line
    Path(path).rename(path + ".orig")  # the holder's descriptor keeps the old file
    Path(path).symlink_to("/etc/passwd")
    b.join(30)
    a.join(30)
    assert failures == ["unavailable"]  # the planted link, named
    Path(path).unlink()
    Path(path + ".orig").rename(path)
    for _ in range(2):
        with lock.hold("write"):
            pass  # taken at once: the line is open again


_TRY = (
    "import fcntl, os, sys\n"
    "fd = os.open(sys.argv[1], os.O_RDWR)\n"
    "try:\n"
    "    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
    "except BlockingIOError:\n"
    "    sys.exit(3)\n"
)


def _taken_elsewhere(path: str) -> bool:
    """Whether another process finds the writer lock taken right now."""
    return subprocess.run([sys.executable, "-c", _TRY, path], timeout=30).returncode == 3


@pytest.mark.parametrize("same_object", [True, False])
@pytest.mark.parametrize("contended", [False, True])
def test_a_hold_inside_a_hold_keeps_the_lock_until_the_outer_one_lets_go(
    tmp_path: Path, same_object: bool, contended: bool
) -> None:
    """A thread holding the writer lock may take it again (a commit made inside a merge or maintenance):
    when the inner hold ends, the lock is still this thread's, for every other process, until the outer
    one ends; taken either way (at once, or after waiting for another process) and through another
    handle of the same memory alike."""
    repo = _repo(tmp_path)
    path = repo.lock.path
    with repo.lock.hold():  # the lock file exists from the first hold on
        pass
    blocker = None
    if contended:  # another process holds it first: the outer hold waits, then gets it from the kernel's queue
        blocker = subprocess.Popen(
            [sys.executable, "-c", "import fcntl, os, sys, time\nfd = os.open(sys.argv[1], os.O_RDWR)\n"
             "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(0.3)\n", path],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert blocker.stdout is not None and blocker.stdout.readline().strip() == "held"
    inner = repo if same_object else GitRepo(repo.path)
    with repo.lock.hold():
        with inner.lock.hold():
            holder = repo.lock.holder()
            assert holder is not None and holder.held
        with inner.lock.try_hold() as got:
            assert got
        holder = repo.lock.holder()
        assert holder is not None and holder.held, "the inner hold marked the lock free"
        assert _taken_elsewhere(path), "the inner hold let the flock go while the outer one still holds it"
    assert not _taken_elsewhere(path)
    holder = repo.lock.holder()
    assert holder is not None and not holder.held
    if blocker is not None:
        blocker.communicate(timeout=30)



_HOLDS = (
    "import fcntl, sys\n"
    "try:\n"
    "    fcntl.flock(int(sys.argv[1]), fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
    "except BlockingIOError:\n"
    "    sys.exit(3)\n"
)


def _holds_the_lock(fd: int) -> bool:
    """Whether ``fd``, handed to a child process (as a git child is given the lock's descriptor), holds the flock:
    taking it again through that descriptor succeeds at once only then."""
    done = subprocess.run([sys.executable, "-c", _HOLDS, str(fd)], pass_fds=(fd,), timeout=30)
    return done.returncode == 0


@pytest.mark.parametrize("inner", ["hold twice", "try_hold"])
def test_held_fd_inside_a_hold_through_another_handle_is_the_descriptor_holding_the_lock(
    tmp_path: Path, inner: str
) -> None:
    """``held_fd`` is handed to a git child that must keep the lock until it exits (should this process
    die first): inside a hold taken through another handle of the memory (also once a hold nested in
    that one ended, and through ``try_hold``) it must be the descriptor holding the flock, not one that
    another process's taker would have to wait behind."""
    repo = _repo(tmp_path)
    with repo.lock.hold():
        pass
    other = GitRepo(repo.path).lock
    with repo.lock.hold():
        if inner == "try_hold":
            with other.try_hold() as got:
                assert got
                assert _holds_the_lock(other.held_fd())
        else:
            with other.hold():
                assert _holds_the_lock(other.held_fd())
                with other.hold():
                    pass
                assert _holds_the_lock(other.held_fd()), "the inner hold's end took the descriptor away"


def test_the_count_survives_holds_nested_through_two_handles(tmp_path: Path) -> None:
    """The number the holders hand on (the packs written since the last fold) keeps every change made
    in holds nested through two handles of one memory, in any order."""
    repo = _repo(tmp_path)
    one, two = repo.lock, GitRepo(repo.path).lock
    with one.hold():
        one.count = 5
    with one.hold():
        with two.hold():
            two.count += 1
            with two.hold():
                two.count += 1
            assert two.count == 7
            with one.hold():
                one.count += 1
            assert two.count == 8
        assert one.count == 8
    with two.hold():
        assert two.count == 8


@pytest.mark.parametrize("same_object", [True, False])
@pytest.mark.parametrize("wait", [False, True])
def test_a_fold_inside_maintenance_keeps_the_fold_lock_until_the_maintenance_ends(
    tmp_path: Path, same_object: bool, wait: bool
) -> None:
    """A fold ends by closing its thread's descriptor of the fold lock; run inside a hold of that lock
    (a write's fold inside gc, purge or forget), that descriptor was the outer hold's: the lock went
    to any other process mid-maintenance, and the maintenance's end wrote its record through a
    closed descriptor, which the process may have handed to another file meanwhile."""
    repo = _repo(tmp_path)
    with repo.maintenance("gc"):
        pass
    inner = repo if same_object else GitRepo(repo.path)
    path = repo.fold_lock.path
    with repo.maintenance("gc"):
        assert inner.fold_once(wait)
        assert _taken_elsewhere(path), "the nested fold let the fold lock go while maintenance still holds it"
        holder = repo.fold_lock.holder()
        assert holder is not None and holder.held
    assert not _taken_elsewhere(path)
    holder = repo.fold_lock.holder()
    assert holder is not None and not holder.held


@pytest.mark.parametrize("same_object", [True, False])
def test_a_hold_inside_a_try_hold_keeps_the_lock_until_the_try_hold_ends(tmp_path: Path, same_object: bool) -> None:
    """``try_hold`` (a fold that does not wait) took the flock without its place in the process's line: a
    hold nested in it through the same handle let the flock go at its end while the outer one went on,
    and one through another handle of the memory waited out its timeout behind its own thread."""
    repo = GitRepo(str(GitFileStore.init(tmp_path / "m.git").sync.repo.path), lock_timeout=2.0)
    path = repo.fold_lock.path
    with repo.fold_lock.hold():
        pass
    inner = repo if same_object else GitRepo(repo.path, lock_timeout=2.0)
    with repo.fold_lock.try_hold("fold") as got:
        assert got
        with inner.fold_lock.hold("fold"):
            pass
        assert _taken_elsewhere(path), "the nested hold let the lock go while the try_hold still holds it"
        holder = repo.fold_lock.holder()
        assert holder is not None and holder.held
    assert not _taken_elsewhere(path)
    held_elsewhere = threading.Event()
    done = threading.Event()

    def other_thread() -> None:
        with repo.fold_lock.hold("fold"):
            held_elsewhere.set()
            done.wait(30)

    worker = threading.Thread(target=other_thread)
    worker.start()
    assert held_elsewhere.wait(30)
    with repo.fold_lock.try_hold("fold") as got:  # another thread holds it: not taken, at once
        assert not got
    done.set()
    worker.join(30)

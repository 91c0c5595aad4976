"""Cross-process exclusion for writers, and recovery of locks left by crashed ones.

gitmem writers serialise on an ``flock`` held on ``<repo>/gitmem/write.lock``.
The kernel drops an ``flock`` when its holder dies, so a SIGKILLed writer can
never block the others. Waiting is fair and bounded: a contended writer waits in
a blocking ``flock`` (the kernel wakes blocked waiters, so a busy writer looping on
the lock cannot starve them) and gives up as ``unavailable`` after ``timeout``
seconds (30 by default; a write holds the lock for milliseconds, so 30 s means something is
wrong). Maintenance (forget, purge, gc) can hold it for minutes on a large
memory; its holder says so in the lock file, and waiters then keep waiting up
to :data:`LONG_WAIT` rather than failing while the memory is merely busy.

libgit2's own ``refs/heads/main.lock`` has no such property: a writer killed
between creating and renaming it leaves it behind, and every git client
(libgit2, dulwich, the git CLI) refuses to update ``main`` until it is gone.
Two cases are told apart by the *holder record*: each holder writes its pid and
what it does into ``write.lock`` when it gets the flock, and marks the record
free when it lets go. A new holder that finds a record still marked held by
another process knows that writer crashed: the kernel gave us the flock, so no
live process holds it any more. The record's pid is not asked whether it lives
(``kill(pid, 0)``): a killed writer that its parent has not reaped yet is a
zombie, which answers "alive" for as long as the parent takes (the cause of
writers stalling behind a killed one). Ref lock files created since that record
was written are the dead writer's leftovers and go at once
(:func:`remove_crashed_locks`). The new holder writes its own record only after
that clean-up, so a writer killed in the middle of it leaves the old record for
the next one to act on. Any other lock file belongs to a foreign git process
that may still be working: it is waited for, and only broken once it has not
changed for ``stale_lock_seconds`` (:func:`remove_if_stale`).
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import select
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

from gitmem.errors import MemoryStoreError
from gitmem.git.perms import open_private

LONG_OPS = frozenset({"forget", "purge", "gc"})
"""Operations whose holder makes waiters wait up to :data:`LONG_WAIT` instead of their timeout."""
LONG_WAIT = 1800.0
"""Seconds a writer waits behind maintenance: each git command it runs is bounded by 600 s."""

_RECORD_SIZE = 64


@dataclass(frozen=True, slots=True)
class Holder:
    """What ``write.lock`` says about its last holder."""

    pid: int
    held: bool
    op: str
    written_ns: int  # the record's mtime: when it got the lock if still held
    token: str = ""  # tells this process from an earlier one that had the same pid
    count: int = 0  # a number the holders pass on to each other (see WriterLock.count)

    def is_this_process(self) -> bool:
        return self.pid == _me[0] and self.token == process_token()


_me: list[int | str] = [os.getpid(), ""]  # this process's id and token; a forked child resets both


def _forked_me() -> None:
    _me[:] = [os.getpid(), ""]


os.register_at_fork(after_in_child=_forked_me)


def process_token() -> str:
    """A random word fixed for the life of this process (a forked child draws its own)."""
    token = _me[1]
    if not token:
        token = _me[1] = secrets.token_hex(6)
    return str(token)


def _read_record(fd: int, *, timed: bool = True) -> Holder | None:
    """The holder record in ``fd``; without ``timed`` its ``written_ns`` is 0 (no ``fstat``)."""
    try:
        raw = os.pread(fd, _RECORD_SIZE, 0)
        written = os.fstat(fd).st_mtime_ns if timed else 0
    except OSError:
        return None
    parts = raw.decode("ascii", "replace").split()
    if len(parts) not in (3, 4, 5) or not parts[0].isdigit() or parts[1] not in ("held", "free"):
        return None
    count = int(parts[4]) if len(parts) == 5 and parts[4].isdigit() else 0
    return Holder(int(parts[0]), parts[1] == "held", parts[2], written, parts[3] if len(parts) >= 4 else "", count)


def _write_record(fd: int, state: str, op: str, count: int = 0) -> None:
    line = f"{_me[0]} {state} {op[:24]} {process_token()} {count}"[: _RECORD_SIZE - 1].ljust(_RECORD_SIZE - 1) + "\n"
    try:
        os.pwrite(fd, line.encode("ascii", "replace"), 0)
    except OSError:  # a full disk must not turn into a failed write; only crash recovery is lost
        pass


class _Helper:
    """A thread that runs lock waits (a blocking ``flock``) for contended takers, reused from wait to wait.

    Starting a thread per contended take cost about a third of a millisecond of
    CPU each, as much as the rest of the hand-off; idle helpers wait here for the
    next job and retire after :data:`HELPER_IDLE` seconds without one.
    """

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.job: Callable[[], None] | None = None
        self.thread = threading.Thread(target=self._serve, name="gitmem-lock-wait", daemon=True)
        self.thread.start()

    def give(self, job: Callable[[], None]) -> None:
        with self.cond:
            self.job = job
            self.cond.notify()

    def _serve(self) -> None:
        while True:
            with self.cond:
                while self.job is None:
                    if not self.cond.wait(timeout=HELPER_IDLE) and self.job is None:
                        with _helpers_guard:
                            if self in _idle_helpers:
                                _idle_helpers.remove(self)
                                return
                job = self.job
            try:
                job()
            except Exception:  # pragma: no cover - the job's caller times out as it would without a helper
                pass
            with self.cond:
                self.job = None
            with _helpers_guard:
                if os.getpid() == _helpers_pid[0]:
                    _idle_helpers.append(self)


HELPER_IDLE = 30.0
"""Seconds an idle lock helper thread waits for another job before it exits."""
_idle_helpers: list[_Helper] = []
_helpers_guard = threading.Lock()
_helpers_pid = [os.getpid()]


def _helpers_forked() -> None:
    """The parent's helper threads do not exist in a forked child."""
    global _helpers_guard
    _helpers_guard = threading.Lock()
    _idle_helpers.clear()
    _helpers_pid[0] = os.getpid()


os.register_at_fork(after_in_child=_helpers_forked)


def _in_helper(job: Callable[[], None]) -> None:
    """Run ``job`` in an idle helper thread, or a new one."""
    with _helpers_guard:
        helper = _idle_helpers.pop() if _idle_helpers else None
    if helper is None:
        helper = _Helper()
    helper.give(job)


class _Wait:
    """One blocking ``flock`` queued in the kernel for a contended taker, run by a helper thread.

    A taker answered while it waited (its request committed by the holder,
    :mod:`gitmem.git.spool`) abandons the wait: a grant that comes after is let
    go at once. Before that, the next contended taker of the same
    :class:`WriterLock` *adopts* it (:meth:`adopt`) instead of queuing a second
    ``flock``: each answered waiter used to leave a queued ``flock`` behind, and
    the lock then passed through every one of them (a thread wake-up, and the
    interpreter lock of a process busy with its next write) before it reached
    a writer that wanted it.
    """

    __slots__ = ("abandoned", "desc", "finished", "got", "guard", "wake")

    def __init__(self, path: str, wake: Wake | None) -> None:
        self.desc = LockDescriptor(path)
        self.got = threading.Event()
        self.guard = threading.Lock()
        self.abandoned = False
        self.finished = False  # an abandoned grant was let go: nothing left to adopt
        self.wake = wake

    def run(self) -> None:
        fd = self.desc.fd
        try:
            if fd is None:  # pragma: no cover - closed before the helper ran
                raise OSError("the lock descriptor is closed")
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # pragma: no cover - the descriptor was closed under us
            with self.guard:
                self.finished = True
            return
        with self.guard:
            if not self.abandoned:
                self.got.set()
                if self.wake is not None:
                    with suppress(OSError):
                        os.write(self.wake.fd, b"l")
                return
            self.finished = True
        fcntl.flock(fd, fcntl.LOCK_UN)
        self.desc.close()

    def abandon(self) -> bool:
        """Give the wait up; ``False`` if the lock was granted already (the caller holds it after all)."""
        with self.guard:
            if self.got.is_set():
                return False
            self.abandoned = True
            return True

    def adopt(self, wake: Wake | None) -> bool:
        """Take over an abandoned wait still queued in the kernel (same process); whether it could be.

        Only one taker can: the first clears ``abandoned``, and a wait not abandoned is not adoptable.
        """
        if self.desc.pid != os.getpid():  # a forked child: the wait and its helper are the parent's
            return False
        with self.guard:
            if self.finished or self.got.is_set() or not self.abandoned:
                return False
            self.abandoned = False
            self.wake = wake
            return True


@dataclass(frozen=True, slots=True)
class Wake:
    """A descriptor (a FIFO the waiter reads) to wait on besides the lock, and whether the wait is over."""

    fd: int
    answered: Callable[[], bool]


class LockDescriptor:
    """An open lock file that is closed once its thread or its :class:`WriterLock` is gone.

    Stores are cheap to open (``Root.mount`` makes a new one per call), so a
    descriptor that outlived its store would leak one fd per store and thread.
    """

    def __init__(self, path: str) -> None:
        self.fd: int | None = None  # set first: __del__ runs even when open fails
        self.pid = os.getpid()
        self.held = False  # for re-entrant users such as the index lock
        self.fd = open_private(path, os.O_RDWR | os.O_CREAT)

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        try:
            self.close()
        except OSError:  # pragma: no cover - nothing useful to do at collection time
            pass


class WriterLock:
    """An exclusive lock shared by every thread and process that writes one repo.

    Each thread opens its own descriptor: ``flock`` locks belong to an open file
    description, so threads sharing one descriptor would not exclude each other.
    After ``fork`` the child opens a fresh descriptor for the same reason.
    """

    def __init__(self, path: str, *, timeout: float = 30.0, on_crash: Callable[[Holder], None] | None = None) -> None:
        self.path = path
        self.timeout = timeout
        self.on_crash = on_crash
        self._local = threading.local()
        self._abandoned: _Wait | None = None  # a wait its taker gave up on, still queued: the next taker adopts it

    def _keep(self, wait: _Wait) -> None:
        self._abandoned = wait

    def _fd(self) -> int:
        desc: LockDescriptor | None = getattr(self._local, "desc", None)
        if desc is None or desc.fd is None or desc.pid != _me[0]:  # _me: no getpid system call per write
            desc = LockDescriptor(self.path)
            self._local.desc = desc
        assert desc.fd is not None
        return desc.fd

    def held_fd(self) -> int:
        """The descriptor holding the lock in this thread; pass it to a child process that must keep the lock until it exits."""
        holding: int | None = getattr(self._local, "holding", None)
        return holding if holding is not None else self._fd()

    def holder(self) -> Holder | None:
        """The last holder's record (the current one while the lock is taken)."""
        return _read_record(self._fd())

    def _acquire(
        self,
        fd: int,
        on_wait: Callable[[], Wake | None] | None = None,
        give_up: Callable[[], bool] | None = None,
    ) -> int | None:
        """Take the lock; returns the descriptor that holds it.

        Uncontended, one non-blocking ``flock`` on the thread's descriptor does it.
        Contended, a helper thread (reused across waits, :class:`_Helper`) waits in
        a *blocking* ``flock`` on a fresh descriptor: the kernel hands the lock to blocked waiters when it is
        released, whereas a poller sleeping between tries can be starved by a
        writer that releases and re-takes the lock in a loop. The caller waits for
        the helper with the deadline; a helper whose caller gave up releases the
        lock as soon as it gets it. ``on_wait`` runs once the lock is found taken,
        before waiting; ``give_up`` is asked at the deadline and may say no (keep
        waiting, up to :data:`LONG_WAIT`).

        When ``on_wait`` returns a :class:`Wake`, the caller also waits on its
        descriptor, which the helper writes to once it has the lock: another
        writer may answer the caller's request before the lock is ours. If
        ``answered()`` then says so, the wait ends *without* the lock (``None``;
        the helper lets the lock go as soon as it gets it).
        """
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            pass
        wake = on_wait() if on_wait is not None else None
        earlier, self._abandoned = self._abandoned, None  # two takers may read the same one: adopt() lets one
        if earlier is not None and earlier.adopt(wake):
            wait = earlier  # its flock is already queued in the kernel: no new one, no ghost turn
        else:
            wait = _Wait(self.path, wake)
            _in_helper(wait.run)
        started = time.monotonic()
        while True:
            if wake is None:
                if wait.got.wait(timeout=min(self.timeout, 1.0)):
                    break
            else:
                select.select([wake.fd], [], [], min(self.timeout, 1.0))
                with suppress(OSError):
                    os.read(wake.fd, 512)
                if wait.got.is_set():
                    break
                if wake.answered():
                    if wait.abandon():
                        self._keep(wait)
                        return None
                    break
            waited = time.monotonic() - started
            if waited < self.timeout:
                continue
            holder = _read_record(fd)
            long_op = holder is not None and holder.held and holder.op in LONG_OPS
            if long_op and waited < max(self.timeout, LONG_WAIT):
                continue
            with wait.guard:  # no grant between asking give_up and giving up
                if wait.got.is_set():
                    break
                if give_up is not None and not give_up() and waited < max(self.timeout, LONG_WAIT):
                    continue
                wait.abandoned = True
            self._keep(wait)
            who = f" ({holder.op} by pid {holder.pid})" if holder is not None and holder.held else ""
            raise MemoryStoreError(
                "unavailable",
                f"another writer{who} has held this memory's write lock for over {waited:.0f} s; try again",
            )
        waiter = wait.desc
        assert waiter.fd is not None
        self._local.waiter = waiter  # keeps the descriptor open while it holds the lock
        return waiter.fd

    def hold(
        self,
        op: str = "write",
        *,
        on_wait: Callable[[], Wake | None] | None = None,
        give_up: Callable[[], bool] | None = None,
    ) -> _Hold:
        """Hold the lock for ``op`` (a word; see :data:`LONG_OPS`); ``unavailable`` after the timeout.

        ``on_wait`` and ``give_up``: see :meth:`_acquire` (the cross-process group commit's hooks).
        The context yields ``True``; ``False`` (the lock *not* held) only when ``on_wait``'s
        :class:`Wake` said the caller was answered while it waited.
        """
        return _Hold(self, op, on_wait, give_up)

    def _let_go(self, fd: int) -> None:
        """Forget the descriptor that held the lock in this thread (closing a helper's once its wait is over)."""
        local = self._local
        local.holding = None
        waiter: LockDescriptor | None = getattr(local, "waiter", None)
        if waiter is not None and waiter.fd == fd:
            local.waiter = None
            waiter.close()

    @property
    def count(self) -> int:
        """A number the holders hand on to each other through the lock file; read and set only while holding.

        It costs nothing extra: the holder record is written at every take and
        release anyway. The git store keeps its estimate of the pack count here,
        so a write need not list ``objects/pack`` to know when to fold.
        """
        return int(getattr(self._local, "count", 0))

    @count.setter
    def count(self, value: int) -> None:
        self._local.count = max(0, value)

    def is_free(self) -> bool:
        """Whether no thread or process holds the lock right now: taken without waiting and let go at once.

        Only a glimpse (it may be taken the moment after), for a caller that
        would rather not wait behind the holder: :func:`gitmem.git.folds.count_pack`.
        """
        if getattr(self._local, "holding", None) is not None:
            return False  # ours: letting go of the probe would let go of our hold
        probe = LockDescriptor(self.path)  # not the thread's: a probe keeps no descriptor open
        try:
            assert probe.fd is not None
            fcntl.flock(probe.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        finally:
            probe.close()  # closing lets the probe's flock go
        return True

    @contextmanager
    def try_hold(self, op: str = "write") -> Iterator[bool]:
        """Hold the lock if it is free right now (yields ``True``), else yield ``False`` at once without it."""
        fd = self._fd()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        self._local.holding = fd
        try:
            _write_record(fd, "held", op)
            try:
                yield True
            finally:
                _write_record(fd, "free", op)
        finally:
            self._local.holding = None
            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        desc: LockDescriptor | None = getattr(self._local, "desc", None)
        self._local.desc = None
        if desc is not None:
            desc.close()


class _Hold:
    """One taking of a :class:`WriterLock` (:meth:`WriterLock.hold`), as a plain context manager.

    Every write enters one; a class costs less than a generator-based
    ``contextmanager`` (no generator, no wrapper object stepping it).
    """

    __slots__ = ("fd", "give_up", "lock", "on_wait", "op")

    def __init__(
        self,
        lock: WriterLock,
        op: str,
        on_wait: Callable[[], Wake | None] | None,
        give_up: Callable[[], bool] | None,
    ) -> None:
        self.lock = lock
        self.op = op
        self.on_wait = on_wait
        self.give_up = give_up
        self.fd: int | None = None

    def __enter__(self) -> bool:
        lock = self.lock
        fd = lock._acquire(lock._fd(), self.on_wait, self.give_up)
        if fd is None:
            return False
        local = lock._local
        local.holding = fd
        try:
            previous = _read_record(fd, timed=False)
            # Marked held by another process while we hold the flock: its holder died
            # (or is a zombie) with it. Ours: a record this process could not mark
            # free (a full disk), not a crash. Only then is the record's time needed.
            if previous is not None and previous.held and not previous.is_this_process() and lock.on_crash is not None:
                crashed = _read_record(fd)
                if crashed is not None:
                    lock.on_crash(crashed)
            local.count = previous.count if previous is not None else 0
            _write_record(fd, "held", self.op, local.count)
        except BaseException:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                lock._let_go(fd)
            raise
        self.fd = fd
        return True

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        fd = self.fd
        if fd is None:
            return
        self.fd = None
        lock = self.lock
        try:
            _write_record(fd, "free", self.op, lock._local.count)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            lock._let_go(fd)


def remove_crashed_locks(repo_path: str, since_ns: int) -> list[str]:
    """Delete the ref and config lock files created at or after ``since_ns`` (a file mtime).

    Call only while holding the :class:`WriterLock`, right after finding that
    its previous holder died holding it (the record written at ``since_ns``):
    those files are that writer's leftovers. Returns the paths removed.
    """
    found = [os.path.join(repo_path, name) for name in ("packed-refs.lock", "config.lock", "HEAD.lock")]
    for folder, _, names in os.walk(os.path.join(repo_path, "refs")):
        found.extend(os.path.join(folder, n) for n in names if n.endswith(".lock"))
    removed: list[str] = []
    for path in found:
        try:
            if os.stat(path).st_mtime_ns >= since_ns:
                os.unlink(path)
                removed.append(path)
        except FileNotFoundError:
            continue
    return removed


def remove_if_stale(lock_path: str, stale_after: float) -> bool:
    """Delete ``lock_path`` when it has not changed for ``stale_after`` seconds.

    Call only while holding the :class:`WriterLock`. Returns whether a lock file
    was removed.
    """
    try:
        st = os.stat(lock_path)
    except FileNotFoundError:
        return False
    if time.time() - st.st_mtime < stale_after:
        return False
    try:
        current = os.stat(lock_path)
        if current.st_ino != st.st_ino:
            return False
        os.unlink(lock_path)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return False
        raise
    return True

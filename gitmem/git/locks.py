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
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from gitmem.errors import MemoryStoreError
from gitmem.git.perms import open_private

LONG_OPS = frozenset({"forget", "purge", "gc"})
"""Operations whose holder makes waiters wait up to :data:`LONG_WAIT` instead of their timeout."""
LONG_WAIT = 1800.0
"""Seconds a writer waits behind maintenance: each git command it runs is bounded by 600 s."""

_RECORD_SIZE = 64
POLL_FOR = 0.02
"""Seconds a contended taker polls the lock before it queues a blocking wait."""
POLL_FIRST, POLL_MAX = 0.00005, 0.001


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
    _lines.clear()  # a thread that held a line at the fork does not exist in the child


os.register_at_fork(after_in_child=_forked_me)


def process_token() -> str:
    """A random word fixed for the life of this process (a forked child draws its own)."""
    token = _me[1]
    if not token:
        import secrets  # here, not at the top: a read never takes the writer lock (secrets loads hmac, random)

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


class FlockWait:
    """One blocking ``flock`` for a contended taker, made in a thread of its own on a fresh descriptor.

    The kernel hands a released ``flock`` to a blocked waiter, so a writer that
    lets go and takes the lock again in a loop cannot starve the others (a
    poller sleeping between tries can be). ``flock`` has no timeout, hence the
    thread: the taker waits for it with a deadline, and a grant that comes after
    the taker gave up is let go at once.
    """

    __slots__ = ("abandoned", "desc", "got", "guard")

    def __init__(self, path: str) -> None:
        self.desc = LockDescriptor(path)
        self.got = threading.Event()
        self.guard = threading.Lock()
        self.abandoned = False
        threading.Thread(target=self._run, name="gitmem-lock-wait", daemon=True).start()

    def _run(self) -> None:
        fd = self.desc.fd
        assert fd is not None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # pragma: no cover - the taker times out as it would anyway
            return
        with self.guard:
            if not self.abandoned:
                self.got.set()
                return
        self.desc.close()  # the taker gave up: closing lets the lock go

    def give_up(self) -> bool:
        """Abandon the wait; ``False`` when the lock was granted first (the taker holds it after all)."""
        with self.guard:
            if self.got.is_set():
                return False
            self.abandoned = True
            return True


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

    def _fd(self) -> int:
        desc: LockDescriptor | None = getattr(self._local, "desc", None)
        if desc is None or desc.fd is None or desc.pid != _me[0]:  # _me: no getpid system call per write
            desc = LockDescriptor(self.path)
            self._local.desc = desc
        assert desc.fd is not None
        return desc.fd

    def held_fd(self) -> int:
        """The descriptor holding the lock in this thread; pass it to a child process that must keep the lock until it exits."""
        line = _held_line(self.path)
        if line is not None:  # held through any handle of the memory: the outer hold's descriptor
            assert line.fd is not None
            return line.fd
        holding: int | None = getattr(self._local, "holding", None)
        return holding if holding is not None else self._fd()

    def holder(self) -> Holder | None:
        """The last holder's record (the current one while the lock is taken)."""
        return _read_record(self._fd())

    def _acquire(self, fd: int) -> int:
        """Take the lock; returns the descriptor that holds it (``unavailable`` after the timeout).

        Uncontended, one non-blocking ``flock`` on the thread's descriptor does it.
        Contended, it first tries again for :data:`POLL_FOR` with growing pauses
        (a write holds the lock for about a millisecond, so most waits end here,
        without a thread), then a :class:`FlockWait` queues a blocking ``flock``,
        which the kernel grants in turn, so no writer can be starved for long. A
        holder doing long maintenance (its record says so) is waited for up to
        :data:`LONG_WAIT`.
        """
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            pass
        started = time.monotonic()
        pause = POLL_FIRST
        while time.monotonic() - started < POLL_FOR:
            time.sleep(pause)
            pause = min(pause * 1.5, POLL_MAX)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                pass
        wait = FlockWait(self.path)
        while not wait.got.wait(timeout=min(self.timeout, 1.0)):
            waited = time.monotonic() - started
            if waited < self.timeout:
                continue
            holder = _read_record(fd)
            long_op = holder is not None and holder.held and holder.op in LONG_OPS
            if long_op and waited < max(self.timeout, LONG_WAIT):
                continue
            if not wait.give_up():
                break
            who = f" ({holder.op} by pid {holder.pid})" if holder is not None and holder.held else ""
            raise MemoryStoreError(
                "unavailable",
                f"another writer{who} has held this memory's write lock for over {waited:.0f} s; try again",
            )
        self._local.waiter = wait.desc  # keeps the descriptor open while it holds the lock
        assert wait.desc.fd is not None
        return wait.desc.fd

    def hold(self, op: str = "write") -> _Hold:
        """Hold the lock for ``op`` (a word; see :data:`LONG_OPS`); ``unavailable`` after the timeout."""
        return _Hold(self, op)

    def _let_go(self, fd: int) -> None:
        """Forget the descriptor that held the lock in this thread (closing a contended wait's once it is over)."""
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
        release anyway. The write engine keeps the packs written since the last
        fold here, so a write need not list ``objects/pack`` to know when to fold.
        While this thread holds the lock it lives with the hold (:class:`_Line`), so
        holds nested through other handles of the memory read and change one number.
        """
        line = _held_line(self.path)
        if line is not None:
            return line.count
        return int(getattr(self._local, "count", 0))

    @count.setter
    def count(self, value: int) -> None:
        line = _held_line(self.path)
        if line is not None:
            line.count = max(0, value)
        else:
            self._local.count = max(0, value)

    @contextmanager
    def try_hold(self, op: str = "write") -> Iterator[bool]:
        """Hold the lock if it is free right now (yields ``True``), else yield ``False`` at once without it.

        Taken with its place in the process's line (:class:`_Line`), as :meth:`hold` takes it:
        a hold nested inside, through this handle or another of the memory, is then this
        hold's (without it, one through this handle let the ``flock`` go at its end, and one
        through another waited out its timeout behind its own thread). Another thread of the
        process holding or awaiting the lock is a ``False``, as another process is.
        """
        if _held_line(self.path) is not None:
            yield True  # this thread holds it already: the flock and the record stay its outer hold's
            return
        line = _lines.get(self.path) or _line(self.path)
        if not line.pass_free():
            yield False
            return
        try:
            fd = self._fd()
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            taken = True
        except BlockingIOError:
            taken = False
        except BaseException:
            line.leave()
            raise
        if not taken:
            line.leave()
            yield False
            return
        self._local.holding = fd
        line.fd, line.count = fd, 0
        try:
            previous = _read_record(fd, timed=False)  # the count the last holder handed on, as hold() reads it
            line.count = previous.count if previous is not None else 0
            _write_record(fd, "held", op, line.count)
            try:
                yield True
            finally:
                _write_record(fd, "free", op, line.count)
        finally:
            self._local.holding = None
            self._local.count = line.count
            line.fd = None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                line.leave()

    def close(self) -> None:
        """Close this thread's descriptor of the lock file, unless a hold of this thread still holds the lock by it.

        Closing the descriptor lets the ``flock`` go: a close inside an outer hold (a fold's,
        run inside gc, purge or forget) gave the lock to any other process mid-hold, and the
        outer hold then wrote its record through a number the process may have reused. The
        descriptor then stays, for the outer hold to let go and this thread to use again.
        """
        desc: LockDescriptor | None = getattr(self._local, "desc", None)
        if desc is None:
            return
        line = _held_line(self.path)
        if desc.fd is not None and desc.fd in (getattr(self._local, "holding", None), line and line.fd):
            return
        self._local.desc = None
        desc.close()


class _Line:
    """The threads of this process that want one lock, let through one at a time in the order they came.

    Only the thread at the front takes the ``flock`` (polling, then queueing in
    the kernel, against other processes); the others sleep on an event of their
    own until the one before them lets go. Without it, every contended thread of
    a server polled the lock and then started a waiting thread of its own, which
    cost more CPU than the write it waited for. A thread that holds the lock may
    take it again, through any :class:`WriterLock` of the memory (a commit made
    inside a merge or maintenance): ``fd`` is the outer hold's descriptor, and
    only that hold writes the record and lets the ``flock`` go
    (an inner one that did let go the lock while the outer one went on; one
    through another handle waited out its timeout on its own process). ``count``
    is :attr:`WriterLock.count` while held, whichever handle reads or sets it.
    """

    __slots__ = ("_depth", "_guard", "_owner", "_waiting", "count", "fd")

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._waiting: deque[threading.Event] = deque()
        self._owner: object = None  # the thread's id, or the event of the thread being let through
        self._depth = 0
        self.fd: int | None = None  # the descriptor holding the flock, while its owner holds it
        self.count = 0  # the holders' number (WriterLock.count), while its owner holds the lock

    def pass_free(self) -> bool:
        """Take the turn if nobody holds or awaits it (or this thread holds it); ``False``: :meth:`enter` waits."""
        me = threading.get_ident()
        with self._guard:
            if self._owner == me or (self._owner is None and not self._waiting):
                self._owner, self._depth = me, self._depth + 1
                return True
        return False

    def enter(self, give_up: Callable[[], bool], every: float) -> None:
        """Wait for this thread's turn; ``give_up()`` is asked every ``every`` seconds and ends the wait when true."""
        me = threading.get_ident()
        with self._guard:
            if self._owner == me or (self._owner is None and not self._waiting):
                self._owner, self._depth = me, self._depth + 1
                return
            turn = threading.Event()
            self._waiting.append(turn)
        try:
            while not turn.wait(every):
                if give_up():
                    raise _GaveUp
        except BaseException as exc:
            # Whatever ends the wait (giving up, or give_up() itself failing on a planted
            # lock file) must not leave this turn in the line: a turn nobody takes would
            # hold every later thread of the process out of the lock for good.
            with self._guard:
                if not turn.is_set():
                    self._waiting.remove(turn)
                    raise
                if not isinstance(exc, _GaveUp):  # let through meanwhile, but failing: pass the turn on
                    self._hand_on()
                    raise
            # gave up just as it was let through: take the turn
        with self._guard:
            self._owner, self._depth = me, 1

    def held_by(self, thread: int) -> bool:
        return self._owner == thread

    def leave(self) -> None:
        with self._guard:
            self._depth -= 1
            if not self._depth:
                self._hand_on()

    def _hand_on(self) -> None:
        """Let the next thread in line through, or free the line (hold ``_guard``)."""
        if self._waiting:
            turn = self._waiting.popleft()
            self._owner = turn
            turn.set()
        else:
            self._owner = None


class _GaveUp(Exception):
    pass


_lines: dict[str, _Line] = {}  # by lock path; emptied in a forked child


def lock_held_here(path: str) -> bool:
    """Whether this thread holds the writer lock at ``path`` (through any :class:`WriterLock` of it)."""
    found = _lines.get(path)
    return found is not None and found.held_by(threading.get_ident())


def _held_line(path: str) -> _Line | None:
    """The line of the lock at ``path`` if this thread holds that lock (through any handle), else ``None``."""
    found = _lines.get(path)
    if found is not None and found.fd is not None and found.held_by(threading.get_ident()):
        return found
    return None


def _line(path: str) -> _Line:
    found = _lines.get(path)
    return found if found is not None else _lines.setdefault(path, _Line())  # setdefault: one winner


class _Hold:
    """One taking of a :class:`WriterLock` (:meth:`WriterLock.hold`), as a plain context manager.

    The threads of one process queue in a :class:`_Line` first; the one at its
    front takes the ``flock``.
    """

    __slots__ = ("fd", "line", "lock", "op")

    def __init__(self, lock: WriterLock, op: str) -> None:
        self.lock = lock
        self.op = op
        self.fd: int | None = None
        self.line: _Line | None = None

    def __enter__(self) -> bool:
        lock = self.lock
        line = _lines.get(lock.path) or _line(lock.path)
        if line.fd is not None and line.held_by(threading.get_ident()):
            # This thread holds the lock already (a commit inside a merge or maintenance): the flock
            # and the holder record stay the outer hold's, which alone lets them go.
            line.pass_free()
            self.line = line  # the descriptor and the count are the line's (held_fd, count)
            return True
        if not line.pass_free():  # another thread of this process holds or awaits the lock: wait in line
            self._wait_in(line)
        try:
            fd = lock._acquire(lock._fd())
        except BaseException:
            line.leave()
            raise
        self.line = line
        self._enter_held(fd)
        line.fd, line.count = fd, lock._local.count
        return True

    def _wait_in(self, line: _Line) -> None:
        """This thread's turn in ``line``; ``unavailable`` once the lock's timeout passed (longer behind maintenance)."""
        lock = self.lock
        started = time.monotonic()

        def give_up() -> bool:
            waited = time.monotonic() - started
            if waited < lock.timeout:
                return False
            holder = _read_record(lock._fd())
            return not (holder is not None and holder.held and holder.op in LONG_OPS and waited < LONG_WAIT)

        try:
            line.enter(give_up, min(1.0, max(lock.timeout, 0.01)))
        except _GaveUp:
            holder = _read_record(lock._fd())
            who = f" ({holder.op} by pid {holder.pid})" if holder is not None and holder.held else ""
            raise MemoryStoreError(
                "unavailable",
                f"another writer{who} has held this memory's write lock for over {time.monotonic() - started:.0f} s; "
                "try again",
            ) from None

    def _enter_held(self, fd: int) -> None:
        lock = self.lock
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
                self._leave_line()
            raise
        self.fd = fd

    def _leave_line(self) -> None:
        line, self.line = self.line, None
        if line is not None:
            line.leave()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        fd = self.fd
        lock = self.lock
        if fd is None:  # a hold inside this thread's own: only its place in the line ends
            self._leave_line()
            return
        self.fd = None
        line = self.line
        if line is not None:
            lock._local.count = line.count
        try:
            _write_record(fd, "free", self.op, lock._local.count)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            lock._let_go(fd)
            line, self.line = self.line, None
            if line is not None:
                line.fd = None
                line.leave()


def remove_crashed_locks(repo_path: str, since_ns: int) -> list[str]:
    """Delete the ref and config lock files made at or after ``since_ns`` (the dead holder's record time).

    Call only while holding the :class:`WriterLock`, right after finding that
    its previous holder died holding it (the record written at ``since_ns``):
    those files are that writer's leftovers. A file's change time is compared,
    not its modification time: a lock made by ``link`` or ``rename`` of an
    older file keeps the old mtime, and was then taken for a foreign git's
    (waited for ``stale_lock_seconds`` behind every such kill). Returns the paths removed.
    """
    found = [os.path.join(repo_path, name) for name in ("packed-refs.lock", "config.lock", "HEAD.lock")]
    for folder, _, names in os.walk(os.path.join(repo_path, "refs")):
        found.extend(os.path.join(folder, n) for n in names if n.endswith(".lock"))
    removed: list[str] = []
    for path in found:
        try:
            if os.lstat(path).st_ctime_ns >= since_ns:
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

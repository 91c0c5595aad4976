"""``gitmem serve --workers N``: one port, N worker processes, one supervisor that keeps them N.

One Python process tops out near one core (the GIL), and every request of a
team server is CPU in Python (HTTP, MCP, the tool, the commit). The store is
already safe for many processes (a write takes the mount's ``flock``, refs move
by compare-and-swap, readers never lock), so the server runs as processes:

- the **supervisor** binds the port once (so a client never meets a closed port
  between workers), makes the MCP session book (:mod:`gitmem.adapters.mcp_book`)
  and forks the workers; it then only waits for signals. It holds no thread, so
  every fork is safe, and it answers no request, so it stays small;
- each **worker** serves the inherited listening socket with its own waitress
  (threads, apps, token-file follower, MCP bridge and root watcher). The kernel
  hands each new connection to whichever worker accepts it first, so a busy
  worker takes fewer. A request needs nothing from another worker: git requests
  read and write the mounts, MCP sessions are in the book;
- a worker that dies (a crash, an OOM kill, SIGKILL) is reaped and replaced at
  once (after a pause when it keeps dying right after its start). Requests it was
  serving fail on their connections (never half-written: a write either landed
  or did not); the others are not touched;
- **SIGTERM or SIGINT** to the supervisor stops each worker with SIGTERM (each
  finishes its requests, as a single server does), kills one still running
  ``stop_timeout`` seconds later, reaps them all, removes the session book and
  exits. A worker also dies with the supervisor (``PR_SET_PDEATHSIG``), so even a
  SIGKILLed supervisor leaves no worker serving an orphaned port.
"""

from __future__ import annotations

import ctypes
import logging
import mmap
import os
import shutil
import signal
import socket
import stat
import struct
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from types import FrameType
from typing import Any, Final

from gitmem.adapters.folding import BackgroundFolds
from gitmem.adapters.http_front import FrontApp, GitHttpServer
from gitmem.adapters.http_server import GitHttpApp
from gitmem.adapters.receive_pack import DEFAULT_MAX_PUSH_BYTES
from gitmem.adapters.tokens import Tokens
from gitmem.errors import MemoryStoreError
from gitmem.root import Root

log = logging.getLogger("gitmem.serve")

_SIGNALS: Final = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT}
_PR_SET_PDEATHSIG: Final = 1
#: A worker that dies sooner than this after its start is started again only after a pause.
_QUICK_DEATH: Final = 1.0
_MAX_PAUSE: Final = 10.0
#: A worker whose loop has not turned for this long is left out of the balance (an idle loop turns every second).
_STALE: Final = 2.5


def default_workers() -> int:
    """The cores this process may run on: ``gitmem serve``'s default for ``--workers``."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def listen(host: str, port: int, backlog: int = 1024) -> socket.socket:
    """The server's listening socket, bound once for every worker; ``unavailable`` when the port is taken."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise MemoryStoreError("unavailable", f"cannot listen on {host}:{port}: {exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        raise MemoryStoreError("unavailable", f"cannot listen on {host}:{port}: {exc}") from None
    return sock


@dataclass
class Supervisor:
    """Keeps ``workers`` processes running ``serve_one(slot)`` until SIGTERM or SIGINT.

    ``serve_one`` runs in the forked child and returns when the worker stops
    (it installs its own SIGTERM handler); ``book`` is a folder removed on exit.
    """

    workers: int
    serve_one: Callable[[int], None]
    book: str | None = None
    stop_timeout: float = 30.0
    children: dict[int, int] = field(default_factory=dict)  # pid -> slot
    started: dict[int, float] = field(default_factory=dict)  # slot -> when its current worker started
    pauses: dict[int, float] = field(default_factory=dict)  # slot -> pause before its next start
    replaced: int = 0

    def run(self) -> None:
        """Start the workers, keep them running, and stop them all on SIGTERM or SIGINT."""
        previous = signal.signal(signal.SIGCHLD, _ignore)  # a handler, so the signal is queued for sigwait
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:
            waiting: dict[int, float] = {slot: 0.0 for slot in range(self.workers)}  # slot -> start when
            while True:
                now = time.monotonic()
                for slot in [s for s, when in waiting.items() if when <= now]:
                    del waiting[slot]
                    self._start(slot, mask)
                timeout = max(0.0, min(waiting.values()) - now) if waiting else None
                got = signal.sigtimedwait(_SIGNALS, timeout) if timeout is not None else signal.sigwaitinfo(_SIGNALS)
                if got is not None and got.si_signo in (signal.SIGTERM, signal.SIGINT):
                    break
                for slot, pause in self._reap():
                    waiting[slot] = time.monotonic() + pause
        finally:
            self._stop_all()
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            signal.signal(signal.SIGCHLD, previous)
            if self.book is not None:
                shutil.rmtree(self.book, ignore_errors=True)

    def _start(self, slot: int, mask: set[int | signal.Signals]) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the worker
            code = 1
            try:
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                _die_with(parent)
                self.serve_one(slot)
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        self.children[pid] = slot
        self.started[slot] = time.monotonic()

    def _reap(self) -> list[tuple[int, float]]:
        """Reap every worker that exited; returns (slot, pause) for each to start again."""
        again: list[tuple[int, float]] = []
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            slot = self.children.pop(pid, None)
            if slot is None:
                continue
            lived = time.monotonic() - self.started.get(slot, 0.0)
            pause = min(_MAX_PAUSE, max(0.5, self.pauses.get(slot, 0.0) * 2)) if lived < _QUICK_DEATH else 0.0
            self.pauses[slot] = pause
            log.warning("worker %d (pid %d) %s; starting another%s", slot, pid, _how(status),
                        f" in {pause:g} s" if pause else "")  # fmt: skip
            self.replaced += 1
            again.append((slot, pause))
        return again

    def _stop_all(self) -> None:
        for pid in list(self.children):
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + self.stop_timeout
        while self.children and time.monotonic() < deadline:
            for pid in [p for p in self.children if _exited(p)]:
                del self.children[pid]
            if self.children:
                signal.sigtimedwait({signal.SIGCHLD}, min(0.5, max(0.0, deadline - time.monotonic())))
        for pid in list(self.children):
            log.warning("worker pid %d did not stop in %g s: killed", pid, self.stop_timeout)
            _signal(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            del self.children[pid]


class Balance:
    """Spreads connections evenly over the workers: a worker holding more than the others waits to accept.

    Clients keep their connection (HTTP keep-alive), so the worker that accepts
    it serves all its requests; left to the kernel, whichever worker wakes first
    takes a burst of new connections (under load, all eight of a bench's went to
    one). Each worker writes its connection count and a heartbeat into a shared
    page before each poll, and watches the listening socket only while it holds
    at most one more than the least loaded live worker. A worker whose heartbeat
    is older than ``_STALE`` (dead, or stopped) is left out, so the others never
    wait for it.
    """

    _SLOT = struct.Struct("<qd")  # connections, heartbeat (monotonic seconds)

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.page = mmap.mmap(-1, self._SLOT.size * workers)  # anonymous, shared with the forked workers

    def slot(self, slot: int) -> Callable[[int], bool]:
        """``may_accept`` for the worker in ``slot``."""
        self._SLOT.pack_into(self.page, slot * self._SLOT.size, 0, time.monotonic())

        def may_accept(connections: int) -> bool:
            now = time.monotonic()
            self._SLOT.pack_into(self.page, slot * self._SLOT.size, connections, now)
            others = [
                count
                for other in range(self.workers)
                if other != slot
                for count, beat in [self._SLOT.unpack_from(self.page, other * self._SLOT.size)]
                if now - beat < _STALE
            ]
            return not others or connections <= min(others) + 1

        return may_accept


_BOOK_PREFIX: Final = "gitmem-serve-"


def make_book() -> str:
    """A private folder for the MCP session book every worker reads (removed by the supervisor on exit).

    Its name carries the supervisor's pid, so the books of supervisors that were
    killed (no exit to remove them) are swept by the next one to start.
    """
    sweep_books(tempfile.gettempdir())
    return tempfile.mkdtemp(prefix=f"{_BOOK_PREFIX}{os.getpid()}-")


def sweep_books(folder: str) -> list[str]:
    """Remove this user's session books in ``folder`` whose supervisor is gone; the names removed."""
    swept: list[str] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return swept
    for name in names:
        pid_text = name[len(_BOOK_PREFIX) :].partition("-")[0] if name.startswith(_BOOK_PREFIX) else ""
        if not pid_text.isdigit() or _alive(int(pid_text)):
            continue
        path = os.path.join(folder, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():  # never a link, never another user's
            shutil.rmtree(path, ignore_errors=True)
            swept.append(name)
    return swept


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def _ignore(signum: int, frame: object) -> None:
    return None


def _die_with(parent: int) -> None:
    """Make the kernel SIGKILL this worker when the supervisor dies, however it dies (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: a SIGTERMed supervisor still stops its workers
        pass
    if os.getppid() != parent:  # the supervisor died before the line above
        os._exit(1)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _exited(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done == pid


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"was killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited with status {os.WEXITSTATUS(status)}"


# --- serving: here, or as a supervisor of workers ---------------------------------------


def serve(
    root: Root,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    tokens: frozenset[str] | Tokens = frozenset(),
    public_read: bool = False,
    max_push_bytes: int | None = DEFAULT_MAX_PUSH_BYTES,
    mcp: bool = False,
    mcp_sessions: int | None = None,
    mcp_streams: int | None = None,
    threads: int = 16,
    on_ready: Callable[[Listening], None] | None = None,
    allowed_origins: Iterable[str] = (),
    allowed_hosts: Iterable[str] = (),
    base_path: str = "",
    workers: int = 0,
) -> None:
    """Serve ``root`` until SIGINT or SIGTERM; ``max_push_bytes=None`` takes packs of any size.

    ``mcp=True`` also serves MCP over streamable HTTP at ``/mcp`` on the same port
    (:mod:`gitmem.adapters.mcp_http`, needs the ``mcp`` extra); ``mcp_sessions`` is
    the MCP sessions each token keeps, ``mcp_streams`` the event streams open at once
    in each worker (each holds a thread of its own, beside the ``threads`` for requests). ``allowed_origins``
    and ``allowed_hosts`` are the web origins and host names requests may carry
    besides the server's own (:mod:`gitmem.adapters.origins`). ``base_path`` (``/memories``)
    puts every route under that prefix (:class:`FrontApp`). ``workers`` processes
    serve the port under a supervisor (:mod:`gitmem.adapters.serve_workers`); ``0``
    serves in this process.
    """
    settings = _Settings(
        root, tokens, public_read, max_push_bytes, mcp, mcp_sessions, mcp_streams, threads,
        tuple(allowed_origins), tuple(allowed_hosts), base_path,
    )  # fmt: skip
    if workers <= 0:
        _serve_here(settings, host, port, None, None, on_ready)
        return
    if mcp:
        import gitmem.adapters.mcp_http  # noqa: F401  (loaded once, before the fork, for every worker)
    sock = listen(host, port)
    book = make_book() if mcp else None
    try:
        bound_host, bound_port = sock.getsockname()[:2]
        if on_ready is not None:
            on_ready(Listening(str(bound_host), int(bound_port)))
        balance = Balance(workers)
        Supervisor(workers, partial(_serve_here, settings, host, port, sock, book, None, balance=balance), book).run()
    finally:
        sock.close()


@dataclass(frozen=True)
class Listening:
    """Where a server listens (what ``on_ready`` is told)."""

    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


@dataclass(frozen=True)
class _Settings:
    root: Root
    tokens: frozenset[str] | Tokens
    public_read: bool
    max_push_bytes: int | None
    mcp: bool
    mcp_sessions: int | None
    mcp_streams: int | None
    threads: int
    allowed_origins: tuple[str, ...]
    allowed_hosts: tuple[str, ...]
    base_path: str


def _serve_here(
    settings: _Settings,
    host: str,
    port: int,
    sock: socket.socket | None,
    book: str | None,
    on_ready: Callable[[Listening], None] | None,
    slot: int = 0,
    *,
    balance: Balance | None = None,
) -> None:
    """One server process: the apps and waitress, until SIGINT or SIGTERM (on ``sock`` when a worker)."""
    s = settings
    git_app = GitHttpApp(s.root, tokens=s.tokens, public_read=s.public_read, max_push_bytes=s.max_push_bytes)
    app: Any = git_app
    threads = s.threads
    if s.mcp:
        from gitmem.adapters.mcp_book import SessionBook
        from gitmem.adapters.mcp_http import DEFAULT_MAX_SESSIONS, DEFAULT_MAX_STREAMS, McpHttpApp, WithMcp

        streams = DEFAULT_MAX_STREAMS if s.mcp_streams is None else s.mcp_streams
        mcp_app = McpHttpApp(
            s.root, git_app.grants, max_sessions=s.mcp_sessions or DEFAULT_MAX_SESSIONS, max_streams=streams,
            book=SessionBook(book) if book is not None else None,
        )  # fmt: skip
        app = WithMcp(git_app, mcp_app)
        threads += streams
    app = FrontApp(app, s.base_path)
    server = GitHttpServer(
        app, host, port, threads=threads, allowed_origins=s.allowed_origins, allowed_hosts=s.allowed_hosts, sock=sock,
        may_accept=balance.slot(slot) if balance is not None else None,
    )  # fmt: skip

    def stop(signum: int, frame: FrameType | None) -> None:
        server.request_stop()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    folds = BackgroundFolds().start()  # no request waits for a pack fold
    try:
        if on_ready is not None:
            on_ready(Listening(server.host, server.port))
        server.serve_forever()
        app.close()
    finally:
        folds.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)

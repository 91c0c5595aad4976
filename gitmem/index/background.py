"""Index work a request is not allowed to wait for, done after it: in a thread or a process of its own.

A request brings the index up to date itself only when that is a few documents
of work (:data:`gitmem.index.source.INLINE_DOCS`); a rebuild or a long catch-up
is handed here while the request answers without the index
(:mod:`gitmem.index.fallback`). Where that work runs depends on the process:

- ``"thread"`` (the default): a daemon thread of this process, one per mount at
  a time. Right for anything that lives on (an MCP server, ``gitmem serve``, an
  application holding a store).
- ``"process"``: a detached ``python -m gitmem.index catch-up PATH`` in a session
  of its own, for a call whose process ends as soon as it answered (a CLI
  ``grep`` or ``find`` runs its search inside :func:`detached`). It takes the index lock, so two of them
  never build one index twice at the same time; a second one started meanwhile
  finds the index current and ends.

Nothing here is needed for correctness: the index is derived and every search
answers exactly without it. A failure is logged, never raised.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal

from gitmem.index.source import warn

Mode = Literal["thread", "process"]
_mode: ContextVar[Mode] = ContextVar("gitmem_index_background", default="thread")
_running: set[str] = set()  # mounts a thread of this process is catching up
_guard = threading.Lock()


@contextmanager
def detached() -> Iterator[None]:
    """Index work handed off inside the block runs in a detached process (the caller is about to exit).

    A context variable, so it holds for this thread's calls only and ends with the
    block: a CLI command run inside a test process changes nothing for the rest.
    """
    token = _mode.set("process")
    try:
        yield
    finally:
        _mode.reset(token)


def hand_off(path: str, catch_up: Callable[[], object]) -> None:
    """Bring the index of the mount at ``path`` to its head off the request path; returns at once.

    In a thread, ``catch_up`` (from :mod:`gitmem.index.mount`, which calls this module and is
    not imported by it) does the work; in a process, the indexer started here does.
    """
    with _guard:
        if path in _running:
            return
        _running.add(path)
    if _mode.get() == "process":
        try:
            _spawn(path)
        finally:
            with _guard:
                _running.discard(path)
        return
    thread = threading.Thread(target=_catch_up, args=(path, catch_up), name="gitmem-index-build", daemon=True)
    try:
        thread.start()
    except RuntimeError:  # interpreter shutting down, or no threads left
        with _guard:
            _running.discard(path)


def _catch_up(path: str, catch_up: Callable[[], object]) -> None:
    try:
        catch_up()
    except Exception:  # derived state: the next search answers without it and asks again
        warn("the index of %s was not built", path, exc_info=True)
    finally:
        with _guard:
            _running.discard(path)


_children: list[int] = []  # indexers this process started, reaped when the next one starts


def _spawn(path: str) -> None:
    """Start the indexer detached (a session of its own, no terminal, nothing inherited but the environment).

    ``posix_spawn`` rather than :class:`subprocess.Popen`: nothing waits for the
    child, and a dropped ``Popen`` of a running child complains when collected.
    Children that ended are reaped at the next spawn; the rest end on their own.
    """
    for pid in list(_children):
        try:
            done, _status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _children.remove(pid)
    null = os.devnull
    actions = [(os.POSIX_SPAWN_OPEN, fd, null, os.O_RDWR, 0) for fd in (0, 1, 2)]
    try:
        pid = os.posix_spawn(
            sys.executable,
            [sys.executable, "-m", "gitmem.index", "catch-up", path],
            dict(os.environ),
            file_actions=actions,
            setsid=True,
        )
    except OSError as exc:
        warn("cannot start an indexer for %s: %r", path, exc)
        return
    _children.append(pid)


def running() -> bool:
    """Whether a thread of this process is building an index (tests wait on it)."""
    with _guard:
        return bool(_running)

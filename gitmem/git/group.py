"""Group commit: the threads of one process that queue to write a memory are committed together.

A commit holds the writer lock for its whole length (snapshot, plan, pack, ref),
so writers in one process used to line up behind it one at a time. Here they
queue instead: the first thread becomes the *leader* and takes every request
queued so far into one *round* (:meth:`gitmem.git.repo.GitRepo.transact`
commits a round as a chain of commits, one per request, in one pack with one
ref update, under one taking of the lock). Requests that arrive meanwhile wait
for the next round, led by the first of them. Each caller gets back exactly
what its own request came to (its commit and result, or its error), and only
after the round's ref update is on disk.

Nothing here touches git: a round is a function the leader is given. Groups
are per process and per repository path; after ``fork`` the child starts with
none (the parent's leader thread does not exist there).
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable
from typing import Any


class Request:
    """One caller's change waiting in a group: its plan, and (once done) its outcome.

    ``event`` exists only while its caller waits (made under the group's mutex,
    which the leader holds to wake waiters): a writer alone leads its own round
    and never waits, so it makes no event to wait on and nobody sets one.
    """

    __slots__ = ("_error", "_value", "done", "event", "lead", "plan", "spec")

    def __init__(self, plan: Any, spec: Any = None) -> None:
        self.plan = plan
        self.spec = spec  # the plan in a form another process can run (:mod:`gitmem.git.spool`), if any
        self.event: threading.Event | None = None
        self.done = False
        self.lead = False
        self._value: Any = None
        self._error: BaseException | None = None

    def finish(self, value: Any = None, error: BaseException | None = None) -> None:
        """Record the outcome; the caller is woken by the leader after the round."""
        self._value, self._error, self.done = value, error, True

    def outcome(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value


GATHER = 0.001
"""Seconds a leader waits for as many requests as its last round carried (a round costs a pack and a ref update)."""

MAX_ROUNDS = 8
"""Rounds one leader runs back to back before its own caller gets its answer."""

Round = Callable[[list[Request]], list[Request]]
"""Commits the given requests (calling ``finish`` on each it settles); returns those left for a later round."""


class _Group:
    def __init__(self) -> None:
        self.mutex = threading.Lock()
        self.arrived = threading.Condition(self.mutex)
        self.queue: deque[Request] = deque()
        self.leading = False
        self.last = 1  # requests the last round carried: how many writers are busy right now


_groups: dict[tuple[int, str], _Group] = {}
_groups_guard = threading.Lock()
_pid = [os.getpid()]  # this process's id, kept current across fork (os.getpid() is a system call per write)


def _forked() -> None:
    _pid[0] = os.getpid()


os.register_at_fork(after_in_child=_forked)


def _group(path: str) -> _Group:
    key = (_pid[0], path)
    with _groups_guard:
        found = _groups.get(key)
        if found is None:
            found = _groups[key] = _Group()
        return found


def submit(path: str, plan: Any, run_round: Round, spec: Any = None) -> Any:
    """Queue ``plan`` for the memory at ``path`` and return its outcome (or raise its error).

    The calling thread either leads a round (with ``run_round``) or waits for a
    leader to settle its request; a request a round leaves over is led next.
    """
    group = _group(path)
    request = Request(plan, spec)
    with group.mutex:
        group.queue.append(request)
        lead = not group.leading
        group.leading = True
        group.arrived.notify()
    while True:
        if lead:
            rounds = 1
            while _lead(group, run_round, more=rounds < MAX_ROUNDS):
                rounds += 1
        with group.mutex:  # a leader settles, wakes and hands the lead on under it: nothing is missed
            if request.done:
                break
            lead, request.lead = request.lead, False
            event = None if lead else threading.Event()
            request.event = event
        if event is not None:
            event.wait()
    return request.outcome()


def _lead(group: _Group, run_round: Round, *, more: bool) -> bool:
    """Run one round over everything queued; whether this thread should lead the next one too.

    A leader keeps leading while requests are queued (up to :data:`MAX_ROUNDS`):
    handing the lead to a waiting thread costs a thread switch, which in Python
    can wait for the interpreter's switch interval. Then it hands the lead to
    the first request still waiting.
    """
    with group.mutex:
        if len(group.queue) < group.last:
            # The last round carried several writers: the ones it answered are preparing
            # their next change (on the interpreter lock this thread is giving up now).
            # Wait a moment for them rather than commit a round of one and then theirs.
            group.arrived.wait_for(lambda: len(group.queue) >= group.last, timeout=GATHER)
        batch = list(group.queue)
        group.queue.clear()
        group.last = len(batch)
    try:
        left = run_round(batch)
    except BaseException as exc:  # the round failed as a whole: every request not yet settled gets the error
        left = []
        for request in batch:
            if not request.done:
                request.finish(error=exc)
    else:
        for request in batch:
            if not request.done and request not in left:
                request.finish(error=RuntimeError("a group commit round left a request unsettled"))
    with group.mutex:
        for request in batch:
            if request.done and request.event is not None:
                request.event.set()
        group.queue.extendleft(reversed(left))
        if not group.queue:
            group.leading = False
            return False
        if more:
            return True
        nxt = group.queue[0]
        nxt.lead = True
        if nxt.event is not None:
            nxt.event.set()
        return False

"""MCP over streamable HTTP at ``/mcp`` of ``gitmem serve``: one command, one port, for git and agents.

An agent on another machine mounts the team's memories directly (Claude Code:
``claude mcp add --scope project --transport http gitmem https://HOST/mcp --header
'Authorization: Bearer ${GITMEM_TOKEN}'``, the token left in the environment) and
gets the same tools, compare-and-swap versions and errors as over stdio.

**Why inside waitress, not on an ASGI server.** The ``mcp`` SDK's transport
(:class:`mcp.server.streamable_http_manager.StreamableHTTPSessionManager`) is an
ASGI app, and the git endpoint a WSGI app on waitress with its caps on request
size, inflated bodies and anonymous load. Moving both to uvicorn would mean a
WSGI-in-ASGI bridge for git's large streamed packs and a second set of limits; so
the MCP side comes to waitress instead: :class:`McpHttpApp` is a WSGI app that
hands each ``/mcp`` request to the SDK's session manager, running on one asyncio
loop in a background thread (an anyio blocking portal), and returns its answer.
The SDK runs in JSON-response mode: every POST is answered with one JSON body,
which is all a tool call needs. A plain ``tools/call`` on an open session is
answered on waitress's thread without the SDK (:mod:`gitmem.adapters.mcp_fastcall`:
the same answer, half the CPU of a read); so the SDK does not see every request,
and idle sessions are ended here (:meth:`McpHttpApp._reap`), not by its timer.
``GET /mcp`` opens the session's event stream,
where change notifications come (:mod:`gitmem.adapters.mcp_stream`). An MCP call
in progress holds one of waitress's worker threads (``gitmem serve`` runs 16,
plus one per allowed event stream).

**Who sees what.** Every request needs ``Authorization: Bearer <token>`` (a
:mod:`gitmem.adapters.tokens` token), checked against the token file as it is
now. What a session offers, the run its writes carry (one proposal per principal
and topic) and the ``branch`` its write replies name are
:mod:`gitmem.adapters.mcp_served`'s.

**Sessions, in every worker.** ``gitmem serve --workers N`` runs N processes on
one port, and any of them may get a session's next request. So sessions are kept
in a :class:`~gitmem.adapters.mcp_book.SessionBook` that every worker reads: the
handshake (``initialize``) that opened a session, its topic, tag, grant and
subscriptions. A worker meeting a session it does not hold yet takes it up: it
builds the session's MCP server (same tag, so tool call ids still name the
session; same topic and proposal) and replays the handshake and the
subscriptions into it; the ``memory_context`` prompt's cursors are a file of the
session that every worker reads before the prompt and writes after it. The id a
client sees is the book's; each worker's SDK session has its own, swapped in and
out of the ``mcp-session-id`` header. A GET event stream is served by the worker
that holds it, which watches the root once the session subscribes (every write,
through any worker or none, moves a ref it sees) and replays into its copy the
subscriptions made through other workers before it sends; one made through
another worker while it was not watching yet is seen within a second (the
stream's check of its token) and what moved since it is told then. A session can only be used with the token that
opened it (anyone else gets the same 404 as for an unknown session); one whose
token the file changed ends for every worker.

Most clients never end a session (``DELETE /mcp``): a health check or a
bridge's restart just opens another. So a token keeps at most ``max_sessions``
(``gitmem serve --mcp-sessions``) across all workers, and a new session past that
closes the token's least recently used idle one (no request of it in flight in
any worker) instead of being refused; the closed session's client gets 404 on
its next request and, as the protocol says, starts a new session. Only when
every one of the token's sessions has a request in flight is a new one refused,
with 429 and a ``Retry-After`` by which those requests are over (each is bounded
by ``call_timeout``). Sessions idle for ``idle_timeout`` are closed anyway.
Requests of the 2026 protocol era carry no session and are served by one server
per token and topic in each worker (they keep no state a client relies on
between requests beyond its ``memory_context`` cursors, which are per worker).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager, suppress
from typing import Any

import anyio
import anyio.from_thread
from anyio.abc import TaskStatus
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from gitmem.adapters import mcp_fastcall
from gitmem.adapters.mcp_book import HANDSHAKE_LIMIT, SessionBook, grant_stamp, valid_session_id
from gitmem.adapters.mcp_served import DEFAULT_ROUTE, Route, served_server, session_route
from gitmem.adapters.mcp_server import MemoryMcpServer
from gitmem.adapters.mcp_stream import ChangeFanout, StreamSlots, asgi_answer, asgi_scope, event_stream
from gitmem.adapters.mcp_takeup import (
    SESSION_HEADER,
    SUBSCRIBE,
    Answer,
    Session,
    SessionTakeUp,
    agreed_version,
    as_local,
    as_public,
    header,
)
from gitmem.adapters.tokens import Grant, Tokens, hash_token
from gitmem.errors import MemoryStoreError
from gitmem.model import Origin
from gitmem.root import Root

StartResponse = Callable[..., Any]

MCP_PATH = "/mcp"
DEFAULT_MAX_BODY = 4 * 1024 * 1024
"""The largest MCP request taken (a tool call's arguments: a file is at most 64 KiB)."""
DEFAULT_IDLE_TIMEOUT = 30 * 60.0
DEFAULT_MAX_SESSIONS = 64
"""Sessions kept per token; past that a new one closes the token's least recently used idle one."""
DEFAULT_CALL_TIMEOUT = 120.0
"""The longest one MCP request may take before the client gets 504 (a liveness bound)."""
DEFAULT_MAX_STREAMS = 16
"""GET event streams open at once (each holds a worker thread: ``gitmem serve`` adds this many)."""


class McpHttpApp(SessionTakeUp):
    """The WSGI app for ``/mcp``: bearer auth, one MCP server per client session, the SDK's transport."""

    def __init__(
        self,
        root: Root,
        tokens: Tokens,
        *,
        max_body: int = DEFAULT_MAX_BODY,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        max_streams: int = DEFAULT_MAX_STREAMS,
        book: SessionBook | None = None,
    ) -> None:
        self.root = root
        self.max_streams = max_streams
        self._slots = StreamSlots(max_streams)
        self.tokens = tokens
        self.max_body = max_body
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self.call_timeout = call_timeout
        self.book = book if book is not None else SessionBook()
        self._owns_book = book is None
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}  # this worker's copies, by the book's session id
        self._shared: dict[tuple[str, Route], Session] = {}  # by token hash and route: the session-less (2026-era) server
        self._portal_cm: AbstractContextManager[anyio.from_thread.BlockingPortal] | None = None
        self._portal: anyio.from_thread.BlockingPortal | None = None
        self._closed = False
        self._ending = False  # the server is stopping: open event streams end at their next check
        self._reaped = time.monotonic()
        self._changes = ChangeFanout(root, self._servers, lambda: self._portal)

    def _servers(self) -> list[MemoryMcpServer]:
        """Every server here, those with an event stream first following the book's subscriptions."""
        with self._lock:
            sessions = list(self._sessions.values())
            shared = list(self._shared.values())
        for session in sessions:
            if session.streams:
                self._follow_subscriptions(session)
        return [s.server for s in (*sessions, *shared)]

    # -- WSGI --------------------------------------------------------------------

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "GET")
        if method not in ("POST", "DELETE", "GET"):
            return _reply(start_response, 405, _error("this server answers POST, GET (an event stream) and DELETE"),
                          [("Allow", "POST, GET, DELETE")])  # fmt: skip
        token = _bearer(environ)
        grant = self.tokens.grant(token)
        if grant is None or token is None:
            return _unauthorized(start_response, token is None)
        if method == "GET":
            return self._get(environ, start_response, hash_token(token), grant)
        body = _read_body(environ, self.max_body)
        if body is None:
            return _reply(start_response, 413, _error(f"an MCP request may hold {self.max_body} bytes"))
        owner = hash_token(token)
        session_id = environ.get("HTTP_MCP_SESSION_ID")
        version = environ.get("HTTP_MCP_PROTOCOL_VERSION")
        try:
            if session_id is None and version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
                session = self._shared_session(owner, grant, session_route(environ))
            elif session_id is not None:
                self._reap_now_and_then()
                found = self._current(session_id, owner, grant, environ)
                if found is None:
                    return _reply(start_response, 404, _error("Session not found"))
                session = found
            else:
                if len(body) > HANDSHAKE_LIMIT:  # kept in the book per session: refused before anything is kept
                    return _reply(start_response, 413, _error(f"a request opening an MCP session (initialize) may "
                                                              f"hold {HANDSHAKE_LIMIT} bytes"))  # fmt: skip
                self._reap()
                topic = session_route(environ)
                admission = self.book.admit(owner, self.max_sessions, self.call_timeout)
                for evicted in admission.evicted:
                    self._drop(evicted)
                if admission.session_id is None:
                    wait = admission.retry_after
                    return _reply(
                        start_response,
                        429,
                        _error(
                            f"every one of this token's {self.max_sessions} MCP sessions has a request in flight; "
                            f"retry in {wait} s"
                        ),
                        [("Retry-After", str(wait))],
                    )
                return self._serve_opening(start_response, owner, grant, environ, body, topic, admission.session_id,
                                           admission.lock_fd)  # fmt: skip
        except MemoryStoreError as exc:
            if exc.code in ("not_found", "unknown_memory"):  # the token reaches no file memory here
                return _reply(start_response, 403, _error(exc.message))
            if exc.code == "forbidden":  # a Gitmem-Topic that cannot name a branch
                return _reply(start_response, 400, _error(exc.message))
            if exc.code == "too_large":  # a session the book cannot keep for every worker
                return _reply(start_response, 413, _error(exc.message))
            return _reply(start_response, 503, _error(f"cannot open the memories: {exc}"))
        status, headers, data = self._handle_in_flight(session, environ, body)
        if method == "DELETE" and session_id is not None and status < 400:
            self.book.remove(owner, session_id)
            self._drop(session_id)
        start_response(f"{status} {_REASONS.get(status, 'Status')}", [*headers, ("Content-Length", str(len(data)))])
        return [data]

    def _current(self, session_id: str, owner: str, grant: Grant, environ: Mapping[str, Any]) -> Session | None:
        """Session ``session_id`` if ``owner`` opened it and its token still grants what it did, else ``None``.

        Another token's session does not exist for this one; a session whose
        token the file changed (narrowed, widened) ends, and its client starts
        again. A session of the book this worker does not hold yet is taken up.
        """
        if not valid_session_id(session_id):
            return None
        with self._lock:
            found = self._sessions.get(session_id)
        if found is None:
            return self._adopt(session_id, owner, grant, environ)
        if found.owner != owner:
            return None
        if found.grant != grant:
            self.book.remove(owner, session_id)
            self._drop(session_id)
            return None
        return found

    def _get(self, environ: dict[str, Any], start_response: StartResponse, owner: str, grant: Grant) -> Iterable[bytes]:
        """``GET /mcp``: the session's event stream (:mod:`gitmem.adapters.mcp_stream`)."""
        session_id = environ.get("HTTP_MCP_SESSION_ID")
        if session_id is None:  # the 2026 era has no GET stream; the protocol's way to say so
            return _reply(start_response, 405, _error("an event stream belongs to a session: send mcp-session-id"),
                          [("Allow", "POST, GET, DELETE")])  # fmt: skip
        try:
            session = self._current(session_id, owner, grant, environ)
        except MemoryStoreError as exc:
            return _reply(start_response, 503, _error(f"cannot open the memories: {exc}"))
        if session is None or not self.book.exists(owner, session_id):
            return _reply(start_response, 404, _error("Session not found"))
        with self._lock:
            again = session.streams > 0
            session.streams += 0 if again else 1
        if again:  # the SDK's answer, given before a place is taken (taking one may end another token's stream)
            return _reply(start_response, 409, _error("Conflict: Only one SSE stream is allowed per session"))
        slot = self._slots.take(owner)
        if slot is None:
            with self._lock:
                session.streams -= 1
            return _reply(start_response, 405, _error(f"this server keeps {self.max_streams} event streams open, "
                                                      "all are taken and this token holds its share of them: "
                                                      "no change notifications for now"),
                          [("Allow", "POST, DELETE")])  # fmt: skip
        token = _bearer(environ)
        touched = [time.monotonic()]

        def alive() -> bool:
            with self._lock:
                live = self._sessions.get(session_id) is session and not self._ending and not slot.ending
            if not live or self.tokens.grant(token) != session.grant or not self.book.exists(owner, session_id):
                return False
            if session.lock_fd is not None and time.monotonic() - touched[0] > 60:
                touched[0] = time.monotonic()  # an open stream is a use: the session is not reaped
                self.book.touch(session.lock_fd)
            if not self._changes.started:  # a subscription made through another worker since?
                self._follow_subscriptions(session)
                self._watch_for(session)
            return True

        def closed() -> None:
            self._slots.release(slot)
            with self._lock:
                session.streams -= 1
                session.last_used = time.monotonic()

        try:
            self._follow_subscriptions(session, force=True)
            self._watch_for(session, told_after=True)  # this stream catches up once it is open, below
            status, headers, body = event_stream(
                self._loop(),
                session.manager,
                as_local(asgi_scope(environ), session.local_id),
                timeout=self.call_timeout,
                alive=alive,
                on_close=closed,
            )
        except BaseException:
            closed()
            raise
        try:
            if status < 400:
                self._catch_up(session)
            start_response(f"{status} {_REASONS.get(status, 'Status')}", as_public(headers, session_id))
        except BaseException:  # waitress never gets the body, so nobody else would end the stream
            ender = getattr(body, "close", None)
            if callable(ender):
                ender()
            raise
        return body

    def _serve_opening(
        self,
        start_response: StartResponse,
        owner: str,
        grant: Grant,
        environ: Mapping[str, Any],
        body: bytes,
        topic: Route,
        session_id: str,
        lock_fd: int | None,
    ) -> list[bytes]:
        """A request without a session: a new MCP server answers it, and is kept (in the book) if it opened one."""
        kept = False
        session: Session | None = None
        try:
            session = self._open(owner, grant, topic)
            status, headers, data = self._handle(session, asgi_scope(environ), body)
            local_id = header(headers, SESSION_HEADER)
            if status < 400 and local_id:
                session.session_id, session.local_id, session.lock_fd = session_id, local_id, lock_fd
                session.version = agreed_version(data)
                session.host = str(environ.get("HTTP_HOST", ""))
                session.last_used = time.monotonic()
                self._keep_cursors(session)
                self.book.register(owner, session_id, {
                    "topic": topic.topic, "scope": topic.scope, "tag": session.server.session_tag, "grant": grant_stamp(grant),
                    "init": body.decode("utf-8", "replace"), "version": session.version, "host": session.host,
                    "subscriptions": [],
                })  # fmt: skip
                with self._lock:
                    self._sessions[session_id] = session
                kept = True
                headers = as_public(headers, session_id)
        finally:
            if lock_fd is not None:
                self.book.idle(lock_fd)
            if not kept:
                if session is not None:
                    self._stop(session)
                self.book.abandon(owner, session_id)
                if lock_fd is not None:
                    os.close(lock_fd)
        start_response(f"{status} {_REASONS.get(status, 'Status')}", [*headers, ("Content-Length", str(len(data)))])
        return [data]

    # -- sessions ----------------------------------------------------------------

    def _handle_in_flight(self, session: Session, environ: Mapping[str, Any], body: bytes) -> Answer:
        """The answer to a request of ``session``, with the session marked busy meanwhile (a busy one is never evicted).

        A plain tool call is answered on this thread (:mod:`gitmem.adapters.mcp_fastcall`), anything else by the SDK.
        """
        began = time.monotonic()
        gone: Answer = (404, [("Content-Type", "application/json")], _error("Session not found"))
        with self._lock:
            if session.session_id is not None and self._sessions.get(session.session_id) is not session:
                return gone  # closed meanwhile (evicted, or its DELETE): answered as any ended session is
            session.last_used = began
            session.in_flight.append(began)
            if session.lock_fd is not None and len(session.in_flight) == 1:
                self.book.busy(session.lock_fd)
        try:
            if session.session_id is not None and not self.book.exists(session.owner, session.session_id):
                self._drop(session.session_id)  # ended through another worker
                return gone
            change = self._before(session, body) if session.session_id is not None else None
            if change is not None and session.streams and change.startswith(SUBSCRIBE + " "):
                self._start_watching()  # before the SDK holds the subscription: no later move goes untold
            if change is None and environ.get("REQUEST_METHOD") == "POST":
                answer = mcp_fastcall.tool_call(session.server, environ, body)
                if answer is not None:
                    headers = [("Content-Type", "application/json")]
                    if session.session_id is not None:
                        headers.append((SESSION_HEADER, session.session_id))
                    return 200, headers, answer
            status, headers, data = self._handle(session, as_local(asgi_scope(environ), session.local_id), body)
            if change is not None:
                self._after(session, change, status, data)
            return status, as_public(headers, session.session_id), data
        finally:
            with self._lock:
                session.in_flight.remove(began)
                session.last_used = time.monotonic()
                if session.lock_fd is not None and not session.in_flight:
                    self.book.idle(session.lock_fd)

    def _watch_for(self, session: Session, *, told_after: bool = False) -> None:
        """Start watching the root once ``session``, which has an event stream here, subscribes to something.

        Only a subscribed memory's moves are told, so until then no watcher runs:
        it would handle a dozen file events and read the refs at every write for
        nobody. ``told_after``: ``session``'s stream is not open yet and catches up itself once it is.
        """
        if session.subscribed and not self._changes.started:
            self._start_watching(skip=session if told_after else None)

    def _start_watching(self, skip: Session | None = None) -> None:
        """Start the watcher; then every session with an event stream here is told what moved since it subscribed.

        A subscription made through another worker while this one was not
        watching is followed here at its stream's once-a-second check, or when
        some other session's subscription starts the watcher first. A move
        between that subscription and the start is in the watcher's first
        reading of the refs, so no change it sees tells of it: each stream here
        catches up (:meth:`_catch_up`), not only the one whose subscription
        started the watcher (a notification is a hint: one told twice costs a read).
        """
        if not self._changes.start():
            return
        with self._lock:
            streaming = [s for s in self._sessions.values() if s.streams and s is not skip]
        for other in streaming:
            self._follow_subscriptions(other)
            self._catch_up(other)

    def _shared_session(self, owner: str, grant: Grant, topic: Route) -> Session:
        key = (owner, topic)
        with self._lock:
            found = self._shared.get(key)
            if found is not None and found.grant != grant:
                del self._shared[key]
                stale, found = found, None
            else:
                stale = None
        if stale is not None:
            self._stop(stale)
        if found is not None:
            return found
        made = self._open(owner, grant, topic, watched=False)
        with self._lock:
            kept = self._shared.setdefault(key, made)
            evicted = self._evict_shared(owner, made) if kept is made else [made]
        for session in evicted:
            self._stop(session)
        return kept

    def _evict_shared(self, owner: str, keep: Session) -> list[Session]:
        """Past ``max_sessions`` session-less servers of ``owner`` (one per topic and scope it
        named), its least recently used idle ones, taken out (hold the lock). They keep no
        state a client relies on, so one asked for again is simply made again."""
        mine = sorted(
            ((key, s) for key, s in self._shared.items() if key[0] == owner and s is not keep),
            key=lambda pair: pair[1].last_used,
        )
        excess = len(mine) + 1 - self.max_sessions
        gone: list[Session] = []
        for key, session in mine:
            if excess <= 0:
                break
            if not session.in_flight:
                gone.append(self._shared.pop(key))
                excess -= 1
        return gone

    def _open(
        self, owner: str, grant: Grant, topic: Route = DEFAULT_ROUTE, *, watched: bool = True, tag: str = ""
    ) -> Session:
        server = self.memory_server(grant, topic, watched=watched)
        if tag and tag != server.session_tag:  # a session taken up keeps the tag its tool call ids carry
            if server.origin.run_id == f"mcp-{server.session_tag}":
                server.origin = Origin(f"mcp-{tag}", server.origin.principal_id)
            server.session_tag = tag
        # The book ends idle sessions (for every worker), not the SDK (for this one).
        manager = StreamableHTTPSessionManager(
            server.server, json_response=True, session_idle_timeout=None, max_sessions=1
        )
        stop = self._run(self._serve_manager, manager)
        return Session(owner, grant, server, manager, stop, topic=topic)

    def memory_server(self, grant: Grant, topic: Route = DEFAULT_ROUTE, *, watched: bool = True) -> MemoryMcpServer:
        """A fresh MCP server over what ``grant`` reaches (:func:`gitmem.adapters.mcp_served.served_server`).

        ``watched=False`` for the 2026 era's session-less requests: they have no GET
        stream, so nothing is offered to subscribe to.
        """
        return served_server(self.root, grant, topic, watched=watched)

    def _drop(self, session_id: str) -> None:
        """Stop this worker's copy of a session (the book's record is another matter)."""
        with self._lock:
            session = self._sessions.pop(session_id, None)
        if session is not None:
            self._release(session)

    def _release(self, session: Session) -> None:
        self._stop(session)
        fd, session.lock_fd = session.lock_fd, None
        if fd is not None:
            with suppress(OSError):
                os.close(fd)

    def _reap_now_and_then(self) -> None:
        """:meth:`_reap` at most every tenth of ``idle_timeout`` (a minute at most), from any request."""
        now = time.monotonic()
        if now - self._reaped > min(60.0, self.idle_timeout / 10):
            self._reaped = now
            self._reap()

    def _reap(self) -> None:
        """End sessions nobody used for ``idle_timeout`` (in the book), and free copies the book no longer holds."""
        for _owner, session_id in self.book.reap(self.idle_timeout):
            self._drop(session_id)
        cutoff = time.monotonic() - self.idle_timeout
        with self._lock:
            copies = [(sid, s) for sid, s in self._sessions.items() if not s.in_flight and not s.streams]
        for sid, session in copies:
            if session.last_used < cutoff or not self.book.exists(session.owner, sid):
                self._drop(sid)
        with self._lock:
            idle = [key for key, s in self._shared.items() if not s.in_flight and s.last_used < cutoff]
            unused = [self._shared.pop(key) for key in idle]
        for session in unused:
            self._stop(session)

    def session_count(self) -> int:
        with self._lock:
            return len(self._sessions)

    def stream_count(self) -> int:
        """Event streams open in this worker now (one that gave its place away counts until it ends)."""
        return self._slots.count()

    # -- the event loop ----------------------------------------------------------

    def _loop(self) -> anyio.from_thread.BlockingPortal:
        with self._lock:
            if self._closed:
                raise MemoryStoreError("unavailable", "the server is stopping")
            if self._portal is None:
                self._portal_cm = anyio.from_thread.start_blocking_portal()
                self._portal = self._portal_cm.__enter__()
            return self._portal

    def _run(self, serve: Callable[..., Any], manager: StreamableHTTPSessionManager) -> anyio.Event:
        _, stop = self._loop().start_task(serve, manager)
        assert isinstance(stop, anyio.Event)
        return stop

    @staticmethod
    async def _serve_manager(
        manager: StreamableHTTPSessionManager, *, task_status: TaskStatus[anyio.Event] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        stop = anyio.Event()
        async with manager.run():
            task_status.started(stop)
            await stop.wait()

    def _stop(self, session: Session) -> None:
        portal = self._portal
        if portal is not None:
            try:
                portal.call(session.stop.set)
            except RuntimeError:  # the loop is already gone
                pass

    def _handle(self, session: Session, scope: dict[str, Any], body: bytes) -> Answer:
        try:
            answer: Answer = self._loop().call(asgi_answer, session.manager, scope, body, self.call_timeout)
            return answer
        except TimeoutError:
            return 504, [("Content-Type", "application/json")], _error("the MCP request took too long")

    def end_streams(self) -> None:
        """The server stops accepting: every open event stream ends within a second, so the request
        threads serving them are free when the server shuts them down (it would wait for each)."""
        with self._lock:
            self._ending = True

    def close(self, timeout: float = 10.0) -> None:
        """End every session of this worker (the book's records stay for the others) and the loop."""
        with self._lock:
            self._closed = True
            sessions = [*self._sessions.values(), *self._shared.values()]
            self._sessions.clear()
            self._shared.clear()
            portal_cm, self._portal_cm = self._portal_cm, None
        for session in sessions:
            self._release(session)
        self._changes.close(timeout)
        if portal_cm is not None:
            portal_cm.__exit__(None, None, None)
        self._portal = None
        if self._owns_book:
            self.book.close()


class WithMcp:
    """``/mcp`` to the MCP app, every other path to the git app; what waitress serves."""

    def __init__(self, git: Any, mcp: McpHttpApp) -> None:
        self.git = git
        self.mcp = mcp
        self.max_push_bytes = getattr(git, "max_push_bytes", None)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path in (MCP_PATH, MCP_PATH + "/"):
            return self.mcp(environ, start_response)
        if path.startswith(_DISCOVERY) or path in _OAUTH_ENDPOINTS:
            return no_oauth(start_response)
        result: Iterable[bytes] = self.git(environ, start_response)
        return result

    def body_cap(self, method: str, path: str, authorization: str) -> int | None:
        """The git app's cap for this request's body (a push-sized one only for a push: ``/mcp`` never needs it)."""
        capper = getattr(self.git, "body_cap", None)
        return capper(method, path, authorization) if callable(capper) else None

    def end_streams(self) -> None:
        self.mcp.end_streams()

    def close(self, timeout: float = 10.0) -> None:
        self.mcp.close(timeout)
        closer = getattr(self.git, "close", None)
        if callable(closer):
            closer(timeout)


# -- helpers ------------------------------------------------------------------------

_DISCOVERY = (
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-authorization-server",
    "/.well-known/openid-configuration",
)
"""Where OAuth clients look for metadata (with or without a path such as ``/mcp`` after it)."""
_OAUTH_ENDPOINTS = frozenset({"/register", "/authorize", "/token"})
"""Where an OAuth client without metadata goes next (the protocol's defaults); never a git path (``NAME.git``)."""
_NO_OAUTH = (
    "this gitmem server uses bearer tokens, not OAuth: an OAuth sign-in is tried only after /mcp refused the "
    "token sent (401: missing, unknown or revoked). Send 'Authorization: Bearer <token>' with a token of the "
    "server's token file (made with 'gitmem token')"
)


def no_oauth(start_response: StartResponse) -> list[bytes]:
    """The answer to OAuth discovery and endpoints: a JSON 404 that says bearer tokens are used instead.

    An OAuth-aware client such as ``mcp-remote`` answers a 401 from ``/mcp`` by
    looking for OAuth (metadata, then the default ``/register``) and shows what it
    got there, not the 401: a git-flavoured "no such repository" hid why it failed.
    This body says the token was refused, in the OAuth error fields such clients print.
    """
    body = json.dumps({"error": "not_found", "error_description": _NO_OAUTH}).encode()
    return _reply(start_response, 404, body)


_REASONS = {200: "OK", 202: "Accepted", 204: "No Content", 400: "Bad Request", 401: "Unauthorized",
            403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable", 409: "Conflict",
            413: "Content Too Large", 429: "Too Many Requests", 415: "Unsupported Media Type", 500: "Internal Server Error",
            503: "Service Unavailable", 504: "Gateway Timeout"}  # fmt: skip


def _unauthorized(start_response: StartResponse, missing: bool) -> list[bytes]:
    """401 with ``WWW-Authenticate: Bearer`` and a JSON body whose message says what to send.

    The body is a JSON-RPC error (what an MCP client reads) that also carries the
    OAuth error fields (what an OAuth-aware client such as ``mcp-remote`` prints);
    the header names the same error (RFC 6750).
    """
    if missing:
        code, detail = "invalid_request", "this MCP server needs 'Authorization: Bearer <token>' on every request"
    else:
        code, detail = "invalid_token", "that bearer token is not accepted by this gitmem server (unknown or revoked)"
    detail += "; tokens are made with 'gitmem token' and listed in the server's token file (it does not use OAuth)"
    body = {**_error_body(detail), "error_description": detail, "error_code": code}
    challenge = f'Bearer realm="gitmem", error="{code}", error_description="{detail.replace(chr(34), chr(39))}"'
    return _reply(start_response, 401, json.dumps(body).encode(), [("WWW-Authenticate", challenge)])


def _bearer(environ: Mapping[str, Any]) -> str | None:
    scheme, _, value = str(environ.get("HTTP_AUTHORIZATION", "")).strip().partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


def _read_body(environ: Mapping[str, Any], cap: int) -> bytes | None:
    stream = environ["wsgi.input"]
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = stream.read(min(64 * 1024, cap + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > cap:
            return None


def _error_body(message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}


def _error(message: str) -> bytes:
    return json.dumps(_error_body(message)).encode()


def _reply(
    start_response: StartResponse, status: int, body: bytes, headers: Iterable[tuple[str, str]] = ()
) -> list[bytes]:
    start_response(
        f"{status} {_REASONS.get(status, 'Status')}",
        [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *headers],
    )
    return [body]

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
and idle sessions are ended here (:meth:`McpHttpApp._reap`), not by its timer. ``GET /mcp`` opens the session's event stream,
where change notifications come (:mod:`gitmem.adapters.mcp_stream`). An MCP call
in progress holds one of waitress's worker threads (``gitmem serve`` runs 16,
plus one per allowed event stream).

**Who sees what.** Every request needs ``Authorization: Bearer <token>`` (a
:mod:`gitmem.adapters.tokens` token), checked against the token file as it is
now. What a session offers, the run its writes carry (one proposal per principal
and topic) and the ``branch`` its write replies name are
:mod:`gitmem.adapters.mcp_served`'s.

**Sessions.** Each handshake-era session (``initialize``, then
``mcp-session-id``) gets its own :class:`~gitmem.adapters.mcp_server.MemoryMcpServer`,
so the ``memory_context`` prompt's cursors are per client session; a session
can only be used with the token that opened it (anyone else gets the same 404 as
for an unknown session). Most clients never end a session (``DELETE /mcp``): a
health check or a bridge's restart just opens another. So a token keeps at most
``max_sessions`` (``gitmem serve --mcp-sessions``), and a new session past that
closes the token's least recently used idle one instead of being refused; the
closed session's client gets 404 on its next request and, as the protocol says,
starts a new session. Only when every one of the token's sessions has a request
in flight is a new one refused, with 429 and a ``Retry-After`` by which those
requests are over (each is bounded by ``call_timeout``). Sessions idle for
``idle_timeout`` are closed anyway. Requests of the 2026 protocol era carry no
session and are served by one server per token.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.from_thread
from anyio.abc import TaskStatus
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from gitmem.adapters import mcp_fastcall
from gitmem.adapters.mcp_served import DEFAULT_ROUTE, Route, served_server, session_route
from gitmem.adapters.mcp_server import MemoryMcpServer
from gitmem.adapters.mcp_stream import ChangeFanout, asgi_answer, asgi_scope, event_stream
from gitmem.adapters.tokens import Grant, Tokens, hash_token
from gitmem.errors import MemoryStoreError
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
_SESSION_HEADER = "mcp-session-id"


@dataclass
class _Session:
    """One MCP server (and the SDK's session manager for it) running on the bridge's loop."""

    owner: str  # the hash of the token that opened it
    grant: Grant  # what that token could do then: a session ends when the token file changes it
    server: MemoryMcpServer
    manager: StreamableHTTPSessionManager
    stop: anyio.Event
    last_used: float = field(default_factory=time.monotonic)
    session_id: str | None = None
    in_flight: list[float] = field(default_factory=list)  # when each request being served began
    topic: Route = DEFAULT_ROUTE  # the session's topic and durable scope
    streams: int = 0  # open GET event streams (0 or 1: the SDK allows one per session)


class McpHttpApp:
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
    ) -> None:
        self.root = root
        self.max_streams = max_streams
        self._streams = 0
        self.tokens = tokens
        self.max_body = max_body
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self.call_timeout = call_timeout
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}  # by mcp-session-id
        self._shared: dict[
            tuple[str, Route], _Session
        ] = {}  # by token hash and route (topic, scope): the session-less (2026-era) server
        self._opening: dict[str, list[float]] = {}  # when each session being opened began, by token hash
        self._portal_cm: AbstractContextManager[anyio.from_thread.BlockingPortal] | None = None
        self._portal: anyio.from_thread.BlockingPortal | None = None
        self._closed = False
        self._reaped = time.monotonic()
        self._changes = ChangeFanout(root, self._servers, lambda: self._portal)

    def _servers(self) -> list[MemoryMcpServer]:
        with self._lock:
            return [s.server for s in (*self._sessions.values(), *self._shared.values())]

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
                found = self._current(session_id, owner, grant)
                if found is None:
                    return _reply(start_response, 404, _error("Session not found"))
                session = found
            else:
                self._reap()
                began, wait = self._admit(owner)
                if wait is not None:
                    return _reply(
                        start_response,
                        429,
                        _error(
                            f"every one of this token's {self.max_sessions} MCP sessions has a request in flight; "
                            f"retry in {wait} s"
                        ),
                        [("Retry-After", str(wait))],
                    )
                try:
                    topic = session_route(environ)
                    return self._serve_opening(start_response, owner, grant, environ, body, topic)
                finally:  # counted as opening until it is registered or given up
                    with self._lock:
                        self._opened(owner, began)
        except MemoryStoreError as exc:
            if exc.code in ("not_found", "unknown_memory"):  # the token reaches no file memory here
                return _reply(start_response, 403, _error(exc.message))
            if exc.code == "forbidden":  # a Gitmem-Topic that cannot name a branch
                return _reply(start_response, 400, _error(exc.message))
            return _reply(start_response, 503, _error(f"cannot open the memories: {exc}"))
        status, headers, data = self._handle_in_flight(session, environ, body)
        if method == "DELETE" and session_id is not None and status < 400:
            with self._lock:
                self._sessions.pop(session_id, None)
            self._stop(session)
        start_response(f"{status} {_REASONS.get(status, 'Status')}", [*headers, ("Content-Length", str(len(data)))])
        return [data]

    def _current(self, session_id: str, owner: str, grant: Grant) -> _Session | None:
        """Session ``session_id`` if ``owner`` opened it and its token still grants what it did, else ``None``.

        Another token's session does not exist for this one; a session whose
        token the file changed (narrowed, widened) ends, and its client starts again.
        """
        with self._lock:
            found = self._sessions.get(session_id)
        if found is None or found.owner != owner:
            return None
        if found.grant != grant:
            with self._lock:
                self._sessions.pop(session_id, None)
            self._stop(found)
            return None
        return found

    def _get(self, environ: dict[str, Any], start_response: StartResponse, owner: str, grant: Grant) -> Iterable[bytes]:
        """``GET /mcp``: the session's event stream (:mod:`gitmem.adapters.mcp_stream`)."""
        session_id = environ.get("HTTP_MCP_SESSION_ID")
        if session_id is None:  # the 2026 era has no GET stream; the protocol's way to say so
            return _reply(start_response, 405, _error("an event stream belongs to a session: send mcp-session-id"),
                          [("Allow", "POST, GET, DELETE")])  # fmt: skip
        session = self._current(session_id, owner, grant)
        if session is None:
            return _reply(start_response, 404, _error("Session not found"))
        with self._lock:
            if self._streams >= self.max_streams:
                full = True
            else:
                full = False
                self._streams += 1
                session.streams += 1
        if full:
            return _reply(start_response, 405, _error(f"this server keeps {self.max_streams} event streams open "
                                                      "and all are taken: no change notifications for now"),
                          [("Allow", "POST, DELETE")])  # fmt: skip
        token = _bearer(environ)

        def alive() -> bool:
            with self._lock:
                live = self._sessions.get(session_id) is session
            return live and self.tokens.grant(token) == session.grant

        def closed() -> None:
            with self._lock:
                self._streams -= 1
                session.streams -= 1
                session.last_used = time.monotonic()

        try:
            status, headers, body = event_stream(
                self._loop(),
                session.manager,
                asgi_scope(environ),
                timeout=self.call_timeout,
                alive=alive,
                on_close=closed,
            )
        except BaseException:
            closed()
            raise
        start_response(f"{status} {_REASONS.get(status, 'Status')}", headers)
        return body

    def _serve_opening(
        self,
        start_response: StartResponse,
        owner: str,
        grant: Grant,
        environ: Mapping[str, Any],
        body: bytes,
        topic: Route = DEFAULT_ROUTE,
    ) -> list[bytes]:
        """A request without a session: a new MCP server answers it, and is kept if it opened a session."""
        session = self._open(owner, grant, topic)
        status, headers, data = self._handle(session, asgi_scope(environ), body)
        new_id = dict((k.lower(), v) for k, v in headers).get(_SESSION_HEADER)
        if status < 400 and new_id:
            session.session_id = new_id
            session.last_used = time.monotonic()
            with self._lock:
                self._sessions[new_id] = session
        else:
            self._stop(session)
        start_response(f"{status} {_REASONS.get(status, 'Status')}", [*headers, ("Content-Length", str(len(data)))])
        return [data]

    # -- sessions ----------------------------------------------------------------

    def _admit(self, owner: str) -> tuple[float, int | None]:
        """Make room for one more session of ``owner``: (when it began, ``None``), or (0, seconds to wait).

        Past ``max_sessions`` the token's least recently used sessions with no
        request in flight are closed. When none is idle, the answer is the time by
        which the first in-flight request (or session being opened) is over: each
        is cut off at ``call_timeout``.
        """
        evicted: list[_Session] = []
        try:
            with self._lock:
                now = time.monotonic()
                mine = sorted((s for s in self._sessions.values() if s.owner == owner), key=lambda s: s.last_used)
                opening = self._opening.get(owner, [])
                excess = len(mine) + len(opening) + 1 - self.max_sessions
                for session in mine:
                    if excess <= 0:
                        break
                    if not session.in_flight and session.session_id is not None:
                        evicted.append(self._sessions.pop(session.session_id))
                        excess -= 1
                if excess > 0:
                    ends = [max(s.in_flight) for s in mine if s.in_flight] + list(opening)
                    first_free = min(ends, default=now) + self.call_timeout
                    return 0.0, max(1, math.ceil(first_free - now))
                self._opening.setdefault(owner, []).append(now)
                return now, None
        finally:
            for session in evicted:
                self._stop(session)

    def _opened(self, owner: str, began: float) -> None:
        """The session ``owner`` began opening at ``began`` is registered or given up (hold the lock)."""
        opening = self._opening.get(owner, [])
        if began in opening:
            opening.remove(began)
        if not opening:
            self._opening.pop(owner, None)

    def _handle_in_flight(
        self, session: _Session, environ: Mapping[str, Any], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """The answer to a request of ``session``, with the session marked busy meanwhile (a busy one is never evicted).

        A plain tool call is answered on this thread (:mod:`gitmem.adapters.mcp_fastcall`), anything else by the SDK.
        """
        began = time.monotonic()
        with self._lock:
            if session.session_id is not None and self._sessions.get(session.session_id) is not session:
                # closed meanwhile (evicted, or its DELETE): answered as any ended session is
                return 404, [("Content-Type", "application/json")], _error("Session not found")
            session.last_used = began
            session.in_flight.append(began)
        try:
            if environ.get("REQUEST_METHOD") == "POST":
                answer = mcp_fastcall.tool_call(session.server, environ, body)
                if answer is not None:
                    headers = [("Content-Type", "application/json")]
                    if session.session_id is not None:
                        headers.append((_SESSION_HEADER, session.session_id))
                    return 200, headers, answer
            return self._handle(session, asgi_scope(environ), body)
        finally:
            with self._lock:
                session.in_flight.remove(began)
                session.last_used = time.monotonic()

    def _shared_session(self, owner: str, grant: Grant, topic: Route) -> _Session:
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
        if kept is not made:
            self._stop(made)
        return kept

    def _open(self, owner: str, grant: Grant, topic: Route = DEFAULT_ROUTE, *, watched: bool = True) -> _Session:
        server = self.memory_server(grant, topic, watched=watched)
        # Idle sessions are ended by _reap, which sees every request: the SDK sees no tool call
        # answered without it (mcp_fastcall), so its own idle timer would end busy sessions.
        manager = StreamableHTTPSessionManager(
            server.server, json_response=True, session_idle_timeout=None, max_sessions=1
        )
        stop = self._run(self._serve_manager, manager)
        self._changes.start()
        return _Session(owner, grant, server, manager, stop, topic=topic)

    def memory_server(self, grant: Grant, topic: Route = DEFAULT_ROUTE, *, watched: bool = True) -> MemoryMcpServer:
        """A fresh MCP server over what ``grant`` reaches (:func:`gitmem.adapters.mcp_served.served_server`).

        ``watched=False`` for the 2026 era's session-less requests: they have no GET
        stream, so nothing is offered to subscribe to.
        """
        return served_server(self.root, grant, topic, watched=watched)

    def _reap_now_and_then(self) -> None:
        """:meth:`_reap` at most every tenth of ``idle_timeout`` (a minute at most), from any request."""
        now = time.monotonic()
        if now - self._reaped > min(60.0, self.idle_timeout / 10):
            self._reaped = now
            self._reap()

    def _reap(self) -> None:
        """Close sessions nobody used for ``idle_timeout`` (their client gets 404 next and opens another)."""
        cutoff = time.monotonic() - self.idle_timeout
        with self._lock:
            idle = [
                sid for sid, s in self._sessions.items() if s.last_used < cutoff and not s.in_flight and not s.streams
            ]
            stale = [self._sessions.pop(sid) for sid in idle]
        for session in stale:
            self._stop(session)

    def session_count(self) -> int:
        with self._lock:
            return len(self._sessions)

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

    def _stop(self, session: _Session) -> None:
        portal = self._portal
        if portal is not None:
            try:
                portal.call(session.stop.set)
            except RuntimeError:  # the loop is already gone
                pass

    def _handle(
        self, session: _Session, scope: dict[str, Any], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        try:
            answer: tuple[int, list[tuple[str, str]], bytes] = self._loop().call(
                asgi_answer, session.manager, scope, body, self.call_timeout
            )
            return answer
        except TimeoutError:
            return 504, [("Content-Type", "application/json")], _error("the MCP request took too long")

    def close(self, timeout: float = 10.0) -> None:
        """End every session and the loop."""
        with self._lock:
            self._closed = True
            sessions = [*self._sessions.values(), *self._shared.values()]
            self._sessions.clear()
            self._shared.clear()
            portal_cm, self._portal_cm = self._portal_cm, None
        for session in sessions:
            self._stop(session)
        self._changes.close(timeout)
        if portal_cm is not None:
            portal_cm.__exit__(None, None, None)
        self._portal = None


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
            403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable",
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

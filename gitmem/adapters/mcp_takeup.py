"""How a worker of ``gitmem serve`` takes up an MCP session another worker opened.

:mod:`gitmem.adapters.mcp_http` serves ``/mcp``; this is its half that works with
the session book (:mod:`gitmem.adapters.mcp_book`). A session's state lives in the
book, never only in one worker: the ``initialize`` request that opened it, its
topic and tag, its subscriptions (with the head of each memory when subscribed)
and the ``memory_context`` cursors. :class:`SessionTakeUp` rebuilds a worker's
copy from it (the handshake and subscriptions replayed into an MCP server of its
own), writes a subscription made here to the book, follows subscriptions made
elsewhere before a change is told, and tells a new event stream what moved
since the subscription. The SDK of each worker names the session its own way;
the client only ever sees the book's id (:func:`as_local`, :func:`as_public`).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.from_thread
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from gitmem.adapters.mcp_book import SessionBook, grant_stamp
from gitmem.adapters.mcp_served import DEFAULT_ROUTE, DEFAULT_SCOPE, DEFAULT_TOPIC, Route
from gitmem.adapters.mcp_server import RESOURCE_SCHEME, MemoryMcpServer, load_cursors
from gitmem.adapters.mcp_stream import asgi_scope
from gitmem.adapters.tokens import Grant
from gitmem.errors import MemoryStoreError
from gitmem.localfile import parse_json
from gitmem.root import Root

Answer = tuple[int, list[tuple[str, str]], bytes]
SESSION_HEADER = "mcp-session-id"
SUBSCRIBE = "resources/subscribe"
_UNSUBSCRIBE = "resources/unsubscribe"


@dataclass
class Session:
    """One MCP server (and the SDK's session manager for it) running on the bridge's loop."""

    owner: str  # the hash of the token that opened it
    grant: Grant  # what that token could do then: a session ends when the token file changes it
    server: MemoryMcpServer
    manager: StreamableHTTPSessionManager
    stop: anyio.Event
    last_used: float = field(default_factory=time.monotonic)
    session_id: str | None = None  # the book's id, which the client sees
    in_flight: list[float] = field(default_factory=list)  # when each request being served began
    topic: Route = DEFAULT_ROUTE  # the session's topic and durable scope
    streams: int = 0  # open GET event streams (0 or 1: the SDK allows one per session)
    local_id: str | None = None  # the SDK's id for it in this worker
    lock_fd: int | None = None  # the book's lock file: shared while a request is in flight
    version: str | None = None  # the protocol version its handshake agreed
    host: str = ""  # the Host its opening request named (replayed requests name it too)
    subscribed: tuple[str, ...] = ()  # what the book said it subscribes to, as replayed here
    generation: int = 0  # of the book's record, when this copy last followed it


class SessionTakeUp:
    """The book's side of :class:`~gitmem.adapters.mcp_http.McpHttpApp` (which provides what is declared here)."""

    root: Root
    book: SessionBook
    _lock: threading.Lock
    _sessions: dict[str, Session]
    _portal: anyio.from_thread.BlockingPortal | None

    def _open(
        self, owner: str, grant: Grant, topic: Route = DEFAULT_ROUTE, *, watched: bool = True, tag: str = ""
    ) -> Session:
        raise NotImplementedError

    def _handle(self, session: Session, scope: dict[str, Any], body: bytes) -> Answer:
        raise NotImplementedError

    def _stop(self, session: Session) -> None:
        raise NotImplementedError

    def _adopt(self, session_id: str, owner: str, grant: Grant, environ: Mapping[str, Any]) -> Session | None:
        """Take up a session of the book opened by another worker (or before this worker started)."""
        record = self.book.load(owner, session_id)
        if record is None:
            return None
        if record.get("grant") != grant_stamp(grant):
            self.book.remove(owner, session_id)
            return None
        lock_fd = self.book.open_lock(owner, session_id)
        if lock_fd is None:
            return None
        try:
            route = Route(str(record.get("topic", DEFAULT_TOPIC)), str(record.get("scope", DEFAULT_SCOPE)))
            session = self._open(owner, grant, route, tag=str(record.get("tag", "")))
        except BaseException:
            os.close(lock_fd)
            raise
        session.session_id, session.lock_fd = session_id, lock_fd
        session.version = record.get("version") or environ.get("HTTP_MCP_PROTOCOL_VERSION")
        session.host = str(record.get("host", ""))
        try:
            status, headers, _ = self._handle(
                session, self._replay_scope(session), str(record.get("init", "")).encode()
            )
            session.local_id = header(headers, SESSION_HEADER)
            if status >= 400 or not session.local_id:
                raise MemoryStoreError("unavailable", f"the handshake of MCP session {session_id} did not replay")
            self._replay(session, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            self._keep_cursors(session)
        except BaseException:
            self._stop(session)
            os.close(lock_fd)
            raise
        with self._lock:
            kept = self._sessions.setdefault(session_id, session)
        if kept is not session:  # another thread of this worker took it up meanwhile
            self._stop(session)
            os.close(lock_fd)
        self._follow_subscriptions(kept, force=True)
        return kept

    def _replay_scope(self, session: Session) -> dict[str, Any]:
        headers = [(b"content-type", b"application/json"), (b"accept", b"application/json, text/event-stream")]
        if session.host:
            headers.append((b"host", session.host.encode("latin-1")))
        if session.local_id:
            headers.append((SESSION_HEADER.encode(), session.local_id.encode("latin-1")))
        if session.version and session.local_id:
            headers.append((b"mcp-protocol-version", session.version.encode("latin-1")))
        return {**asgi_scope({"REQUEST_METHOD": "POST"}), "headers": headers}

    def _replay(self, session: Session, message: dict[str, Any]) -> None:
        status, _, data = self._handle(session, self._replay_scope(session), json.dumps(message).encode())
        if status >= 400:
            raise MemoryStoreError("unavailable", f"an MCP request did not replay: {data[:200]!r}")

    def _follow_subscriptions(self, session: Session, *, force: bool = False) -> None:
        """Replay into this copy the subscriptions the book holds (made through any worker) when they changed."""
        if session.session_id is None:
            return
        record = self.book.load(session.owner, session.session_id)
        if record is None or (not force and record.get("generation") == session.generation):
            return
        wanted = tuple(str(uri) for uri in record.get("subscriptions", []))
        gone = [uri for uri in session.subscribed if uri not in wanted]
        for n, uri in enumerate((*wanted, *gone)):
            method = SUBSCRIBE if n < len(wanted) else _UNSUBSCRIBE
            with suppress(MemoryStoreError):
                self._replay(session, {"jsonrpc": "2.0", "id": f"replay-{n}", "method": method, "params": {"uri": uri}})
        session.subscribed, session.generation = wanted, int(record.get("generation", 0))

    def _keep_cursors(self, session: Session) -> None:
        """The session's ``memory_context`` cursors live in the book, so every worker continues from them."""
        if session.session_id is not None:
            session.server.cursor_file = self.book.cursor_path(session.owner, session.session_id)

    def _before(self, session: Session, body: bytes) -> str | None:
        """What this request changes of the session's kept state: its subscriptions, or the prompt's cursors."""
        if b"prompts/get" in body:
            cursors = session.server.capability.cursors if session.server.capability is not None else None
            if cursors is not None and session.server.cursor_file is not None:
                cursors.restore(load_cursors(session.server.cursor_file))
        if SUBSCRIBE.encode() not in body and _UNSUBSCRIBE.encode() not in body:
            return None
        try:
            message = parse_json(body)
        except MemoryStoreError:
            return None
        if not isinstance(message, dict) or message.get("method") not in (SUBSCRIBE, _UNSUBSCRIBE):
            return None
        params = message.get("params")
        uri = params.get("uri") if isinstance(params, dict) else None
        return f"{message['method']} {uri}" if isinstance(uri, str) else None

    def _after(self, session: Session, change: str, status: int, data: bytes) -> None:
        """Write a subscription that succeeded to the book, for the worker holding the event stream."""
        try:
            answer = parse_json(data)
        except MemoryStoreError:
            return
        if status >= 400 or not isinstance(answer, dict) or "error" in answer or session.session_id is None:
            return
        method, _, uri = change.partition(" ")
        # The server answers an unsubscribe from any URI (a no-op for one it never offered), so
        # only a subscribe, which it refuses for a URI it does not offer, may add a URI here:
        # the record holds no more than the session's context resources, whatever a client sends.
        head = self._head(uri) if method == SUBSCRIBE else None

        def edit(record: dict[str, Any]) -> dict[str, Any]:
            subs = [s for s in record.get("subscriptions", []) if s != uri]
            heads = {k: v for k, v in record.get("heads", {}).items() if k != uri}
            record["subscriptions"] = [*subs, uri] if method == SUBSCRIBE else subs
            record["heads"] = {**heads, uri: head} if method == SUBSCRIBE else heads
            return record

        record = self.book.update(session.owner, session.session_id, edit)
        if record is not None:
            session.subscribed = tuple(record["subscriptions"])
            session.generation = int(record["generation"])

    def _head(self, uri: str) -> str | None:
        """Where ``main`` of the memory a context URI names is now (``None`` when it cannot be read)."""
        name = uri[len(RESOURCE_SCHEME) : -len("/context")] if uri.startswith(RESOURCE_SCHEME) else ""
        try:
            return self.root.mount(name).sync.head() if name else None
        except MemoryStoreError:
            return None

    def _catch_up(self, session: Session) -> None:
        """On a new event stream, tell of every subscribed memory that moved since its subscription.

        A write may land after ``resources/subscribe`` but before the client's GET
        stream is open (in another worker, which first takes the session up): that
        change was told to no stream, so it is told now. A notification is a hint,
        so one told twice costs the client a read, and one never told a stale memory.
        """
        record = self.book.load(session.owner, session.session_id) if session.session_id is not None else None
        heads = record.get("heads", {}) if record is not None else {}
        portal = self._portal
        for uri in session.subscribed:
            if portal is not None and isinstance(heads, dict) and heads.get(uri) != self._head(uri):
                with suppress(RuntimeError):
                    portal.start_task_soon(session.server.resource_updated, uri)


def header(headers: Iterable[tuple[str, str]], name: str) -> str | None:
    return next((v for k, v in headers if k.lower() == name), None)


def as_local(scope: dict[str, Any], local_id: str | None) -> dict[str, Any]:
    """The request as this worker's SDK session knows it: its own session id in place of the book's."""
    if local_id is None:
        return scope
    key = SESSION_HEADER.encode()
    scope["headers"] = [(k, local_id.encode("latin-1") if k == key else v) for k, v in scope["headers"]]
    return scope


def as_public(headers: list[tuple[str, str]], session_id: str | None) -> list[tuple[str, str]]:
    """The SDK's answer as the client sees it: the book's session id in place of this worker's."""
    if session_id is None:
        return headers
    return [(k, session_id if k.lower() == SESSION_HEADER else v) for k, v in headers]


def agreed_version(data: bytes) -> str | None:
    """The protocol version an ``initialize`` answer agreed on."""
    try:
        answer = parse_json(data)
    except MemoryStoreError:
        return None
    result = answer.get("result") if isinstance(answer, dict) else None
    version = result.get("protocolVersion") if isinstance(result, dict) else None
    return version if isinstance(version, str) else None

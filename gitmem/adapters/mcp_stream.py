"""The bridge from waitress to the SDK's ASGI transport, and change notifications over ``/mcp``.

:func:`asgi_scope` and :func:`asgi_answer` run one WSGI request through the
SDK's session manager on the bridge's event loop and collect its whole answer
(JSON mode: one body). The rest of this module is the one answer that is not
whole: the GET event stream.

The MCP streamable HTTP transport lets a client open ``GET /mcp`` (with its
session id): a server-sent-event stream on which the server sends what no
request asked for. ``gitmem serve`` sends there what a stdio agent is sent:
after ``resources/subscribe`` to ``memory://NAME/context``, a
``notifications/resources/updated`` each time ``main`` of memory ``NAME`` moves,
whoever moved it (an agent over ``/mcp`` or stdio, a push, ``git update-ref``).

- :class:`ChangeFanout`: one :class:`~gitmem.adapters.watch.Watcher` over the
  root for the whole server (not one per session), started once a session
  with an event stream in this worker subscribes to a memory (a watcher
  handles every write's file events and reads the refs again: work for
  nobody until then); each move of a ``main`` is handed to every live
  session's server that offers that memory, on the bridge's event loop.
- :func:`event_stream`: runs the SDK's GET handler on that loop and hands its
  body, chunk by chunk, to the waitress worker that serves the request. An open
  stream holds that worker (``gitmem serve`` adds one per allowed stream, so
  tool calls never wait for them). The stream ends when the client goes (seen
  at the SDK's 15 s ping at the latest), when the session ends, or when the
  token is revoked or changed in the token file: it is checked before every
  event and every second, so a revoked token is told nothing more.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any, Final

import anyio
import anyio.from_thread
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from gitmem.adapters.mcp_server import MemoryMcpServer, context_uri
from gitmem.adapters.watch import RefChange, Watcher
from gitmem.root import Root

log = logging.getLogger(__name__)

#: How long the watcher lets a burst of writes settle before it reads the refs (the stdio server's is 50 ms).
NOTIFY_DEBOUNCE: Final = 0.005
#: How often an open stream checks that its token still holds.
GRANT_CHECK: Final = 1.0
#: How long after a failed start of the watcher it is tried again.
RETRY_START: Final = 30.0

Portal = anyio.from_thread.BlockingPortal


class ChangeFanout:
    """One watcher over ``root``; each move of a memory's ``main`` goes to every server in ``servers()``."""

    def __init__(
        self,
        root: Root,
        servers: Callable[[], Iterable[MemoryMcpServer]],
        portal: Callable[[], Portal | None],
        debounce: float = NOTIFY_DEBOUNCE,
    ) -> None:
        self.root = root
        self._servers = servers
        self._portal = portal
        self._debounce = debounce
        self._lock = threading.Lock()
        self._watcher: Watcher | None = None
        self._retry_at = 0.0  # a failed start is not tried again before (time.monotonic())
        self._closed = False

    @property
    def started(self) -> bool:
        """Whether the root is watched (a start that failed is tried again :data:`RETRY_START` later)."""
        return self._watcher is not None

    def start(self) -> bool:
        """Start watching, once (later calls return at once); whether this call started it.

        A start that failed (the inotify table full, the root unreadable for a
        moment) is tried again by a call :data:`RETRY_START` seconds later, so a
        passing failure does not leave the server without notifications for good.
        """
        with self._lock:
            if self._watcher is not None or self._closed or time.monotonic() < self._retry_at:
                return False
            watcher = Watcher(self.root, None, self._changed, debounce=self._debounce, index=False, details=False)
            try:
                watcher.start()
            except Exception:  # notifications are a hint: a root that cannot be watched still serves tools
                self._retry_at = time.monotonic() + RETRY_START
                log.warning("memory changes are not watched: /mcp clients get no change notifications", exc_info=True)
                return False
            self._watcher = watcher
            return True

    def close(self, timeout: float = 10.0) -> None:
        with self._lock:
            self._closed = True
            watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.stop(timeout)

    def _changed(self, change: RefChange) -> None:  # on the watcher's thread
        if not change.is_main:
            return
        portal = self._portal()
        if portal is None:
            return
        uri = context_uri(change.mount)
        for server in self._servers():
            if any(m.name == change.mount for m in server.file_mounts):
                try:
                    portal.start_task_soon(server.resource_updated, uri)
                except RuntimeError:  # the loop is stopping
                    return


class StreamSlot:
    """One open event stream of token ``owner``; ``ending`` once it gave its place to another token's."""

    __slots__ = ("ending", "owner")

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.ending = False


class StreamSlots:
    """The ``limit`` event streams a worker keeps open, shared fairly among the tokens that want one.

    Each open stream holds a thread for as long as its client keeps it, so the
    places are few; first come, first served let one token (a ``read`` token's
    client opening a session and a stream, again and again) take every place,
    and every other principal's agents got no change notifications. When all are
    taken, a stream of a token holding at least two fewer than the token that
    holds the most takes the place of that token's longest open stream, which
    ends at its next check (within :data:`GRANT_CHECK`). A token that already
    holds its share is refused, so it cannot push anybody else's streams out.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._open: dict[str, list[StreamSlot]] = {}

    def take(self, owner: str) -> StreamSlot | None:
        """A place for a new stream of ``owner``, or ``None`` when it holds its share of a full server."""
        with self._lock:
            live = {o: [s for s in slots if not s.ending] for o, slots in self._open.items()}
            if sum(len(slots) for slots in live.values()) >= self.limit:
                mine = len(live.get(owner, ()))
                richest = max(live.values(), key=len, default=[])
                if len(richest) <= mine + 1:
                    return None
                richest[0].ending = True
            slot = StreamSlot(owner)
            self._open.setdefault(owner, []).append(slot)
            return slot

    def release(self, slot: StreamSlot) -> None:
        with self._lock:
            slots = self._open.get(slot.owner, [])
            if slot in slots:
                slots.remove(slot)
            if not slots:
                self._open.pop(slot.owner, None)

    def count(self) -> int:
        """Streams open now, those ending included."""
        with self._lock:
            return sum(len(slots) for slots in self._open.values())


async def asgi_answer(
    manager: StreamableHTTPSessionManager, scope: dict[str, Any], body: bytes, timeout: float
) -> tuple[int, list[tuple[str, str]], bytes]:
    """Run one request through the SDK and collect its whole answer (JSON mode: one body)."""
    status = 500
    headers: list[tuple[str, str]] = []
    chunks: list[bytes] = []
    done = anyio.Event()
    receive = _receiver(body, done)

    async def send(message: Mapping[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
            headers.extend((k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(bytes(message.get("body", b"")))
            if not message.get("more_body", False):
                done.set()

    with anyio.fail_after(timeout):
        async with anyio.create_task_group() as tasks:

            async def run() -> None:
                await manager.handle_request(scope, receive, send)
                done.set()

            tasks.start_soon(run)
            await done.wait()
            tasks.cancel_scope.cancel()
    kept = [(k, v) for k, v in headers if k.lower() != "content-length"]
    return status, kept, b"".join(chunks)


def _receiver(body: bytes, gone: anyio.Event) -> Callable[[], Awaitable[dict[str, Any]]]:
    """ASGI ``receive``: the request's whole ``body`` once, then a disconnect once ``gone`` is set."""
    given = False

    async def receive() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    return receive


def asgi_scope(environ: Mapping[str, Any]) -> dict[str, Any]:
    headers: list[tuple[bytes, bytes]] = []
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            name = key[5:].replace("_", "-").lower()
        elif key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            name = key.replace("_", "-").lower()
        else:
            continue
        headers.append((name.encode("latin-1"), str(value).encode("latin-1")))
    port = int(environ.get("SERVER_PORT") or 0)
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": environ.get("REQUEST_METHOD", "POST"),
        "scheme": environ.get("wsgi.url_scheme", "http"),
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": str(environ.get("QUERY_STRING", "")).encode("latin-1"),
        "root_path": "",
        "headers": headers,
        "client": (environ.get("REMOTE_ADDR", ""), int(environ.get("REMOTE_PORT") or 0)),
        "server": (environ.get("SERVER_NAME", ""), port),
    }


def event_stream(
    portal: Portal,
    manager: StreamableHTTPSessionManager,
    scope: dict[str, Any],
    *,
    timeout: float,
    alive: Callable[[], bool],
    on_close: Callable[[], None],
) -> tuple[int, list[tuple[str, str]], Iterable[bytes]]:
    """Run the SDK's answer to a ``GET /mcp`` and return its status, headers and body as it comes.

    A refusal (no ``text/event-stream`` accepted, a second stream of one
    session) is a whole answer as any other. ``alive()`` is asked every
    :data:`GRANT_CHECK` seconds: once false the stream ends. ``on_close`` runs
    once, when the stream is over whichever way.
    """
    chunks: queue.Queue[tuple[str, Any]] = queue.Queue()
    gone: anyio.Event = portal.call(anyio.Event)

    async def run() -> None:
        receive = _receiver(b"", gone)  # a GET has no body: the SDK reads it before it answers

        async def send(message: Mapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                pairs = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])]
                chunks.put(("start", (int(message["status"]), pairs)))
            elif message["type"] == "http.response.body":
                chunks.put(("body", bytes(message.get("body", b""))))
                if not message.get("more_body", False):
                    chunks.put(("end", None))

        try:
            await manager.handle_request(scope, receive, send)
        finally:
            chunks.put(("end", None))

    def close() -> None:
        try:
            portal.call(gone.set)
        except RuntimeError:  # the loop is gone already
            pass
        on_close()

    portal.start_task_soon(run).add_done_callback(_log_failure)
    try:
        kind, value = chunks.get(timeout=timeout)
    except queue.Empty:
        close()
        return 504, [("Content-Type", "application/json")], [b'{"error": "the event stream did not start"}']
    if kind != "start":
        close()
        return 500, [("Content-Type", "application/json")], [b'{"error": "the event stream ended at once"}']
    status, headers = value
    kept = [(k, v) for k, v in headers if k.lower() not in ("content-length", "connection")]
    return status, kept, _Body(chunks, alive, close)


def _log_failure(future: Any) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("an MCP event stream failed", exc_info=future.exception())


class _Body:
    """The stream's body for waitress: each chunk as the SDK sends it; ``close`` ends the SDK's side."""

    def __init__(self, chunks: queue.Queue[tuple[str, Any]], alive: Callable[[], bool], close: Callable[[], None]):
        self._chunks = chunks
        self._alive = alive
        self._close: Callable[[], None] | None = close

    def __iter__(self) -> Iterator[bytes]:
        # An SSE comment, which clients skip, so that the status line and headers go out now:
        # waitress sends them with the body's first bytes, and the SDK's may be its ping 15 s later.
        yield b": open\n\n"
        while True:
            try:
                kind, value = self._chunks.get(timeout=GRANT_CHECK)
            except queue.Empty:
                kind, value = "", None
            # The token is asked about before every event (a stat of the token file) and every second.
            if kind == "end" or not self._alive():
                break
            if kind == "body" and value:
                yield value
        self.close()

    def close(self) -> None:
        done, self._close = self._close, None
        if done is not None:
            done()

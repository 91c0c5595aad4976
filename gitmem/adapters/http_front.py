"""What waitress serves in front of the git and MCP apps: the base path, ``/health``, and the loop itself.

:class:`FrontApp` puts every route under ``gitmem serve --base-path`` and answers
a proxy's liveness check; :class:`GitHttpServer` runs waitress (imported only when
a server starts) with gitmem's own connection limits, the ``Origin``/``Host``
gate and a task dispatcher that keeps the few threads a load needs warm. Both
wrap any WSGI app: :class:`gitmem.adapters.http_server.GitHttpApp` for git's
smart HTTP, with :class:`gitmem.adapters.mcp_http.WithMcp` for ``/mcp``.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

from gitmem.adapters.http_server import REQUEST_SLACK, StartResponse, WSGIApp, text_response
from gitmem.adapters.origins import OriginGate
from gitmem.adapters.receive_pack import DEFAULT_MAX_PUSH_BYTES
from gitmem.adapters.serve_connections import (
    CHANNEL_TIMEOUT,
    HELD_BACK_POLL,
    MAX_CONNECTIONS,
    channel_class,
    end_stalled,
    make_room,
)
from gitmem.errors import MemoryStoreError

log = logging.getLogger(__name__)


# --- the front: base path and health ---------------------------------------------------

_BASE_PATH = re.compile(r"^(/[A-Za-z0-9._~-]+)+$")
HEALTH_PATH = "/health"


def normalize_base_path(base: str | None) -> str:
    """``--base-path`` as served: ``""`` for the root, else ``/a/b`` (one leading slash, none trailing).

    ``invalid_arguments`` for anything a proxy could not forward as one path prefix
    (a query, ``..``, characters that would need escaping).
    """
    text = (base or "").strip()
    if text in ("", "/"):
        return ""
    text = "/" + text.strip("/")
    if not _BASE_PATH.fullmatch(text) or any(part in (".", "..") for part in text.split("/")):
        raise MemoryStoreError(
            "invalid_arguments",
            f"the base path {base!r} is not a path prefix: give segments of letters, digits and ._~- such as /memories",
        )
    return text


_WELL_KNOWN = re.compile(r"^(/\.well-known/[A-Za-z0-9._~-]+)(/.*)$")


def _under(path: str, base: str) -> bool:
    return path == base or path.startswith(base + "/")


def _as_sent(environ: dict[str, Any]) -> str:
    """The request's path decoded segment by segment, an encoded slash kept as ``%2F``: where its segments part.

    The server decodes ``PATH_INFO`` whole, so ``/base%2Fx`` (one segment, ``base/x``) reads
    there as ``x`` under ``/base``. A proxy that forwards ``/base/`` alone never sends it,
    and it must not be answered as under the base. The raw request line the server keeps
    (``REQUEST_URI``) says where the segments part; without one, ``PATH_INFO`` is all there is.
    """
    raw = environ.get("REQUEST_URI")
    if not isinstance(raw, str) or not raw:
        return str(environ.get("PATH_INFO", ""))
    if raw.startswith("//"):  # as the server splits it: a path, not a network location
        path = raw.partition("#")[0].partition("?")[0]
    else:
        try:
            path = urlsplit(raw).path
        except ValueError:
            return str(environ.get("PATH_INFO", ""))
    return "/".join(unquote(part, encoding="latin-1").replace("/", "%2F") for part in path.split("/"))


class FrontApp:
    """What waitress serves before the git and MCP apps: the base path, and ``GET /health``.

    With a base path every route (git's ``NAME.git/...``, ``/mcp``, OAuth discovery,
    ``/health``) answers only under it, as a reverse proxy forwards ``/base/...``
    unchanged; the prefix is moved to ``SCRIPT_NAME`` so the apps see their usual
    paths, and anything outside it is 404. The one exception is a well-known URI
    that names the base after its name (``/.well-known/oauth-protected-resource/base/mcp``):
    OAuth discovery puts the resource's path there, at the host's root, so it is
    answered as its twin under the base (``/base/.well-known/oauth-protected-resource/mcp``). ``/health`` needs no token and says
    nothing about the memories: it is for a proxy's or orchestrator's liveness check.
    """

    def __init__(self, app: WSGIApp, base_path: str = "") -> None:
        self.app = app
        self.base_path = normalize_base_path(base_path)
        self.max_push_bytes = getattr(app, "max_push_bytes", DEFAULT_MAX_PUSH_BYTES)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = str(environ.get("PATH_INFO", ""))
        base = self.base_path
        if base:
            # Decided on the path as sent (an encoded slash is no segment's end); the prefix found
            # there has no escape left in it, so it has the same length in the decoded PATH_INFO.
            sent = _as_sent(environ)
            known = _WELL_KNOWN.match(sent)
            if known and _under(known.group(2), base):
                # RFC 8414 / RFC 9728: the metadata of https://host/base/mcp is at
                # /.well-known/NAME/base/mcp, at the host's root; answered as /base/.well-known/NAME/mcp.
                prefix = len(known.group(1)) + len(base)
                sent = path = base + known.group(1) + path[prefix:]
            if not _under(sent, base) or not _under(path, base):
                return text_response(start_response, "404 Not Found", f"this server answers under {base}/ only\n")
            environ["SCRIPT_NAME"] = str(environ.get("SCRIPT_NAME", "")) + base
            path = path[len(base) :] or "/"
            environ["PATH_INFO"] = path
        if path == HEALTH_PATH:
            if environ.get("REQUEST_METHOD", "GET") in ("GET", "HEAD"):
                return text_response(start_response, "200 OK", "ok\n", [("Cache-Control", "no-store")])
            # Not the git app's "no such repository": the route is there, for these methods.
            return text_response(
                start_response, "405 Method Not Allowed", "/health answers GET and HEAD\n", [("Allow", "GET, HEAD")]
            )
        return self.app(environ, start_response)

    def body_cap(self, method: str, path: str, authorization: str) -> int | None:
        capper = getattr(self.app, "body_cap", None)
        return capper(method, path, authorization) if callable(capper) else None

    def end_streams(self) -> None:
        ender = getattr(self.app, "end_streams", None)
        if callable(ender):
            ender()

    def close(self, timeout: float = 10.0) -> None:
        closer = getattr(self.app, "close", None)
        if callable(closer):
            closer(timeout)


# --- the server --------------------------------------------------------------------


class _WarmFirst(threading.Condition):
    """A condition that wakes the thread which waited *least*: the last to go idle takes the next request.

    waitress's workers wait on one condition, and ``notify`` wakes the one that
    has waited longest, so requests go round all of them (32 with ``/mcp``). Each
    worker keeps its own git handle and parsed trees (:class:`gitmem.git.repo.GitRepo`
    keeps them per thread), so round-robin meets a cold handle at nearly every call:
    reopened after each pack fold, its trees parsed again. Waking the most recently
    idle worker keeps the few threads a load needs warm (a write cost ~30 % less CPU,
    ``docs/benchmarks.md``). ``notify`` is Python's own with the other end of the queue.
    """

    def notify(self, n: int = 1) -> None:
        if not self._is_owned():  # type: ignore[attr-defined]
            raise RuntimeError("cannot notify on un-acquired lock")
        waiters = self._waiters  # type: ignore[attr-defined]
        while waiters and n > 0:
            waiter = waiters[-1]
            try:
                waiter.release()
            except RuntimeError:  # released already by an interrupted notify: as Python's own skips it
                pass
            else:
                n -= 1
            try:
                waiters.remove(waiter)
            except ValueError:
                pass


def _warm_first_dispatcher() -> Any:
    """waitress's task dispatcher with :class:`_WarmFirst` as the condition its workers wait on."""
    from waitress.task import ThreadedTaskDispatcher

    dispatcher = ThreadedTaskDispatcher()
    dispatcher.queue_cv = _WarmFirst(dispatcher.lock)
    return dispatcher


class GitHttpServer:
    """waitress serving a WSGI app (a :class:`GitHttpApp`); ``start()`` in a thread or ``serve_forever()``.

    The event loop runs in one thread and checks a stop flag between polls, so
    ``stop()`` from any thread (or a signal) shuts it down cleanly. Every request
    passes the ``Origin``/``Host`` check of :mod:`gitmem.adapters.origins` before
    the app sees it (``allowed_origins``, ``allowed_hosts``: ``--allow-origin``,
    ``--allow-host``). ``sock`` is a listening socket to serve instead of binding
    ``host``/``port`` (a worker's, from the supervisor); ``may_accept(connections)``,
    asked before each poll, says whether to take new connections now.
    """

    def __init__(
        self,
        app: WSGIApp,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        threads: int = 4,
        allowed_origins: Iterable[str] = (),
        allowed_hosts: Iterable[str] = (),
        sock: socket.socket | None = None,
        may_accept: Callable[[int], bool] | None = None,
        channel_timeout: int = CHANNEL_TIMEOUT,
    ) -> None:
        from waitress.server import create_server

        self.app = app
        if sock is not None:  # a worker of several, on the supervisor's socket
            host, port = sock.getsockname()[:2]
        gate = OriginGate(app, host, port, allowed_origins, allowed_hosts)
        self._map: dict[int, Any] = {}
        # waitress buffers a whole request body (to a temp file) before the app runs: cap it
        # near the app's own pack cap (without one, waitress's default of 1 GiB stays).
        limits: dict[str, int] = {
            "connection_limit": MAX_CONNECTIONS + 16,  # ours (accepting) applies first
            "channel_timeout": channel_timeout,
        }
        cap = getattr(app, "max_push_bytes", DEFAULT_MAX_PUSH_BYTES)
        if cap:
            limits["max_request_body_size"] = cap + REQUEST_SLACK
        dispatcher = _warm_first_dispatcher()
        dispatcher.set_thread_count(threads)
        where: dict[str, Any] = {"sockets": [sock]} if sock is not None else {"host": host, "port": port}
        self._server = create_server(
            gate, map=self._map, threads=threads, ident="gitmem", _dispatcher=dispatcher, **where, **limits
        )
        gate.port = self.port
        capper = getattr(app, "body_cap", None)
        if callable(capper):
            self._server.channel_class = channel_class(capper)
        readable = self._server.readable
        self._held_back = False  # new connections are left to the other workers: look again soon
        self._full_logged = -60.0  # when the last "connections are full" line was logged

        def accepting() -> bool:  # asked before each poll
            room = bool(readable())  # waitress's idle-connection sweep (its own limit sits above ours)
            held = len(self._map) - 2  # connections: the map also holds the server and its wake-up pipe
            may = may_accept is None or may_accept(held)
            self._held_back = not may
            if not (room and may):
                return False
            if held >= MAX_CONNECTIONS:
                make_room(self._server.active_channels.values())
                self._held_back = True  # the place is free by the next turn
                now = time.monotonic()
                if now - self._full_logged > 60:
                    self._full_logged = now
                    log.warning("%d connections are open: a new one takes the place of the longest silent", held)
                return False
            return True

        self._server.readable = accepting
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Held while the loop closes its sockets and wake-up pipe: a stop asked after that
        # must not write to the pipe's descriptor, which the process may already have reused.
        self._closing = threading.Lock()
        self._closed = False

    @property
    def host(self) -> str:
        return str(self._server.effective_host)

    @property
    def port(self) -> int:
        return int(self._server.effective_port)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def serve_forever(self) -> None:
        from waitress import wasyncore

        stalled_check = 0.0
        try:
            while not self._stop.is_set():
                # A worker that leaves new connections to the others does not watch the listening
                # socket, so nothing wakes it when they took theirs: it asks again within 10 ms, not
                # at the next second (a burst of connections was taken three or four a second).
                wait = HELD_BACK_POLL if self._held_back else 1.0
                wasyncore.loop(timeout=wait, map=self._map, use_poll=True, count=1)
                now = time.time()
                if now >= stalled_check:  # between polls, where closing a socket is safe
                    stalled_check = now + 1.0
                    adj = self._server.adj
                    end_stalled(list(self._server.active_channels.values()), now - adj.channel_timeout,
                                 adj.outbuf_high_watermark)  # fmt: skip
        finally:
            with self._closing:
                self._closed = True
                ender = getattr(self.app, "end_streams", None)  # requests that only wait for more (event streams)
                if callable(ender):
                    ender()
                self._server.task_dispatcher.shutdown()
                wasyncore.close_all(self._map)

    def start(self) -> GitHttpServer:
        self._thread = threading.Thread(target=self.serve_forever, name="gitmem-serve", daemon=True)
        self._thread.start()
        return self

    def request_stop(self) -> None:
        """Ask the loop to end; safe from any thread and from a signal handler."""
        self._stop.set()
        # Not blocking: a signal handler may run on the loop's own thread while it closes.
        if not self._closing.acquire(blocking=False):
            return  # the loop is closing: it needs no wake-up
        try:
            if not self._closed:
                self._server.pull_trigger()
        finally:
            self._closing.release()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and wait (up to ``timeout`` seconds) for the loop thread to end."""
        self.request_stop()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        close = getattr(self.app, "close", None)
        if callable(close):
            close(timeout)

    def __enter__(self) -> GitHttpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

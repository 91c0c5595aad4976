"""``gitmem serve``: git smart HTTP for every mount under a root, with pushes held to the store's rules.

``http://host:port/<name>.git`` serves mount ``<root>/<name>.git`` to the real git
client (clone, fetch, push). dulwich speaks the protocol; waitress (imported only
when a server is started) runs the WSGI app. dulwich's own receive-pack is not safe
for a live memory, so pushes go through
:class:`gitmem.adapters.receive_pack.GuardedReceivePack`. Together they fix what
plain dulwich serving lacks:

- **auth**: pushes need a token (HTTP basic password, or ``Authorization: Bearer``);
  reads are public or need a token too;
- **rules**: the pushed objects land in a quarantine directory first, every ref
  update is checked by :mod:`gitmem.git.pushcheck` (fast-forward on ``main``, paths,
  content, secrets), and only accepted objects move into the mount: a refused push
  leaves nothing behind. The client sees each refusal as ``remote:`` lines naming
  the ref, commit, file and rule, and the ref as ``[remote rejected]``;
- **CAS**: an accepted update is applied as a compare-and-swap from the old value
  the client sent, under the mount's writer lock, so it serialises with store
  writes. When an agent wrote meanwhile the CAS fails and the client is told so;
  dulwich would have answered "ok" and dropped the push.

- **size**: a pack larger than ``max_push_bytes`` (``gitmem serve
  --max-push-bytes``, 64 MiB by default) is refused while it is read, and waitress
  refuses a request body much larger than that before the app sees it.

Only the smart protocol is served (no dumb ``objects/`` downloads), so every read
passes the same token check.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import os
import re
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import parse_qs

from dulwich.repo import Repo
from dulwich.server import Backend
from dulwich.web import GunzipFilter, HTTPGitApplication, LimitedInputFilter

from gitmem.adapters.receive_pack import DEFAULT_MAX_PUSH_BYTES, BeforeUpdate, GuardedReceivePack, MountContext
from gitmem.errors import MemoryStoreError
from gitmem.git.repo import GitRepo
from gitmem.index.refresher import Refresher
from gitmem.root import MOUNT_NAME, Root

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

_ROUTE = re.compile(r"^/(?P<name>[^/]+)\.git(?P<rest>/info/refs|/git-upload-pack|/git-receive-pack)$")
_SERVICES = ("git-upload-pack", "git-receive-pack")
_REALM = 'Basic realm="gitmem", charset="UTF-8"'
_REQUEST_SLACK = 1024 * 1024
"""Request bytes beyond the pack: pkt-line ref commands, capabilities, chunk framing."""


# --- tokens ----------------------------------------------------------------------


def load_tokens(
    token_file: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> frozenset[str]:
    """Push tokens from ``token_file`` (one per line, ``#`` comments) and ``$GITMEM_TOKENS``.

    ``GITMEM_TOKENS`` holds tokens separated by commas or whitespace.
    """
    env = os.environ if env is None else env
    tokens: set[str] = set()
    if token_file is not None:
        try:
            text = Path(token_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise MemoryStoreError("unavailable", f"cannot read the token file {token_file}: {exc}") from exc
        for line in text.splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                tokens.add(line)
    tokens.update(t for t in re.split(r"[\s,]+", env.get("GITMEM_TOKENS", "")) if t)
    return frozenset(tokens)


def _presented_token(environ: Mapping[str, Any]) -> str | None:
    """The token in the request's ``Authorization`` header (basic password or bearer)."""
    scheme, _, value = str(environ.get("HTTP_AUTHORIZATION", "")).strip().partition(" ")
    scheme = scheme.lower()
    if scheme == "bearer":
        return value.strip() or None
    if scheme == "basic":
        try:
            user, _, password = base64.b64decode(value.strip(), validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return password or user or None
    return None


# --- the WSGI app --------------------------------------------------------------------


class _MountBackend(Backend):
    """Opens the one mount a request is for, and remembers what it opened to close it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.opened: list[Repo] = []

    def open_repository(self, path: str) -> Repo:
        repo = Repo(self.path)
        self.opened.append(repo)
        return repo

    def close(self) -> None:
        for repo in self.opened:
            repo.close()
        self.opened.clear()


@dataclass
class GitHttpApp:
    """The WSGI app: routing, token checks, then dulwich with the guarded receive-pack."""

    root: Root
    tokens: frozenset[str] = frozenset()
    public_read: bool = False
    before_update: BeforeUpdate | None = None
    max_push_bytes: int | None = DEFAULT_MAX_PUSH_BYTES
    _refresher: Refresher = field(default_factory=Refresher, repr=False)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        match = _ROUTE.match(environ.get("PATH_INFO", ""))
        if match is None:
            return _text(start_response, "404 Not Found", "no such repository; clone http://HOST:PORT/<name>.git\n")
        name, rest = match["name"], match["rest"]
        method = environ.get("REQUEST_METHOD", "GET")
        if rest == "/info/refs":
            service = parse_qs(environ.get("QUERY_STRING", "")).get("service", [""])[0]
            valid = method == "GET" and service in _SERVICES
        else:
            service = rest[1:]
            valid = method == "POST"
        if not valid:
            return _text(start_response, "403 Forbidden", "only git's smart HTTP protocol is served\n")
        if service == "git-receive-pack" or not self.public_read:
            denied = self._authorize(environ, start_response, push=service == "git-receive-pack")
            if denied is not None:
                return denied
        if not MOUNT_NAME.fullmatch(name) or not (self.root.mount_path(name) / "HEAD").is_file():
            return _text(start_response, "404 Not Found", f"no memory named {name!r} here\n")
        path = str(self.root.mount_path(name))
        backend = _MountBackend(path)
        # A GitRepo per request: its writer lock then always names the mount's current lock
        # file, even after the mount was removed and created again.
        mount = MountContext(name, path, GitRepo(path), self.before_update, self._refresher, self.max_push_bytes)
        handlers: dict[bytes, Callable[..., Any]] = {b"git-receive-pack": partial(GuardedReceivePack, mount=mount)}
        dulwich_app = LimitedInputFilter(GunzipFilter(HTTPGitApplication(backend, dumb=False, handlers=handlers)))
        return _closing(dulwich_app(environ, start_response), backend.close)

    def close(self, timeout: float = 10.0) -> None:
        """Stop background index refreshes (waiting up to ``timeout`` for one in progress)."""
        self._refresher.close(timeout)

    def _authorize(
        self, environ: Mapping[str, Any], start_response: StartResponse, *, push: bool
    ) -> list[bytes] | None:
        token = _presented_token(environ)
        if token is not None and any(hmac.compare_digest(token.encode(), t.encode()) for t in self.tokens):
            return None
        what = "pushing" if push else "reading"
        if not self.tokens:
            detail = f"{what} needs a token, and this server has none configured (--token-file or GITMEM_TOKENS)"
        elif token is None:
            detail = f"{what} needs a token: use it as the HTTP password, or send 'Authorization: Bearer <token>'"
        else:
            detail = "that token is not accepted"
        return _text(start_response, "401 Unauthorized", detail + "\n", [("WWW-Authenticate", _REALM)])


def _text(
    start_response: StartResponse, status: str, body: str, headers: Sequence[tuple[str, str]] = ()
) -> list[bytes]:
    data = body.encode("utf-8")
    start_response(
        status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(data))), *headers]
    )
    return [data]


def _closing(body: Iterable[bytes], close: Callable[[], None]) -> Iterator[bytes]:
    try:
        yield from body
    finally:
        closer = getattr(body, "close", None)
        if closer is not None:
            closer()
        close()


# --- the server --------------------------------------------------------------------


class GitHttpServer:
    """waitress serving a WSGI app (a :class:`GitHttpApp`); ``start()`` in a thread or ``serve_forever()``.

    The event loop runs in one thread and checks a stop flag between polls, so
    ``stop()`` from any thread (or a signal) shuts it down cleanly.
    """

    def __init__(self, app: WSGIApp, host: str = "127.0.0.1", port: int = 0, *, threads: int = 4) -> None:
        from waitress.server import create_server

        self.app = app
        self._map: dict[int, Any] = {}
        # waitress buffers a whole request body (to a temp file) before the app runs: cap it
        # near the app's own pack cap (without one, waitress's default of 1 GiB stays).
        limits: dict[str, int] = {}
        cap = getattr(app, "max_push_bytes", DEFAULT_MAX_PUSH_BYTES)
        if cap:
            limits["max_request_body_size"] = cap + _REQUEST_SLACK
        self._server = create_server(
            app, map=self._map, host=host, port=port, threads=threads, ident="gitmem", **limits
        )
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

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

        try:
            while not self._stop.is_set():
                wasyncore.loop(timeout=1.0, map=self._map, use_poll=True, count=1)
        finally:
            self._server.task_dispatcher.shutdown()
            wasyncore.close_all(self._map)

    def start(self) -> GitHttpServer:
        self._thread = threading.Thread(target=self.serve_forever, name="gitmem-serve", daemon=True)
        self._thread.start()
        return self

    def request_stop(self) -> None:
        """Ask the loop to end; safe from any thread and from a signal handler."""
        self._stop.set()
        self._server.pull_trigger()

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


def serve(
    root: Root,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    tokens: frozenset[str] = frozenset(),
    public_read: bool = False,
    max_push_bytes: int | None = DEFAULT_MAX_PUSH_BYTES,
    on_ready: Callable[[GitHttpServer], None] | None = None,
) -> None:
    """Serve ``root`` until SIGINT or SIGTERM; ``max_push_bytes=None`` takes packs of any size."""
    app = GitHttpApp(root, tokens=tokens, public_read=public_read, max_push_bytes=max_push_bytes)
    server = GitHttpServer(app, host, port)

    def stop(signum: int, frame: FrameType | None) -> None:
        server.request_stop()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if on_ready is not None:
            on_ready(server)
        server.serve_forever()
        app.close()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

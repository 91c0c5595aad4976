"""``gitmem serve``: git smart HTTP for every mount under a root, with pushes held to the store's rules.

``http://host:port/<name>.git`` serves mount ``<root>/<name>.git`` to the real git
client (clone, fetch, push). dulwich speaks the protocol; waitress (imported only
when a server is started) runs the WSGI app. dulwich's own receive-pack is not safe
for a live memory, so pushes go through
:class:`gitmem.adapters.receive_pack.GuardedReceivePack`. Together they fix what
plain dulwich serving lacks:

- **auth**: pushes need a token (HTTP basic password, or ``Authorization: Bearer``);
  reads are public or need a token too. A token names a principal, the memories it
  reaches and its access (:mod:`gitmem.adapters.tokens`); a memory it does not
  reach answers 404 like an absent one, and each ref update is held to its access
  (:mod:`gitmem.adapters.pushaccess`);
- **fetches while main moves**: a fetch may want any commit some ref reaches
  (:mod:`gitmem.git.reach`), so an agent write between the ref listing and the
  pack request does not fail it;
- **a merge queue**: a push to ``refs/for/main`` is merged into ``main`` as it is
  now (:mod:`gitmem.git.queue`);
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
  refuses a request body much larger than that before the app sees it. The caps
  count *inflated* bytes: a gzip request body is decompressed here, under the cap,
  so 90 KB of gzip cannot become 30 MB of work. A fetch request (``want``/``have``
  negotiation) is read whole, up to ``max_fetch_request_bytes`` (1 MiB, some
  20,000 ``have`` lines), before dulwich sees it; past that it gets 413;
- **load**: requests without a valid token (reads of a ``--public-read`` server)
  share ``anonymous_slots`` workers (2 of waitress's 4); past that they get 503
  with ``Retry-After`` at once, so anonymous clients cannot occupy every worker
  and token holders are always answered.

Only the smart protocol is served (no dumb ``objects/`` downloads), so every read
passes the same token check.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import logging
import os
import re
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import parse_qs

from dulwich.repo import Repo
from dulwich.server import Backend
from dulwich.web import HTTPGitApplication, LimitedInputFilter

from gitmem.adapters.fetchwants import serve_reachable_wants, wanted
from gitmem.adapters.pushaccess import push_policy
from gitmem.adapters.receive_pack import (
    DEFAULT_MAX_PUSH_BYTES,
    BeforeUpdate,
    GuardedReceivePack,
    InputTooLarge,
    MountContext,
)
from gitmem.adapters.serve_connections import (
    SMALL_BODY,
)
from gitmem.adapters.tokens import Grant, Tokens
from gitmem.adapters.tokens import load_tokens as _load_tokens
from gitmem.adapters.upload_pack import GuardedUploadPack
from gitmem.errors import MemoryStoreError
from gitmem.git.control import check_control_files
from gitmem.git.reach import reachable_wants
from gitmem.git.repo import GitRepo
from gitmem.index.refresher import Refresher
from gitmem.root import MOUNT_NAME, Root

log = logging.getLogger(__name__)

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

_ROUTE = re.compile(r"^/(?P<name>[^/]+)\.git(?P<rest>/info/refs|/git-upload-pack|/git-receive-pack)$")
_SERVICES = ("git-upload-pack", "git-receive-pack")
_REALM = 'Basic realm="gitmem", charset="UTF-8"'
REQUEST_SLACK = 1024 * 1024
"""Request bytes beyond the pack: pkt-line ref commands, capabilities, chunk framing."""
DEFAULT_MAX_FETCH_REQUEST_BYTES = 1024 * 1024
"""The largest fetch negotiation taken, once decompressed: ~20,000 ``have`` lines."""
DEFAULT_MAX_FETCH_HAVES = 1000
"""``have`` lines of one fetch request that are read; the rest are dropped (see :func:`_trim_negotiation`)."""
DEFAULT_ANONYMOUS_SLOTS = 2
"""Requests without a token served at once; the other workers stay free for token holders."""
_READ = 64 * 1024


class _CappedReader:
    """A request body (inflated when gzip) that raises :class:`InputTooLarge` past ``cap`` bytes.

    Decompression errors surface as ``OSError`` so the receive path reports them
    as a broken pack instead of failing the request.
    """

    def __init__(self, inner: Any, cap: int | None) -> None:
        self._inner = inner
        self._cap = cap
        self._read = 0

    def read(self, size: int = -1) -> bytes:
        want = size if size is not None and size >= 0 else _READ * 16
        if self._cap is not None:
            want = min(want, self._cap - self._read + 1)
        try:
            data = self._inner.read(want) if want > 0 else b""
        except (EOFError, zlib.error) as exc:
            raise OSError(f"the request body is not valid gzip: {exc}") from exc
        self._read += len(data)
        if self._cap is not None and self._read > self._cap:
            raise InputTooLarge(self._cap)
        return data


# --- tokens ----------------------------------------------------------------------


def load_tokens(token_file: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> Tokens:
    """The server's tokens: ``token_file`` (TOML, JSON or a plain list) and ``$GITMEM_TOKENS`` (see :mod:`gitmem.adapters.tokens`)."""
    return _load_tokens(token_file, env)


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
    """Opens the one mount a request is for, and remembers what it opened to close it.

    ``wants`` are the commits a fetch request asks for (read from its body before
    dulwich sees it): those some ref still reaches are served even when no ref
    points at them any more (see :mod:`gitmem.adapters.fetchwants`).
    """

    def __init__(self, path: str, wants: Sequence[str] = ()) -> None:
        self.path = path
        self.wants = wants
        self.opened: list[Repo] = []

    def open_repository(self, path: str) -> Repo:
        repo = Repo(self.path)
        _bitmaps_only_when_complete(repo)
        if self.wants:
            serve_reachable_wants(repo, reachable_wants(self.path, self.wants))
        self.opened.append(repo)
        return repo

    def close(self) -> None:
        for repo in self.opened:
            repo.close()
        self.opened.clear()


def _bitmaps_only_when_complete(repo: Repo) -> None:
    """Let dulwich use pack bitmaps only when every pack has one.

    After ``git gc`` (one pack, with a bitmap) and then a push (a second pack,
    without), dulwich's bitmap walk opens the missing ``.bitmap`` file and fails
    every fetch with ``FileNotFoundError`` until the next gc. With any pack
    lacking a bitmap the fetch walks the object graph instead, as it does on a
    mount that was never gc'ed.
    """
    store = repo.object_store
    original = store.get_reachability_provider
    folder = os.path.join(repo.path, "objects", "pack")

    def provider(prefer_bitmaps: bool = True) -> Any:
        if prefer_bitmaps:
            try:
                names = os.listdir(folder)
            except OSError:
                names = []
            stems = {n[:-5] for n in names if n.endswith(".pack")}
            prefer_bitmaps = bool(stems) and all(f"{stem}.bitmap" in names for stem in stems)
        return original(prefer_bitmaps=prefer_bitmaps)

    store.get_reachability_provider = provider  # type: ignore[method-assign]


@dataclass
class GitHttpApp:
    """The WSGI app: routing, token checks, then dulwich with the guarded receive-pack."""

    root: Root
    tokens: frozenset[str] | Tokens = frozenset()
    """Plain tokens (full access to every memory, as before) or a :class:`~gitmem.adapters.tokens.Tokens` table."""
    public_read: bool = False
    before_update: BeforeUpdate | None = None
    max_push_bytes: int | None = DEFAULT_MAX_PUSH_BYTES
    max_fetch_request_bytes: int = DEFAULT_MAX_FETCH_REQUEST_BYTES
    max_fetch_haves: int = DEFAULT_MAX_FETCH_HAVES
    anonymous_slots: int = DEFAULT_ANONYMOUS_SLOTS
    _refresher: Refresher = field(default_factory=Refresher, repr=False)
    _anonymous: threading.Semaphore = field(init=False, repr=False)
    grants: Tokens = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._anonymous = threading.BoundedSemaphore(max(1, self.anonymous_slots))
        self.grants = self.tokens if isinstance(self.tokens, Tokens) else Tokens.plain(self.tokens)

    def grant(self, environ: Mapping[str, Any]) -> Grant | None:
        """What the request's token may do, or ``None`` without a token the server knows."""
        return self.grants.grant(_presented_token(environ))

    def body_cap(self, method: str, path: str, authorization: str) -> int | None:
        """The largest body this request may send: ``None`` (the push cap) for a push whose token may push.

        Asked by the server once a request's headers are in, before its body is read
        (see :class:`GitHttpServer`). A request with a token the server knows is held
        to :data:`~gitmem.adapters.serve_connections.SMALL_BODY`; one without (only
        a ``--public-read`` fetch is served then) to what a fetch request may hold.
        """
        grant = self.grant({"HTTP_AUTHORIZATION": authorization})
        if grant is None:
            return self.max_fetch_request_bytes + REQUEST_SLACK
        if method == "POST" and path.endswith("/git-receive-pack") and grant.allows("propose"):
            return None
        return SMALL_BODY

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        match = _ROUTE.match(environ.get("PATH_INFO", ""))
        if match is None:
            base = str(environ.get("SCRIPT_NAME", ""))  # the base path the front moved there
            return text_response(
                start_response, "404 Not Found", f"no such repository; clone http://HOST:PORT{base}/<name>.git\n"
            )
        name, rest = match["name"], match["rest"]
        method = environ.get("REQUEST_METHOD", "GET")
        if rest == "/info/refs":
            service = parse_qs(environ.get("QUERY_STRING", "")).get("service", [""])[0]
            valid = method == "GET" and service in _SERVICES
        else:
            service = rest[1:]
            valid = method == "POST"
        if not valid:
            return text_response(start_response, "403 Forbidden", "only git's smart HTTP protocol is served\n")
        anonymous = False
        push = service == "git-receive-pack"
        grant = self.grant(environ)
        if push or not self.public_read:
            denied = self._authorize(environ, start_response, grant, push=push)
            if denied is not None:
                return denied
            assert grant is not None
            if not grant.reaches(name):  # answered exactly as for a memory that does not exist
                return text_response(start_response, "404 Not Found", f"no memory named {name!r} here\n")
            if push and not grant.allows("propose"):
                return text_response(start_response, "403 Forbidden", f"this token may only read memory {name!r}\n")
        else:
            anonymous = grant is None
        if anonymous and not self._anonymous.acquire(blocking=False):
            # 401, not 503: git sends no credentials to a public server until it is asked
            # for them, so this is how a token holder gets past a flood of anonymous reads.
            return text_response(
                start_response,
                "401 Unauthorized",
                "the server is busy with anonymous requests: retry shortly, or read with a token\n",
                [("WWW-Authenticate", _REALM), ("Retry-After", "5")],
            )
        release = self._anonymous.release if anonymous else None
        try:
            return self._serve(environ, start_response, name, rest, release, grant)
        except BaseException:
            if release is not None:
                release()
            raise

    def _serve(
        self,
        environ: dict[str, Any],
        start_response: StartResponse,
        name: str,
        rest: str,
        release: Callable[[], None] | None,
        grant: Grant | None = None,
    ) -> Iterable[bytes]:
        done: Callable[[], None] = release or (lambda: None)
        if not MOUNT_NAME.fullmatch(name) or not (self.root.mount_path(name) / "HEAD").is_file():
            done()
            return text_response(start_response, "404 Not Found", f"no memory named {name!r} here\n")
        if rest != "/info/refs":
            refused = self._limit_input(environ, start_response, rest[1:])
            if refused is not None:
                done()
                return refused
        path = str(self.root.mount_path(name))
        try:  # dulwich and git read the config and alternates blocking, following links: check them first
            check_control_files(path)
        except MemoryStoreError as exc:
            done()
            log.warning("memory %s is not served: %s", name, exc.message)
            return text_response(
                start_response,
                "503 Service Unavailable",
                f"memory {name!r} is unavailable: its config or alternates file is not a plain file "
                "(the server's log says which)\n",
            )
        backend = _MountBackend(path, environ.get("gitmem.wants", ()))
        # A GitRepo per request: its writer lock then always names the mount's current lock
        # file, even after the mount was removed and created again.
        mount = MountContext(name, path, GitRepo(path), self.before_update, self._refresher, self.max_push_bytes)
        if grant is not None:
            mount.policy = push_policy(path, name, grant)
            mount.principal = grant.principal
        handlers: dict[bytes, Callable[..., Any]] = {
            b"git-receive-pack": partial(GuardedReceivePack, mount=mount),
            b"git-upload-pack": partial(GuardedUploadPack, wants=environ.get("gitmem.wants", ())),
        }
        dulwich_app = LimitedInputFilter(HTTPGitApplication(backend, dumb=False, handlers=handlers))

        def close() -> None:
            backend.close()
            done()

        return _ClosingBody(dulwich_app(environ, start_response), close)

    def _limit_input(self, environ: dict[str, Any], start_response: StartResponse, service: str) -> list[bytes] | None:
        """Cap the request body by its inflated size; a fetch request is read whole here."""
        encoding = str(environ.get("HTTP_CONTENT_ENCODING", "")).strip().lower()
        if encoding not in ("", "identity", "gzip"):
            return text_response(
                start_response, "415 Unsupported Media Type", f"content encoding {encoding!r} is not taken\n"
            )
        body: Any = environ["wsgi.input"]
        if encoding == "gzip":
            try:
                length = int(environ.get("CONTENT_LENGTH") or -1)
            except ValueError:
                length = -1
            body = gzip.GzipFile(fileobj=_Prefix(body, length), mode="rb")  # type: ignore[call-overload]
            del environ["HTTP_CONTENT_ENCODING"]
            environ.pop("CONTENT_LENGTH", None)
        if service == "git-receive-pack":
            cap = self.max_push_bytes + REQUEST_SLACK if self.max_push_bytes else None
            environ["wsgi.input"] = _CappedReader(body, cap)
            return None
        reader = _CappedReader(body, self.max_fetch_request_bytes)
        chunks = []
        try:
            while chunk := reader.read(_READ):
                chunks.append(chunk)
        except InputTooLarge:
            return text_response(
                start_response,
                "413 Content Too Large",
                f"a fetch request may hold {self.max_fetch_request_bytes} bytes once decompressed\n",
            )
        except OSError as exc:
            return text_response(start_response, "400 Bad Request", f"cannot read the request: {exc}\n")
        data = _trim_negotiation(b"".join(chunks), self.max_fetch_haves)
        environ["gitmem.wants"] = wanted(data)
        environ["wsgi.input"] = io.BytesIO(data)
        environ["CONTENT_LENGTH"] = str(len(data))
        return None

    def close(self, timeout: float = 10.0) -> None:
        """Stop background index refreshes (waiting up to ``timeout`` for one in progress)."""
        self._refresher.close(timeout)

    def _authorize(
        self, environ: Mapping[str, Any], start_response: StartResponse, grant: Grant | None, *, push: bool
    ) -> list[bytes] | None:
        if grant is not None:
            return None
        token = _presented_token(environ)
        what = "pushing" if push else "reading"
        if not self.tokens:
            detail = f"{what} needs a token, and this server has none configured (--token-file or GITMEM_TOKENS)"
        elif token is None:
            detail = f"{what} needs a token: use it as the HTTP password, or send 'Authorization: Bearer <token>'"
        else:
            detail = "that token is not accepted"
        return text_response(start_response, "401 Unauthorized", detail + "\n", [("WWW-Authenticate", _REALM)])


def _trim_negotiation(body: bytes, max_haves: int) -> bytes:
    """A fetch request without repeated ``want``/``have`` lines and with at most ``max_haves`` haves.

    dulwich spends about half a millisecond per ``have`` (it walks history for
    each), so the count, not only the size, bounds the work a request can ask
    for. Dropping haves is safe: they only tell the server what the client has,
    so with fewer of them the answer is a larger pack, never a wrong one; and
    git sends its most recent commits first. A body that is not a well-formed
    sequence of pkt-lines is passed on unchanged for dulwich to refuse.
    """
    out: list[bytes] = []
    seen: set[bytes] = set()
    haves = 0
    pos = 0
    while pos < len(body):
        try:
            size = int(body[pos : pos + 4], 16)
        except ValueError:
            return body
        if size == 0 or size == 1:
            out.append(body[pos : pos + 4])
            pos += 4
            continue
        if size < 4 or pos + size > len(body):
            return body
        line = body[pos : pos + size]
        pos += size
        payload = line[4:]
        if payload.startswith((b"want ", b"have ")):
            key = payload[:45]
            if key in seen:
                continue
            if payload.startswith(b"have "):
                if haves >= max_haves:
                    continue
                haves += 1
            seen.add(key)
        out.append(line)
    return b"".join(out)


class _Prefix:
    """The first ``length`` bytes of a stream (all of it when ``length`` is negative)."""

    def __init__(self, inner: Any, length: int) -> None:
        self._inner = inner
        self._left = length

    def read(self, size: int = -1) -> bytes:
        if self._left < 0:
            return bytes(self._inner.read(size))
        if size is None or size < 0 or size > self._left:
            size = self._left
        data = bytes(self._inner.read(size)) if size else b""
        self._left -= len(data)
        return data


def text_response(
    start_response: StartResponse, status: str, body: str, headers: Sequence[tuple[str, str]] = ()
) -> list[bytes]:
    data = body.encode("utf-8")
    start_response(
        status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(data))), *headers]
    )
    return [data]


class _ClosingBody:
    """The response body; ``close`` runs once: when the body is used up or the server closes it.

    It frees what the request held (the repository, an anonymous worker slot), so
    it must run even when the client went away before the first chunk.
    """

    def __init__(self, body: Iterable[bytes], close: Callable[[], None]) -> None:
        self._body = body
        self._close: Callable[[], None] | None = close

    def __iter__(self) -> Iterator[bytes]:
        yield from self._body
        self.close()

    def close(self) -> None:
        done, self._close = self._close, None
        if done is None:
            return
        try:
            closer = getattr(self._body, "close", None)
            if closer is not None:
                closer()
        finally:
            done()

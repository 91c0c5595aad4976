"""``gitmem serve``: git smart HTTP for every mount under a root, with pushes held to the store's rules.

``http://host:port/<name>.git`` serves mount ``<root>/<name>.git`` to the real git
client (clone, fetch, push). dulwich speaks the protocol; waitress (imported only
when a server is started) runs the WSGI app. dulwich's own receive-pack is not safe
for a live memory, so pushes go through :class:`GuardedReceivePack`, which fixes
what SPEC §11 measured:

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

Only the smart protocol is served (no dumb ``objects/`` downloads), so every read
passes the same token check.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
import os
import re
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import parse_qs

from dulwich.errors import ApplyDeltaError, ChecksumMismatch, ObjectFormatException
from dulwich.file import FileLocked
from dulwich.object_store import DiskObjectStore
from dulwich.objects import ObjectID
from dulwich.protocol import CAPABILITY_ATOMIC, SIDE_BAND_CHANNEL_PROGRESS
from dulwich.refs import Ref
from dulwich.repo import Repo
from dulwich.server import Backend, ReceivePackHandler
from dulwich.web import GunzipFilter, HTTPGitApplication, LimitedInputFilter

from gitmem.errors import MemoryStoreError
from gitmem.git.locks import remove_if_stale
from gitmem.git.pushcheck import MAIN, ZERO, RefUpdate, Refusal, check_updates, reason
from gitmem.git.repo import GitRepo
from gitmem.gitstore import format_from_repo
from gitmem.hooks import refresh_index
from gitmem.root import MOUNT_NAME, Root

log = logging.getLogger("gitmem.serve")

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]
BeforeUpdate = Callable[[str, Sequence[RefUpdate]], None]
"""Called with the mount name and the accepted updates just before they are applied."""

_ROUTE = re.compile(r"^/(?P<name>[^/]+)\.git(?P<rest>/info/refs|/git-upload-pack|/git-receive-pack)$")
_SERVICES = ("git-upload-pack", "git-receive-pack")
_REALM = 'Basic realm="gitmem", charset="UTF-8"'
_UNPACK_ERRORS = (OSError, ChecksumMismatch, ApplyDeltaError, AssertionError, ObjectFormatException, ValueError)


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


# --- quarantine --------------------------------------------------------------------


class _Quarantine:
    """A temporary object directory inside the mount that receives a push's pack.

    Like git's own receive-pack quarantine: objects become part of the mount only
    when an update that needs them is accepted; otherwise they are deleted.
    """

    def __init__(self, repo_path: str) -> None:
        self.objects = os.path.join(repo_path, "objects")
        # git gc/prune clean up "tmp_*" leftovers if this process dies here.
        self.path = tempfile.mkdtemp(prefix="tmp_objdir-gitmem-", dir=self.objects)
        os.mkdir(os.path.join(self.path, "pack"))
        self.received = 0

    def receive(self, read: Callable[[int], bytes], recv: Callable[[int], bytes] | None, max_size: int | None) -> None:
        store = DiskObjectStore(self.path, alternates=[self.objects])
        try:
            pack = store.add_thin_pack(read, recv, max_input_size=max_size)
            self.received = len(pack)
            pack.close()
        finally:
            store.close()

    def migrate(self) -> None:
        """Move the received objects into the mount (pack before index, like git).

        An empty pack (a push of commits the mount already has) is not kept.
        """
        if not self.received:
            return
        source = os.path.join(self.path, "pack")
        target = os.path.join(self.objects, "pack")
        os.makedirs(target, exist_ok=True)
        for name in sorted(os.listdir(source), key=lambda n: (n.endswith(".idx"), n)):
            if name.endswith((".pack", ".idx")) and not os.path.exists(os.path.join(target, name)):
                os.replace(os.path.join(source, name), os.path.join(target, name))

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


# --- receive-pack --------------------------------------------------------------------


@dataclass
class _MountContext:
    """What a push to one mount needs besides dulwich's repo: its name, path and writer lock."""

    name: str
    path: str
    git: GitRepo
    before_update: BeforeUpdate | None = None
    refresher: _IndexRefresher | None = None


class _IndexRefresher:
    """Brings mount indexes up to date after pushes, one at a time, off the request path.

    The pusher gets its answer without waiting for Whoosh. Requests for a mount
    already waiting are merged; on close, waiting requests are dropped (the index
    catches up on the next search anyway).
    """

    def __init__(self) -> None:
        self._pending: dict[str, None] = {}
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def request(self, mount_path: str) -> None:
        with self._cond:
            if self._closed:
                return
            self._pending[mount_path] = None
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="gitmem-index-refresh", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                path = next(iter(self._pending))
                del self._pending[path]
            try:
                refresh_index(path)
            except Exception:  # the push has landed; the index is derived and catches up later
                log.warning("the index of %s was not refreshed after a push", path, exc_info=True)

    def close(self, timeout: float) -> None:
        with self._cond:
            self._closed = True
            self._pending.clear()
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)


class GuardedReceivePack(ReceivePackHandler):
    """dulwich's receive-pack with quarantine, pushcheck and a real ref CAS.

    Repository hooks are not run: the server applies gitmem's checks itself.
    """

    def __init__(
        self,
        backend: Backend,
        args: Sequence[str],
        proto: Any,
        stateless_rpc: bool = False,
        advertise_refs: bool = False,
        *,
        mount: _MountContext,
    ) -> None:
        super().__init__(backend, args, proto, stateless_rpc=stateless_rpc, advertise_refs=advertise_refs)
        self.mount = mount

    def _on_pre_receive(self, client_refs: Any) -> None:
        return None

    def _on_update(self, ref_name: Any, old_sha: Any, new_sha: Any) -> bytes | None:
        return None

    def _on_post_receive(self, client_refs: Any) -> None:
        if any(ref == MAIN.encode() for _, _, ref in client_refs) and self.mount.refresher is not None:
            self.mount.refresher.request(self.mount.path)

    def _say(self, line: str) -> None:
        """One ``remote:`` line on the client's terminal."""
        if self.has_capability(b"side-band-64k"):
            self.proto.write_sideband(SIDE_BAND_CHANNEL_PROGRESS, (line + "\n").encode("utf-8"))

    def _apply_pack(self, refs: Any) -> Iterator[tuple[bytes, bytes]]:
        updates = [
            RefUpdate(ref.decode("utf-8", "replace"), old.decode("ascii"), new.decode("ascii"))
            for old, new, ref in refs
        ]
        statuses = self._decide_and_apply(updates)
        yield (b"unpack", statuses.pop("", b"ok"))
        for update in updates:
            yield (update.ref.encode("utf-8"), statuses[update.ref])

    def _decide_and_apply(self, updates: list[RefUpdate]) -> dict[str, bytes]:
        """Status per ref (``b"ok"`` or a reason); key ``""`` holds an unpack failure."""
        mark = _history_mark(self.mount.git)
        quarantine = _Quarantine(self.mount.path)
        try:
            if any(not u.deleting for u in updates):
                try:
                    recv = getattr(self.proto, "recv", None)
                    quarantine.receive(self.proto.read, recv, self._receive_max_input_size())
                except _UNPACK_ERRORS as exc:
                    message = str(exc).replace("\n", " ") or type(exc).__name__
                    return {"": message.encode("utf-8"), **{u.ref: b"unpacker error" for u in updates}}
            try:
                fmt = format_from_repo(GitRepo(self.mount.path))
                verdicts = check_updates(self.mount.path, updates, fmt, object_dirs=[quarantine.path])
            except (MemoryStoreError, ValueError) as exc:
                self._say(f"gitmem: cannot check this push, so it is refused: {exc}")
                return {u.ref: b"cannot check the push; see the remote messages" for u in updates}
            return self._apply(updates, verdicts, quarantine, mark)
        finally:
            quarantine.discard()

    def _apply(
        self,
        updates: list[RefUpdate],
        verdicts: dict[str, list[Refusal]],
        quarantine: _Quarantine,
        mark: tuple[int, int],
    ) -> dict[str, bytes]:
        statuses: dict[str, bytes] = {}
        refused = [r for u in updates for r in verdicts[u.ref]]
        if refused:
            self._say("gitmem: push refused; a memory only takes changes a store write would accept:")
            for refusal in refused:
                self._say(f"gitmem:   {refusal}")
        for update in updates:
            if verdicts[update.ref]:
                statuses[update.ref] = reason(verdicts[update.ref]).encode("utf-8")
        accepted = [u for u in updates if not verdicts[u.ref]]
        if refused and self.has_capability(CAPABILITY_ATOMIC):
            statuses.update({u.ref: b"atomic push failed" for u in accepted})
            return statuses
        if not accepted:
            return statuses
        if self.mount.before_update is not None:
            self.mount.before_update(self.mount.name, accepted)
        with self.mount.git.lock.hold():
            if _history_mark(self.mount.git) != mark:
                # A purge or forget deleted objects this push was checked against (and may
                # build on): landing it could bring erased content back or leave refs dangling.
                statuses.update({u.ref: _REWRITTEN for u in accepted})
            else:
                if any(not u.deleting for u in accepted):
                    quarantine.migrate()
                statuses.update(self._compare_and_swap(accepted))
        for update in accepted:
            if statuses[update.ref] != b"ok":
                self._say(f"gitmem: {update.ref}: {statuses[update.ref].decode()}")
        return statuses

    def _compare_and_swap(self, accepted: list[RefUpdate]) -> dict[str, bytes]:
        """Move each ref from the value the client saw; never report ``ok`` for a ref that did not move."""
        current = {u.ref: self._current(u.ref) for u in accepted}
        stale = {u.ref for u in accepted if current[u.ref] != u.old}
        if stale and self.has_capability(CAPABILITY_ATOMIC):
            return {
                u.ref: self._stale_reason(u, current[u.ref]) if u.ref in stale else b"atomic push failed"
                for u in accepted
            }
        out: dict[str, bytes] = {}
        done: list[RefUpdate] = []
        for update in accepted:
            if update.ref in stale:
                out[update.ref] = self._stale_reason(update, current[update.ref])
                continue
            moved = self._swap(update.ref, update.old, update.new)
            if moved is True:
                out[update.ref] = b"ok"
                done.append(update)
                continue
            out[update.ref] = (
                moved if isinstance(moved, bytes) else self._stale_reason(update, self._current(update.ref))
            )
            if self.has_capability(CAPABILITY_ATOMIC):
                for applied in done:  # a foreign git process raced us: put the others back
                    self._swap(applied.ref, applied.new, applied.old)
                    out[applied.ref] = b"atomic push failed"
                return {u.ref: out.get(u.ref, b"atomic push failed") for u in accepted}
        return out

    def _current(self, ref: str) -> str:
        try:
            found = self.repo.refs[Ref(ref.encode())]
        except KeyError:
            return ZERO
        return found.decode("ascii")

    @staticmethod
    def _stale_reason(update: RefUpdate, now: str) -> bytes:
        if update.old == ZERO:
            return b"the ref already exists; fetch and push again"
        if now == ZERO:
            return b"the ref was deleted meanwhile; fetch and push again"
        return (
            f"the ref moved to {now[:12]} while this push was checked (an agent or another push wrote); "
            "fetch, rebase or merge, and push again"
        ).encode()

    def _swap(self, ref: str, old: str, new: str) -> bool | bytes:
        """One CAS; ``True``, ``False`` (the ref moved) or a reason it could not be tried."""
        refs = self.repo.refs
        name, old_b, new_b = Ref(ref.encode()), ObjectID(old.encode()), ObjectID(new.encode())
        lock_file = os.path.join(self.mount.path, *ref.split("/")) + ".lock"
        for _ in range(2):
            try:
                if new == ZERO:
                    return bool(refs.remove_if_equals(name, old_b, message=b"push via gitmem serve"))
                return bool(refs.set_if_equals(name, old_b, new_b, message=b"push via gitmem serve"))
            except FileLocked:
                # We hold the writer lock, so a lock file that stays is a crashed writer's.
                if not remove_if_stale(lock_file, self.mount.git.stale_lock_seconds):
                    break
            except OSError as exc:
                return f"could not update the ref: {exc}".replace("\n", " ").encode()
        return b"the ref is locked by another git process; push again shortly"


_REWRITTEN = b"the memory's history was rewritten (purge or forget) while this push was checked; clone again"


def _history_mark(git: GitRepo) -> tuple[int, int]:
    """Changes whenever purge or forget deletes objects (the repo's generation file)."""
    return git._generation()


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
    _refresher: _IndexRefresher = field(default_factory=_IndexRefresher, repr=False)
    _gits: dict[str, GitRepo] = field(default_factory=dict, repr=False)
    _gits_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

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
        mount = _MountContext(name, path, self._git(name, path), self.before_update, self._refresher)
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

    def _git(self, name: str, path: str) -> GitRepo:
        # One GitRepo per mount: its writer lock keeps a descriptor per thread.
        with self._gits_lock:
            git = self._gits.get(name)
            if git is None or git.path != os.path.abspath(path):
                git = self._gits[name] = GitRepo(path)
            return git


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
        self._server = create_server(app, map=self._map, host=host, port=port, threads=threads, ident="gitmem")
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
    on_ready: Callable[[GitHttpServer], None] | None = None,
) -> None:
    """Serve ``root`` until SIGINT or SIGTERM."""
    app = GitHttpApp(root, tokens=tokens, public_read=public_read)
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

"""Where every worker process of ``gitmem serve`` finds the MCP sessions: one folder of small files.

``gitmem serve --workers N`` runs N processes on one port, and a client's next
request may land on any of them (its connection broke, it opened a second one
for the GET event stream, a worker died and was replaced). So a session is not
kept in one process: :class:`SessionBook` keeps, per token (by its hash), one
record per session, and every worker answers any session it finds there. A
worker that meets a session it does not hold yet takes it up
(:mod:`gitmem.adapters.mcp_http` replays the handshake the record kept into an
MCP server of its own, with the same tag and topic, and the subscriptions).

The folder, made by the supervisor before it starts the workers (or by a
single-process server for itself) and removed when it stops::

    <book>/<token hash>/.owner        flock: a token's sessions are admitted, evicted and changed under it
    <book>/<token hash>/<id>.lock     flock shared while a request of the session is in flight in any
                                      worker; its mtime is when the session was last used
    <book>/<token hash>/<id>.json     the record (owner, grant, topic, tag, handshake, subscriptions,
                                      a generation), replaced whole by a rename
    <book>/<token hash>/<id>.cursors  the ``memory_context`` prompt's cursors (see ``cursor_file``)

A lock file without a record is a session being opened (it counts toward the
token's limit, as busy). A record or cursors without a lock file
belong to a session that ended, and are swept with the idle sessions (:meth:`SessionBook.reap`). Why files and locks and not a shared memory or a
broker: the kernel drops a dead worker's locks, so a SIGKILLed worker leaves
nothing busy behind, and a rename is atomic for every reader. A request costs a
``stat`` of its record and an ``flock`` pair; the sessions' state changes
(subscribe, a context prompt) write a file.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import math
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitmem.errors import MemoryStoreError
from gitmem.localfile import MB, load_local_json, open_private, replace_file

_SESSION_ID = re.compile(r"[0-9a-f]{32}")
_OWNER = re.compile(r"[0-9a-f]{64}")
_RECORD_LIMIT = 4 * MB
HANDSHAKE_LIMIT = 64 * 1024
"""The largest request that may open a session (its ``initialize``, a few hundred bytes from any client):
the book keeps it for every worker to replay, per session, up to a token's ``max_sessions`` of them."""


def grant_stamp(grant: object) -> str:
    """What a session remembers of the grant it was opened with: a changed grant ends it."""
    return hashlib.sha256(repr(grant).encode("utf-8")).hexdigest()[:32]


def valid_session_id(text: str | None) -> bool:
    return text is not None and _SESSION_ID.fullmatch(text) is not None


@dataclass(frozen=True)
class Admission:
    """The answer to "may this token open one more session": a new id, or the seconds to wait."""

    session_id: str | None
    lock_fd: int | None  # the new session's lock file, held shared while its opening request runs
    evicted: tuple[str, ...]  # ids of this token's sessions closed to make room
    retry_after: int | None = None


class SessionBook:
    """The MCP sessions of every worker of one server, in ``folder`` (a private temporary one if ``None``)."""

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        self._owned = folder is None
        self.path = Path(tempfile.mkdtemp(prefix="gitmem-mcp-sessions-") if folder is None else folder)
        self.path.mkdir(mode=0o700, exist_ok=True)

    # -- paths -------------------------------------------------------------------------

    def _folder(self, owner: str) -> Path:
        if not _OWNER.fullmatch(owner):
            raise ValueError("a session's owner is a token's SHA-256")
        return self.path / owner

    def record_path(self, owner: str, session_id: str) -> Path:
        return self._folder(owner) / f"{session_id}.json"

    def lock_path(self, owner: str, session_id: str) -> Path:
        return self._folder(owner) / f"{session_id}.lock"

    def cursor_path(self, owner: str, session_id: str) -> Path:
        return self._folder(owner) / f"{session_id}.cursors"

    @contextmanager
    def _owner_lock(self, owner: str) -> Iterator[Path]:
        folder = self._folder(owner)
        folder.mkdir(mode=0o700, exist_ok=True)
        fd = open_private(folder / ".owner", os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield folder
        finally:
            os.close(fd)

    # -- one session -------------------------------------------------------------------

    def exists(self, owner: str, session_id: str) -> bool:
        return os.path.exists(self.record_path(owner, session_id))

    def load(self, owner: str, session_id: str) -> dict[str, Any] | None:
        """The session's record, or ``None`` (never opened, closed, evicted, or not this token's)."""
        if not valid_session_id(session_id):
            return None
        data = load_local_json(self.record_path(owner, session_id), _RECORD_LIMIT)
        return data if isinstance(data, dict) else None

    def open_lock(self, owner: str, session_id: str) -> int | None:
        """A descriptor of the session's lock file (to mark requests in flight), or ``None`` when it is gone."""
        try:
            return open_private(self.lock_path(owner, session_id), os.O_RDWR)
        except OSError:
            return None

    @classmethod
    def busy(cls, fd: int) -> None:
        """A request of the session is in flight here: it is not evicted meanwhile, and counts as its last use."""
        fcntl.flock(fd, fcntl.LOCK_SH)
        cls.touch(fd)

    @staticmethod
    def idle(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

    @staticmethod
    def touch(fd: int) -> None:
        now = time.time_ns()
        os.utime(fd, ns=(now, now))

    def register(self, owner: str, session_id: str, record: dict[str, Any]) -> None:
        """Write the record of a session whose opening request succeeded: from now on every worker finds it."""
        with self._owner_lock(owner):
            if os.path.exists(self.lock_path(owner, session_id)):  # not evicted while it opened
                self._write(owner, session_id, {**record, "generation": 1})

    def update(
        self, owner: str, session_id: str, change: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> dict[str, Any] | None:
        """Change a session's record (a new generation) and return it; ``None`` when the session is gone."""
        with self._owner_lock(owner):
            record = self.load(owner, session_id)
            if record is None:
                return None
            changed = change(dict(record))
            changed["generation"] = int(record.get("generation", 0)) + 1
            self._write(owner, session_id, changed)
            return changed

    def remove(self, owner: str, session_id: str) -> None:
        """End a session for every worker (its client's next request gets 404)."""
        if valid_session_id(session_id):
            with self._owner_lock(owner):
                self._unlink(owner, session_id)

    def _write(self, owner: str, session_id: str, record: dict[str, Any]) -> None:
        """Replace the record whole; ``too_large`` (nothing written) for one the workers could not read back."""
        text = json.dumps(record)  # ASCII: its length is its size
        if len(text) > _RECORD_LIMIT:
            raise MemoryStoreError("too_large", f"an MCP session's record may hold {_RECORD_LIMIT} bytes")
        replace_file(self.record_path(owner, session_id), text)  # no fsync: sessions end with the server

    def _unlink(self, owner: str, session_id: str) -> None:
        for path in (self.record_path(owner, session_id), self.cursor_path(owner, session_id),
                     self.lock_path(owner, session_id)):  # fmt: skip
            with suppress(FileNotFoundError):
                os.unlink(path)

    # -- a token's sessions ------------------------------------------------------------

    def admit(self, owner: str, max_sessions: int, call_timeout: float) -> Admission:
        """Room for one more session of ``owner`` (its id, its lock held shared), or the seconds to wait.

        Past ``max_sessions`` the token's least recently used sessions that no
        worker has a request in flight for are closed. When every one is busy the
        answer is when the first of them is free at the latest: a request is cut
        off ``call_timeout`` after it began (its lock file's mtime).
        """
        with self._owner_lock(owner) as folder:
            held = sorted(self._sessions(folder), key=lambda pair: pair[1])
            excess = len(held) + 1 - max_sessions
            evicted: list[str] = []
            busy_since: list[float] = []
            for session_id, used in held:
                if excess <= 0:
                    break
                if self._take_if_idle(owner, session_id):
                    evicted.append(session_id)
                    excess -= 1
                else:
                    busy_since.append(used)
            if excess > 0:
                now = time.time()
                first_free = min(busy_since, default=now) + call_timeout
                return Admission(None, None, tuple(evicted), max(1, math.ceil(first_free - now)))
            session_id = os.urandom(16).hex()
            fd = open_private(self.lock_path(owner, session_id), os.O_RDWR | os.O_CREAT | os.O_EXCL)
            self.busy(fd)
            return Admission(session_id, fd, tuple(evicted))

    def abandon(self, owner: str, session_id: str) -> None:
        """A session whose opening request failed: nothing of it is kept."""
        self.remove(owner, session_id)

    def reap(self, idle_timeout: float) -> list[tuple[str, str]]:
        """End sessions of any token that nobody used for ``idle_timeout`` seconds; returns (owner, id) of each."""
        cutoff = time.time() - idle_timeout
        gone: list[tuple[str, str]] = []
        try:
            owners = [entry.name for entry in os.scandir(self.path) if _OWNER.fullmatch(entry.name)]
        except FileNotFoundError:
            return gone
        for owner in owners:
            folder = self._folder(owner)
            entries = _entries(folder)
            stale = [sid for sid, used in self._sessions(folder, entries) if used < cutoff]
            if not stale and not self._litter(folder, cutoff, entries):
                continue
            with self._owner_lock(owner):
                gone += [(owner, sid) for sid in stale if self._take_if_idle(owner, sid, cutoff)]
                # Looked for again under the lock: a session opened meanwhile keeps its files.
                for name in self._litter(folder, cutoff):
                    with suppress(FileNotFoundError):
                        os.unlink(folder / name)
        return gone

    @staticmethod
    def _litter(folder: Path, cutoff: float, entries: list[os.DirEntry[str]] | None = None) -> list[str]:
        """Files of a token's folder no session owns: a record or cursors whose session ended (a prompt
        that saved its cursors after its session's files were removed), a temporary file older than
        ``cutoff`` (a worker killed while it replaced a record). ``entries``: the folder's, read already."""
        entries = _entries(folder) if entries is None else entries
        locks = {e.name[:-5] for e in entries if e.name.endswith(".lock")}
        out: list[str] = []
        for entry in entries:
            stem, dot, suffix = entry.name.rpartition(".")
            if dot and suffix in ("json", "cursors") and _SESSION_ID.fullmatch(stem) and stem not in locks:
                out.append(entry.name)
            elif entry.name.startswith(".") and suffix == "tmp":
                with suppress(FileNotFoundError):
                    if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                        out.append(entry.name)
        return out

    def _sessions(self, folder: Path, entries: list[os.DirEntry[str]] | None = None) -> Iterator[tuple[str, float]]:
        """(id, last use) of each session in a token's folder (``entries``: the folder's, read already)."""
        for entry in _entries(folder) if entries is None else entries:
            name = entry.name
            if name.endswith(".lock") and _SESSION_ID.fullmatch(name[:-5]):
                try:
                    yield name[:-5], entry.stat(follow_symlinks=False).st_mtime
                except FileNotFoundError:
                    continue

    def _take_if_idle(self, owner: str, session_id: str, used_before: float | None = None) -> bool:
        """Remove the session if no request of it is in flight anywhere (hold the owner's lock)."""
        fd = self.open_lock(owner, session_id)
        if fd is None:
            return False
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    return False
                raise
            if used_before is not None and os.fstat(fd).st_mtime >= used_before:
                return False  # used meanwhile
            self._unlink(owner, session_id)
            return True
        finally:
            os.close(fd)

    def close(self) -> None:
        """Remove the folder if this book made it (the supervisor removes a shared one)."""
        if self._owned:
            shutil.rmtree(self.path, ignore_errors=True)


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    """What a token's folder holds now (nothing once it is gone)."""
    try:
        return list(os.scandir(folder))
    except FileNotFoundError:
        return []

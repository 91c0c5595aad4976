"""What a session was bound to, kept beside its memory: a resume without an equivalent binding fails closed.

A session bound to durable memory recalls its active nodes before every turn
and sends what extraction finds there as candidates. Resumed later - another
process, a restart - without that binding, it would run its turns without
durable memory and nobody would notice. So the first time a session id runs
with a durable binding, its memory records the binding's secret-free identity
(the namespace, recall policy and semantic identity that
:meth:`DurableBinding.record` gives; a host's own binding object is known by its
type), and every later start of that session id must bring an equivalent one:

- no binding where one was recorded, or a different one, is refused with
  ``forbidden`` before the session does anything (nothing is written);
- a session first run without a binding may be bound later; from then on the
  binding is its record;
- a record that cannot be read (damaged, a link, a FIFO, too large) refuses
  the resume too: a record is never taken as "not bound".

Every surface that starts or resumes a session passes here
(:func:`resume_session`): :class:`~gitmem.session.runner.SessionRunner`, and the
MCP server for a session memory served under a host-given run id. The records
live in ``<mount>.git/gitmem/session-bindings/`` (one JSON file per session, named
by a hash of its id; written once, never replaced), local state like the access
statistics; a store without a folder (the in-memory twin) keeps them in memory.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any, Final

from gitmem.errors import MemoryStoreError
from gitmem.localfile import RefusedFile, local_folder_fd, open_folder, parse_json, read_local_strict, replace_file

SCHEMA: Final = "gitmem.session.binding.v1"
BINDINGS_DIR: Final = ("gitmem", "session-bindings")
MAX_RECORD_BYTES: Final = 256 * 1024


def _identity(bound: object) -> Any:
    """One durable binding as JSON: its ``record()`` when it has one, else its type."""
    record = getattr(bound, "record", None)
    if callable(record):
        value = record()
        if isinstance(value, Mapping):
            return parse_json(json.dumps(value, sort_keys=True, default=str), what="a binding's record()")  # as stored
    kind = type(bound)
    return {"type": f"{kind.__module__}.{kind.__qualname__}"}


def binding_identity(*bound: object) -> dict[str, Any] | None:
    """The identity of what a session is bound to (``None``: nothing). The same binding in several
    roles (recall, candidates, admission) counts once."""
    found: list[Any] = []
    for item in bound:
        if item is None:
            continue
        identity = _identity(item)
        if identity not in found:
            found.append(identity)
    if not found:
        return None
    return {"schema": SCHEMA, "durable": sorted(found, key=lambda x: json.dumps(x, sort_keys=True))}


def _describe(identity: Mapping[str, Any]) -> str:
    parts = []
    for item in identity.get("durable", []):
        ns = item.get("namespace") if isinstance(item, Mapping) else None
        if isinstance(ns, Mapping):
            parts.append("namespace " + "/".join(str(ns.get(k)) for k in ("tenant", "principal", "scope")))
        elif isinstance(item, Mapping) and "type" in item:
            parts.append(f"a {item['type']}")
    return ", ".join(parts)[:300] or "durable memory"


class SessionRecords:
    """One JSON record per session id beside a repository, each in a file named by a hash of the id.

    Shared by this module's bindings and durable memory's (:mod:`gitmem.durable.sessions`). A
    store without a folder (the in-memory twin) keeps them in memory. A record that cannot be
    read - damaged, a link, a FIFO, too large, another session's - is ``forbidden``, never
    taken for "not bound". A write goes to a synced temporary file that then replaces the
    record or, written once, is linked in only where none is.
    """

    SCHEMA = SCHEMA

    def __init__(self, folder: str | os.PathLike[str] | None, *, root: str | os.PathLike[str] | None = None) -> None:
        self.folder = None if folder is None else os.fspath(folder)
        self.root = None if root is None else os.fspath(root)  # the mount: no folder from it down may be a link
        self._memory: dict[str, dict[str, Any]] = {}

    def _made(self) -> int:
        """A descriptor of the records' folder, made when missing; inside a mount every folder from it down is a
        real one. A record is written through it: a folder swapped for a link after the check is not followed."""
        assert self.folder is not None
        if self.root is not None:
            return local_folder_fd(self.folder, root=self.root)
        os.makedirs(self.folder, mode=0o700, exist_ok=True)
        return open_folder(self.folder)  # no link followed: ELOOP for one

    def _path(self, session_id: str) -> str:
        assert self.folder is not None
        self._check_id(session_id)  # every way to a record file (a subclass's lock file too) comes through here
        return os.path.join(self.folder, hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:40] + ".json")

    def _valid(self, data: dict[str, Any]) -> bool:
        """Whether a record read back has the shape this kind writes (a subclass checks its own fields too)."""
        binding = data.get("binding")
        return isinstance(binding, dict) and binding.get("schema") == self.SCHEMA

    @staticmethod
    def _check_id(session_id: str) -> None:
        """``invalid_query`` for an id that names no record: empty, not a string, not text (a lone surrogate)."""
        if not isinstance(session_id, str) or not session_id:
            raise MemoryStoreError("invalid_query", "a session id is a non-empty string")
        try:
            session_id.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise MemoryStoreError(
                "invalid_query", f"session id {session_id[:200]!r} is not text: {exc.reason} at {exc.start}"
            ) from None

    def _read(self, session_id: str) -> dict[str, Any] | None:
        """The session's whole record (``None``: none); ``forbidden`` when it cannot be read."""
        self._check_id(session_id)
        if self.folder is None:
            found = self._memory.get(session_id)
            return None if found is None else parse_json(json.dumps(found))  # a copy, as a file would give it
        refused = f"session {session_id[:200]!r} has a binding record that cannot be read"
        try:
            raw = read_local_strict(self._path(session_id), MAX_RECORD_BYTES)
            if raw is None:
                return None
            data = parse_json(raw, limit=MAX_RECORD_BYTES, what="the record")
        except RefusedFile as exc:
            raise MemoryStoreError("forbidden", f"{refused} ({exc.reason}); not resumed") from None
        except MemoryStoreError:
            raise MemoryStoreError("forbidden", f"{refused} (not JSON); not resumed") from None
        except OSError as exc:
            raise MemoryStoreError("forbidden", f"{refused} ({exc.strerror or exc}); not resumed") from None
        if not isinstance(data, dict) or data.get("session_id") != session_id or not self._valid(data):
            raise MemoryStoreError("forbidden", f"{refused} (not this session's record); not resumed")
        return data

    def _write(self, session_id: str, data: dict[str, Any], *, replace: bool) -> bool:
        """Save ``data`` as the session's record: ``replace`` it, or write it once (``False``: one was there)."""
        self._check_id(session_id)
        if self.folder is None:
            copied = parse_json(json.dumps(data))
            if replace:
                self._memory[session_id] = copied
            return replace or self._memory.setdefault(session_id, copied) is copied
        try:
            folder = self._made()
            try:
                text = json.dumps(data, sort_keys=True, ensure_ascii=False)
                name = os.path.basename(self._path(session_id))
                return replace_file(name, text, fsync=True, once=not replace, dir_fd=folder)  # once: never replaces
            finally:
                os.close(folder)
        except OSError as exc:
            raise MemoryStoreError("unavailable", f"cannot record the session's binding: {exc}") from exc


class SessionBindings(SessionRecords):
    """The binding records of one session memory's sessions, each written once (see the module docstring)."""

    @classmethod
    def of_store(cls, store: object) -> SessionBindings:
        """Records beside ``store``'s repository when it has a folder (``path``), else in memory."""
        where = getattr(store, "path", None)
        return cls(os.path.join(where, *BINDINGS_DIR), root=where) if isinstance(where, str) else cls(None)

    def _valid(self, data: dict[str, Any]) -> bool:
        return super()._valid(data) and isinstance(data["binding"].get("durable"), list)

    def load(self, session_id: str) -> dict[str, Any] | None:
        """The recorded identity (``None``: never bound); ``forbidden`` when the record cannot be read."""
        data = self._read(session_id)
        return None if data is None else dict(data["binding"])

    def _save(self, session_id: str, identity: dict[str, Any]) -> bool:
        """Record ``identity`` unless a record exists; ``False`` when another process recorded one first."""
        return self._write(session_id, {"session_id": session_id, "binding": identity}, replace=False)

    def resume(self, session_id: str, identity: dict[str, Any] | None) -> None:
        """Start or resume ``session_id`` with ``identity`` (:func:`binding_identity`); ``forbidden`` when
        its record says it was bound otherwise (nothing is written then)."""
        for _ in range(2):
            saved = self.load(session_id)
            if saved is None:
                if identity is None or self._save(session_id, identity):
                    return
                continue  # another process recorded this session's binding meanwhile: check against it
            if identity is None:
                raise MemoryStoreError(
                    "forbidden",
                    f"session {session_id[:200]!r} was bound to durable memory ({_describe(saved)}); "
                    "resume it with an equivalent binding (or start a new session)",
                )
            if saved != identity:
                raise MemoryStoreError(
                    "forbidden",
                    f"session {session_id[:200]!r} was bound to {_describe(saved)} with another policy or identity "
                    f"than this one ({_describe(identity)}); resume needs an equivalent binding",
                )
            return


def resume_session(memory: object, session_id: str, *bound: object) -> None:
    """The gate every surface starting a session passes: check (and on first use record) what it is bound to.

    ``memory`` is the session's memory: one with a ``bindings`` record
    (:class:`~gitmem.session.memory.SessionMemory`) is checked; a host's own
    memory without one keeps no record, and its host answers for resumes.
    """
    bindings = getattr(memory, "bindings", None)
    if isinstance(bindings, SessionBindings):
        bindings.resume(session_id, binding_identity(*bound))

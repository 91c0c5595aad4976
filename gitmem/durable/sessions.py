"""Session bindings that persist: what a session was bound to, and its model-context counter.

A session bound to durable memory (:meth:`DurableBinding.for_session`) leaves a
**secret-free** record beside the repository: the namespace, the recall policy,
and - with semantic recall - the embedding, index and fusion identity and the
semantic policy. Nothing in it can call a provider (no keys, no endpoints): a
host that resumes the session must supply the binding again, and resume **fails
closed** (``forbidden``, nothing changed) unless what it supplies is equivalent
to the record - another namespace, another policy, another embedding model or no
semantic recall where there was one. A record that cannot be read fails closed too.
Profile names compare by :mod:`gitmem.durable.identifiers`: a record naming the
fusion or the semantic binding schema A3S's way equals one naming them gitmem's way.

The record also counts the session's model contexts. Each context gets the next
number under an exclusive lock, so the context ids admissions are keyed by
(:func:`context_id`) stay distinct across process restarts, even when a host's
run ids start again from the same sequence.

The records live in ``<mount>.git/gitmem/durable-sessions/`` (a JSON file per
session, named by a hash of its id); they are local state like the ledger, not
part of the repository.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from gitmem.durable.identifiers import canonical_record
from gitmem.durable.namespace import Namespace, check_identifier
from gitmem.errors import MemoryStoreError
from gitmem.localfile import open_private
from gitmem.session.resume import SessionRecords

BINDING_SCHEMA: Final = "gitmem.durable.binding.v1"
CONTEXT_PROFILE: Final = "gitmem.durable.context.session-sequence-sha256.v1"
SESSIONS_DIR: Final = ("gitmem", "durable-sessions")


def context_id(session_id: str, sequence: int) -> str:
    """The id of a session's ``sequence``-th model context (domain-separated SHA-256)."""
    text = "\x1f".join((CONTEXT_PROFILE, session_id, str(sequence)))
    return "ctx-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class SessionBindings(SessionRecords):
    """The binding records of one repository's sessions, replaced under a per-session lock."""

    SCHEMA = BINDING_SCHEMA

    def __init__(self, folder: str | None, *, root: str | None = None) -> None:
        super().__init__(folder, root=root)
        self._lock = threading.Lock()

    @contextmanager
    def _locked(self, session_id: str) -> Iterator[None]:
        with self._lock:
            if self.folder is None:
                yield
                return
            try:
                folder = self._made()
                try:
                    name = os.path.basename(self._path(session_id)) + ".lock"
                    lock = open_private(name, os.O_RDWR | os.O_CREAT, dir_fd=folder)
                finally:
                    os.close(folder)
            except OSError as exc:
                raise MemoryStoreError("unavailable", f"cannot lock the session binding: {exc}") from exc
            try:
                fcntl.flock(lock, fcntl.LOCK_EX)
                yield
            finally:
                os.close(lock)

    def _valid(self, data: dict[str, Any]) -> bool:
        contexts = data.get("contexts")
        return super()._valid(data) and isinstance(contexts, int) and not isinstance(contexts, bool)

    def load(self, session_id: str) -> dict[str, Any] | None:
        """The session's binding record (``None``: never bound; ``forbidden``: unreadable)."""
        check_identifier("session_id", session_id, code="invalid_query")
        with self._locked(session_id):
            data = self._read(session_id)
        return None if data is None else data["binding"]

    def bind(self, session_id: str, binding: dict[str, Any]) -> bool:
        """Record ``binding`` for a new session, or check a resumed one against its record.

        ``True`` when the session was resumed; ``forbidden`` (nothing written) when
        the record says otherwise.
        """
        check_identifier("session_id", session_id, code="invalid_query")
        with self._locked(session_id):
            data = self._read(session_id)
            if data is None:
                self._write(session_id, {"session_id": session_id, "binding": binding, "contexts": 0}, replace=True)
                return False
            # compared by canonical names: a record an A3S host wrote names the same profiles A3S's way
            saved, given = canonical_record(data["binding"]), canonical_record(binding)
            if saved != given:
                differ = sorted(k for k in set(saved) | set(given) if saved.get(k) != given.get(k))
                raise MemoryStoreError(
                    "forbidden",
                    f"session {session_id!r} was bound otherwise ({', '.join(differ)} differ); "
                    "resume needs an equivalent binding",
                )
            return True

    def next_context(self, session_id: str) -> int:
        """Take the session's next model-context number (1, 2, ...), persisted before it is returned."""
        with self._locked(session_id):
            data = self._read(session_id)
            if data is None:
                raise MemoryStoreError("forbidden", f"session {session_id!r} is not bound")
            data["contexts"] += 1
            self._write(session_id, data, replace=True)
            return int(data["contexts"])


def binding_record(namespace: Namespace, policy: dict[str, Any], semantic: dict[str, Any] | None) -> dict[str, Any]:
    """The secret-free record of a binding (see the module docstring)."""
    return {
        "schema": BINDING_SCHEMA,
        "namespace": namespace.as_dict(),
        "recall_policy": policy,
        "semantic": semantic,
        "context_profile": CONTEXT_PROFILE,
    }

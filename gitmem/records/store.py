"""``RecordStore``: record memory bound to one namespace, kept as files in any store.

Each record is one file (see :mod:`gitmem.records.rules`), so a record change
is a file change: one commit in a git mount, with ``git log``, ``git diff``,
restore and forget working on records as on any file. The store underneath is
any synchronous file store of the seam (the git store of a ``record`` mount, or
the in-memory twin); everything here goes through its contract.

Writes:

- ``add`` creates a new file (expected: absent). When the store can apply
  several edits in one commit, the add also moves the namespace's ``last-id``
  marker by compare-and-swap, so ids are committed in increasing order and a
  list cursor "after id X" can neither skip nor repeat a record added
  concurrently. A collision just retries with a new id.
- ``update`` and ``delete`` are last-write-wins on the record, but each is still
  a compare-and-swap on the version just read: a concurrent change to the same
  record makes it re-read and try again, and a change to another record is
  never lost (the store rebuilds the commit on the new head).
- Every write is confirmed by reading the record back, even after a batch
  store's ``apply`` answered with the commit: ``write_unconfirmed`` is raised
  only when that read cannot tell (it fails, or shows neither the old state
  nor the new).

An add reads the ``last-id`` marker, then commits its record with the marker moved
from the version it read; when another writer moved it first, the compare-and-swap
refuses and the add reads the marker and tries again.
"""

from __future__ import annotations

import builtins
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal, Protocol

from gitmem import derived
from gitmem.errors import LOST_RACE, MemoryStoreError, if_found, whole_number
from gitmem.model import Changes, Edit, FileEntry, FileText, FullResync, Origin
from gitmem.recall import RecallDoc, StoreRecall
from gitmem.recall.index import PROFILES, Profile
from gitmem.records.model import MemoryRecord, RecordPage
from gitmem.records.rules import (
    RECORD_CHARS,
    IdGenerator,
    RecordFile,
    decode_cursor,
    encode_cursor,
    encode_namespace,
    id_of_path,
    is_record_id,
    marker_path,
    parse_record,
    record_path,
    render_record,
    validate_record_text,
)

#: Names what :meth:`RecordStore._to_doc` makes of a file; change it when that changes.
SNAPSHOT_KEY: Final = "records/1"
#: Where a git store keeps the recall snapshots of its namespaces (derived, disposable).
SNAPSHOT_FOLDER: Final = ("gitmem", "recall")

#: How often a write re-reads and tries again after losing a compare-and-swap.
WRITE_ATTEMPTS: Final = 50
#: Page sizes and result counts a store call accepts (the tools narrow them further).
MAX_LIMIT: Final = 100
# How far back a namespace's log looks (the newest changes of the whole mount).
_LOG_WINDOW: Final = 10_000

# Failures that decide the outcome (nothing was written); any other failure of a
# write may have happened after the change landed, so the record is re-read.
_DECIDED: Final = frozenset(
    {
        "version_mismatch",
        "already_exists",
        "not_found",
        "invalid_path",
        "invalid_file",
        "too_large",
        "memory_full",
        "forbidden",
        "wrong_kind",
        "invalid_text",
    }
)


class RecordBackend(Protocol):
    """What a record store needs of the file store under it (the sync seam has it all)."""

    def list(self) -> builtins.list[FileEntry]: ...

    def read(self, path: str) -> FileText: ...

    def write(self, path: str, text: str, *, expected: str | None, origin: Origin | None = None) -> str: ...

    def delete(self, path: str, *, expected: str, origin: Origin | None = None) -> None: ...

    def changes(self, since: str | None) -> Changes | FullResync: ...


@dataclass(frozen=True, slots=True)
class _Change:
    """One file change of a record write: ``text=None`` deletes, ``expected=None`` creates."""

    path: str
    text: str | None
    expected: str | None


_IDS = IdGenerator()


def _now() -> datetime:
    return datetime.now(UTC)


class RecordStore:
    """Record memory of one namespace over a file store; safe for many threads and processes.

    ``store`` is a synchronous file store: ``Root(...).mount(name, kind="record").sync``
    or an :class:`~gitmem.memstore.InMemoryFileStore`. A namespace is any
    non-empty string (a user id, say); it is encoded into one folder name, so no
    call can read or change a record of another namespace.
    """

    def __init__(
        self,
        store: RecordBackend,
        namespace: str,
        *,
        record_chars: int = RECORD_CHARS,
        ranking: Literal["bm25", "coverage"] = "bm25",
        snapshot_dir: str | os.PathLike[str] | None = None,
        profile: Profile = "word-cjk-bigram",
    ) -> None:
        if ranking not in ("bm25", "coverage"):
            raise ValueError(f"ranking must be 'bm25' or 'coverage', not {ranking!r}")
        if profile not in PROFILES:
            raise ValueError(f"profile must be one of {', '.join(PROFILES)}, not {profile!r}")
        # Checked where the store is opened, not only by the tools and CLI: records written into
        # a file (or session, durable) memory would be files its own commands cannot read.
        kind = getattr(store, "kind", "record")
        if kind != "record":
            raise MemoryStoreError(
                "wrong_kind",
                f"{getattr(store, 'path', 'this store')} is a {kind} memory; records live only in a record "
                "memory (`gitmem init NAME --kind record`)",
            )
        self.store = store
        self.namespace = namespace
        self.folder = encode_namespace(namespace)
        self.record_chars = record_chars
        self.ranking: Literal["bm25", "coverage"] = ranking
        # "conversation": each add records the record it follows, and search uses the conversation
        # profile (see gitmem.recall.convo); files of either profile read the same.
        self.profile: Profile = profile
        self.snapshot = _snapshot_file(store, self.folder, snapshot_dir)
        self._recall: StoreRecall | None = None
        self._recall_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RecordStore({self.store!r}, namespace={self.namespace!r})"

    @property
    def kind(self) -> str:
        """The kind of the mount underneath (``record`` for a record mount; in-memory: ``record``)."""
        return str(getattr(self.store, "kind", "record"))

    # -- paths and parsing --

    def _path(self, record_id: object) -> str:
        """The file of ``record_id`` in this namespace; an id of any other shape is simply not here."""
        if not is_record_id(record_id):
            raise MemoryStoreError("record_not_found", f"no record {str(record_id)[:80]!r} in this namespace")
        assert isinstance(record_id, str)
        return record_path(self.folder, record_id)

    def _read(self, path: str) -> FileText | None:
        return if_found(self.store.read, path)

    def _record(self, record_id: str, file: FileText) -> RecordFile:
        try:
            return parse_record(record_id, file.text)
        except ValueError as error:
            raise MemoryStoreError("unavailable", f"record {record_id} cannot be read: {error}") from None

    @staticmethod
    def _public(record: RecordFile, score: float | None = None) -> MemoryRecord:
        return MemoryRecord(record.id, record.text, score, record.updated)

    def _to_doc(self, file: FileText) -> RecallDoc | None:
        record_id = id_of_path(self.folder, file.path)
        if record_id is None:
            return None
        record = parse_record(record_id, file.text)
        return RecallDoc(record_id, record.text, record.updated.timestamp(), record.follows)

    # -- reads --

    def get(self, record_id: str) -> MemoryRecord:
        """One record by id; ``record_not_found`` when this namespace has no such record."""
        path = self._path(record_id)
        file = self._read(path)
        if file is None:
            raise MemoryStoreError("record_not_found", f"no record {record_id} in this namespace")
        return self._public(self._record(record_id, file))

    def ids(self) -> builtins.list[str]:
        """Every record id of the namespace, oldest first."""
        found = (id_of_path(self.folder, entry.path) for entry in self.store.list())
        return sorted(i for i in found if i is not None)

    def list(self, *, limit: int = 20, cursor: str | None = None) -> RecordPage:
        """Records in creation order, ``limit`` at a time, after the record ``cursor`` points at."""
        after = decode_cursor(self.folder, cursor)
        whole_number("limit", limit, MAX_LIMIT, "invalid_query")
        ids = [i for i in self.ids() if after is None or i > after]
        records: builtins.list[MemoryRecord] = []
        last: str | None = None
        for record_id in ids:
            if len(records) == limit:
                break
            last = record_id
            file = self._read(record_path(self.folder, record_id))
            if file is not None:  # deleted since the listing: it is not part of the namespace any more
                records.append(self._public(self._record(record_id, file)))
        more = last is not None and ids[-1] != last
        return RecordPage(tuple(records), encode_cursor(self.folder, last) if more and last else None)

    def search(self, query: str, *, limit: int = 5) -> builtins.list[MemoryRecord]:
        """The records closest to ``query``, best first, each with its score.

        Ranked by BM25 over the recall engine's tokens (words; CJK as character
        pairs): a record scores for each query word it holds, rare words count
        more than common ones ("tea" more than "the"), shorter records a little
        more. Scores are positive and only comparable within one search. With
        ``ranking="coverage"`` the score is the share of the query's tokens a
        record holds (0..1; every word counts the same), several times cheaper
        to compute over a large namespace.
        """
        whole_number("limit", limit, MAX_LIMIT, "invalid_query")
        recall = self._recall_index()
        with recall.caught_up():  # the hits and their texts from one whole index
            hits = recall.index.search(query, limit=limit, ranking=self.ranking)
            docs = [recall.index.get(hit.id) for hit in hits]
        return [
            MemoryRecord(hit.id, doc.text, hit.score, datetime.fromtimestamp(doc.updated_at, UTC))
            for hit, doc in zip(hits, docs, strict=True)
            if doc is not None
        ]

    def _recall_index(self) -> StoreRecall:
        with self._recall_lock:
            if self._recall is None:
                self._recall = StoreRecall(
                    self.store,
                    self._to_doc,
                    prefix=self.folder,
                    snapshot=self.snapshot,
                    snapshot_key=SNAPSHOT_KEY
                    if self.profile == "word-cjk-bigram"
                    else f"{SNAPSHOT_KEY}+{self.profile}",
                    stamp=derived.stamp_of(self.store),
                    profile=self.profile,
                )
            return self._recall

    def _drop_index(self) -> None:
        """Forget the in-memory index and delete its snapshot (it holds record texts)."""
        with self._recall_lock:
            if self._recall is not None:
                self._recall.index.clear()
                self._recall = None
            if self.snapshot is not None:
                try:
                    os.unlink(self.snapshot)
                except FileNotFoundError:
                    pass
                except OSError as error:
                    raise MemoryStoreError(
                        "unavailable", f"cannot delete the recall snapshot {self.snapshot}: {error}"
                    ) from error

    # -- writes --

    def add(self, text: str, *, origin: Origin | None = None) -> MemoryRecord:
        """A new record holding ``text`` verbatim; adding the same text twice keeps two records."""
        text = validate_record_text(text, self.record_chars)
        ordered = callable(getattr(self.store, "apply", None))
        marker = marker_path(self.folder)
        for _ in range(WRITE_ATTEMPTS):
            last: str | None = None
            seen: str | None = None
            if ordered:
                last, seen = self._last_id(marker)
            record_id = _IDS.next(after=last)
            moment = _now()
            follows = last if self.profile == "conversation" else None
            record = RecordFile(record_id, text, moment, moment, follows)
            path = record_path(self.folder, record_id)
            changes = [_Change(path, render_record(record), None)]
            if ordered:
                changes.append(_Change(marker, record_id + "\n", seen))
            try:
                self._commit(changes, "record-add", record_id, origin)
            except MemoryStoreError as error:
                if error.code in LOST_RACE:
                    continue  # another add took the id or moved the marker first
                raise
            return self._public(record)
        raise MemoryStoreError("unavailable", "too many concurrent adds to this namespace; try again")

    def _last_id(self, marker: str) -> tuple[str | None, str | None]:
        """The namespace's last id and the marker's version (``None, None`` before the first add)."""
        mark = self._read(marker)
        return (None, None) if mark is None else (mark.text.strip(), mark.version)

    def update(self, record_id: str, text: str, *, origin: Origin | None = None) -> MemoryRecord:
        """Replace a record's text (the last write wins); ``record_not_found`` for an unknown id."""
        path = self._path(record_id)
        text = validate_record_text(text, self.record_chars)
        for _ in range(WRITE_ATTEMPTS):
            current = self._read(path)
            if current is None:
                raise MemoryStoreError("record_not_found", f"no record {record_id} in this namespace")
            old = self._record(record_id, current)
            if old.text == text:
                return self._public(old)  # nothing to change: no commit
            record = RecordFile(record_id, text, old.created, max(_now(), old.updated), old.follows)
            try:
                self._commit(
                    [_Change(path, render_record(record), current.version)], "record-update", record_id, origin
                )
            except MemoryStoreError as error:
                if error.code in LOST_RACE:
                    continue  # someone changed this record meanwhile: re-read, the last write wins
                raise
            return self._public(record)
        raise MemoryStoreError("unavailable", f"record {record_id} kept changing; try again")

    def delete(self, record_id: str, *, origin: Origin | None = None) -> None:
        """Remove a record: list, search and recall never return it again (history keeps it)."""
        path = self._path(record_id)
        for _ in range(WRITE_ATTEMPTS):
            current = self._read(path)
            if current is None:
                raise MemoryStoreError("record_not_found", f"no record {record_id} in this namespace")
            try:
                self._commit([_Change(path, None, current.version)], "record-delete", record_id, origin)
            except MemoryStoreError as error:
                if error.code in LOST_RACE:
                    continue
                raise
            return
        raise MemoryStoreError("unavailable", f"record {record_id} kept changing; try again")

    def purge(self, *, origin: Origin | None = None) -> None:
        """Erase every record of this namespace, and (in git) all their history; others stay.

        A git store forgets the namespace's folder: its files are cut out of every
        commit and the objects pruned before this returns. A store without
        history deletes the files. Either way the recall index is emptied too.
        """
        forget = getattr(self.store, "forget", None)
        try:
            if callable(forget):
                try:
                    forget(self.folder, origin=origin)
                except MemoryStoreError as error:
                    if error.code != "not_found":  # not_found: the namespace never held a file
                        raise
            else:
                for entry in self.store.list():
                    if entry.path.startswith(self.folder + "/"):
                        self._delete_now(entry.path, origin)
        finally:
            self._drop_index()
        left = [e.path for e in self.store.list() if id_of_path(self.folder, e.path) is not None]
        if left and not callable(forget):
            raise MemoryStoreError("write_unconfirmed", f"purge left {len(left)} records; list and purge again")

    def _delete_now(self, path: str, origin: Origin | None) -> None:
        """Delete the file at ``path`` as it is now, re-read whenever it changed meanwhile."""
        for _ in range(WRITE_ATTEMPTS):
            current = self._read(path)
            if current is None:
                return
            try:
                self.store.delete(path, expected=current.version, origin=origin)
                return
            except MemoryStoreError as error:
                if error.code not in ("not_found", "version_mismatch"):
                    raise

    # -- history (git stores) --

    def _history(self, name: str) -> Callable[..., Any]:
        method = getattr(self.store, name, None)
        if not callable(method):
            raise MemoryStoreError("unavailable", f"this record store keeps no history ({name} is not offered)")
        return method  # type: ignore[no-any-return]

    def log(self, record_id: str | None = None, *, limit: int = 100) -> builtins.list[Any]:
        """Changes to one record (or to the whole namespace), newest first, each with its time and origin.

        The namespace's log is read from the mount's log by the paths each change
        touched, so it still lists a namespace whose records are all deleted; a
        change erased by ``purge`` or ``forget`` is not listed.
        """
        log = self._history("log")
        if record_id is not None:
            entries: builtins.list[Any] = log(self._path(record_id), limit=limit)
            return entries
        whole_number("limit", limit, MAX_LIMIT, "invalid_query")
        prefix = self.folder + "/"
        diff = self._history("diff")
        mine: builtins.list[Any] = []
        for entry in log(None, limit=_LOG_WINDOW):
            if not any(p.startswith(prefix) for p in entry.paths):
                continue
            # A purge or forget leaves the commits that held the namespace as empty
            # changes (their messages intact): only list commits that still change it.
            if diff(f"{entry.commit}~1", entry.commit, path=prefix):
                mine.append(entry)
                if len(mine) == limit:
                    break
        return mine

    def restore(
        self, record_id: str, rev: str, *, origin: Origin | None = None, delete: bool = False
    ) -> MemoryRecord | None:
        """Set a record back to its text at ``rev`` in a new commit.

        A record that did not exist at ``rev`` is refused (``not_found``) unless
        ``delete=True`` asks for its deletion; then ``None`` is returned.
        """
        path = self._path(record_id)
        restore = self._history("restore")
        for _ in range(WRITE_ATTEMPTS):
            current = self._read(path)
            try:
                restore(path, rev, expected=current.version if current else None, origin=origin, delete=delete)
            except MemoryStoreError as error:
                if error.code in ("version_mismatch", "already_exists"):  # not_found: the record is not at rev
                    continue
                raise
            now = self._read(path)
            return None if now is None else self._public(self._record(record_id, now))
        raise MemoryStoreError("unavailable", f"record {record_id} kept changing; try again")

    def forget(self, record_id: str, *, origin: Origin | None = None) -> Any:
        """Erase one record from all history (a git store rewrites the commits that held it)."""
        path = self._path(record_id)
        try:
            return self._history("forget")(path, origin=origin)
        except MemoryStoreError as error:
            if error.code == "not_found":
                raise MemoryStoreError(
                    "record_not_found", f"no record {record_id} in this namespace's history"
                ) from None
            raise
        finally:
            self._drop_index()

    # -- one write, confirmed --

    def _commit(self, changes: Sequence[_Change], op: str, record_id: str, origin: Origin | None) -> None:
        """Make ``changes`` in one commit, then read them back.

        Every write is confirmed by reading it back, even when the store answered
        with the commit: the answer says what the store meant to do, the read
        says what a reader now sees (a store under the record layer may be any
        implementation of the seam). The read costs little right after a write.
        A refusal the store decided (a stale version, a bad path...) is raised
        as it is. Any other failure is settled by the same read: the change is
        there (done), nothing moved (the failure stands, nothing was written),
        or the store cannot say (``write_unconfirmed``).
        """
        try:
            self._send(changes, op, record_id, origin)
        except (MemoryStoreError, OSError) as error:
            if isinstance(error, MemoryStoreError) and error.code in _DECIDED:
                raise
            landed = self._landed(changes)
            if landed is True:
                return
            if landed is False:
                if isinstance(error, MemoryStoreError):
                    raise
                raise MemoryStoreError("unavailable", f"the record store failed: {error}") from error
            raise _unconfirmed(op, record_id) from error
        if self._landed(changes) is False:
            raise _unconfirmed(op, record_id)

    def _send(self, changes: Sequence[_Change], op: str, record_id: str, origin: Origin | None) -> None:
        apply = getattr(self.store, "apply", None)
        if callable(apply):
            edits = [Edit(c.path, c.text, expected=c.expected) for c in changes]
            trailers = (("Gitmem-Record-Id", record_id), ("Gitmem-Record-Namespace", self.folder))
            apply(edits, origin=origin, op=op, summary=f"{op.replace('-', ' ')} {record_id}", trailers=trailers)
            return
        (change,) = changes
        if change.text is None:
            assert change.expected is not None
            self.store.delete(change.path, expected=change.expected, origin=origin)
        else:
            self.store.write(change.path, change.text, expected=change.expected, origin=origin)

    def _landed(self, changes: Sequence[_Change]) -> bool | None:
        """Whether the record file shows the change (True), still its old state (False), or neither / unreadable."""
        change = changes[0]
        try:
            now = self._read(change.path)
        except (MemoryStoreError, OSError):
            return None
        if change.text is None:
            if now is None:
                return True
            return False if now.version == change.expected else None
        if now is not None and now.text == change.text:
            return True
        have = now.version if now is not None else None
        if have == change.expected:
            return False
        # Neither the old state nor ours: another writer changed the record after us
        # (so ours landed first) or the store shows something else entirely.
        return True if change.expected is not None and now is not None else None


def _snapshot_file(store: object, folder: str, snapshot_dir: str | os.PathLike[str] | None) -> str | None:
    """The recall snapshot of a namespace: under ``snapshot_dir``, else in a git store's ``gitmem/recall/``.

    A store without a folder of its own (the in-memory twin) gets none.
    """
    if snapshot_dir is None:
        path = getattr(store, "path", None)
        if not isinstance(path, str) or not os.path.isdir(os.path.join(path, SNAPSHOT_FOLDER[0])):
            return None
        snapshot_dir = os.path.join(path, *SNAPSHOT_FOLDER)
    return os.path.join(os.fspath(snapshot_dir), f"records-{folder}.json")


def _unconfirmed(op: str, record_id: str) -> MemoryStoreError:
    return MemoryStoreError(
        "write_unconfirmed",
        f"{op.replace('-', ' ')} of {record_id} may or may not have happened; "
        "search the records before writing it again",
    )

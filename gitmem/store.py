"""The store seam: what every memory backend promises, as synchronous protocols.

Everything under a store is synchronous (pygit2, files, locks), so the seam is
too: :class:`FileStore` is the contract, and narrow protocols name what only
some stores do (:class:`SearchableFileStore`, :class:`BatchFileStore`,
:class:`RunScopedStore`, :class:`HistoryStore`). Two implementations follow the
contract exactly: :class:`gitmem.memstore.InMemoryFileStore` (the reference twin
and test double) and :class:`gitmem.gitstore.SyncGitFileStore`; one contract
test suite runs against both. Async callers go through :mod:`gitmem.aio`.

The rules that decide a write's outcome live here as pure functions, so the two
stores cannot drift apart.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable

from gitmem.errors import MemoryStoreError, VersionMismatch
from gitmem.fileformat import FileFormat, encode_text, validate_path
from gitmem.history import BlameLine, FileDiff, ForgetReport, LogEntry
from gitmem.model import (
    ANY,
    AnyVersion,
    Applied,
    BlobVersion,
    Changes,
    Edit,
    FileEntry,
    FileText,
    FullResync,
    Origin,
    blob_version,
)
from gitmem.provenance import OP_WORD, RESERVED_TRAILERS

if TYPE_CHECKING:
    from gitmem.errors import ErrorCode
    from gitmem.model import SearchResult  # a grep's (gitmem.grep): reads that do not search never load it


@runtime_checkable
class FileStore(Protocol):
    """A memory: a tree of UTF-8 files with compare-and-swap writes and change cursors.

    ``format`` holds the limits every write is checked against. ``head()`` is the
    cursor of the state now (``changes(None).cursor`` without the diff).
    """

    @property
    def format(self) -> FileFormat: ...

    def list(self) -> builtins.list[FileEntry]: ...

    def read(self, path: str) -> FileText: ...

    def write(self, path: str, text: str, *, expected: str | None, origin: Origin | None = None) -> str: ...

    def move(self, source: str, destination: str, *, expected: str, origin: Origin | None = None) -> str: ...

    def delete(self, path: str, *, expected: str, origin: Origin | None = None) -> None: ...

    def changes(self, since: str | None) -> Changes | FullResync: ...

    def head(self) -> str: ...

    def purge(self, origin: Origin | None = None) -> None: ...


@runtime_checkable
class SearchableFileStore(FileStore, Protocol):
    """A store that answers grep itself (the git store narrows with its index)."""

    def search(
        self,
        pattern: str,
        *,
        regex: bool = False,
        case_sensitive: bool = False,
        path: str = "",
        limit: int = 100,
    ) -> SearchResult: ...


@runtime_checkable
class BatchFileStore(FileStore, Protocol):
    """A store that changes many files in ONE commit, all or nothing."""

    def apply(
        self,
        edits: Sequence[Edit],
        *,
        origin: Origin | None = None,
        op: str = "apply",
        summary: str | None = None,
        trailers: Sequence[tuple[str, str]] = (),
    ) -> Applied: ...

    def move_many(
        self, pairs: Sequence[tuple[str, str, str]], *, origin: Origin | None = None
    ) -> builtins.list[str]: ...

    def delete_many(self, items: Sequence[tuple[str, str]], *, origin: Origin | None = None) -> None: ...


@runtime_checkable
class RunScopedStore(FileStore, Protocol):
    """A store with a per-run view: what run ``run_id`` reads, and where its writes land."""

    def for_run(self, run_id: str) -> RunScopedStore: ...


@runtime_checkable
class HistoryStore(Protocol):
    """A store that keeps every change: read, compare, undo and erase history."""

    def log(
        self,
        path: str | None = None,
        *,
        run: str | None = None,
        principal: str | None = None,
        tool_call: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        limit: int = 100,
    ) -> builtins.list[LogEntry]: ...

    def show(self, rev: str, path: str) -> FileText: ...

    def diff(self, a: str, b: str | None = None, path: str | None = None) -> builtins.list[FileDiff]: ...

    def blame(self, path: str, rev: str | None = None) -> builtins.list[BlameLine]: ...

    def restore(
        self, path: str, rev: str, *, expected: str | None, origin: Origin | None = None, delete: bool = False
    ) -> str | None: ...

    def revert(self, commit: str, *, origin: Origin | None = None) -> str | None: ...

    def forget(self, path: str, *, origin: Origin | None = None) -> ForgetReport: ...


class ForwardingFileStore:
    """A :class:`FileStore` that hands every call to ``inner``: subclass it to change one behaviour.

    It forwards the contract only (no ``search``, no batch), so a wrapper is a
    plain ``FileStore`` unless it adds more itself. Tests use it for stores that
    interfere with writes or cannot list changes; the benchmarks for a baseline
    that can only resync.
    """

    def __init__(self, inner: FileStore) -> None:
        self.inner = inner
        self.format = inner.format

    def list(self) -> builtins.list[FileEntry]:
        return self.inner.list()

    def read(self, path: str) -> FileText:
        return self.inner.read(path)

    def write(self, path: str, text: str, *, expected: str | None, origin: Origin | None = None) -> str:
        return self.inner.write(path, text, expected=expected, origin=origin)

    def move(self, source: str, destination: str, *, expected: str, origin: Origin | None = None) -> str:
        return self.inner.move(source, destination, expected=expected, origin=origin)

    def delete(self, path: str, *, expected: str, origin: Origin | None = None) -> None:
        self.inner.delete(path, expected=expected, origin=origin)

    def changes(self, since: str | None) -> Changes | FullResync:
        return self.inner.changes(since)

    def head(self) -> str:
        return self.inner.head()

    def purge(self, origin: Origin | None = None) -> None:
        self.inner.purge(origin)


# --- shared decision rules -------------------------------------------------------


def plain(file: FileText | None) -> FileText | None:
    """``file`` as a plain :class:`FileText`: a store may decide on files whose text is
    read only when used (the git store's), but a refusal hands the caller the file itself."""
    if file is None or type(file) is FileText:
        return file
    return FileText(file.path, file.text, file.version)


def check_expected(path: str, current: FileText | None, expected: str | None) -> None:
    """Refuse a write whose expectation does not hold; ``None`` expects no file."""
    if expected is not None and not isinstance(expected, str):
        raise MemoryStoreError("version_mismatch", f"{path}: a version is a string", current=plain(current))
    if (current.version if current is not None else None) != expected:
        raise mismatch(path, current, expected)


def check_existing(path: str, current: FileText | None, expected: object) -> FileText:
    """Refuse a move or delete unless the file exists at exactly ``expected`` (a non-string never matches)."""
    if current is not None and current.version == expected:
        return current
    raise mismatch(path, current, expected if isinstance(expected, str) else "")


def mismatch(path: str, current: FileText | None, expected: str | None) -> MemoryStoreError:
    """The ``version_mismatch`` for a file that is not at ``expected``, carrying the file as it is.

    The store's contract names every failed version check so, with the file as it is
    now (``None`` when it is gone); a surface that knows what its caller meant names the
    situation (:func:`gitmem.errors.situation`: a create over a file, a gone file).
    """
    have = current.version if current is not None else None
    found: ErrorCode
    if expected is None:
        message, found = f"{path} already exists (version {have}); read it and edit instead of creating", "already_exists"
    elif current is None:
        message, found = f"{path} does not exist (expected version {expected})", "not_found"
    else:
        message, found = f"{path} changed: expected version {expected}, it is now {have}", "version_mismatch"
    return VersionMismatch("version_mismatch", message, current=plain(current), situation=found)


def check_destination(destination: str, current: FileText | None) -> None:
    if current is not None:
        raise MemoryStoreError("already_exists", f"{destination} already exists", current=plain(current))


def file_dir_conflict(path: str, is_file: bool) -> MemoryStoreError:
    """The error for a path that collides with a folder, or runs through a file."""
    if is_file:
        return MemoryStoreError("invalid_path", f"{path}: a parent of this path is a file, not a folder")
    return MemoryStoreError("invalid_path", f"{path} is a folder; a file cannot have the same path")


def check_capacity(
    path: str,
    *,
    creating: bool,
    files: int,
    total_bytes: int,
    new_size: int,
    old_size: int,
    max_files: int | None,
    max_bytes: int | None,
) -> None:
    if creating and max_files is not None and files + 1 > max_files:
        raise MemoryStoreError("memory_full", f"cannot create {path}: the memory holds its limit of {max_files} files")
    if max_bytes is not None and total_bytes - old_size + new_size > max_bytes:
        raise MemoryStoreError("memory_full", f"cannot write {path}: the memory would exceed {max_bytes} bytes")


# --- one write path: every change is a checked batch ---------------------------------------
#
# write, delete, move, move_many, delete_many and apply all become a Batch here
# (pure checks, before any I/O), and each store runs it under its lock with
# decide(): the same expectations, no-op rule and capacity rule in both stores.

_TRAILER_KEY: Final = re.compile(r"^Gitmem-[A-Za-z-]+$")


@dataclass(frozen=True, slots=True)
class Step:
    """One path of a batch after the pure checks: new bytes, or ``None`` to delete."""

    path: str
    data: bytes | None
    expected: str | AnyVersion | None


@dataclass(frozen=True, slots=True)
class Move:
    """One file renamed: ``source`` must be at ``expected``; ``destination`` must be free."""

    source: str
    destination: str
    expected: object


@dataclass(frozen=True, slots=True)
class Batch:
    """A checked change set: ``steps`` (writes and deletes) or ``moves``, one commit.

    ``op=None`` names the commit after what happened (``create`` or ``edit``), as a
    single write does.
    """

    steps: tuple[Step, ...] = ()
    moves: tuple[Move, ...] = ()
    op: str | None = None
    summary: str | None = None
    trailers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Effect:
    """One path a batch really changes: its new version (``None``: gone) and what was there."""

    path: str
    version: BlobVersion | None
    data: bytes | None
    before: FileText | None
    source: str | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """What a batch does at one head: the effects in commit order and each request's version."""

    effects: tuple[Effect, ...]
    versions: tuple[BlobVersion | None, ...]
    op: str
    paths: tuple[str, ...]

    @property
    def creates(self) -> tuple[Effect, ...]:
        return tuple(e for e in self.effects if e.before is None and e.version is not None)


def _sequence(items: object, what: str) -> list[object]:
    if type(items) is list or type(items) is tuple:  # the usual case, without the ABC check
        return list(items)
    if isinstance(items, str | bytes) or not isinstance(items, Sequence):
        raise MemoryStoreError("invalid_path", f"expected a list of {what}")
    return list(items)


def _tuples(items: object, width: int, shape: str) -> list[tuple[object, ...]]:
    """The batch as a list of ``width``-tuples; ``invalid_path`` for anything else (it names no paths)."""
    out: list[tuple[object, ...]] = []
    for item in _sequence(items, shape):
        if type(item) is tuple and len(item) == width:
            out.append(item)
            continue
        if isinstance(item, str | bytes) or not isinstance(item, Sequence) or len(item) != width:
            raise MemoryStoreError("invalid_path", f"expected a list of {shape}, got {item!r}")
        out.append(tuple(item))
    return out


def _once(paths: Sequence[str], what: str) -> None:
    if len(paths) < 2:
        return
    seen: set[str] = set()
    for path in paths:
        if path in seen:
            raise MemoryStoreError("invalid_path", f"{path} is named twice as a {what} in one change")
        seen.add(path)


def write_batch(path: str, text: str, expected: str | None, fmt: FileFormat) -> tuple[Batch, BlobVersion]:
    """One file written (``expected=None``: created): the batch ``write`` commits, and the version it returns.

    The version is the blob id of the text, whether the write commits or finds
    the file already holding it.
    """
    batch = write_only_batch(path, text, expected, fmt)
    return batch, written_version(batch, None)


def write_only_batch(path: str, text: str, expected: str | None, fmt: FileFormat) -> Batch:
    """:func:`write_batch` without the version: a store that learns it from its decision (:func:`written_version`)."""
    path = validate_path(path, fmt)
    data = encode_text(text, fmt)
    return Batch((Step(path, data, expected),))


def written_version(batch: Batch, decision: Decision | None) -> BlobVersion:
    """The version ``write`` returns for its one-step ``batch``: the one ``decision`` named, else the text's blob id.

    Deciding a write names its blob (the git store hashes it for the commit), so
    the text need not be hashed a second time; a write that changed nothing
    (``None``) still reports the version the file holds, the text's.
    """
    if decision is not None and decision.versions and decision.versions[0] is not None:
        return decision.versions[0]
    data = batch.steps[0].data
    assert data is not None
    return blob_version(data)


def delete_batch(items: object, fmt: FileFormat) -> Batch:
    """Files deleted, each at exactly its expected version (a non-string version never matches)."""
    pairs = _tuples(items, 2, "(path, expected version)")
    steps = [Step(validate_path(p, fmt), None, e if isinstance(e, str) else "") for p, e in pairs]
    _once([s.path for s in steps], "path")
    return Batch(tuple(steps), op="delete")


def move_batch(items: object, fmt: FileFormat) -> Batch:
    """Files renamed: every source at its version, every destination free at the head."""
    moves = [
        Move(validate_path(s, fmt), validate_path(d, fmt), e)
        for s, d, e in _tuples(items, 3, "(source, destination, expected version)")
    ]
    _once([m.source for m in moves], "source")
    _once([m.destination for m in moves], "destination")
    return Batch(moves=tuple(moves), op="move")


def apply_batch(
    edits: object,
    fmt: FileFormat,
    *,
    op: object = "apply",
    summary: object = None,
    trailers: object = (),
) -> Batch:
    """Check an ``apply`` call before any I/O: paths, texts, op, summary and trailers.

    Every path passes :func:`validate_path` and every text :func:`encode_text`
    (the mount's limits); a path may appear once. ``op`` is a lowercase word
    (``record-put``), ``summary`` one line, and each extra trailer a
    ``Gitmem-*`` key that gitmem does not already write with a one-line value.
    """
    steps: list[Step] = []
    for edit in _sequence(edits, "Edit values"):
        if not isinstance(edit, Edit):
            raise MemoryStoreError("invalid_path", f"expected a list of Edit values, got {edit!r}")
        path = validate_path(edit.path, fmt)
        if edit.text is not None and not isinstance(edit.text, str):
            raise MemoryStoreError("invalid_file", f"{path}: the text of an edit is a string, or None to delete")
        data = None if edit.text is None else encode_text(edit.text, fmt)
        steps.append(Step(path, data, edit.expected))
    _once([s.path for s in steps], "path")
    if not isinstance(op, str) or not OP_WORD.fullmatch(op):
        raise MemoryStoreError("invalid_path", f"{op!r} is not an op name: a lowercase word such as 'record-put'")
    if summary is not None and (not isinstance(summary, str) or not _one_line(summary) or len(summary) > 200):
        raise MemoryStoreError("invalid_path", "a commit summary is one non-empty line of at most 200 characters")
    extra: list[tuple[str, str]] = []
    for key, value in _tuples(trailers, 2, "(key, value) trailers"):
        if not isinstance(key, str) or not _TRAILER_KEY.fullmatch(key) or key.lower() in RESERVED_TRAILERS:
            raise MemoryStoreError(
                "invalid_path", f"{key!r} is not a trailer key: Gitmem- then letters and '-', not one gitmem writes"
            )
        if not isinstance(value, str) or not _one_line(value):
            raise MemoryStoreError("invalid_path", f"the value of trailer {key} must be one non-empty line")
        extra.append((key, value.strip()))
    return Batch(tuple(steps), op=op, summary=summary, trailers=tuple(extra))


def _one_line(text: str) -> bool:
    return bool(text.strip()) and "\n" not in text and "\r" not in text and "\x00" not in text


def decide(
    batch: Batch,
    current: Callable[[str], FileText | None],
    version_of: Callable[[bytes], BlobVersion],
) -> Decision | None:
    """Check ``batch`` against one head; ``None`` when it changes nothing.

    ``current`` reads a file at that head and ``version_of`` stores content and
    names its version (the git store writes the blob). Expectations are checked
    first, in order: a move's source must be at its version (``version_mismatch``
    with the file), its destination free (``already_exists`` with what is there);
    an edit's ``expected`` as for :func:`check_expected` (a delete at a version as
    for :func:`check_existing`). Writing a file's own content, or deleting a file
    that is not there with ``ANY``, is no change.
    """
    versions: list[BlobVersion | None] = []
    effects: list[Effect] = []
    for move in batch.moves:
        file = check_existing(move.source, current(move.source), move.expected)
        versions.append(BlobVersion(file.version))
        effects.append(Effect(move.source, None, None, file))
    for move, version in zip(batch.moves, versions, strict=True):
        check_destination(move.destination, current(move.destination))
        effects.append(Effect(move.destination, version, None, None, source=move.source))
    for step in batch.steps:
        now = current(step.path)
        if isinstance(step.expected, str) and step.data is None:
            check_existing(step.path, now, step.expected)
        elif step.expected is not ANY:
            check_expected(step.path, now, step.expected)  # type: ignore[arg-type]
        version = None if step.data is None else version_of(step.data)
        versions.append(version)
        if (now.version if now is not None else None) != version:
            effects.append(Effect(step.path, version, step.data, now))
    if not effects:
        return None
    deletes = [e for e in effects if e.version is None]
    ordered = tuple(deletes + [e for e in effects if e.version is not None])  # free names before taking them
    if batch.moves:
        op, paths = "move", tuple(p for m in batch.moves for p in (m.source, m.destination))
    else:
        op = batch.op or ("create" if effects[0].before is None else "edit")
        paths = tuple(e.path for e in effects)
    return Decision(ordered, tuple(versions), op, paths)


def check_batch_room(
    decision: Decision,
    *,
    files: int,
    total_bytes: int,
    max_files: int | None,
    max_bytes: int | None,
) -> None:
    """Refuse a batch that would take the memory past its file count or byte limit.

    Deletes free room first; then each write is checked as :func:`check_capacity`
    checks one. A move changes neither count nor size.
    """
    for effect in decision.effects:
        if effect.version is None and effect.before is not None:
            files -= 1
            total_bytes -= effect.before.size
    for effect in decision.effects:
        if effect.version is None or effect.data is None:
            continue
        old = effect.before.size if effect.before is not None else 0
        check_capacity(
            effect.path,
            creating=effect.before is None,
            files=files,
            total_bytes=total_bytes,
            new_size=len(effect.data),
            old_size=old,
            max_files=max_files,
            max_bytes=max_bytes,
        )
        files += effect.before is None
        total_bytes += len(effect.data) - old


def applied(commit: str | None, decision: Decision | None, batch: Batch, version_of: Callable[[bytes], BlobVersion]) -> Applied:
    """The value ``apply`` returns; for a no-op every version is what the file already holds."""
    if decision is not None:
        return Applied(commit, decision.versions)
    return Applied(None, tuple(None if s.data is None else version_of(s.data) for s in batch.steps))


def moved(decision: Decision | None) -> builtins.list[str]:
    """The versions ``move_many`` returns: each moved file's, in order (none for an empty batch)."""
    return [] if decision is None else [v for v in decision.versions if v is not None]

"""Plain values that cross the store seam.

They are frozen dataclasses: cheap to build by the ten thousand in ``list()``,
hashable, and comparable, so the contract tests can compare two stores' answers
with ``==``. Versions and cursors are opaque strings to callers; in the git store
a version is a hex blob id and a cursor a hex commit id.

Every value of a read, a change feed, a batch write and a grep is defined here, so a
class's ``__module__`` is the module it is imported and pickled from. (They were once
split over three modules so that a read would build fewer classes: that bought about
5 ms of a 250 ms ``gitmem ls``, see docs/benchmarks.md.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal, NewType, get_args

from gitmem.errors import MemoryStoreError

#: A file's version: the hex id of its git blob (the in-memory twin computes the same id).
BlobVersion = NewType("BlobVersion", str)
#: A hex commit id; in the git store also a change cursor.
CommitId = NewType("CommitId", str)
#: A full git ref name, ``refs/heads/...``.
RefName = NewType("RefName", str)

#: What a mount holds, fixed when it is created and kept in its config
#: (``gitmem.kind``): plain files, records, session items or durable nodes. The
#: three item kinds are stored as files too, but only their own stores may write
#: them, so the file tools refuse them (``wrong_kind``) and vice versa.
MountKind = Literal["file", "record", "session", "durable"]
MOUNT_KINDS: Final[tuple[MountKind, ...]] = get_args(MountKind)


def check_kind(name: str, actual: str, wanted: str) -> None:
    """Refuse to use a ``actual`` mount as a ``wanted`` one, naming both."""
    if actual != wanted:
        raise MemoryStoreError(
            "wrong_kind",
            f"{name} is a {actual} memory, not a {wanted} memory; use the {actual} commands and tools for it",
        )


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One file of a listing."""

    path: str
    version: str
    size: int
    description: str | None


@dataclass(frozen=True, slots=True)
class FileText:
    """A file's whole content and the version it was read at."""

    path: str
    text: str
    version: str

    @property
    def size(self) -> int:
        return len(self.text.encode("utf-8"))


def blob_version(data: bytes) -> BlobVersion:
    """The git blob id of ``data``: the version every gitmem store reports for a file."""
    import hashlib  # here, not at the top: loading OpenSSL would cost every `gitmem ls` and `cat`

    h = hashlib.sha1(b"blob %d\x00" % len(data), usedforsecurity=False)
    h.update(data)
    return BlobVersion(h.hexdigest())


# --- changes and batch writes -------------------------------------------------------------

_TRAILER_BAD = str.maketrans({c: " " for c in "\r\n\t\x00<>"})


def _clean(value: str | None) -> str | None:
    """Make an origin field safe for a commit trailer or a git identity.

    Trailers are line-based and git identities cannot hold ``<``, ``>`` or
    newlines; such characters become spaces instead of refusing the change.
    """
    if value is None:
        return None
    cleaned = " ".join(value.translate(_TRAILER_BAD).split())[:200]
    return cleaned or None


@dataclass(frozen=True, slots=True)
class Origin:
    """Who made a change: the run, the principal and the tool call (all optional)."""

    run_id: str | None = None
    principal_id: str | None = None
    tool_call_id: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_id", _clean(self.run_id))
        object.__setattr__(self, "principal_id", _clean(self.principal_id))
        object.__setattr__(self, "tool_call_id", _clean(self.tool_call_id))

    def with_tool_call(self, tool_call_id: str | None) -> Origin:
        return Origin(self.run_id, self.principal_id, tool_call_id)


@dataclass(frozen=True, slots=True)
class Changes:
    """The paths changed after a cursor, and the cursor to pass next time."""

    cursor: str
    paths: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class FullResync:
    """The store cannot list what changed since the cursor: treat everything as changed."""

    cursor: str


# --- batch writes (``apply``) -------------------------------------------------------------


class AnyVersion:
    """The type of :data:`ANY`: an edit that takes whatever version the file has."""

    __slots__ = ()
    _instance: AnyVersion | None = None

    def __new__(cls) -> AnyVersion:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ANY"

    def __reduce__(self) -> str:
        return "ANY"


#: ``Edit(expected=ANY)``: no version check (last write wins, the ref still moves by CAS).
ANY: Final = AnyVersion()


@dataclass(frozen=True, slots=True)
class Edit:
    """One path of an atomic batch: new ``text``, or ``None`` to delete the file.

    ``expected`` is what the file must be for the batch to go ahead: ``ANY`` (no
    check), ``None`` (the path holds no file) or a version (the file is at it).
    """

    path: str
    text: str | None
    expected: str | AnyVersion | None = ANY


@dataclass(frozen=True, slots=True)
class Applied:
    """What a batch did: the commit (``None`` when nothing changed) and each edit's version.

    ``versions[i]`` is the version ``edits[i]`` left (``None`` for a delete).
    """

    commit: str | None
    versions: tuple[BlobVersion | None, ...] = ()


# --- grep -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GrepMatch:
    """One matching line; ``line`` counts from 1."""

    path: str
    line: int
    text: str


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Matches in path and line order, and whether more lines matched than were returned."""

    matches: tuple[GrepMatch, ...] = ()
    truncated: bool = False

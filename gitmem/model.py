"""Plain values that cross the store seam.

They are frozen values (:class:`Value`): hashable and comparable, so the contract tests can
compare two stores' answers with ``==``, and cheap to build by the ten thousand in
``list()``. Versions and cursors are opaque strings to callers; in the git store a version
is a hex blob id and a cursor a hex commit id.

Every value of a read, a change feed, a batch write and a grep is defined here, so a
class's ``__module__`` is the module it is imported and pickled from.
"""

from __future__ import annotations

import re

from gitmem.errors import MemoryStoreError

TYPE_CHECKING = False  # typing is imported by the type checker only: a CLI call does not load it
if TYPE_CHECKING:
    from typing import Final, Literal, NewType, Self

    #: A file's version: the hex id of its git blob (the in-memory twin computes the same id).
    BlobVersion = NewType("BlobVersion", str)
    #: A hex commit id; in the git store also a change cursor.
    CommitId = NewType("CommitId", str)
    #: A full git ref name, ``refs/heads/...``.
    RefName = NewType("RefName", str)
    #: What a mount holds: see :data:`MOUNT_KINDS`.
    MountKind = Literal["file", "record", "session", "durable"]
else:
    BlobVersion = CommitId = RefName = str  # what NewType gives at run time: the str itself


#: What a mount holds, fixed when it is created and kept in its config
#: (``gitmem.kind``): plain files, records, session items or durable nodes. The
#: three item kinds are stored as files too, but only their own stores may write
#: them, so the file tools refuse them (``wrong_kind``) and vice versa.
MOUNT_KINDS: Final[tuple[MountKind, ...]] = ("file", "record", "session", "durable")


def __getattr__(name: str) -> object:
    """``MountKind`` at run time (``typing.get_args(gitmem.MountKind)``), with typing loaded only then."""
    if name == "MountKind":
        from typing import Literal

        return Literal[MOUNT_KINDS]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Value:
    """A frozen value: its fields are named by ``__match_args__`` and set once by its ``__init__``.

    Two values are equal when they are of one class and their fields are equal, and hash
    alike then; ``repr`` names the fields; assigning or deleting a field raises
    ``AttributeError``; a pickle (or a copy) rebuilds the value through ``__init__``, so a
    class's ``__init__`` takes its fields in that order. That is what
    ``@dataclass(frozen=True, slots=True)`` generates, written once: generating it costs
    ~0.5 ms a class when the module is imported (plus ~6 ms for ``dataclasses`` and
    ``inspect``), and every CLI call imports this module. (The type checker sees the fields
    as attributes: an assignment fails when it runs, not when it is checked.)
    """

    __slots__ = ()
    __match_args__: tuple[str, ...] = ()

    def _fields(self) -> tuple[object, ...]:
        return tuple([getattr(self, name) for name in self.__match_args__])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Value) and other.__class__ is self.__class__:
            return self._fields() == other._fields()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__match_args__)
        return f"{type(self).__qualname__}({fields})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__qualname__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a frozen {type(self).__qualname__}")

    def __reduce__(self) -> tuple[object, ...]:
        return (self.__class__, self._fields())

    def replace(self, **changes: object) -> Self:
        """A copy with ``changes`` to some of its fields (what ``dataclasses.replace`` gave)."""
        fields = {name: changes.pop(name, getattr(self, name)) for name in self.__match_args__}
        if changes:
            raise TypeError(f"{type(self).__qualname__} has no field {', '.join(map(repr, changes))}")
        return type(self)(**fields)

    __replace__ = replace  # copy.replace(value, ...) from Python 3.13


_set = object.__setattr__  # how an ``__init__`` sets a field of a frozen value


def check_kind(name: str, actual: str, wanted: str) -> None:
    """Refuse to use a ``actual`` mount as a ``wanted`` one, naming both."""
    if actual != wanted:
        raise MemoryStoreError(
            "wrong_kind",
            f"{name} is a {actual} memory, not a {wanted} memory; use the {actual} commands and tools for it",
        )


class FileEntry(Value):
    """One file of a listing."""

    __match_args__ = __slots__ = ("path", "version", "size", "description")
    path: str
    version: str
    size: int
    description: str | None

    def __init__(self, path: str, version: str, size: int, description: str | None) -> None:
        _set(self, "path", path)
        _set(self, "version", version)
        _set(self, "size", size)
        _set(self, "description", description)


class FileText(Value):
    """A file's whole content and the version it was read at."""

    __match_args__ = __slots__ = ("path", "text", "version")
    path: str
    text: str
    version: str

    def __init__(self, path: str, text: str, version: str) -> None:
        _set(self, "path", path)
        _set(self, "text", text)
        _set(self, "version", version)

    @property
    def size(self) -> int:
        return len(self.text.encode("utf-8"))


def blob_version(data: bytes) -> BlobVersion:
    """The git blob id of ``data``: the version every gitmem store reports for a file."""
    import hashlib  # here, not at the top: loading OpenSSL would cost every `gitmem ls` and `cat`

    h = hashlib.sha1(b"blob %d\x00" % len(data), usedforsecurity=False)
    h.update(data)
    return BlobVersion(h.hexdigest())


_OBJECT_ID = re.compile(r"[0-9a-f]{40}")


def is_object_id(text: str) -> bool:
    """Whether ``text`` is a whole object id as git writes one: 40 lowercase hex digits."""
    return _OBJECT_ID.fullmatch(text) is not None


# --- changes and batch writes -------------------------------------------------------------

_TRAILER_BAD = str.maketrans({c: " " for c in "\r\n\t\x00<>"})


def _clean(value: str | None) -> str | None:
    """Make an origin field safe for a commit trailer or a git identity.

    Trailers are line-based and git identities cannot hold ``<``, ``>`` or
    newlines; such characters become spaces instead of refusing the change.
    A lone surrogate (how Python hands over a login name, an argument or an
    environment variable holding a byte that is not UTF-8) cannot be written
    to a commit at all; it becomes U+FFFD, so both stores take the change.
    """
    if value is None:
        return None
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            value = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in value)
    cleaned = " ".join(value.translate(_TRAILER_BAD).split())[:200]
    return cleaned or None


class Origin(Value):
    """Who made a change: the run, the principal and the tool call (all optional)."""

    __match_args__ = __slots__ = ("run_id", "principal_id", "tool_call_id")
    run_id: str | None
    principal_id: str | None
    tool_call_id: str | None

    def __init__(self, run_id: str | None = None, principal_id: str | None = None, tool_call_id: str | None = None) -> None:
        _set(self, "run_id", _clean(run_id))
        _set(self, "principal_id", _clean(principal_id))
        _set(self, "tool_call_id", _clean(tool_call_id))

    def with_tool_call(self, tool_call_id: str | None) -> Origin:
        return Origin(self.run_id, self.principal_id, tool_call_id)


class Changes(Value):
    """The paths changed after a cursor, and the cursor to pass next time."""

    __match_args__ = __slots__ = ("cursor", "paths")
    cursor: str
    paths: tuple[str, ...]

    def __init__(self, cursor: str, paths: tuple[str, ...] = ()) -> None:
        _set(self, "cursor", cursor)
        _set(self, "paths", paths)


class FullResync(Value):
    """The store cannot list what changed since the cursor: treat everything as changed."""

    __match_args__ = __slots__ = ("cursor",)
    cursor: str

    def __init__(self, cursor: str) -> None:
        _set(self, "cursor", cursor)


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


class Edit(Value):
    """One path of an atomic batch: new ``text``, or ``None`` to delete the file.

    ``expected`` is what the file must be for the batch to go ahead: ``ANY`` (no
    check), ``None`` (the path holds no file) or a version (the file is at it).
    """

    __match_args__ = __slots__ = ("path", "text", "expected")
    path: str
    text: str | None
    expected: str | AnyVersion | None

    def __init__(self, path: str, text: str | None, expected: str | AnyVersion | None = ANY) -> None:
        _set(self, "path", path)
        _set(self, "text", text)
        _set(self, "expected", expected)


class Applied(Value):
    """What a batch did: the commit (``None`` when nothing changed) and each edit's version.

    ``versions[i]`` is the version ``edits[i]`` left (``None`` for a delete).
    """

    __match_args__ = __slots__ = ("commit", "versions")
    commit: str | None
    versions: tuple[BlobVersion | None, ...]

    def __init__(self, commit: str | None, versions: tuple[BlobVersion | None, ...] = ()) -> None:
        _set(self, "commit", commit)
        _set(self, "versions", versions)


# --- grep -------------------------------------------------------------------------------


class GrepMatch(Value):
    """One matching line; ``line`` counts from 1."""

    __match_args__ = __slots__ = ("path", "line", "text")
    path: str
    line: int
    text: str

    def __init__(self, path: str, line: int, text: str) -> None:
        _set(self, "path", path)
        _set(self, "line", line)
        _set(self, "text", text)


class SearchResult(Value):
    """Matches in path and line order, and whether more lines matched than were returned."""

    __match_args__ = __slots__ = ("matches", "truncated")
    matches: tuple[GrepMatch, ...]
    truncated: bool

    def __init__(self, matches: tuple[GrepMatch, ...] = (), truncated: bool = False) -> None:
        _set(self, "matches", matches)
        _set(self, "truncated", truncated)

"""Plain values that cross the store seam.

They are frozen dataclasses: cheap to build by the ten thousand in ``list()``,
hashable, and comparable, so the contract tests can compare two stores' answers
with ``==``. Versions and cursors are opaque strings to callers; in the git store
a version is a hex blob id and a cursor a hex commit id.

The values of changes and batch writes (:class:`Origin`, :class:`Edit`,
:class:`Changes`, ...) are defined in :mod:`gitmem.values`, those of a grep
(:class:`GrepMatch`, :class:`SearchResult`) in :mod:`gitmem.grep` with the scan that
makes them, and all are imported from here on first use: a read (``gitmem ls``,
``gitmem cat``, ``gitmem grep``) then builds the few classes it needs, not ten, and
each dataclass compiles its methods when it is defined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, NewType, get_args

from gitmem.errors import MemoryStoreError

if TYPE_CHECKING:
    from gitmem.grep import GrepMatch as GrepMatch
    from gitmem.grep import SearchResult as SearchResult
    from gitmem.values import ANY as ANY
    from gitmem.values import AnyVersion as AnyVersion
    from gitmem.values import Applied as Applied
    from gitmem.values import Changes as Changes
    from gitmem.values import Edit as Edit
    from gitmem.values import FullResync as FullResync
    from gitmem.values import Origin as Origin

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


#: Names defined in :mod:`gitmem.values` or :mod:`gitmem.grep`, imported on first use.
_VALUES: Final = frozenset({"ANY", "Applied", "AnyVersion", "Changes", "Edit", "FullResync", "Origin"})
_GREP_VALUES: Final = frozenset({"GrepMatch", "SearchResult"})


def __getattr__(name: str) -> Any:
    if name not in _VALUES and name not in _GREP_VALUES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module("gitmem.values" if name in _VALUES else "gitmem.grep"), name)
    globals()[name] = value  # later lookups skip this function
    return value

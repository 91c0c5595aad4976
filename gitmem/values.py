"""The values of changes and batch writes: who made a change, change feeds, batch edits
and what they did.

They are frozen dataclasses like those of :mod:`gitmem.model`, which re-exports
every one of them (import them from there). They live apart because a read does
not need them: a CLI call that lists or prints a memory builds the classes of
``model`` only (each dataclass compiles its methods when its module loads; see
docs/benchmarks.md, "CLI start-up").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from gitmem.model import BlobVersion

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

    __module__ = "gitmem.model"  # imported (and pickled) from there

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

    __module__ = "gitmem.model"  # imported (and pickled) from there

    cursor: str
    paths: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class FullResync:
    """The store cannot list what changed since the cursor: treat everything as changed."""

    __module__ = "gitmem.model"  # imported (and pickled) from there

    cursor: str


# --- batch writes (``apply``) -------------------------------------------------------------


class AnyVersion:
    """The type of :data:`ANY`: an edit that takes whatever version the file has."""

    __module__ = "gitmem.model"  # imported (and pickled) from there

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

    __module__ = "gitmem.model"  # imported (and pickled) from there

    path: str
    text: str | None
    expected: str | AnyVersion | None = ANY


@dataclass(frozen=True, slots=True)
class Applied:
    """What a batch did: the commit (``None`` when nothing changed) and each edit's version.

    ``versions[i]`` is the version ``edits[i]`` left (``None`` for a delete).
    """

    __module__ = "gitmem.model"  # imported (and pickled) from there

    commit: str | None
    versions: tuple[BlobVersion | None, ...] = ()

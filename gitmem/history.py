"""What history looks like to callers: plain values and the rules for reading it.

Nothing here knows about git. The git engine (:mod:`gitmem.git.history`,
:mod:`gitmem.git.rewrite`) fills these values, the stores hand them out, and the
adapters (CLI, MCP) print them. Keeping the values engine-neutral means a
reviewer, a script or another backend reads the same shapes.

Conventions every history call shares:

- a *revision* is what git accepts: a full or abbreviated commit id, ``main``,
  ``main~3``; one that names no commit is ``not_found``;
- times are timezone-aware :class:`~datetime.datetime` values in the committer's
  own offset; a naive ``since``/``until`` is read as UTC;
- ``log``'s ``since`` and ``until`` take either a datetime (committer time, both
  ends inclusive) or a revision (``since`` excludes that commit and its
  ancestors like ``git log since..until``; ``until`` starts the walk there).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING

from gitmem.errors import MemoryStoreError, whole_number

if TYPE_CHECKING:  # annotations only: a CLI read builds the value classes it uses, no others
    from gitmem.model import Origin

MAX_LOG_LIMIT = 1_000_000


def git_time(seconds: int, offset_minutes: int = 0) -> datetime:
    """A commit's time (seconds since the epoch, offset in minutes) as a ``datetime``: the one reading of it.

    git checks a commit's time only for overflow, so a pushed or imported commit may say
    ``253402300800 +0000`` (the year 10000), and ``datetime`` holds the years 1 to 9999 only:
    such a time is shown as the nearest one a date holds (in UTC), so one commit does not make
    the whole history unreadable. An offset of a day or more (git allows ``+9959``) is dropped.
    """
    zone = timezone(timedelta(minutes=offset_minutes)) if abs(offset_minutes) < 24 * 60 else UTC
    if _FIRST_DAY_OVER <= seconds <= _LAST_DAY_UNDER:  # a day inside the dates: any zone's local date holds
        return datetime.fromtimestamp(seconds, tz=zone)
    return datetime.fromtimestamp(min(max(seconds, _FIRST_TIME), _LAST_TIME), tz=UTC)


_FIRST_TIME = int(datetime(1, 1, 1, tzinfo=UTC).timestamp())
_LAST_TIME = int(datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp())
_FIRST_DAY_OVER, _LAST_DAY_UNDER = _FIRST_TIME + 86_400, _LAST_TIME - 86_400


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One change: the commit, when, what kind, which paths, and who made it.

    ``paths`` holds both sides of a move, source first. For commits made by
    plain git (``op == "unknown"``) the paths come from the tree diff.
    """

    commit: str
    time: datetime
    op: str
    paths: tuple[str, ...]
    origin: Origin
    summary: str
    author: str = ""


@dataclass(frozen=True, slots=True)
class BlameLine:
    """One line of a file and the change that last touched it.

    ``path`` is the name the file had in that change (it differs after a move);
    ``author`` is the commit's git author (who made it when it carries no principal).
    """

    line: int
    text: str
    commit: str
    time: datetime
    origin: Origin
    op: str
    summary: str
    path: str
    author: str = ""


@dataclass(frozen=True, slots=True)
class DiffHunk:
    """One ``@@`` block of a unified diff; ``lines`` keep their ``' '``/``'+'``/``'-'`` prefix."""

    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    header: str
    lines: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FileDiff:
    """How one file differs between two revisions.

    ``status`` is ``added``, ``deleted``, ``modified`` or ``renamed``; ``old_path``
    differs from ``path`` only for a rename. Versions are blob ids, ``None`` on
    the side where the file does not exist. ``patch`` is the git-style patch text.
    """

    path: str
    old_path: str
    status: str
    old_version: str | None
    new_version: str | None
    hunks: tuple[DiffHunk, ...] = ()
    binary: bool = False
    patch: str = ""


@dataclass(frozen=True, slots=True)
class FsckReport:
    """The result of ``git fsck --strict``: ``ok`` and whatever git said."""

    ok: bool
    messages: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ObjectCounts:
    """``git count-objects -v``: loose objects and packs, sizes in KiB."""

    loose: int = 0
    loose_kib: int = 0
    packed: int = 0
    packs: int = 0
    pack_kib: int = 0


@dataclass(frozen=True, slots=True)
class GcReport:
    """Object counts before and after packing."""

    before: ObjectCounts
    after: ObjectCounts


@dataclass(frozen=True, slots=True)
class ForgetReport:
    """What ``forget`` erased.

    ``names`` are the paths erased (the path and the names it had before moves);
    ``erased_versions`` the blob ids removed from trees; ``shared_versions`` those
    of them that survive because another file still holds the same content;
    ``erasure`` the id of its entry in the mount's erasure ledger.
    """

    path: str
    head: str
    names: tuple[str, ...]
    commits_rewritten: int
    refs_updated: tuple[str, ...]
    erased_versions: tuple[str, ...] = ()
    shared_versions: tuple[str, ...] = field(default_factory=tuple)
    erasure: str | None = None  # the erasure ledger's entry for it


# --- argument rules ---------------------------------------------------------------


def check_log_limit(limit: object) -> int:
    """Bad limits are refused like grep's (``invalid_pattern``)."""
    return whole_number("limit", limit, MAX_LOG_LIMIT, "invalid_pattern")


def check_filter(name: str, value: object) -> str | None:
    """An origin filter is ``None`` (no filter) or a non-empty string."""
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise MemoryStoreError("invalid_pattern", f"{name} must be a non-empty string")
    return value


def check_bound(name: str, value: object) -> datetime | str | None:
    """``since``/``until``: ``None``, a datetime (naive means UTC) or a revision string."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if isinstance(value, str) and value and not value.startswith("-"):
        return value
    raise MemoryStoreError("invalid_pattern", f"{name} must be a datetime or a revision, got {value!r}")


def origin_matches(origin: Origin, run: str | None, principal: str | None, tool_call: str | None) -> bool:
    return (
        (run is None or origin.run_id == run)
        and (principal is None or origin.principal_id == principal)
        and (tool_call is None or origin.tool_call_id == tool_call)
    )

"""The one error tree of gitmem.

Every failure a caller can act on is a :class:`MemoryStoreError` carrying a
machine-readable ``code``. Adapters (CLI, MCP, tool backends) translate the code
into their own shape at the outermost layer; nothing below them raises a foreign
exception type. Exceptions from pygit2, whoosh, dulwich or the OS are translated
at the point where they enter gitmem.

::

    GitmemError
     └── MemoryStoreError(code, message, current=None)
          └── MemoryToolError          (codes only the agent tools produce)

A conflict is an expected outcome, not a crash: ``version_mismatch`` and
``already_exists`` carry ``current``, the file as it is now (or ``None`` when it
is gone), so the caller can re-read nothing and decide again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal, get_args

if TYPE_CHECKING:
    from gitmem.model import FileText

StoreErrorCode = Literal[
    "not_found",
    "already_exists",
    "version_mismatch",
    "invalid_path",
    "invalid_file",
    "invalid_pattern",
    "too_large",
    "memory_full",
    "memory_deleted",
    "forbidden",
    "unavailable",
    # A mount's kind (file, record, session, durable) is fixed at init; a call meant
    # for another kind is refused rather than reading items as files or vice versa.
    "wrong_kind",
    # Recall (gitmem.recall): an empty query, one with no word or CJK token, a bad limit.
    "invalid_query",
    # Record memory.
    "record_not_found",
    "invalid_text",
    "invalid_cursor",
    "write_unconfirmed",
    # Durable memory: change sets, node revisions, idempotency keys.
    "node_not_found",
    "revision_mismatch",
    "invalid_transition",
    "invalid_change_set",
    "idempotency_conflict",
]

ToolErrorCode = Literal[
    "unknown_memory",
    "no_match",
    "ambiguous_match",
    "conflict_retries_exhausted",
    # A tool call's arguments do not fit the tool's schema (one missing, one the tool does
    # not take, a wrong type, a value out of range), for every tool of every kind. The
    # store's own codes keep their meaning: a path that breaks the path rules is still
    # invalid_path, a memory the call may not use unknown_memory.
    "invalid_arguments",
]

ErrorCode = StoreErrorCode | ToolErrorCode

INVALID_ARGUMENTS: Final = "invalid_arguments"
"""The one code of a tool call whose arguments its schema refuses (the message names the field and why)."""

STORE_ERROR_CODES: Final[frozenset[str]] = frozenset(get_args(StoreErrorCode))
TOOL_ERROR_CODES: Final[frozenset[str]] = frozenset(get_args(ToolErrorCode))


class GitmemError(Exception):
    """Root of every exception gitmem raises on purpose."""


class MemoryStoreError(GitmemError):
    """A store call was refused; ``code`` says why, ``current`` shows the file now.

    ``current`` is only meaningful for ``version_mismatch`` and ``already_exists``:
    it is the file the caller collided with, or ``None`` when no file is there.

    The message never holds a credential: every error passes through
    :func:`gitmem.secrets.scrub_credentials` here, so a remote's URL (or git's own
    stderr repeating it) can be named in a message without its password or token,
    whichever surface prints, logs or sends the error on.
    """

    code: str
    message: str
    current: FileText | None

    def __init__(self, code: ErrorCode, message: str = "", current: FileText | None = None) -> None:
        if code not in STORE_ERROR_CODES and code not in TOOL_ERROR_CODES:
            raise ValueError(f"unknown error code {code!r}")
        self.code = code
        if "://" in message:  # a URL, perhaps with a password or token in it
            from gitmem.secrets import scrub_credentials

            message = scrub_credentials(message)
        self.message = message or code.replace("_", " ")
        self.current = current
        super().__init__(f"{code}: {self.message}")

    def __reduce__(self) -> tuple[object, ...]:
        # Keep the error picklable across process pools with its fields intact.
        return (type(self), (self.code, self.message, self.current))


class MemoryToolError(MemoryStoreError):
    """A memory tool call failed for a reason only the tool layer knows about."""

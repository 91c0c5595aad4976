"""The one error tree of gitmem.

Every failure a caller can act on is a :class:`MemoryStoreError` carrying a
machine-readable ``code``. Adapters (CLI, MCP, tool backends) translate the code
into their own shape at the outermost layer; nothing below them raises a foreign
exception type. Exceptions from pygit2, whoosh, dulwich or the OS are translated
at the point where they enter gitmem.

::

    GitmemError
     └── MemoryStoreError(code, message, current=None)
          ├── VersionMismatch          (a failed version check, knowing its situation)
          └── MemoryToolError          (codes only the agent tools produce)

A conflict is an expected outcome, not a crash: ``version_mismatch`` and
``already_exists`` carry ``current``, the file as it is now, so the caller can
re-read nothing and decide again.

The store's contract names every failed version check ``version_mismatch``
(:func:`gitmem.store.mismatch` raises it, as a :class:`VersionMismatch` that knows
the situation); the surfaces a person or an agent meets (the CLI, the agent tools)
report one code per situation through :func:`situation`: a create over a file is
``already_exists``, a version of a file that is gone ``not_found``. :data:`CODES`
says what each code means and what to do about it (docs/errors.md is that table).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is imported by the type checker only: a CLI call does not load it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Final, Literal, ParamSpec, TypeVar

    from gitmem.model import FileText

    # The codes as types, so that a code misspelt where it is raised fails the type check;
    # CODES says what each means (a test holds the two equal).
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
        "unknown_memory",
        "wrong_kind",
        "invalid_query",
        "record_not_found",
        "invalid_text",
        "invalid_cursor",
        "write_unconfirmed",
        "node_not_found",
        "revision_mismatch",
        "invalid_transition",
        "invalid_change_set",
        "idempotency_conflict",
    ]
    ToolErrorCode = Literal["no_match", "ambiguous_match", "conflict_retries_exhausted", "invalid_arguments"]
    ErrorCode = StoreErrorCode | ToolErrorCode

    P = ParamSpec("P")
    T = TypeVar("T")

INVALID_ARGUMENTS: Final = "invalid_arguments"
"""The one code of a tool call whose arguments its schema refuses (the message names the field and why)."""

LOST_RACE: Final[frozenset[str]] = frozenset({"version_mismatch", "already_exists", "not_found"})
"""The codes of a compare-and-swap that found something other than it expected (another
writer changed, created or removed the file first): nothing was written, so a caller
that retries re-reads and decides again."""


#: Every code, with what it says happened and what a caller (person, script or agent) does
#: next: the one place a code's sense is decided. docs/errors.md shows this table; a test
#: holds the two equal and checks that every surface (CLI ``--json``, agent tools over MCP,
#: the Python API) gives one situation one code.
CODES: Final[dict[str, tuple[str, str]]] = {
    "not_found": (
        "The file, folder, commit, remote or proposal named does not exist (or is gone since you read it).",
        "List what is there (`ls`, `log`, `remote list`) and use a name that exists; create the file if it should.",
    ),
    "already_exists": (
        "The path (or remote, hook, destination) is taken: a create or a move found something there. "
        "`current` is the file that is there.",
        "Edit the file that is there (at `current.version`), or choose another path.",
    ),
    "version_mismatch": (
        "Someone changed the file (or the branch) after the version you hold. `current` is the file as it is now. "
        "For a push or pull: the two sides have changes the other lacks.",
        "Read `current`, redo your change on top of it and write expecting its version; "
        "for a push, pull first.",
    ),
    "invalid_path": (
        "The path breaks the path rules (empty, `.` or `..` segments, control characters, too long or more "
        "than 128 segments deep, `.git`), "
        "or runs into a folder or through a file.",
        "Fix the path. Nothing was written.",
    ),
    "invalid_file": (
        "The content is refused: not UTF-8, broken frontmatter, a credential in the text, or a bad setting.",
        "Fix the content (remove the credential) or the value. Nothing was written.",
    ),
    "invalid_pattern": (
        "The search is refused: an empty pattern, a literal holding a newline, a regular expression that does not "
        "compile, is too large once its counted repeats are written out, or needs more than 2 s of CPU to match, "
        "or a limit outside 1 to 10,000.",
        "Fix it, or search for the text literally; give a limit from 1 to 10,000.",
    ),
    "too_large": (
        "The file (or its frontmatter or description) is over the memory's limit.",
        "Shorten it, or raise the limit (`gitmem config NAME gitmem.maxFileBytes ...`). Nothing was written.",
    ),
    "memory_full": (
        "The memory holds as many files or bytes as its limits allow.",
        "Delete or shorten files, or raise `gitmem.maxFiles` / `gitmem.maxMemoryBytes`; a change of more than "
        "1,000,000 files and folders is refused whatever they allow (split it).",
    ),
    "memory_deleted": ("The memory was purged or removed while in use.", "Create it again (`gitmem init NAME`)."),
    "forbidden": (
        "This caller may not do that here: a read-only memory, a tool not offered, a protected file, "
        "a token without access.",
        "Use a memory or access that allows it; ask its owner.",
    ),
    "unavailable": (
        "The store could not do the work now: a lock held too long, a remote that did not answer, "
        "a file system or configuration problem.",
        "Read the message; retry later, or fix the named folder, remote or setting.",
    ),
    "unknown_memory": (
        "There is no memory of that name under the root (or none offered to this caller).",
        "Check the name (`gitmem mounts`, or the memories the tools list) or create it (`gitmem init NAME`).",
    ),
    "wrong_kind": (
        "The memory is of another kind (file, record, session, durable) than the call is for.",
        "Use the commands or tools of the memory's kind (`gitmem status` shows it).",
    ),
    "invalid_query": ("A recall query with no word to search for, or a bad limit.", "Give words to look for."),
    "record_not_found": ("No record with that id in this namespace.", "List the namespace's records; ids are per namespace."),
    "invalid_text": ("A record's text is empty, too long or holds a credential.", "Fix the text. Nothing was written."),
    "invalid_cursor": ("The list cursor is not one this store gave out.", "List again without a cursor."),
    "write_unconfirmed": (
        "The change may or may not have landed (the store failed after writing).",
        "Read or search before retrying, so the change is not made twice.",
    ),
    "node_not_found": ("No durable node with that id in the namespace.", "Check the id; it may have been deleted."),
    "revision_mismatch": (
        "The durable node changed after the revision you hold.", "Read the node again and redo the change on top of it."
    ),
    "invalid_transition": (
        "The durable node cannot move from its state to the one asked (e.g. approve a deleted node).",
        "Read the node's state and ask for a change it allows.",
    ),
    "invalid_change_set": ("A durable change set is malformed or breaks a rule.", "Fix the change set as the message says."),
    "idempotency_conflict": (
        "The idempotency key was used before for a different change set.", "Use a new key for a new change."
    ),
    "no_match": (
        "The text to replace does not occur in the file (perhaps someone changed it). `current` is the file now.",
        "Read `current` and give text that is in it.",
    ),
    "ambiguous_match": (
        "The text to replace occurs more than once. `current` is the file now.",
        "Include more of the surrounding text so it occurs exactly once.",
    ),
    "conflict_retries_exhausted": (
        "Other writers kept changing the file while the change was retried; nothing was written.",
        "Wait, read the file again and retry if the change is still needed.",
    ),
    "invalid_arguments": (
        "A tool call's arguments do not fit its schema (missing, unknown, wrong type, out of range).",
        "Call the tool again with the arguments its schema names.",
    ),
}

#: The codes only the agent tools produce (:class:`MemoryToolError`); every other code is the
#: store's. A tool call's arguments that break the store's rules keep the store's code (a bad
#: path is ``invalid_path``, a memory that is not there ``unknown_memory``).
TOOL_ERROR_CODES: Final[frozenset[str]] = frozenset(
    {"no_match", "ambiguous_match", "conflict_retries_exhausted", INVALID_ARGUMENTS}
)
STORE_ERROR_CODES: Final[frozenset[str]] = frozenset(CODES) - TOOL_ERROR_CODES


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
        if code not in CODES:
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


class VersionMismatch(MemoryStoreError):
    """A failed version check: ``version_mismatch`` by the store's contract, knowing what the caller found.

    The store's contract names every failed check alike (``current`` the file now,
    ``None`` when it is gone). A person or an agent is told the situation instead
    (:func:`situation`): ``already_exists`` when a create found a file there,
    ``not_found`` when the file expected is gone.
    """

    situation: ErrorCode

    def __init__(
        self,
        code: ErrorCode,
        message: str = "",
        current: FileText | None = None,
        situation: ErrorCode = "version_mismatch",
    ) -> None:
        super().__init__(code, message, current)
        self.situation = situation

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.code, self.message, self.current, self.situation))


def situation(exc: MemoryStoreError) -> MemoryStoreError:
    """The refusal as every surface reports it (the CLI, the agent tools): one code per situation.

    The one rule between the store's contract and what callers of the adapters see;
    anything but a :class:`VersionMismatch` that knows better is returned as it is.
    """
    if not isinstance(exc, VersionMismatch) or exc.situation == exc.code:
        return exc
    current = exc.current if exc.situation == "already_exists" else None
    return MemoryStoreError(exc.situation, exc.message, current=current)


class MemoryToolError(MemoryStoreError):
    """A memory tool call failed for a reason only the tool layer knows about."""


def whole_number(name: str, value: object, most: int, code: ErrorCode) -> int:
    """``value`` when it is a whole number from 1 to ``most`` (``True`` is not one); else ``code``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise MemoryStoreError(code, f"{name} must be a whole number from 1 to {most}, got {_shown(value)}")
    return value


def _shown(value: object) -> str:
    """``value`` for a refusal, cut short: a caller's text or list may be huge, and an int past Python's
    digit limit has no ``repr`` at all (it raises ``ValueError``)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return "a number of over 30 digits"
    import reprlib  # here: only a refusal needs it

    try:
        return reprlib.repr(value)
    except Exception:
        return f"a {type(value).__name__}"


def if_found(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
    """``call(*args, **kwargs)``, or ``None`` where it refuses with ``not_found`` (a file that is not there)."""
    try:
        return call(*args, **kwargs)
    except MemoryStoreError as exc:
        if exc.code == "not_found":
            return None
        raise

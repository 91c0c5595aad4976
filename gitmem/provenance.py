"""Commit messages: a human summary line plus ``Gitmem-*`` trailers.

The message is the durable record of who changed what. It is written so plain git
can query it (``git log --format='%(trailers:key=Gitmem-Run,valueonly)'``) and
parsed back here for ``log`` filters and ``blame`` origins.

Trailers are read back the way git reads them (:func:`parse_trailers`, a port of
git's own trailer rules), so gitmem and ``git log`` never disagree about what a
message says. The trailers that name a person or a decision are listed once,
in :data:`IDENTITY_TRAILERS`; :func:`identity_claims` reads them and says what
makes a message ambiguous about who it names, for every gate that checks a
commit from outside (pushes, pulls, approvals, history imports).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

from gitmem.errors import MemoryStoreError
from gitmem.model import Origin

Op = Literal[
    "init", "create", "edit", "move", "delete", "restore", "revert", "purge", "forget", "merge", "apply", "unknown"
]
OPS: Final[frozenset[str]] = frozenset(
    {"init", "create", "edit", "move", "delete", "restore", "revert", "purge", "forget", "merge", "apply"}
)
#: An op a batch (``apply``) may name itself: a lowercase word such as ``record-put``.
OP_WORD: Final = re.compile(r"^[a-z][a-z0-9-]{0,39}$")

T_OP = "Gitmem-Op"
T_PATH = "Gitmem-Path"
T_FROM = "Gitmem-From"
T_RUN = "Gitmem-Run"
T_PRINCIPAL = "Gitmem-Principal"
T_TOOL_CALL = "Gitmem-Tool-Call"
T_REV = "Gitmem-Rev"
T_APPROVED_BY = "Gitmem-Approved-By"
T_REJECTED_BY = "Gitmem-Rejected-By"
#: The trailers that name a person or a decision. Every identity rule reads this one
#: list: a commit from outside may carry each at most once, written exactly as gitmem
#: writes it, and (pushed through a token) only naming the pusher. Add new ones here.
IDENTITY_TRAILERS: Final[tuple[str, ...]] = (T_PRINCIPAL, T_APPROVED_BY, T_REJECTED_BY)
_IDENTITY_KEYS: Final = {k.lower(): k for k in IDENTITY_TRAILERS}
#: The trailers gitmem writes itself; a batch's extra trailers may not reuse them.
RESERVED_TRAILERS: Final[frozenset[str]] = frozenset(
    k.lower() for k in (T_OP, T_PATH, T_FROM, T_RUN, T_PRINCIPAL, T_TOOL_CALL, T_REV)
)

COMMITTER_NAME: Final = "gitmem"
COMMITTER_EMAIL: Final = "gitmem@localhost"


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """What a commit message says about a change."""

    op: str
    paths: tuple[str, ...]
    origin: Origin
    summary: str
    trailers: tuple[tuple[str, str], ...] = ()

    def trailer(self, key: str) -> str | None:
        for k, v in self.trailers:
            if k.lower() == key.lower():
                return v
        return None

    def moves(self) -> tuple[tuple[str, str], ...]:
        """``(source, destination)`` of each file a ``move`` commit moved; ``()`` for other ops."""
        if self.op != "move" or len(self.paths) % 2:
            return ()
        return tuple(zip(self.paths[0::2], self.paths[1::2], strict=True))


def summary_line(op: str, paths: tuple[str, ...], detail: str | None = None) -> str:
    if op == "move" and len(paths) == 2:
        return f"move {paths[0]} → {paths[1]}"
    if op == "move" and paths and len(paths) % 2 == 0:
        pairs = ", ".join(f"{a} → {b}" for a, b in zip(paths[0::2], paths[1::2], strict=True))
        line = f"move {len(paths) // 2} files: {pairs}"
        return line if len(line) <= 200 else line[:199] + "…"
    if op == "restore" and detail:
        return f"restore {paths[0]} to {detail}"
    target = ", ".join(paths) if paths else "memory"
    line = f"{op} {target}"
    if detail and op != "restore":
        line = f"{line} ({detail})"
    return line if len(line) <= 200 else line[:199] + "…"


def commit_message(
    op: str,
    paths: tuple[str, ...],
    origin: Origin,
    *,
    detail: str | None = None,
    extra: tuple[tuple[str, str], ...] = (),
    summary: str | None = None,
) -> str:
    """Build the message for one change: summary, blank line, trailers.

    For a move ``paths`` is ``(source, destination)``, or for several files moved in
    one commit ``(source1, destination1, source2, destination2, ...)``: each pair
    becomes a ``Gitmem-Path`` naming the destination followed by a ``Gitmem-From``
    naming its source, so ``git log -- <path>`` and the trailers agree on where
    each file is now, and the n-th ``From`` belongs to the n-th ``Path``.
    ``summary`` replaces the derived summary line (a batch may name its change).
    """
    check_identity_extras(extra, origin)
    lines = [f"{T_OP}: {op}"]
    if op == "move" and paths and len(paths) % 2 == 0:
        for source, destination in zip(paths[0::2], paths[1::2], strict=True):
            lines.append(f"{T_PATH}: {destination}")
            lines.append(f"{T_FROM}: {source}")
    else:
        lines.extend(f"{T_PATH}: {p}" for p in paths)
    if origin.run_id:
        lines.append(f"{T_RUN}: {origin.run_id}")
    if origin.principal_id:
        lines.append(f"{T_PRINCIPAL}: {origin.principal_id}")
    if origin.tool_call_id:
        lines.append(f"{T_TOOL_CALL}: {origin.tool_call_id}")
    lines.extend(f"{k}: {v}" for k, v in extra)
    return (summary or summary_line(op, paths, detail)) + "\n\n" + "\n".join(lines) + "\n"


def check_identity_extras(extra: tuple[tuple[str, str], ...], origin: Origin) -> None:
    """A commit gitmem writes names one person: an identity trailer it carries names its principal.

    ``forbidden`` otherwise (nothing is written): an approval recorded for
    someone who did not make the commit is exactly what a push may not bring.
    """
    seen: set[str] = set()
    for key, value in extra:
        canonical = _IDENTITY_KEYS.get(key.lower())
        if canonical is None:
            continue
        if key != canonical or canonical in seen:
            raise MemoryStoreError("forbidden", f"{canonical} is written once, spelled so")
        seen.add(canonical)
        if origin.principal_id is None or value != origin.principal_id:
            raise MemoryStoreError(
                "forbidden",
                f"{key}: {value!r} names someone other than who makes this change ({origin.principal_id!r}); "
                "a commit names only its own principal",
            )


def parse_message(message: str) -> CommitInfo:
    """Read a commit message back; commits made by plain git parse as op ``unknown``.

    The trailers are git's (:func:`parse_trailers`); where a key repeats, the
    first value counts, as the first line of ``git log --format=%(trailers:key=K)``.
    """
    summary = message.split("\n", 1)[0].strip()
    trailers = list(parse_trailers(message))
    found: dict[str, str] = {}
    for k, v in trailers:
        found.setdefault(k.lower(), v)
    op = found.get(T_OP.lower(), "unknown")
    if op not in OPS and not OP_WORD.fullmatch(op):
        op = "unknown"
    paths = [v for k, v in trailers if k.lower() == T_PATH.lower()]
    sources = [v for k, v in trailers if k.lower() == T_FROM.lower()]
    if op == "move" and sources and len(sources) == len(paths):
        # Paired in order: the n-th From is where the n-th Path came from.
        paths = [p for pair in zip(sources, paths, strict=True) for p in pair]
    elif op == "move" and sources and paths:
        paths = [sources[0], paths[0]]
    origin = Origin(found.get(T_RUN.lower()), found.get(T_PRINCIPAL.lower()), found.get(T_TOOL_CALL.lower()))
    return CommitInfo(op=op, paths=tuple(paths), origin=origin, summary=summary, trailers=tuple(trailers))


# --- trailers as git reads them ---------------------------------------------------------
#
# A port of git's trailer rules (trailer.c, and ignore_non_trailer in commit.c) with
# git's default configuration, as ``git log --format=%(trailers)`` applies them to a
# commit: the message from its first non-blank line up to the first NUL; lines in
# git's sense (``\n``); git's ASCII classes (``isspace`` is space, tab, LF and CR).

_SPACE: Final = " \t\n\r"
_TOKEN: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-")
_GIT_PREFIXES: Final = ("Signed-off-by: ", "(cherry picked from commit ")
_CUT_LINE: Final = "# ------------------------ >8 ------------------------"


def _blank(s: str, at: int) -> bool:
    """git's ``is_blank_line``: only whitespace up to the end of the line at ``at``."""
    end = s.find("\n", at)
    return all(c in _SPACE for c in s[at : len(s) if end < 0 else end])


def _next_line(s: str, at: int) -> int:
    end = s.find("\n", at)
    return len(s) if end < 0 else end + 1


def _last_line(s: str, length: int) -> int:
    """Where the last line of ``s[:length]`` starts (-1 for nothing), as git's ``last_line``."""
    if length <= 1:
        return length - 1
    return s.rfind("\n", 0, length - 1) + 1


def _separator(s: str, at: int = 0) -> int:
    """git's ``find_separator``: the offset of ``:`` after a token (and optional blanks), or -1."""
    blanks = False
    for i in range(at, len(s)):
        c = s[i]
        if c == ":":
            return i - at
        if not blanks and c in _TOKEN:
            continue
        if i != at and c in " \t":
            blanks = True
            continue
        break
    return -1


def _body(message: str) -> str:
    """The text git parses: up to a NUL, from the first line that is not blank (``skip_blank_lines``)."""
    s = message.split("\x00", 1)[0]
    at = 0
    while at < len(s):
        nxt = _next_line(s, at)
        if not all(c in _SPACE for c in s[at:nxt]):
            break
        at = nxt
    return s[at:]


def _trailer_end(s: str) -> int:
    """Where the trailer block can end: before a scissors line, trailing comments, blank lines and
    an old ``Conflicts:`` list (git's ``ignore_non_trailer``)."""
    cutoff = len(s)
    if s.startswith(_CUT_LINE):
        cutoff = 0
    else:
        found = s.find("\n" + _CUT_LINE)
        if found >= 0:
            cutoff = found + 1
    boc = bol = 0
    conflicts = False
    while bol < cutoff:
        nxt = _next_line(s, bol)
        if s[bol] in "#\n":
            boc = boc or bol
        elif s.startswith("Conflicts:\n", bol):
            conflicts = True
            boc = boc or bol
        elif conflicts and s[bol] == "\t":
            pass
        elif boc:
            boc, conflicts = 0, False
        bol = nxt
    return boc or cutoff


def _trailer_start(s: str, end: int) -> int:
    """Where the trailer block starts (``end``: no block), git's ``find_trailer_block_start``.

    The block is the last paragraph after the title when every line of it is a
    trailer (or continues one), or when it holds a line git itself writes
    (``Signed-off-by: ``) and at least a quarter of its lines are trailers.
    """
    at = 0
    while at < end:
        if s[at] != "#" and _blank(s, at):
            break
        at = _next_line(s, at)
    end_of_title = at
    only_spaces, recognized = True, False
    trailers = others = continued = 0
    line = _last_line(s, end)
    while line >= end_of_title:
        if s.startswith("#", line):
            others += continued
            continued = 0
        elif _blank(s, line):
            if not only_spaces:
                others += continued
                if (recognized and trailers * 3 >= others) or (trailers and not others):
                    return _next_line(s, line)
                return end
        else:
            only_spaces = False
            if s.startswith(_GIT_PREFIXES, line):
                trailers += 1
                continued = 0
                recognized = True
            elif _separator(s, line) >= 1 and s[line] not in _SPACE:
                trailers += 1
                continued = 0
            elif s[line] in _SPACE:
                continued += 1
            else:
                others += 1 + continued
                continued = 0
        line = _last_line(s, line)
    return end


def _trailer_lines(message: str) -> list[str]:
    """The raw lines of the trailer block, each with the continuation lines git folds into it."""
    s = _body(message)
    end = _trailer_end(s)
    start = _trailer_start(s, end)
    out: list[list[str]] = []  # each trailer's pieces, joined once at the end (adding to a string is quadratic)
    last_is_trailer = False
    block = s[start:end]
    pieces = [line + "\n" for line in block.split("\n")]
    pieces[-1] = pieces[-1][:-1]  # the text after the last line break (empty when the block ends with one)
    for piece in (p for p in pieces if p):
        if last_is_trailer and piece[0] in _SPACE:
            out[-1].append(piece)
            continue
        out.append([piece])
        last_is_trailer = _separator(piece) >= 1
    return ["".join(parts) for parts in out]


def _unfold(value: str) -> str:
    """git's ``unfold_value``: each line break and the blanks after it become one space."""
    out: list[str] = []
    i = 0
    while i < len(value):
        c = value[i]
        i += 1
        if c == "\n":
            while i < len(value) and value[i] in _SPACE:
                i += 1
            out.append(" ")
        else:
            out.append(c)
    return "".join(out).strip(_SPACE)


def parse_trailers(message: str) -> tuple[tuple[str, str], ...]:
    """``(key, value)`` of every trailer of ``message``, in order, as git reads them.

    The same pairs ``git interpret-trailers --parse --no-divider`` prints, and the
    ones ``git log --format='%(trailers:key=K,valueonly,unfold)'`` selects (git
    matches keys without regard to case; so does :meth:`CommitInfo.trailer`).
    Keys and values are trimmed of blanks, a value's continuation lines unfolded.
    """
    fast = _plain_trailers(message)
    if fast is not None:
        return fast
    out: list[tuple[str, str]] = []
    for raw in _trailer_lines(message):
        at = _separator(raw)
        if at >= 1:
            out.append((raw[:at].strip(_SPACE), _unfold(raw[at + 1 :].strip(_SPACE))))
    return tuple(out)


_PLAIN_LINE: Final = re.compile(r"[A-Za-z0-9-]+:[^\n]*")


def _plain_trailers(message: str) -> tuple[tuple[str, str], ...] | None:
    """The trailers of a message shaped as gitmem writes them, or ``None`` to take git's long way.

    Without NUL, CR, tab, ``#`` or ``Conflicts:``, starting with a non-blank line and
    ending in one line break, a last paragraph (after an empty line) whose lines are
    all ``token:value`` is exactly git's trailer block: every rule of the long way
    agrees, so only the split is left (five times faster, and log and blame parse
    every commit they show).
    """
    if (
        not message.endswith("\n")
        or message.endswith("\n\n")
        or message[:1] in ("", " ", "\n")
        or any(c in message for c in ("\x00", "\r", "\t", "#", "Conflicts:"))
    ):
        return None
    at = message.rfind("\n\n")
    if at < 0:
        return None
    lines = message[at + 2 : -1].split("\n")
    if not all(_PLAIN_LINE.fullmatch(line) for line in lines):
        return None
    return tuple((k, v.strip(" ")) for k, _, v in (line.partition(":") for line in lines))


# --- who a message names ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IdentityClaims:
    """The identity trailers of a message as git reads them, and what makes them ambiguous.

    ``names`` holds ``(key, value)`` in gitmem's spelling of the key; ``problems``
    one sentence per way the message could be read as naming someone else than
    ``names`` says (empty: every reader, gitmem or ``git log``, sees the same).
    """

    names: tuple[tuple[str, str], ...]
    problems: tuple[str, ...]

    def values(self, key: str) -> tuple[str, ...]:
        return tuple(v for k, v in self.names if k == key)


def identity_claims(message: str) -> IdentityClaims:
    """Read the :data:`IDENTITY_TRAILERS` of ``message`` once, and check they are unambiguous.

    Each must be a trailer git reads, written exactly as gitmem writes it
    (``Gitmem-Principal: name``: this spelling of the key, one space after the
    colon, a one-line printable value that gitmem reads back unchanged: no
    surrounding or doubled blanks, no ``<`` or ``>``), at most once; and no
    other line of the message (the summary, the body, a continuation line,
    anything after a NUL) may start with one of those keys, however spelled:
    a different trailer configuration, another parser or a person reading the
    message could take it for the name.
    """
    names: list[tuple[str, str]] = []
    problems: list[str] = []
    counted: dict[str, int] = {}
    for raw in _trailer_lines(message):
        at = _separator(raw)
        if at < 1:
            continue
        key = _IDENTITY_KEYS.get(raw[:at].strip(_SPACE).lower())
        if key is None:
            continue
        counted[key] = counted.get(key, 0) + 1
        value = _unfold(raw[at + 1 :].strip(_SPACE))
        names.append((key, value))
        line = raw[:-1] if raw.endswith("\n") else raw
        if (
            line != f"{key}: {value}"
            or not value
            or not value.isprintable()
            or Origin(None, value).principal_id != value
        ):
            problems.append(f"{line[:80]!r} is not written as gitmem writes it: exactly '{key}: <name>' on one line")
    for key, count in counted.items():
        if count > 1:
            problems.append(f"{key} appears {count} times; a commit names each once")
    mentioned: dict[str, int] = {}
    for line in message.replace("\x00", "\n").split("\n"):
        token = line.lstrip(_SPACE)
        end = 0
        while end < len(token) and token[end] in _TOKEN:
            end += 1
        key = _IDENTITY_KEYS.get(token[:end].lower())
        if key is not None:
            mentioned[key] = mentioned.get(key, 0) + 1
    for key, count in mentioned.items():
        if count > counted.get(key, 0):
            problems.append(
                f"a line starting with {key} is not a trailer git reads (it is in the summary or body, indented, "
                "or outside the last paragraph); remove it or make it the one trailer"
            )
    return IdentityClaims(tuple(names), tuple(problems))

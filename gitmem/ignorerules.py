"""Which paths of a folder an import leaves out: ``--exclude`` globs and the folder's ``.gitignore`` files.

Pure rules (the caller reads the files): a folder of notes is often a git work tree
or an editor's vault, whose ``.gitignore`` already says what is not content (an
Obsidian vault's ``.obsidian/`` workspace, ``*.tmp``...). The subset of gitignore
syntax a notes folder uses is understood, with git's meaning:

- only ``\\n`` ends a line (one ``\\r`` before it goes, and a byte-order mark at the start:
  :func:`lines_of`); blank lines and ``#`` comments are skipped; trailing spaces go unless
  escaped; ``\\#`` and ``\\!`` are literal, as is any character after a ``\\``;
- one trailing ``/`` matches folders only; ``!`` re-includes (the last matching line wins);
- a pattern with a ``/`` other than a trailing one is anchored to the folder of its
  ``.gitignore``; without one it matches a name at any depth;
- ``*``, ``?`` and a ``[...]`` class do not cross ``/``; ``**`` does between slashes (``a/**/b``,
  ``**/b``, ``a/**``), and elsewhere (``a**b``) is one more ``*``; a backwards range is empty;
  a class may hold ``\\`` escapes and git's POSIX classes (``[[:alpha:]]``);
- a line git can never match (an unclosed class, an unknown POSIX class, a last lone
  ``\\``) matches nothing;
- git matches bytes, not characters: ``?`` is one byte of a UTF-8 name, and a class or
  range holds bytes (both the line and the path are matched as their UTF-8 bytes).

An ``--exclude GLOB`` follows the same syntax as one more line of the top ``.gitignore``
(so ``.obsidian/`` and ``*.canvas`` mean what they would there).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import groupby


@dataclass(frozen=True)
class Rule:
    """One pattern line, compiled: where it came from, whether it re-includes, whether folders only."""

    source: str
    text: str
    base: str  # the folder of its .gitignore, "" for the top, ending in "/" otherwise
    negate: bool
    folders_only: bool
    glob: Glob

    def __post_init__(self) -> None:
        object.__setattr__(self, "_base", as_bytes(self.base))

    def matches(self, path: str, is_dir: bool) -> bool:
        return self.matches_bytes(as_bytes(path), is_dir)

    def matches_bytes(self, path: str, is_dir: bool) -> bool:
        """:meth:`matches` for a path already in its byte form (:func:`as_bytes`)."""
        if self.folders_only and not is_dir:
            return False
        base: str = self._base  # type: ignore[attr-defined]
        if not path.startswith(base):
            return False
        return self.glob.fullmatch(path[len(base) :])


def as_bytes(text: str) -> str:
    """``text`` as its UTF-8 bytes, one character each (``latin-1``): git matches a line and a path byte by byte.

    A name that is not UTF-8 arrives with its bytes as lone surrogates (``surrogateescape``)
    and goes back to them.
    """
    if text.isascii():
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("latin-1")


def lines_of(text: str) -> list[str]:
    """The lines of a ``.gitignore`` as git reads them: only ``\\n`` ends one, one ``\\r`` before it is dropped,
    and a byte-order mark at the very start is no part of the first (``str.splitlines`` also breaks at
    ``\\r``, ``\\f``, U+2028 and more, which git keeps inside a pattern)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


# The steps a pattern compiles to: one character, ``?``, a class, and the three repeats:
# ``*`` ([^/]*), ``**`` (.*) and the folders before a name (``**/``, or an unanchored pattern's (?:.*/)?).
_CHAR, _ONE, _CLASS, _STAR, _ANY, _FOLDERS = range(6)
_REPEATS = frozenset({_STAR, _ANY, _FOLDERS})
Step = tuple[int, str]


class _Never(Exception):
    """The line can match no path (git's matcher gives up on it wherever it gets to that point)."""


def _steps(glob: str, *, anchored: bool) -> list[Step]:
    """The steps of ``glob`` (in its byte form), read as git's ``wildmatch`` reads it; :class:`_Never` if
    it can match nothing.

    ``anchored``: a line with a ``/``, matched against the path from its ``.gitignore``'s
    folder (git's ``WM_PATHNAME``); else matched against a name alone, where ``**`` is one
    more ``*`` since a name holds no ``/``.
    """
    out: list[Step] = []
    # git matches an anchored pattern's literal start on its own and the rest from there, so a
    # first wildcard run there counts as coming after a "/" ('a**/b' is a, the folders, b).
    head = min((at for at in map(glob.find, "*?[\\") if at >= 0), default=len(glob)) if anchored else -1
    i = 0
    while i < len(glob):
        c = glob[i]
        if c == "*":
            # A run of stars between slashes (or the pattern's ends) crosses folders: "**/" is the
            # folders before what follows, a last "**" (or one before an escaped "/") all below.
            # Any other run is one "*", as in git.
            end = i
            while end < len(glob) and glob[end] == "*":
                end += 1
            after_slash = i == head or glob[i - 1 : i] == "/"
            before_slash = glob[end : end + 1] in ("", "/") or glob[end : end + 2] == "\\/"
            crossing = anchored and end - i > 1 and after_slash and before_slash
            if crossing and glob[end : end + 1] == "/":
                out.append((_FOLDERS, ""))
                end += 1
            else:
                out.append((_ANY if crossing else _STAR, ""))
            i = end
        elif c == "?":
            out.append((_ONE, ""))
            i += 1
        elif c == "[":
            members, i = _class(glob, i)
            if not members:
                raise _Never
            out.append((_CLASS, members))
        elif c == "\\":
            if i + 1 == len(glob):
                raise _Never  # git compares the end of the pattern with the path's next byte: never equal
            out.append((_CHAR, glob[i + 1]))
            i += 2
        else:
            out.append((_CHAR, c))
            i += 1
    return out


_BYTES = "".join(map(chr, range(256)))
#: git's POSIX classes, as its own character table has them (ASCII only; its "space" leaves out "\\v" and "\\f").
_POSIX = {
    "alnum": "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "alpha": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "blank": " \t",
    "cntrl": "".join(map(chr, range(32))) + "\x7f",
    "digit": "0123456789",
    "graph": "".join(map(chr, range(33, 127))),
    "lower": "abcdefghijklmnopqrstuvwxyz",
    "print": "".join(map(chr, range(32, 127))),
    "punct": "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
    "space": " \t\n\r",
    "upper": "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "xdigit": "0123456789ABCDEFabcdef",
}


def _class(glob: str, at: int) -> tuple[str, int]:
    """The bytes the class starting at ``glob[at]`` (a ``[``) matches, never ``/``, and where it ends.

    Read as git's ``wildmatch`` reads one: a ``!`` or ``^`` first negates; the first
    character is a member even if it is ``]``; ``\\`` escapes the next; ``-`` between a
    member and another character (not ``]``) is a range of bytes, empty when written
    backwards; ``[:name:]`` is a POSIX class. :class:`_Never` where git gives up on the
    whole line: no closing ``]``, a last ``\\``, a POSIX class it does not know.
    """
    end = len(glob)
    p = at + 1
    negated = glob[p : p + 1] in ("!", "^")
    if negated:
        p += 1
    members: set[str] = set()
    prev = ""  # the character a "-" here would start a range from ("" after a range or a POSIX class)
    close = -1
    while True:
        if p >= end:
            raise _Never
        ch = glob[p]
        if ch == "\\":
            ch, p = _escaped(glob, p)
            members.add(ch)
        elif ch == "-" and prev and p + 1 < end and glob[p + 1] != "]":
            ch, p = _escaped(glob, p + 1)
            members.update(_BYTES[ord(prev) : ord(ch) + 1])
            ch = ""
        elif ch == "[" and glob[p + 1 : p + 2] == ":":
            # The first "]" from here; one found for an earlier "[:" still is, if it lies ahead
            # ("[[:[:[:[:" ... would otherwise search the rest of the line once each).
            if close < p + 2:
                close = glob.find("]", p + 2)
            if close < 0:
                raise _Never
            if close - (p + 2) < 1 or glob[close - 1] != ":":
                members.add("[")  # no ":]" before the "]": a plain "[", read on from after it
            else:
                known = _POSIX.get(glob[p + 2 : close - 1])
                if known is None:
                    raise _Never
                members.update(known)
                p, ch = close, ""
        else:
            members.add(ch)
        prev = ch
        p += 1
        if p < end and glob[p] == "]":
            break
    chosen = set(_BYTES) - members if negated else members
    chosen.discard("/")
    return "".join(sorted(chosen)), p + 1


def _escaped(glob: str, p: int) -> tuple[str, int]:
    """The character at ``glob[p]``, or the one a ``\\`` there escapes, and where it was read; :class:`_Never` past the end."""
    if glob[p] == "\\":
        p += 1
        if p >= len(glob):
            raise _Never
    return glob[p], p


def _merged(steps: list[Step]) -> list[Step]:
    """``steps`` with each run of repeats cut to what it matches, so no run is longer than two.

    ``*`` alone, the folders alone, or ``*`` then the folders (either may match) stay; any other
    run (one holding ``**``, or a ``*`` after the folders) matches every string, and is ``**``.
    """
    out: list[Step] = []
    at = 0
    while at < len(steps):
        if steps[at][0] not in _REPEATS:
            out.append(steps[at])
            at += 1
            continue
        end = at
        while end < len(steps) and steps[end][0] in _REPEATS:
            end += 1
        kinds = [kind for kind, _ in steps[at:end]]
        after_folders = kinds[kinds.index(_FOLDERS) :] if _FOLDERS in kinds else []
        if _ANY in kinds or _STAR in after_folders:
            out.append((_ANY, ""))
        else:
            out += [(kind, "") for kind in (_STAR, _FOLDERS) if kind in kinds]
        at = end
    return out


#: Patterns with at most this many repeats are matched by a regular expression (see :class:`Glob`).
_REGEX_REPEATS = 2
_AS_REGEX = {_ONE: "[^/]", _STAR: "[^/]*", _ANY: ".*", _FOLDERS: "(?:.*/)?"}


def _regex(step: Step) -> str:
    kind, text = step
    if kind == _CLASS:
        return "[" + "".join(map(re.escape, text)) + "]"
    return re.escape(text) if kind == _CHAR else _AS_REGEX[kind]


class Glob:
    """A compiled pattern, matched in time proportional to the path's length (times the pattern's / 64).

    Patterns come with the folder or history being imported (its ``.gitignore`` files), so
    they are input. A regular expression with several ``*`` backtracks: ``*a*a*a*a*a*b``
    against a name of 200 ``a`` tries every way to split the name, hours for one line.
    Here each position of the pattern that the path read so far can be at is one bit of an
    integer, and each character moves them all at once (the pattern's automaton, simulated
    bit-parallel): no way of matching is tried twice.
    """

    __slots__ = (
        "_accept",
        "_any",
        "_char",
        "_classes",
        "_folders",
        "_head",
        "_least",
        "_moves",
        "_one",
        "_pieces",
        "_regex",
        "_repeats",
        "_star",
        "_tail",
    )

    def __init__(self, steps: list[Step]) -> None:
        # With at most two repeats a regular expression backtracks at most quadratically in the
        # path's length, and it is ten times quicker on the patterns a .gitignore usually holds.
        few = sum(kind in _REPEATS for kind, _ in steps) <= _REGEX_REPEATS
        self._regex = re.compile("".join(map(_regex, steps)), re.DOTALL) if few else None
        self._char: dict[str, int] = {}
        self._classes: list[tuple[int, str]] = []  # each class's bit and the bytes it matches
        self._one = self._star = self._any = self._folders = 0
        for at, (kind, text) in enumerate(steps):
            bit = 1 << at
            if kind == _CHAR:
                self._char[text] = self._char.get(text, 0) | bit
            elif kind == _ONE:
                self._one |= bit
            elif kind == _CLASS:
                self._classes.append((bit, text))
            elif kind == _STAR:
                self._star |= bit
            elif kind == _ANY:
                self._any |= bit
            else:
                self._folders |= bit
        self._repeats = self._star | self._any | self._folders
        self._accept = 1 << len(steps)
        self._moves: dict[str, int] = {}
        # What any path it matches starts and ends with, the literal pieces it holds between them in
        # order, and its least length: nearly every path a line cannot match is told apart by these
        # (a note without the "-" of "*-*-*.md"), before a step of the automaton.
        first, last = 0, len(steps)
        while first < last and steps[first][0] == _CHAR:
            first += 1
        while last > first and steps[last - 1][0] == _CHAR:
            last -= 1
        self._head = "".join(text for _, text in steps[:first])
        self._tail = "".join(text for _, text in steps[last:])
        runs = groupby(steps[first:last], key=lambda step: step[0] == _CHAR)
        self._pieces = ["".join(text for _, text in run) for literal, run in runs if literal]
        self._least = sum(kind not in _REPEATS for kind, _ in steps)

    def _moving(self, char: str) -> int:
        """The positions a ``char`` moves on from (to the next position)."""
        moves = self._moves.get(char)
        if moves is None:
            moves = self._char.get(char, 0)
            if char != "/":
                moves |= self._one
            for bit, members in self._classes:
                if char in members:
                    moves |= bit
            if char == "/":
                moves |= self._folders  # (?:.*/)? may end after any "/"
            if len(self._moves) < 1024:
                self._moves[char] = moves
        return moves

    def _closed(self, states: int) -> int:
        """``states`` (positions just reached) and every position a repeat among them reaches by matching nothing."""
        while True:
            more = states | ((states & self._repeats) << 1)
            if more == states:
                return states
            states = more

    def fullmatch(self, path: str) -> bool:
        """Whether the pattern matches all of ``path``."""
        if self._regex is not None:
            return self._regex.fullmatch(path) is not None
        if len(path) < self._least or not path.startswith(self._head) or not path.endswith(self._tail):
            return False
        at, end = len(self._head), len(path) - len(self._tail)
        for piece in self._pieces:
            at = path.find(piece, at, end)
            if at < 0:
                return False
            at += len(piece)
        states = self._closed(1)
        stay_slash = self._any | self._folders
        stay = stay_slash | self._star
        for char in path:
            kept = states & (stay_slash if char == "/" else stay)
            # (?:.*/)? may match nothing only where it starts: once inside, it moves on after a "/" alone.
            states = self._closed(((states & self._moving(char)) << 1) | (kept & ~self._folders)) | kept
            if not states:
                return False
        return bool(states & self._accept)


def parse(lines: Iterable[str], *, base: str = "", source: str = ".gitignore") -> list[Rule]:
    """The rules of one ``.gitignore`` (its :func:`lines_of`, or ``--exclude`` globs) found in folder ``base``.

    Each line read as git reads it; one that can match no path is left out (it changes nothing).
    """
    rules: list[Rule] = []
    for raw in lines:
        if not raw or raw.startswith("#"):
            continue
        line = _trimmed(raw.split("\0", 1)[0])  # git reads a line as a C string: a NUL ends it
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        folders_only = line.endswith("/")
        if folders_only:
            line = line[:-1]
        if not line:
            continue
        anchored = "/" in line
        if line.startswith("/"):
            line = line[1:]
        try:
            # A bare name matches at any depth: the folders before it come first.
            glob = as_bytes(line)
            steps = _steps(glob, anchored=True) if anchored else [(_FOLDERS, ""), *_steps(glob, anchored=False)]
        except _Never:
            continue
        rules.append(Rule(source, raw.strip(), base, negate, folders_only, Glob(_merged(steps))))
    return rules


def _trimmed(line: str) -> str:
    """``line`` without its trailing spaces, but for one escaped by a ``\\`` (git's rule: a ``\\`` escapes the next
    character, so in ``a\\\\ `` the space is trailing, and in ``a\\  `` the first space stays)."""
    last_space = -1
    at = 0
    while at < len(line):
        char = line[at]
        if char == " ":
            if last_space < 0:
                last_space = at
        elif char == "\\":
            at += 1
            if at == len(line):
                return line
            last_space = -1
        else:
            last_space = -1
        at += 1
    return line if last_space < 0 else line[:last_space]


def ignored_by(rules: Iterable[Rule], path: str, is_dir: bool) -> Rule | None:
    """The rule that leaves ``path`` out (the last matching line wins; a ``!`` line keeps it), or ``None``."""
    verdict: Rule | None = None
    key = as_bytes(path)
    for rule in rules:
        if rule.matches_bytes(key, is_dir):
            verdict = None if rule.negate else rule
    return verdict

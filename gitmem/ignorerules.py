"""Which paths of a folder an import leaves out: ``--exclude`` globs and the folder's ``.gitignore`` files.

Pure rules (the caller reads the files): a folder of notes is often a git work tree
or an editor's vault, whose ``.gitignore`` already says what is not content (an
Obsidian vault's ``.obsidian/`` workspace, ``*.tmp``...). The subset of gitignore
syntax a notes folder uses is understood, with git's meaning:

- blank lines and ``#`` comments are skipped; ``\\#`` and ``\\!`` are literal;
- a trailing ``/`` matches folders only; ``!`` re-includes (the last matching line wins);
- a pattern with a ``/`` other than a trailing one is anchored to the folder of its
  ``.gitignore``; without one it matches a name at any depth;
- ``*``, ``?`` and a ``[...]`` class do not cross ``/``; ``**`` does between slashes (``a/**/b``,
  ``**/b``, ``a/**``), and elsewhere (``a**b``) is one more ``*``; a backwards range is empty.

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

    def matches(self, path: str, is_dir: bool) -> bool:
        if self.folders_only and not is_dir:
            return False
        if not path.startswith(self.base):
            return False
        return self.glob.fullmatch(path[len(self.base) :])


# The steps a pattern compiles to: one character, ``?``, a class, and the three repeats:
# ``*`` ([^/]*), ``**`` (.*) and the folders before a name (``**/``, or an unanchored pattern's (?:.*/)?).
_CHAR, _ONE, _CLASS, _STAR, _ANY, _FOLDERS = range(6)
_REPEATS = frozenset({_STAR, _ANY, _FOLDERS})
Step = tuple[int, str]


def _steps(glob: str, *, anchored: bool) -> list[Step]:
    out: list[Step] = []
    # git matches an anchored pattern's literal start on its own and the rest from there, so a
    # first wildcard run there counts as coming after a "/" ('a**/b' is a, the folders, b).
    head = min((at for at in map(glob.find, "*?[\\") if at >= 0), default=len(glob)) if anchored else -1
    i = 0
    while i < len(glob):
        c = glob[i]
        if c == "*":
            # A run of stars between slashes (or the pattern's ends) crosses folders: "**/" is the
            # folders before what follows, a last "**" all below. Any other run is one "*", as in git.
            end = i
            while end < len(glob) and glob[end] == "*":
                end += 1
            after_slash = i == head or glob[i - 1 : i] in ("", "/")
            crossing = end - i > 1 and after_slash and glob[end : end + 1] in ("", "/")
            if crossing and end < len(glob):
                out.append((_FOLDERS, ""))
                end += 1
            else:
                out.append((_ANY if crossing else _STAR, ""))
            i = end
        elif c == "?":
            out.append((_ONE, ""))
            i += 1
        elif c == "[":
            # The first character of the class (after a "!" or "^") is one of it, even a "]".
            first = i + 2 if glob[i + 1 : i + 2] in ("!", "^") else i + 1
            end = glob.find("]", first + 1)
            if end < 0:
                out.append((_CHAR, c))
                i += 1
            else:
                body = glob[i + 1 : end]
                negate = body[:1] in ("!", "^")
                # Like "?", a class never matches the "/" between folders, whatever it names.
                out.append((_CLASS, f"[^/{_class_body(body[1:])}]" if negate else f"(?!/)[{_class_body(body)}]"))
                i = end + 1
        elif c == "\\" and i + 1 < len(glob):
            out.append((_CHAR, glob[i + 1]))
            i += 2
        else:
            out.append((_CHAR, c))
            i += 1
    return out


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
    return re.escape(text) if kind == _CHAR else text if kind == _CLASS else _AS_REGEX[kind]


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
        self._classes: list[tuple[int, re.Pattern[str]]] = []
        self._one = self._star = self._any = self._folders = 0
        for at, (kind, text) in enumerate(steps):
            bit = 1 << at
            if kind == _CHAR:
                self._char[text] = self._char.get(text, 0) | bit
            elif kind == _ONE:
                self._one |= bit
            elif kind == _CLASS:
                self._classes.append((bit, re.compile(text, re.DOTALL)))
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
            for bit, pattern in self._classes:
                if pattern.fullmatch(char):
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


def _class_body(body: str) -> str:
    """A glob class's characters as a regex class, read as git reads them: each character is one,
    and ``-`` between one that is not a range's end and another is a range (``[a-c-e]``: a to c,
    ``-`` and ``e``); every character is escaped, so ``[[x]`` or ``[a&&b]`` is no nested set or set
    operation. A range written backwards (``[z-a]``) is empty, as in git: no regex would take it.
    """
    out = []
    start: str | None = None  # the character a "-" here would start a range from
    at = 0
    while at < len(body):
        char = body[at]
        if char == "-" and start is not None and at + 1 < len(body):
            end = body[at + 1]
            if start <= end:
                out.append(f"{re.escape(start)}-{re.escape(end)}")
            start = None
            at += 2
            continue
        out.append(re.escape(char))
        start = char
        at += 1
    return "".join(out)


def parse(lines: Iterable[str], *, base: str = "", source: str = ".gitignore") -> list[Rule]:
    """The rules of one ``.gitignore`` (or of ``--exclude`` globs) found in folder ``base``."""
    rules: list[Rule] = []
    for raw in lines:
        line = raw.rstrip("\n").rstrip("\r")
        if not line.endswith("\\ "):
            line = line.rstrip(" ")
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate or line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        folders_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        # A bare name matches at any depth: the folders before it come first.
        steps = _steps(line, anchored=True) if anchored else [(_FOLDERS, ""), *_steps(line, anchored=False)]
        rules.append(Rule(source, raw.strip(), base, negate, folders_only, Glob(_merged(steps))))
    return rules


def ignored_by(rules: Iterable[Rule], path: str, is_dir: bool) -> Rule | None:
    """The rule that leaves ``path`` out (the last matching line wins; a ``!`` line keeps it), or ``None``."""
    verdict: Rule | None = None
    for rule in rules:
        if rule.matches(path, is_dir):
            verdict = None if rule.negate else rule
    return verdict

"""Which paths of a folder an import leaves out: ``--exclude`` globs and the folder's ``.gitignore`` files.

Pure rules (the caller reads the files): a folder of notes is often a git work tree
or an editor's vault, whose ``.gitignore`` already says what is not content (an
Obsidian vault's ``.obsidian/`` workspace, ``*.tmp``...). The subset of gitignore
syntax a notes folder uses is understood, with git's meaning:

- blank lines and ``#`` comments are skipped; ``\\#`` and ``\\!`` are literal;
- a trailing ``/`` matches folders only; ``!`` re-includes (the last matching line wins);
- a pattern with a ``/`` other than a trailing one is anchored to the folder of its
  ``.gitignore``; without one it matches a name at any depth;
- ``*`` and ``?`` do not cross ``/``; ``**`` does; ``[...]`` is a class.

An ``--exclude GLOB`` follows the same syntax as one more line of the top ``.gitignore``
(so ``.obsidian/`` and ``*.canvas`` mean what they would there).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


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


def _steps(glob: str) -> list[Step]:
    out: list[Step] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append((_FOLDERS, ""))
            i += 3
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out += [(_CHAR, "/"), (_ANY, "")]
            i += 3
        elif glob.startswith("**", i):
            out.append((_ANY, ""))
            i += 2
        elif c == "*":
            out.append((_STAR, ""))
            i += 1
        elif c == "?":
            out.append((_ONE, ""))
            i += 1
        elif c == "[":
            end = glob.find("]", i + 2 if glob.startswith("[!", i) or glob.startswith("[]", i) else i + 1)
            if end < 0:
                out.append((_CHAR, c))
                i += 1
            else:
                body = glob[i + 1 : end]
                negate = body[:1] in ("!", "^")
                out.append((_CLASS, "[^" + _class_body(body[1:]) + "]" if negate else "[" + _class_body(body) + "]"))
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

    __slots__ = ("_accept", "_any", "_char", "_classes", "_folders", "_moves", "_one", "_regex", "_repeats", "_star")

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
    """A glob class's characters as a regex class: every character literal but a ``-`` between two
    others (a range), so ``[[x]``, ``[a&&b]`` or ``[--]`` never reads as a nested set or set operation."""
    out = []
    for at, char in enumerate(body):
        ranged = char == "-" and 0 < at < len(body) - 1 and body[at - 1] != "-" and body[at + 1] != "-"
        out.append("-" if ranged else re.escape(char))
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
        steps = _steps(line) if anchored else [(_FOLDERS, ""), *_steps(line)]  # a bare name: at any depth
        rules.append(Rule(source, raw.strip(), base, negate, folders_only, Glob(_merged(steps))))
    return rules


def ignored_by(rules: Iterable[Rule], path: str, is_dir: bool) -> Rule | None:
    """The rule that leaves ``path`` out (the last matching line wins; a ``!`` line keeps it), or ``None``."""
    verdict: Rule | None = None
    for rule in rules:
        if rule.matches(path, is_dir):
            verdict = None if rule.negate else rule
    return verdict

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
    regex: re.Pattern[str]

    def matches(self, path: str, is_dir: bool) -> bool:
        if self.folders_only and not is_dir:
            return False
        if not path.startswith(self.base):
            return False
        return self.regex.fullmatch(path[len(self.base) :]) is not None


def _translate(glob: str) -> str:
    out, i = [], 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = glob.find("]", i + 2 if glob.startswith("[!", i) or glob.startswith("[]", i) else i + 1)
            if end < 0:
                out.append(re.escape(c))
                i += 1
            else:
                body = glob[i + 1 : end]
                negate = body[:1] in ("!", "^")
                out.append("[^" + _class_body(body[1:]) + "]" if negate else "[" + _class_body(body) + "]")
                i = end + 1
        elif c == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


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
        pattern = _translate(line)
        if not anchored:
            pattern = "(?:.*/)?" + pattern
        rules.append(Rule(source, raw.strip(), base, negate, folders_only, re.compile(pattern, re.DOTALL)))
    return rules


def ignored_by(rules: Iterable[Rule], path: str, is_dir: bool) -> Rule | None:
    """The rule that leaves ``path`` out (the last matching line wins; a ``!`` line keeps it), or ``None``."""
    verdict: Rule | None = None
    for rule in rules:
        if rule.matches(path, is_dir):
            verdict = None if rule.negate else rule
    return verdict

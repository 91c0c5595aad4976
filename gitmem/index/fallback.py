"""grep candidates and ranked search while a mount has no usable index.

The index is rebuilt off the request path (:mod:`gitmem.index.background`); until
it is there (a fresh clone, a new machine, after purge or forget, an index of an
older format, or one too far behind), a search still has to answer exactly.
grep's lines are always decided by :func:`gitmem.grep.scan`, so all a fallback
has to do is pick a *superset* of the files that can match:

- where git is installed, ``git grep`` picks them (:mod:`gitmem.git.gitgrep`),
  from the same formula of literals the index narrows with
  (:mod:`gitmem.index.needles`): each ``Lit`` becomes a fixed string matched
  ignoring ASCII case, ``All`` an ``--and``, ``AnyOf`` an ``--or``;
- otherwise each file under the prefix is read once and kept when its folded
  text satisfies the formula (a file-level test, so again a superset).

A literal is "the casefolded line contains it", and ``git grep -i`` folds ASCII
only. An ASCII literal can therefore also be produced by one of the few
characters outside ASCII whose casefold or lowercase holds ASCII letters
(``ß`` → ``ss``, the Kelvin sign → ``k``, ``ﬁ`` → ``fi``, ...). Only those that
make a letter some literal holds can take part (every other character of a
match is the line's own ASCII, which ``-i`` finds), and each of them is one more
``--or`` of the same ``git grep``: a line holding one stays a candidate. One
process reads the blobs once (two, side by side, cost twice the CPU of one at
100k files). A literal that is not plain ASCII is never given to git.

``find`` ranks the files holding a query word (in their text or their path) with
the index's own BM25F over an in-memory index of just those files. The set of
files is the one the index would rank; the scores differ a little, because the
corpus statistics are those of the matching files only, until the index is back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gitmem.fileformat import decode_stored
from gitmem.git import gitgrep
from gitmem.index.grams import fold
from gitmem.index.needles import All, AnyOf, Lit, Need
from gitmem.index.source import FileSource, git_order, regular_files

if TYPE_CHECKING:
    from gitmem.grep import Matcher
    from gitmem.model import SearchResult

FOLDS_TO_ASCII = (
    "\u00df\u0130\u0149\u017f\u01f0\u1e96\u1e97\u1e98\u1e99\u1e9a\u1e9e\u212a"
    "\ufb00\ufb01\ufb02\ufb03\ufb04\ufb05\ufb06"
)
"""Every character outside ASCII whose ``casefold()`` or ``lower()`` holds an ASCII one (a test checks the table)."""


def folding_into(need: Need) -> list[str]:
    """The characters of :data:`FOLDS_TO_ASCII` whose fold makes an ASCII character some literal of ``need`` holds."""
    wanted = set("".join(_literals(need)))
    return [c for c in FOLDS_TO_ASCII if wanted.intersection(c.casefold() + c.lower())]


def _literals(need: Need) -> list[str]:
    if isinstance(need, Lit):
        return [need.text]
    return [text for part in need.parts for text in _literals(part)]


def holds(need: Need, folded: str) -> bool:
    """Whether ``folded`` text satisfies ``need`` (as one line, or as a whole file: a superset)."""
    if isinstance(need, Lit):
        return need.text in folded
    if isinstance(need, All):
        return all(holds(part, folded) for part in need.parts)
    return any(holds(part, folded) for part in need.parts)


def git_expression(need: Need) -> list[str] | None:
    """``git grep``'s expression for ``need``; ``None`` when a literal is not plain ASCII."""
    if isinstance(need, Lit):
        if not need.text.isascii() or "\n" in need.text or "\0" in need.text:
            return None
        return ["(", "-e", need.text, ")"]
    joiner = "--and" if isinstance(need, All) else "--or"
    out = ["("]
    for i, part in enumerate(need.parts):
        inner = git_expression(part)
        if inner is None:
            return None
        out += ([joiner] if i else []) + inner
    return [*out, ")"]


def grep_candidates(repo: FileSource, need: Need, prefix: str, head: str) -> list[tuple[str, str]]:
    """Files under ``prefix`` at ``head`` that may hold a line satisfying ``need``, as ``(path, blob id)`` in git order."""
    found = _ask_git(repo, head, need, prefix)
    if found is None:
        return _read_and_keep(repo, head, prefix, lambda path, text: holds(need, fold(text)))
    return regular_files(repo, head, prefix, found)


class GitLines:
    """A ``git grep`` printing the lines that may satisfy a need, started now and read later.

    Every line the scan would match satisfies the need (see the module docstring),
    so it is among the lines git prints for :func:`_expression`; each printed line is
    decoded as the scan decodes a file (``decode_stored``: ``\\n`` is never part of a
    UTF-8 sequence, so decoding line by line and decoding the file agree), loses one
    trailing ``\\r`` as :func:`gitmem.grep.split_lines` drops it, and is decided by the
    scan's matcher. Git numbers lines as the scan does and prints them in git order,
    so the answer is the scan's, limit and truncation included; git is stopped once
    the answer is known. No tree or blob is read in Python. The CLI's grep of ``main``
    (:func:`gitmem.quickread.search`) is its one caller.
    """

    def __init__(self, lines: gitgrep.Lines, prefix: str) -> None:
        self._lines = lines
        self._prefix = prefix

    @classmethod
    def start(cls, git_dir: str, head: str, need: Need, prefix: str) -> GitLines | None:
        """``None`` when git cannot be asked: missing, not started, or a literal that is not plain ASCII."""
        expression = _expression(need)
        if expression is None:
            return None
        lines = gitgrep.matching_lines(git_dir, head, expression, prefix)
        return None if lines is None else cls(lines, prefix)

    def answer(self, matcher: Matcher, limit: int) -> SearchResult | None:
        """The scan's answer; ``None`` when git failed part way (its lines are then not trusted)."""
        from gitmem.model import GrepMatch, SearchResult

        found: list[GrepMatch] = []
        test = matcher.test
        prefix = self._prefix
        last = b""
        try:
            for path, number, raw in self._lines:
                if not path.startswith(prefix):  # the pathspec also names a file called like the folder
                    continue
                order = git_order(path)
                if order < last:  # never seen: git prints in tree order; the scan's order is not guessed at
                    return None
                last = order
                line = decode_stored(raw)
                if line.endswith("\r"):
                    line = line[:-1]
                if test(line):
                    if len(found) == limit:
                        return SearchResult(tuple(found), truncated=True)
                    found.append(GrepMatch(path, number, line))
        except gitgrep.GitGrepFailed:
            return None
        finally:
            self.close()
        return SearchResult(tuple(found), truncated=False)

    def close(self) -> None:
        """Stop git (nothing when it has ended)."""
        self._lines.close()


def find_candidates(repo: FileSource, terms: list[str], prefix: str, head: str) -> list[tuple[str, str, str]]:
    """Files under ``prefix`` whose text or path holds one of ``terms``, as ``(path, blob id, text)``."""
    lowered = [t.lower() for t in terms]

    def named(path: str) -> bool:
        return any(t in path.lower() for t in lowered)

    need = AnyOf(tuple(Lit(t) for t in lowered)) if len(lowered) > 1 else Lit(lowered[0])
    found = _ask_git(repo, head, need, prefix)
    if found is None:

        def keep(path: str, text: str) -> bool:
            return named(path) or any(t in text.lower() for t in lowered)

        picked = _read_and_keep(repo, head, prefix, keep)
    else:
        picked = [(p, oid) for p, oid in repo.files_at(head, prefix) if p in found or named(p)]
    return [(p, oid, decode_stored(repo.blob(oid))) for p, oid in picked]


def _ask_git(repo: FileSource, head: str, need: Need, prefix: str) -> set[str] | None:
    """The files ``git grep`` says may satisfy ``need``, or hold a character that folds into one of its literals."""
    expression = _expression(need)
    if expression is None:
        return None
    return gitgrep.files_matching(repo.path, head, expression, prefix)


def _expression(need: Need) -> list[str] | None:
    """``git grep``'s expression for the lines that may satisfy ``need``: :func:`git_expression`, or a
    character that folds into one of its literals (``None`` when a literal is not plain ASCII).

    A need that is one literal or a choice of literals is given as plain patterns
    (``-e A -e B -e ß``: git's implicit "any of"), which means the same as the
    ``--or`` expression and lets git test a line against them as a set, about
    a fifth less of its CPU than the same alternatives written out.
    """
    expression = git_expression(need)
    if expression is None:
        return None
    folding = folding_into(need)
    if isinstance(need, Lit) or (isinstance(need, AnyOf) and all(isinstance(part, Lit) for part in need.parts)):
        return [arg for text in [*_literals(need), *folding] for arg in ("-e", text)]
    return [*expression, *(arg for char in folding for arg in ("--or", "-e", char))]


def _read_and_keep(
    repo: FileSource, head: str, prefix: str, keep: Callable[[str, str], bool]
) -> list[tuple[str, str]]:
    return [(p, oid) for p, oid in repo.files_at(head, prefix) if keep(p, decode_stored(repo.blob(oid)))]

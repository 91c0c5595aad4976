"""Values the index hands out: ranked hits and its own status."""

from __future__ import annotations

import re
from dataclasses import dataclass

SNIPPET_CHARS = 160
_SNIPPET_WORDS = 16  # the longest words of a query a snippet looks for (each is a scan of the file)


@dataclass(frozen=True, slots=True)
class FindHit:
    """One file of a ranked search: higher ``score`` is better (BM25F)."""

    path: str
    score: float
    snippet: str
    version: str


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """Where a mount's index stands.

    ``state`` is ``current`` (reflects the head), ``behind`` (reflects an older
    commit; the next search catches up), ``missing``, ``broken`` (unreadable)
    or ``outdated`` (an older format, or a commit that is gone or no longer an
    ancestor of the head); the last three are rebuilt by the next search.
    """

    directory: str
    state: str
    head: str
    commit: str | None
    documents: int = 0
    deleted: int = 0
    segments: int = 0

    @property
    def current(self) -> bool:
        return self.state == "current"


def snippet(text: str, words: list[str], width: int = SNIPPET_CHARS) -> str:
    """The line of ``text`` that best shows why it matched ``words``, cut to ``width``.

    The body comes first: the line holding the most of the query's words as whole words
    (then as parts of words), the first such line on a tie. The frontmatter is looked at
    only when no body line holds any word: a ``tags: [people, team]`` line says less about
    a match than the sentence that holds it. With no word anywhere, the first body line.
    The cut keeps the first word found in view, so a reader sees why the file ranked.
    """
    from gitmem.errors import MemoryStoreError
    from gitmem.fileformat import split_frontmatter

    try:
        front, body = split_frontmatter(text)
    except MemoryStoreError:  # unclosed: all of it is body
        front, body = None, text
    body_lines = [line.strip() for line in body.splitlines() if line.strip()]
    front_lines = [line.strip() for line in (front or "").splitlines() if line.strip()]
    if not body_lines and not front_lines:
        return ""
    patterns = [
        (re.compile(rf"(?<!\w){re.escape(w)}(?!\w)", re.IGNORECASE), re.compile(re.escape(w), re.IGNORECASE))
        for w in sorted(words, key=len, reverse=True)[:_SNIPPET_WORDS]
    ]

    def score(line: str) -> tuple[int, int]:
        whole = sum(1 for exact, _ in patterns if exact.search(line))
        part = sum(1 for _, loose in patterns if loose.search(line))
        return whole, part

    for lines in (body_lines, front_lines):
        best, best_score = None, (0, 0)
        for line in lines:
            found = score(line)
            if found > best_score:
                best, best_score = line, found
        if best is not None:
            return _cut(best, patterns, width)
    first = (body_lines or front_lines)[0]
    return first if len(first) <= width else first[:width] + "…"


def _cut(line: str, patterns: list[tuple[re.Pattern[str], re.Pattern[str]]], width: int) -> str:
    hits = [m for exact, loose in patterns for m in (exact.search(line) or loose.search(line),) if m is not None]
    at = min(m.start() for m in hits) if hits else 0
    start = max(0, min(at - width // 3, len(line) - width))
    cut = line[start : start + width]
    return ("…" if start > 0 else "") + cut + ("…" if start + width < len(line) else "")

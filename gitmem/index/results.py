"""Values the index hands out: ranked hits and its own status."""

from __future__ import annotations

import re
from dataclasses import dataclass

SNIPPET_CHARS = 160


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
    """The first line holding one of ``words`` (else the first non-empty line), cut to ``width``.

    The cut keeps the first word found in view, so a reader sees why the file
    ranked.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    finder = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)), re.IGNORECASE) if words else None
    for line in lines:
        found = finder.search(line) if finder is not None else None
        if found is not None:
            start = max(0, min(found.start() - width // 3, len(line) - width))
            cut = line[start : start + width]
            return ("…" if start > 0 else "") + cut + ("…" if start + width < len(line) else "")
    first = lines[0]
    return first if len(first) <= width else first[:width] + "…"

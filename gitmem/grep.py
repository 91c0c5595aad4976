"""The meaning of ``search``: a line-by-line scan, shared by every store.

The Whoosh index only narrows which files are read; the lines are always checked
here, so indexed and scanned answers are identical by construction.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gitmem.errors import MemoryStoreError
from gitmem.model import GrepMatch, SearchResult

MAX_LIMIT = 10_000
# warnings.catch_warnings swaps process-wide state: one compile at a time inside it.
_WARNINGS_GUARD = threading.Lock()


@dataclass(frozen=True, slots=True)
class Matcher:
    """A compiled pattern: ``test(line)`` says whether one line matches."""

    pattern: str
    regex: bool
    case_sensitive: bool
    test: Callable[[str], bool]


def compile_pattern(pattern: object, *, regex: bool = False, case_sensitive: bool = False) -> Matcher:
    if not isinstance(pattern, str) or pattern == "":
        raise MemoryStoreError("invalid_pattern", "the pattern must be a non-empty string")
    if "\n" in pattern and not regex:
        raise MemoryStoreError("invalid_pattern", "a literal pattern matches within one line; it cannot hold a newline")
    if regex:
        try:
            compiled = _compile(pattern, 0 if case_sensitive else re.IGNORECASE)
        except (re.error, OverflowError, RecursionError) as exc:
            raise MemoryStoreError("invalid_pattern", f"invalid regular expression: {exc}") from None
        search = compiled.search
        return Matcher(pattern, True, case_sensitive, lambda line: search(line) is not None)
    if case_sensitive:
        return Matcher(pattern, False, True, lambda line: pattern in line)
    folded = pattern.casefold()
    return Matcher(pattern, False, False, lambda line: folded in line.casefold())


def _compile(pattern: str, flags: int) -> re.Pattern[str]:
    """``re.compile`` without its ``FutureWarning`` about sets like ``[[``.

    The warning only says a future Python may read the pattern differently; in a
    process that turns warnings into errors it would escape the store as an
    exception, so it is silenced here, where the pattern is compiled.
    """
    with _WARNINGS_GUARD, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return re.compile(pattern, flags)


def check_limit(limit: object) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise MemoryStoreError("invalid_pattern", f"limit must be an integer from 1 to {MAX_LIMIT}")
    return limit


def split_lines(text: str) -> list[str]:
    """Lines as grep numbers them: split on ``\\n``, a trailing ``\\r`` dropped."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def scan(files: Iterable[tuple[str, str]], matcher: Matcher, limit: int) -> SearchResult:
    """Match every line of ``files`` (already in path order, already under the prefix)."""
    found: list[GrepMatch] = []
    test = matcher.test
    for path, text in files:
        for number, line in enumerate(split_lines(text), start=1):
            if test(line):
                if len(found) == limit:
                    return SearchResult(tuple(found), truncated=True)
                found.append(GrepMatch(path, number, line))
    return SearchResult(tuple(found), truncated=False)

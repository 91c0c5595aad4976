"""The meaning of ``search``: a line-by-line scan, shared by every store.

The Whoosh index only narrows which files are read; the lines are always checked
here, so indexed and scanned answers are identical by construction.

Regular expressions come from agents, and a backtracking engine can take
exponential time on a short line (``(a|aa)+$`` against forty ``a`` and a ``b``):
with Python's ``re`` that froze a whole MCP server, ping and all, because ``re``
holds the GIL until it is done. So patterns are *checked* by ``re`` (the syntax
gitmem accepts and its error messages stay Python's, and the index reads the
pattern with ``re``'s parser) but *matched* by the ``regex`` package in its
``re``-compatible mode (``VERSION0``), which can stop a match after a time
budget and releases the GIL while it matches. One search may spend
:data:`REGEX_BUDGET` seconds of CPU matching lines in all; past that it stops
with ``invalid_pattern``. (The engine's own timeout counts the whole process's
CPU time, so in a process busy on other threads a hostile search stops sooner;
never later.) The one difference in answers known between the two
engines: under case-insensitive matching ``re`` equates ``i`` with the dotless
``\u0131``, ``regex`` does not.
"""

from __future__ import annotations

import functools
import re
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from gitmem.errors import MemoryStoreError, whole_number
from gitmem.model import GrepMatch, SearchResult

MAX_LIMIT = 10_000
REGEX_BUDGET = 2.0
"""CPU seconds one search may spend in the regex engine, over every line it checks.

A sane pattern spends microseconds a line; this is room for a large memory, and a
stop for patterns that backtrack without end.
"""
_SHORT_TRY = 0.005  # seconds a match may hold the GIL, as long as Python's own switch interval
_LINES_PER_CHECK = 64
# warnings.catch_warnings swaps process-wide state: one compile at a time inside it.
_WARNINGS_GUARD = threading.Lock()


@contextmanager
def quiet_re() -> Iterator[None]:
    """Read a pattern with Python's ``re`` without its FutureWarning about sets such as ``[[``
    (a later Python may read them otherwise): shown, it lands on the CLI's stderr; where
    warnings are errors, it escapes the store. The index's reading of a pattern uses it too."""
    with _WARNINGS_GUARD, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        yield


class _Budget:
    """What is left of one search's regex budget, in CPU seconds of the matching thread.

    Reading a CPU clock costs microseconds (a system call), more than matching a
    short line, so it is read every :data:`_LINES_PER_CHECK` lines and after any
    line that needed its second try; in between, each line may take at most
    ``_SHORT_TRY``, which bounds how far the budget can be overrun.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.left = seconds
        self.lines = 0
        self.mark: float | None = None  # the thread's CPU clock at the last check; set by the first line

    def checkpoint(self) -> bool:
        """Charge the CPU time since the last check; whether any budget is left."""
        now = time.thread_time()
        if self.mark is not None:
            self.left -= now - self.mark
        self.mark = now
        self.lines = 0
        return self.left > 0.0


@dataclass(frozen=True, slots=True)
class Matcher:
    """A compiled pattern: ``test(line)`` says whether one line matches.

    A regex matcher's ``test`` raises ``invalid_pattern`` once the matching work
    of the search it was compiled for runs out: compile one matcher per search.
    """

    pattern: str
    regex: bool
    case_sensitive: bool
    test: Callable[[str], bool]


def compile_pattern(
    pattern: object, *, regex: bool = False, case_sensitive: bool = False, budget: float = REGEX_BUDGET
) -> Matcher:
    if not isinstance(pattern, str) or pattern == "":
        raise MemoryStoreError("invalid_pattern", "the pattern must be a non-empty string")
    if "\n" in pattern and not regex:
        raise MemoryStoreError("invalid_pattern", "a literal pattern matches within one line; it cannot hold a newline")
    if regex:
        return Matcher(pattern, True, case_sensitive, _bounded_search(pattern, case_sensitive, budget))
    if case_sensitive:
        return Matcher(pattern, False, True, lambda line: pattern in line)
    folded = pattern.casefold()
    return Matcher(pattern, False, False, lambda line: folded in line.casefold())


PROGRAM_LIMIT = 100_000
"""The most items a regular expression may hold once its counted repeats are written out (:func:`written_out`).

The ``regex`` engine builds a counted repeat as that many copies of its body, before any
line is matched and outside any time budget: ``a{20000000}`` (eleven characters) asked for
~5 GB, ``(?:a{8000}){8000}`` for ~19 GB. At this bound a program takes ~30 MB; a search
that needs more is written otherwise.
"""


@functools.lru_cache(maxsize=128)  # as re and regex keep their compiled patterns: a search repeats
def written_out(pattern: str, case_sensitive: bool) -> int:
    """About how many items ``pattern`` (which Python's ``re`` compiles) holds with each repeat written out
    as many times as its least count (``x{4}`` four, ``(?:x{4}){5}`` twenty), nested repeats multiplied.

    Read from ``re``'s parse of it. Should that ever fail (its parser is no stable API),
    the product of every count in the text stands in: larger, never smaller.
    """
    from re import _constants, _parser  # type: ignore[attr-defined]

    repeats = {_constants.MAX_REPEAT, _constants.MIN_REPEAT, getattr(_constants, "POSSESSIVE_REPEAT", None)}

    def inside(value: object) -> Iterator[object]:
        if isinstance(value, _parser.SubPattern):
            yield value
        elif isinstance(value, list | tuple):
            for item in value:
                yield from inside(item)

    def size(parsed: Any) -> int:
        total = 0
        for op, value in parsed:
            if op in repeats:
                low, _high, body = value
                total += (max(low, 1) + 1) * size(body)
            else:
                total += 1 + sum(size(sub) for sub in inside(value))
            if total > PROGRAM_LIMIT:
                return total  # no need to count on (a product of counts can be enormous)
        return total

    try:
        return size(_parser.parse(pattern, 0 if case_sensitive else re.IGNORECASE))
    except RecursionError:
        raise
    except Exception:  # the parser's internals changed: the coarse bound
        product = 1
        for count in re.findall(r"\{(\d+)", pattern):
            product *= max(int(count), 1)
            if product > PROGRAM_LIMIT:
                break
        return product


def _bounded_search(pattern: str, case_sensitive: bool, seconds: float) -> Callable[[str], bool]:
    """``line -> matched`` on the ``regex`` engine, raising ``invalid_pattern`` when the budget is spent."""
    import regex as regex_engine  # here: a literal search (and a CLI read command's start) need not load it

    try:
        with quiet_re():  # Python's own re must take the pattern too
            re.compile(pattern, 0 if case_sensitive else re.IGNORECASE)
            size = written_out(pattern, case_sensitive)
            if size > PROGRAM_LIMIT:
                raise MemoryStoreError(
                    "invalid_pattern",
                    f"the regular expression is too large once its counted repeats are written out "
                    f"(about {size:,} items, at most {PROGRAM_LIMIT:,}): a repeat such as {{1000}} is built "
                    "once per count; use smaller counts",
                )
            flags = regex_engine.V0 | (0 if case_sensitive else regex_engine.IGNORECASE)
            compiled = regex_engine.compile(pattern, flags)
    except (re.error, regex_engine.error, OverflowError, RecursionError) as exc:
        raise MemoryStoreError("invalid_pattern", f"invalid regular expression: {exc}") from None
    search = compiled.search
    budget = _Budget(seconds)

    def spent() -> MemoryStoreError:
        budget.left = 0.0
        return MemoryStoreError(
            "invalid_pattern",
            f"the regular expression needed more than {budget.seconds:g} s of matching work "
            "(nested repeats such as (a+)+ or (a|aa)+ backtrack without end); "
            "make it more specific or search a narrower path",
        )

    def test(line: str) -> bool:
        # A first try may hold the GIL for SHORT_TRY: nearly every line ends there, and
        # releasing the GIL for each would cost more than the match. A line still running
        # is matched again with the GIL released, on what is left of the budget.
        if budget.left <= 0.0:
            raise spent()
        if budget.mark is None:
            budget.mark = time.thread_time()
        try:
            found = search(line, timeout=min(budget.left, _SHORT_TRY))
        except TimeoutError:
            if not budget.checkpoint():
                raise spent() from None
            try:
                found = search(line, timeout=budget.left, concurrent=True)
            except TimeoutError:
                raise spent() from None
            budget.checkpoint()
        budget.lines += 1
        if budget.lines >= _LINES_PER_CHECK and not budget.checkpoint():
            raise spent()
        return found is not None

    return test


def check_limit(limit: object) -> int:
    return whole_number("limit", limit, MAX_LIMIT, "invalid_pattern")


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

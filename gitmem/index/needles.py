"""What text a line must contain for a pattern to match it.

A *need* is a small formula over folded literals: ``Lit("abc")`` (the folded
line contains ``abc``), ``All`` (every part holds) and ``AnyOf`` (at least one
part holds). ``None`` means "no constraint": the pattern cannot be narrowed and
the caller scans. Every need is *implied* by a match, never the other way round,
so using it to pick candidate files can only add files, never lose one.

Literal patterns give one ``Lit``. Regexes are read with Python's own parser
(``re._parser``, the one ``re.compile`` uses), keeping only constructs whose
meaning is certain: runs of literal characters, groups, repeats with a minimum of
one, alternations and positive lookarounds. Anything else contributes nothing,
and any surprise from the parser makes the whole pattern "scan".

Case: grep folds with ``str.casefold`` for literals, but a case-insensitive regex
uses ``re``'s own equivalence (simple lowercase plus a few extra pairs), which is
not casefold: ``İ`` matches ``i`` in ``re`` while it folds to ``i̇``. In
case-insensitive regex scopes a literal character is therefore used only when
every character ``re`` treats as equal to it has the same casefold: ASCII except
``i``/``I``, and characters without case. Others break the literal run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any

from gitmem.grep import quiet_re
from gitmem.index.grams import GRAM, fold


@dataclass(frozen=True, slots=True)
class Lit:
    text: str  # folded; at least GRAM characters


@dataclass(frozen=True, slots=True)
class All:
    parts: tuple[Need, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    parts: tuple[Need, ...]


Need = Lit | All | AnyOf

_MAX_DEPTH = 50
_I = re.IGNORECASE


def safe_when_ignoring_case(char: str) -> bool:
    """Whether every character ``re`` equates with ``char`` under IGNORECASE folds like it.

    Checked against the running Python's ``re`` tables in the tests.
    """
    if char.isascii():
        return char not in "iI"
    return char.lower() == char and char.upper() == char and char.casefold() == char


def literal_need(pattern: str) -> Need | None:
    """The need of a literal pattern, case-sensitive or not (casefold commutes with substrings)."""
    return _lit(fold(pattern))


def regex_need(pattern: str, case_sensitive: bool) -> Need | None:
    """The need of a regex that already compiled; ``None`` when unsure."""
    try:
        with quiet_re():
            parsed = _parser.parse(pattern, 0 if case_sensitive else _I)
        ignore = bool(parsed.state.flags & _I)
        return _sequence(list(parsed), ignore, 0)
    except Exception:  # the parser's internals are not a stable API: never trust a surprise
        return None


def _lit(folded: str) -> Lit | None:
    return Lit(folded) if len(folded) >= GRAM else None


def _all(parts: list[Need | None]) -> Need | None:
    kept = tuple(p for p in parts if p is not None)
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else All(kept)


def _any(parts: list[Need | None]) -> Need | None:
    if not parts or any(p is None for p in parts):
        return None
    kept = tuple(p for p in parts if p is not None)
    return kept[0] if len(kept) == 1 else AnyOf(kept)


def _sequence(items: list[tuple[Any, Any]], ignore: bool, depth: int) -> Need | None:
    if depth > _MAX_DEPTH:
        return None
    parts: list[Need | None] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            parts.append(_lit("".join(run)))
            run.clear()

    for op, av in items:
        if op == C.LITERAL:
            assert isinstance(av, int)
            char = chr(av)
            if not ignore or safe_when_ignoring_case(char):
                run.append(fold(char))
                continue
            flush()
            continue
        flush()
        if op == C.SUBPATTERN:
            _group, add, delete, sub = av
            inner = (ignore or bool(add & _I)) and not (delete & _I)
            parts.append(_sequence(list(sub), inner, depth + 1))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            low, _high, sub = av
            if low >= 1:
                parts.append(_sequence(list(sub), ignore, depth + 1))
        elif op == C.ATOMIC_GROUP:
            parts.append(_sequence(list(av), ignore, depth + 1))
        elif op == C.ASSERT:
            _direction, sub = av
            parts.append(_sequence(list(sub), ignore, depth + 1))
        elif op == C.BRANCH:
            _unused, alternatives = av
            parts.append(_any([_sequence(list(alt), ignore, depth + 1) for alt in alternatives]))
        # Everything else (classes, anchors, backreferences, conditionals,
        # negative lookarounds, any-char) requires no particular text.
    flush()
    return _all(parts)

"""The values recall deals in, and the checks every way into it makes of them.

A document to index (:class:`RecallDoc`) and an answer (:class:`RecallHit`),
the names of the rankings and profiles, and the checks of a query, a limit, a
minimum score and a document. Kept apart from :mod:`gitmem.recall.index` so the
snapshots, the memories above and the tests' full scan (``bench/recall_scan.py``)
check input exactly as the index does without holding one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, TypeGuard

from gitmem.errors import MemoryStoreError
from gitmem.recall import convo
from gitmem.recall.tokens import tokenize

Ranking = Literal["coverage", "bm25", "fused"]
RANKINGS: tuple[Ranking, ...] = ("coverage", "bm25", "fused")
#: The lexical profiles an index can use: the exact A3S one, and :mod:`gitmem.recall.convo`.
Profile = Literal["word-cjk-bigram", "conversation"]
PROFILES: tuple[Profile, ...] = ("word-cjk-bigram", "conversation")
MAX_LIMIT = 100
#: The times a stored item can hold: those of a date of the years 1 to 9999 (to the last whole
#: second: a float that close to the year 10000 cannot hold microseconds). Saved state naming a
#: time outside them was not made from files, and every answer formatting it as a date would fail.
FIRST_TIME: float = datetime(1, 1, 1, tzinfo=UTC).timestamp()
LAST_TIME: float = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()


@dataclass(frozen=True, slots=True)
class RecallDoc:
    """One thing to find: the caller's id, its text, and when it last changed (epoch seconds).

    ``follows`` names the item this one came after in its conversation or run (the
    ``conversation`` profile indexes the head of that item's text with it; the
    ``word-cjk-bigram`` profile ignores it).
    """

    id: str
    text: str
    updated_at: float
    follows: str | None = None


@dataclass(frozen=True, slots=True)
class RecallHit:
    """One answer: the document's id, its score under the ranking asked for, and its time."""

    id: str
    score: float
    updated_at: float


def check_query(
    query: object, limit: object, ranking: object = "coverage", profile: Profile = "word-cjk-bigram"
) -> frozenset[str]:
    """The query's tokens under ``profile``, or ``invalid_query`` naming what is wrong with the request."""
    if not isinstance(query, str):
        raise MemoryStoreError("invalid_query", f"a query is a string, not {type(query).__name__}")
    if not query.strip():
        raise MemoryStoreError("invalid_query", "the query is empty")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise MemoryStoreError("invalid_query", f"limit must be a whole number from 1 to {MAX_LIMIT}, not {limit!r}")
    if ranking not in RANKINGS:
        raise MemoryStoreError("invalid_query", f"ranking must be one of {', '.join(RANKINGS)}, not {ranking!r}")
    tokens = tokenize(query) if profile == "word-cjk-bigram" else convo.query_tokens(query)
    if not tokens:
        raise MemoryStoreError("invalid_query", "the query has no word or CJK token to look for")
    return tokens


def check_doc(doc: object) -> None:
    """Refuse what would corrupt the index: not a :class:`RecallDoc`, non-string id or text, a time that is not finite."""
    if type(doc) is RecallDoc and type(doc.id) is str and type(doc.text) is str and type(doc.updated_at) is float:
        if math.isfinite(doc.updated_at) and (doc.follows is None or type(doc.follows) is str):
            return  # the common case, checked without the general tests below
    if not isinstance(doc, RecallDoc):
        raise TypeError(f"upsert takes a RecallDoc, not {type(doc).__name__}")
    if not isinstance(doc.id, str) or not isinstance(doc.text, str):
        raise TypeError("a RecallDoc's id and text are strings")
    if doc.follows is not None and not isinstance(doc.follows, str):
        raise TypeError("a RecallDoc's follows is an id (a string) or None")
    at = doc.updated_at
    if isinstance(at, bool) or not isinstance(at, int | float) or not _finite(at):
        # A NaN time would make the tie order (newest first) undefined.
        raise ValueError(f"{doc.id}: updated_at must be a finite number of seconds, not {at!r}")


def _finite(number: int | float) -> bool:
    """Whether ``number`` is a finite float or an int one holds (``math.isfinite`` raises OverflowError past 1e308)."""
    try:
        return math.isfinite(number)
    except OverflowError:
        return False


def is_date_time(at: object) -> TypeGuard[int | float]:
    """Whether ``at`` is a number of seconds from :data:`FIRST_TIME` to :data:`LAST_TIME` (compared
    exactly: NaN, infinities and an int no float holds are not)."""
    return not isinstance(at, bool) and isinstance(at, int | float) and FIRST_TIME <= at <= LAST_TIME


def utc_time(moment: datetime) -> datetime:
    """``moment`` in UTC (a time without a zone is taken as UTC), when that is a date of :func:`is_date_time`.

    The one rule for a time read from outside (a file someone pushed, a change set): an
    ISO-8601 time such as ``9999-12-31T23:59:59-14:00`` parses, but its UTC is in the year
    10000, and converting or printing it fails deep inside whatever uses it. ``ValueError``
    here instead, which each reader turns into its own refusal or skip.
    """
    try:
        utc = moment.astimezone(UTC) if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
        inside = is_date_time(utc.timestamp())
    except (OverflowError, ValueError):
        inside = False
    if not inside:
        raise ValueError(f"{moment.isoformat()} is not a time of the years 1 to 9999 in UTC")
    return utc


def check_min_score(min_score: object) -> float:
    if isinstance(min_score, bool) or not isinstance(min_score, int | float) or not _finite(min_score):
        raise MemoryStoreError("invalid_query", f"min_score must be a finite number, not {min_score!r}")
    return float(min_score)


def order_key(score: float, updated_at: float, doc_id: str) -> tuple[float, float, str]:
    """The sort key of every ranking: score high to low, then newest first, then id."""
    return (-score, -updated_at, doc_id)

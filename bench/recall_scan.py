"""Recall by reading every document: the reference the index must agree with (no user of gitmem calls it).

No postings, no buckets, no shortcuts: tokenise each document and score it. The
property tests compare :class:`~gitmem.recall.index.RecallIndex` with these
functions on random corpora, and the benchmark uses them as the naive baseline.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable

from gitmem.recall.bm25 import BM25_B, BM25_K1
from gitmem.recall.tokens import coverage, token_list, tokenize
from gitmem.recall.values import RecallDoc, RecallHit, check_min_score, check_query, order_key


def scan_coverage(
    docs: Iterable[RecallDoc],
    query: str,
    *,
    limit: int = 5,
    min_score: float = 0.0,
    accept: Callable[[str], bool] | None = None,
) -> list[RecallHit]:
    """The A3S lexical query as its reference runs it: score every document, sort, cut."""
    q = check_query(query, limit)
    return _top(((doc, coverage(q, tokenize(doc.text))) for doc in docs), min_score, limit, accept)


def scan_bm25(
    docs: Iterable[RecallDoc],
    query: str,
    *,
    limit: int = 5,
    min_score: float = 0.0,
    accept: Callable[[str], bool] | None = None,
) -> list[RecallHit]:
    """Okapi BM25 (k1 1.2, b 0.75) computed from scratch over every document."""
    q = check_query(query, limit)
    check_min_score(min_score)
    counted = [(doc, Counter(token_list(doc.text))) for doc in docs]
    if not counted:
        return []
    avg = sum(sum(c.values()) for _, c in counted) / len(counted) or 1.0
    df = {t: sum(1 for _, c in counted if t in c) for t in q}

    def score(counts: Counter[str]) -> float:
        length = sum(counts.values())
        total = 0.0
        for t in q:
            tf = counts.get(t, 0)
            if tf:
                idf = math.log(1.0 + (len(counted) - df[t] + 0.5) / (df[t] + 0.5))
                total += idf * tf * (BM25_K1 + 1.0) / (tf + BM25_K1 * (1.0 - BM25_B + BM25_B * length / avg))
        return total

    return _top(((doc, score(counts)) for doc, counts in counted), min_score, limit, accept)


def _top(
    scored: Iterable[tuple[RecallDoc, float]], min_score: float, limit: int, accept: Callable[[str], bool] | None
) -> list[RecallHit]:
    """The hits above zero and ``min_score`` that ``accept`` lets through, best first, cut at ``limit``."""
    floor = check_min_score(min_score)
    hits = [
        RecallHit(doc.id, score, doc.updated_at)
        for doc, score in scored
        if score > 0.0 and score >= floor and (accept is None or accept(doc.id))
    ]
    hits.sort(key=lambda h: order_key(h.score, h.updated_at, h.id))
    return hits[:limit]

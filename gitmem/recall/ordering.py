"""Taking the first few of many BM25-scored documents in the rankings' order, without sorting them all.

Every ranking orders by score high to low, then newest first, then id. A run's
recall input (up to 2000 characters) has more tokens than BM25 prunes, so every
document holding one is scored, thousands to show five; :func:`take` takes what
the limit needs (and what ``accept`` lets through) from a partial sort, widening
it only when the accepted ones run out (a fifth of the whole search's CPU at 10k
records, docs/benchmarks.md). Coverage's score levels are sorted whole: a
partial sort of them bought nothing measurable.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from gitmem.recall.values import RecallHit

Ranked = tuple[tuple[float, float, str], str]  # ((-score, -updated_at, id), id)


def take(ranked: list[Ranked], limit: int, accept: Callable[[str], bool] | None) -> list[RecallHit]:
    """The first ``limit`` accepted entries of ``ranked`` in order, sorting no more than needed."""
    out: list[RecallHit] = []
    want = limit
    while ranked:
        if len(ranked) <= want * 4:
            chunk = sorted(ranked)
            ranked = []
        else:
            chunk = heapq.nsmallest(want * 4, ranked)
            cut = chunk[-1]
            ranked = [r for r in ranked if r > cut]
        for (neg, neg_at, _), doc_id in chunk:
            if accept is not None and not accept(doc_id):
                continue
            out.append(RecallHit(doc_id, -neg, -neg_at))
            if len(out) == limit:
                return out
        want *= 4
    return out

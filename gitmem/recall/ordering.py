"""Taking the first few of many scored documents in the rankings' order, without sorting them all.

Every ranking orders by score high to low, then newest first, then id. A query
of common words can score thousands of documents to show five; these take what
the limit needs (and what ``accept`` lets through) from a partial sort, widening
it only when the accepted ones run out.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping

from gitmem.recall.values import RecallHit

Key = tuple[float, str]  # a document's tie order: (-updated_at, id)
Ranked = tuple[tuple[float, float, str], str]  # ((-score, -updated_at, id), id)


def in_order(
    members: list[str], need: int, accept: Callable[[str], bool] | None, keys: Mapping[str, Key]
) -> Iterator[str]:
    """``members`` newest first (then by id), accepted ones only, sorting no more than ``need`` asks."""
    key = keys.__getitem__
    want = need if accept is None else need * 2
    done = 0
    while True:
        if len(members) <= max(want, 32):
            chunk = sorted(map(key, members))
            last = True
        else:
            chunk = heapq.nsmallest(want, map(key, members))
            last = False
        for _, doc_id in chunk[done:]:
            if accept is None or accept(doc_id):
                yield doc_id
        if last:
            return
        done = len(chunk)
        want *= 4


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

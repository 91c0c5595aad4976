"""BM25 over the index's postings, pruned so a short query reads only the postings that can matter.

Scoring every posting of every query token costs a Python step per posting, and
the common words of a query ("the", "deploy") are in thousands of documents.
Nearly none of those can reach the top ``k``: a document's score is a sum of one
contribution per query token it holds, and a common token's contribution is
small. :func:`pruned_scores` is Fagin's threshold algorithm over *impact
buckets*:

- a token's postings are grouped by ``(tf, document length)``; every document in
  a group gets the same contribution ``w * tf / (tf + norm(length))`` from that
  token, so a query sorts a few dozen groups, not thousands of documents;
- the groups of all query tokens are visited from the highest contribution
  down; each newly seen document is scored exactly (a dictionary look-up per
  query token), so a candidate's score is final the moment it is seen;
- after each group the threshold ``τ`` (the sum, over the query tokens, of the
  next unvisited group's contribution) bounds the score of every document not
  seen yet. Once ``k`` accepted documents score strictly above ``τ`` (or ``τ``
  falls below ``min_score``), no unseen document can enter the answer, and the
  walk stops.

The answer is exactly the exhaustive one, floating-point bits included: every
score is summed in the query's own token order by the same expression
(:func:`exhaustive_scores` is that expression over every posting), and ``τ`` is
summed in the same order from contributions no smaller than an unseen
document's, so, rounding being monotone, an unseen document's score is never
above ``τ``. The property tests check pruned against exhaustive on random
corpora.

Long queries (a pasted paragraph: hundreds of tokens) make each exact score cost
hundreds of look-ups and ``τ`` stays high; they take the exhaustive path.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping

BM25_K1 = 1.2
BM25_B = 0.75
# Tokens with at least this many postings keep their impact buckets in the index once a
# query has needed them; smaller postings are grouped by each query (cheaper than keeping them).
BUCKETED_POSTINGS = 48
# Queries with more tokens than this are scored exhaustively (see the module docstring).
MAX_PRUNED_TOKENS = 12

Buckets = defaultdict[int, list[str]]  # impact key (tf << 32 | length) -> documents


def impact_key(tf: int, length: int) -> int:
    """One int for ``(tf, length)``: cheaper to hash than a tuple, and a length never reaches 2**32."""
    return (tf << 32) | length


def buckets_of(posting: Mapping[str, int], lengths: Mapping[str, int]) -> Buckets:
    """``posting`` (document -> tf) grouped by impact key."""
    out: Buckets = defaultdict(list)
    for doc_id, tf in posting.items():
        out[(tf << 32) | lengths[doc_id]].append(doc_id)
    return out


def idf_weight(n_docs: int, df: int) -> float:
    """The per-token factor ``idf * (k1 + 1)`` (the same expression on every path)."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5)) * (BM25_K1 + 1.0)


class _Norms(dict[int, float]):
    """The length norm ``k1 * (1 - b + b * length / avg)`` per length, computed once per length."""

    def __init__(self, avg: float) -> None:
        super().__init__()
        self.avg = avg

    def __missing__(self, length: int) -> float:
        norm = self[length] = BM25_K1 * (1.0 - BM25_B + BM25_B * length / self.avg)
        return norm


def exhaustive_scores(
    tokens: Collection[str],
    postings: Mapping[str, Mapping[str, int]],
    lengths: Mapping[str, int],
    n_docs: int,
    avg: float,
) -> dict[str, float]:
    """Every document holding a query token, scored by walking every posting."""
    norms = _Norms(avg)
    scores: dict[str, float] = defaultdict(float)
    for token in tokens:
        posting = postings.get(token)
        if not posting:
            continue
        weight = idf_weight(n_docs, len(posting))
        for doc_id, tf in posting.items():
            scores[doc_id] += weight * tf / (tf + norms[lengths[doc_id]])
    return scores


def pruned_scores(
    tokens: Collection[str],
    postings: Mapping[str, Mapping[str, int]],
    impacts: Mapping[str, Buckets],
    lengths: Mapping[str, int],
    n_docs: int,
    avg: float,
    limit: int,
    floor: float,
    accept: Callable[[str], bool] | None,
) -> dict[str, float]:
    """Exact scores of a set of documents that contains the top ``limit`` (accepted, ``>= floor``, ``> 0``).

    Documents outside the returned set score strictly less than the ``limit``-th
    accepted one, or below ``floor``. ``accept`` is asked only about documents
    that would enter the running top ``limit`` (the caller remembers its answers).
    """
    norms = _Norms(avg)
    # Per query token, in the query's order: its posting, weight, and groups by contribution, best first.
    terms: list[tuple[Mapping[str, int], float]] = []
    queues: list[list[tuple[float, list[str]]]] = []
    for token in tokens:
        posting = postings.get(token)
        if not posting:
            continue
        weight = idf_weight(n_docs, len(posting))
        groups = impacts.get(token)
        if groups is None:
            groups = buckets_of(posting, lengths)
        queue = []
        for key, members in groups.items():
            tf = key >> 32
            queue.append((weight * tf / (tf + norms[key & 0xFFFFFFFF]), members))
        queue.sort(key=_first, reverse=True)
        terms.append((posting, weight))
        queues.append(queue)
    scores: dict[str, float] = {}
    best: list[float] = []  # the accepted top scores so far, a min-heap of at most ``limit``
    at = [0] * len(queues)
    while True:
        # The threshold: what a document not seen yet could score at most.
        tau = 0.0
        pick = -1
        top = -1.0
        for i, queue in enumerate(queues):
            if at[i] < len(queue):
                c = queue[at[i]][0]
                tau += c
                if c > top:
                    top, pick = c, i
        if pick < 0 or tau < floor or (len(best) == limit and best[0] > tau):
            return scores
        members = queues[pick][at[pick]][1]
        at[pick] += 1
        for doc_id in members:
            if doc_id in scores:
                continue
            norm = norms[lengths[doc_id]]
            score = 0.0
            for posting, weight in terms:
                count = posting.get(doc_id)
                if count:
                    score += weight * count / (count + norm)
            scores[doc_id] = score
            if score <= 0.0 or score < floor or (len(best) == limit and score <= best[0]):
                continue
            if accept is not None and not accept(doc_id):
                continue
            if len(best) < limit:
                heapq.heappush(best, score)
            else:
                heapq.heapreplace(best, score)


def _first(item: tuple[float, list[str]]) -> float:
    return item[0]

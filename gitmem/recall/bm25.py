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
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import NamedTuple

BM25_K1 = 1.2
BM25_B = 0.75
# Tokens with at least this many postings keep their impact buckets in the index once a
# query has needed them; smaller postings are grouped by each query (cheaper than keeping them).
BUCKETED_POSTINGS = 48
# Queries with more tokens than this are scored exhaustively (see the module docstring).
MAX_PRUNED_TOKENS = 12
# After this many documents scored without a decision, count each document's query tokens.
COUNT_AFTER = 16
# A count level with at most this many unseen documents is visited whole.
LEVEL_VISIT = 512
# Relative slack on a bound summed in another order than the scores it bounds (≥ 12 ulps).
_SLACK = 1.0 + 1e-12


class Params(NamedTuple):
    """BM25's two knobs: ``k1`` (how fast repeats of a token stop adding) and ``b`` (how much length counts)."""

    k1: float = BM25_K1
    b: float = BM25_B


DEFAULT = Params()

Buckets = defaultdict[int, list[str]]  # impact key (tf << 32 | length) -> documents


def buckets_of(posting: Mapping[str, int], lengths: Mapping[str, int]) -> Buckets:
    """``posting`` (document -> tf) grouped by impact key."""
    out: Buckets = defaultdict(list)
    for doc_id, tf in posting.items():
        out[(tf << 32) | lengths[doc_id]].append(doc_id)
    return out


class Slots(NamedTuple):
    """The index's document slots: id -> slot, slot -> id (``None``: free), token -> bitmap of slots."""

    of: Mapping[str, int]
    ids: Sequence[str | None]
    bits: Mapping[str, int]


def bitmap(posting: Iterable[str], slots: Mapping[str, int], size: int) -> int:
    """The slots of ``posting``'s documents as the bits of one int."""
    flags = bytearray((size + 8) // 8)
    for doc_id in posting:
        slot = slots[doc_id]
        flags[slot >> 3] |= 1 << (slot & 7)
    return int.from_bytes(flags, "little")


def slot_members(mask: int, ids: Sequence[str | None]) -> list[str]:
    """The documents whose slots are the set bits of ``mask`` (found by ``str.find``, a loop in C)."""
    digits = bin(mask)
    top = len(digits) - 1
    out = []
    at = digits.find("1", 2)
    while at >= 0:
        doc_id = ids[top - at]
        if doc_id is not None:
            out.append(doc_id)
        at = digits.find("1", at + 1)
    return out


def count_levels(masks: list[int], size: int) -> dict[int, int]:
    """Level ``m`` -> the bitmap of slots set in exactly ``m`` of ``masks`` (only levels >= 1 that occur).

    A bit-sliced counter: plane ``j`` holds bit ``j`` of each slot's count, and adding a
    mask is a ripple-carry of big-int operations, a few per plane.
    """
    planes = [0] * max(1, len(masks).bit_length())
    for mask in masks:
        carry = mask
        for j, plane in enumerate(planes):
            if not carry:
                break
            planes[j], carry = plane ^ carry, plane & carry
    everything = (1 << size) - 1
    out = {}
    for m in range(1, len(masks) + 1):
        exact = everything
        for j, plane in enumerate(planes):
            exact &= plane if (m >> j) & 1 else ~plane
            if not exact:
                break
        if exact:
            out[m] = exact
    return out


def idf_weight(n_docs: int, df: int, k1: float = BM25_K1) -> float:
    """The per-token factor ``idf * (k1 + 1)`` (the same expression on every path)."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5)) * (k1 + 1.0)


class _Norms(dict[int, float]):
    """The length norm ``k1 * (1 - b + b * length / avg)`` per length, computed once per length."""

    def __init__(self, avg: float, params: Params = DEFAULT) -> None:
        super().__init__()
        self.avg = avg
        self.k1, self.b = params

    def __missing__(self, length: int) -> float:
        norm = self[length] = self.k1 * (1.0 - self.b + self.b * length / self.avg)
        return norm


def exhaustive_scores(
    tokens: Collection[str],
    postings: Mapping[str, Mapping[str, int]],
    lengths: Mapping[str, int],
    n_docs: int,
    avg: float,
    params: Params = DEFAULT,
) -> dict[str, float]:
    """Every document holding a query token, scored by walking every posting."""
    norms = _Norms(avg, params)
    scores: dict[str, float] = defaultdict(float)
    for token in tokens:
        posting = postings.get(token)
        if not posting:
            continue
        weight = idf_weight(n_docs, len(posting), params.k1)
        for doc_id, tf in posting.items():
            scores[doc_id] += weight * tf / (tf + norms[lengths[doc_id]])
    return scores


def pruned_scores(
    tokens: Collection[str],
    postings: Mapping[str, Mapping[str, int]],
    impacts: Mapping[str, Buckets],
    lengths: Mapping[str, int],
    slots: Slots,
    n_docs: int,
    avg: float,
    limit: int,
    floor: float,
    accept: Callable[[str], bool] | None,
    *,
    count_after: int = COUNT_AFTER,
    level_visit: int = LEVEL_VISIT,
    params: Params = DEFAULT,
) -> dict[str, float]:
    """Exact scores of a set of documents that contains the top ``limit`` (accepted, ``>= floor``, ``> 0``).

    Documents outside the returned set score strictly less than the ``limit``-th
    accepted one, or below ``floor``. ``accept`` is asked only about documents
    that would enter the running top ``limit``; the final ordering may ask again.
    """
    norms = _Norms(avg, params)
    # Per query token, in the query's order: its posting, weight, and groups by contribution, best first.
    terms: list[tuple[Mapping[str, int], float]] = []
    queues: list[list[tuple[float, list[str]]]] = []
    masks: list[int] = []
    for token in tokens:
        posting = postings.get(token)
        if not posting:
            continue
        weight = idf_weight(n_docs, len(posting), params.k1)
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
        found = slots.bits.get(token)
        masks.append(-1 if found is None else found)  # -1: made only if the counting needs it
    scores: dict[str, float] = {}
    best: list[float] = []  # the accepted top scores so far, a min-heap of at most ``limit``
    kept: list[str] = []  # the accepted documents that were in (or tied with) that top when seen
    getters = [(posting.get, weight) for posting, weight in terms]

    def visit(members: Iterable[str]) -> None:
        for doc_id in members:
            if doc_id in scores:
                continue
            norm = norms[lengths[doc_id]]
            score = 0.0
            for get, weight in getters:
                count = get(doc_id)
                if count:
                    score += weight * count / (count + norm)
            scores[doc_id] = score
            if score <= 0.0 or score < floor:
                continue
            full = len(best) == limit
            if full and score < best[0]:
                continue
            if accept is not None and not accept(doc_id):
                continue
            kept.append(doc_id)
            if not full:
                heapq.heappush(best, score)
            elif score > best[0]:
                heapq.heapreplace(best, score)

    at = [0] * len(queues)
    levels: dict[int, int] | None = None  # once counted: query tokens held -> bitmap of documents
    level = 0  # once counted: the most query tokens a document not seen yet can hold
    while True:
        # What a document not seen yet can score at most: the sum of each token's next group (τ) ...
        tau = 0.0
        pick = -1
        top = -1.0
        frontier = []
        for i, queue in enumerate(queues):
            if at[i] < len(queue):
                c = queue[at[i]][0]
                tau += c
                frontier.append(c)
                if c > top:
                    top, pick = c, i
        if pick < 0 or (levels is not None and level == 0):
            break
        bound = tau
        if levels is not None and level < len(frontier):
            # ... and, holding at most ``level`` of the tokens, the ``level`` best of those (the
            # slack covers summing in another order than the document's own score is summed).
            frontier.sort(reverse=True)
            bound = min(tau, math.fsum(frontier[:level]) * _SLACK)
        if bound < floor or (len(best) == limit and best[0] > bound):
            break
        if levels is None and len(scores) >= count_after and len(terms) > 1:
            # Not done after a few groups: the query's common tokens weigh alike. Count how many
            # query tokens each document holds (on bitmaps), then visit the documents holding
            # the most, as many levels at once as fit in ``level_visit``.
            size = len(slots.ids)
            for i, (posting, _) in enumerate(terms):
                if masks[i] < 0:
                    masks[i] = bitmap(posting, slots.of, size)
            levels = count_levels(masks, size)
            sizes = {m: mask.bit_count() for m, mask in levels.items()}
            level = max(levels, default=0)
            cut, taken = level, sizes.get(level, 0)
            while cut > 1 and taken + sizes.get(cut - 1, 0) <= level_visit:
                cut -= 1
                taken += sizes.get(cut, 0)
            if level and taken <= level_visit:
                union = 0
                for m in range(cut, level + 1):
                    union |= levels.get(m, 0)
                visit(slot_members(union, slots.ids))
                level = cut - 1
            continue
        if levels is not None:
            here = levels.get(level, 0)
            if here.bit_count() <= level_visit:
                visit(slot_members(here, slots.ids))
                level -= 1
                continue
        visit(queues[pick][at[pick]][1])
        at[pick] += 1
    theta = best[0] if len(best) == limit else -math.inf
    return {d: scores[d] for d in kept if scores[d] >= theta}


def _first(item: tuple[float, list[str]]) -> float:
    return item[0]

"""Lexical-led fusion: a semantic branch may add to lexical scores, never outvote a strong lexical answer.

Reciprocal-rank fusion weighs a rank-1 semantic hit like a rank-1 lexical one,
so on conversations (where the words of a question usually are in its answer)
an embedding that is only roughly right pulls exact answers down. Here:

- each lexical score is divided by the query's *ideal* score (what a document
  holding every query token would score; the best score found when higher),
  so a document that matches the query's rare words scores near 1 and one that
  matches only a common word scores little, however it ranks;
- a semantic hit adds ``weight * cosine``, and only past a confidence
  (``cosine >= gate``): a weak semantic match changes nothing;
- ``weight`` is small (0.2), so a document whose lexical score is at least
  ``weight`` of the ideal can never be passed by a document that only the
  semantic branch found, however close its vector: the semantic branch
  reorders weak lexical answers and brings in what no word matched.

A document both branches found gains from both, which is what lifts the answer
of a question asked in other words than its own ("pets" / "two dogs").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from gitmem.recall.index import RecallIndex
    from gitmem.recall.semantic import SemanticBranch

#: Reciprocal-rank fusion's constant: an id scores ``1/(RRF_K + rank)`` per ranking.
RRF_K: Final = 60

#: What a semantic hit can add at most (cosine 1), as a share of the query's ideal lexical score
#: (chosen on the development split of bench/convdata.py: 0.1-0.2 scored alike, 0.25 and up lost
#: "preference" questions to partial lexical matches).
WEIGHT: Final = 0.2
#: The cosine below which a semantic hit adds nothing (for WordLlama; 0.3 and up lost "mismatch"
#: questions). A model whose cosines sit higher is gated by its branch's ``min_similarity``.
GATE: Final = 0.2


def lexical_led(
    lexical: Sequence[tuple[str, float]],
    semantic: Sequence[tuple[str, float]],
    *,
    ideal: float = 0.0,
) -> dict[str, float]:
    """Fused scores of every id either branch found (scores > 0 only); ``ideal``: see the module docstring."""
    best = max(ideal, max((s for _, s in lexical), default=0.0))
    out = {doc_id: s / best for doc_id, s in lexical if s > 0.0} if best > 0.0 else {}
    for doc_id, cosine in semantic:
        if cosine >= GATE:
            out[doc_id] = out.get(doc_id, 0.0) + WEIGHT * cosine
    return out


def semantic_scores(
    branch: SemanticBranch | None,
    query: str,
    depth: int,
    accept: Callable[[str], bool] | None,
    index: RecallIndex,
) -> list[tuple[str, float]]:
    """The branch's hits with their cosines; a branch that ranks without scores counts rank 1 as cosine 1."""
    scored = getattr(branch, "scored", None)
    if scored is not None:
        return list(scored(query, depth, accept, index) or [])
    ids = None if branch is None else branch.rank(query, depth, accept, index)
    return [] if ids is None else [(d, 1.0 / (1 + at)) for at, d in enumerate(ids)]


def rrf(rankings: Iterable[Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """Reciprocal-rank fusion: each id scores the sum of ``1/(k + rank)`` over the rankings it is in (rank from 1)."""
    fused: dict[str, float] = defaultdict(float)
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking, start=1):
            fused[doc_id] += 1.0 / (k + rank)
    return dict(fused)

"""Lexical-led fusion: a semantic branch may add to lexical scores, never outvote a strong lexical answer.

Reciprocal-rank fusion weighs a rank-1 semantic hit like a rank-1 lexical one,
so on conversations (where the words of a question usually are in its answer)
an embedding that is only roughly right pulls exact answers down. Here:

- each lexical score is divided by the best one, so the strongest lexical
  answer scores 1 and a weak one little;
- a semantic hit adds ``weight * cosine``, and only past a confidence
  (``cosine >= gate``): a weak semantic match changes nothing;
- ``weight < 1``, so a document whose lexical score is at least ``weight`` of
  the best can never be passed by a document that only the semantic branch
  found, however close its vector.

A document both branches found gains from both, which is what lifts the answer
of a question asked in other words than its own ("pets" / "two dogs").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

#: What a semantic hit can add at most (cosine 1), as a share of the best lexical score.
WEIGHT: Final = 0.6
#: The cosine below which a semantic hit adds nothing (WordLlama's unrelated texts sit below it).
GATE: Final = 0.2


def lexical_led(
    lexical: Sequence[tuple[str, float]],
    semantic: Sequence[tuple[str, float]],
    *,
    weight: float = WEIGHT,
    gate: float = GATE,
) -> dict[str, float]:
    """Fused scores of every id either branch found (scores > 0 only)."""
    best = max((s for _, s in lexical), default=0.0)
    out = {doc_id: s / best for doc_id, s in lexical if s > 0.0} if best > 0.0 else {}
    for doc_id, cosine in semantic:
        if cosine >= gate:
            out[doc_id] = out.get(doc_id, 0.0) + weight * cosine
    return out

"""Recall: find the stored items closest to a text, in any script, fast.

A layer beside the whoosh index engine and above the store seam: pure Python,
no git or whoosh. Record, session and durable memory build on it.

- :mod:`~gitmem.recall.tokens`: the ``word-cjk-bigram`` lexical profile.
- :mod:`~gitmem.recall.index`: an in-memory inverted index with coverage, BM25
  and reciprocal-rank-fused rankings.
- :mod:`~gitmem.recall.storeindex`: that index kept caught up with a store
  through its change cursor.
"""

from gitmem.recall.index import RecallDoc, RecallHit, RecallIndex, rrf
from gitmem.recall.storeindex import StoreRecall, SyncSource
from gitmem.recall.tokens import PROFILE, coverage, tokenize

__all__ = [
    "PROFILE",
    "RecallDoc",
    "RecallHit",
    "RecallIndex",
    "StoreRecall",
    "SyncSource",
    "coverage",
    "rrf",
    "tokenize",
]

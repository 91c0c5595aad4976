"""Recall: find the stored items closest to a text, in any script, fast.

A layer beside the whoosh index engine and above the store seam: pure Python,
no git or whoosh. Record, session and durable memory build on it.

- :mod:`~gitmem.recall.tokens`: the ``word-cjk-bigram`` lexical profile.
- :mod:`~gitmem.recall.convo`: the ``conversation`` profile (neighbour context, query
  stop-words, light stems, dates), and :mod:`~gitmem.recall.fusion`, its lexical-led fusion.
- :mod:`~gitmem.recall.index`: an in-memory inverted index with coverage, BM25
  and reciprocal-rank-fused rankings.
- :mod:`~gitmem.recall.storeindex`: that index kept caught up with a store
  through its change cursor; :mod:`~gitmem.recall.snapshot` saves it per cursor.
- :mod:`~gitmem.recall.related`: bounded one-hop ``related_to`` reads.
- :mod:`~gitmem.recall.embed` (the ``recall-embed`` extras, imported only on
  request): embedding providers and the semantic branch of ``fused`` ranking.

An item memory uses it like this (items stored one JSON file each under
``records/``, sharded into sub-folders so each write rewrites a small tree)::

    def to_doc(file: FileText) -> RecallDoc | None:
        item = json.loads(file.text)
        if item["status"] == "tombstoned":
            return None
        return RecallDoc(item["id"], item["text"], item["updated_at"])

    recall = StoreRecall(
        store, to_doc, prefix="records",
        snapshot=Path(store.path) / "gitmem" / "recall" / "records.json", snapshot_key="records-v1",
    )
    hits = recall.search(query, limit=5, min_score=0.25, accept=is_active)
"""

from gitmem.catchup import SyncSource
from gitmem.recall.index import RecallDoc, RecallHit, RecallIndex, rrf
from gitmem.recall.storeindex import StoreRecall
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

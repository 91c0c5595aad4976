"""Quality on gitmem-recall-v1, pinned: no forbidden item ever, lexical results locked, fusion never worse.

The locked numbers are this profile's results on the shipped data set; a change to
the tokeniser or the ranking that moves them must be a deliberate new result set,
not a silent drift. (Speed is measured by bench/bench_recall.py, never here.)
"""

from __future__ import annotations

import pytest

from bench.recall_eval import DataSet, Query, System, load_recall_v1, score
from gitmem.recall import RecallIndex
from gitmem.recall.index import Ranking
from gitmem.recall.related import one_hop

K = 5
CATEGORIES = ("direct", "phrase", "paraphrase", "related", "update", "zh", "ja", "ko", "mixed")
NEGATIVE = ("neg-candidate", "neg-tombstone", "neg-namespace")

# Recall@5 (any relevant in the top 5) of the coverage ranking, per category.
LOCKED_COVERAGE_R5 = {
    "direct": 1.0,
    "phrase": 0.9545,
    "paraphrase": 0.55,
    "related": 0.1,
    "update": 1.0,
    "zh": 1.0,
    "ja": 1.0,
    "ko": 1.0,
    "mixed": 1.0,
}


@pytest.fixture(scope="module")
def data() -> DataSet:
    return load_recall_v1()


def run(index: RecallIndex, data: DataSet, ranking: Ranking = "coverage") -> System:
    def system(q: Query) -> list[str]:
        return [h.id for h in index.search(q.text, limit=K, ranking=ranking, accept=data.visible)]

    return system


def by_category(data: DataSet, system: System) -> dict[str, float]:
    out = {}
    for cat in CATEGORIES:
        s = score(data, system, [q for q in data.queries if q.category == cat], K)
        assert s.recall_any is not None
        out[cat] = round(s.recall_any, 4)
    return out


def test_the_data_set_is_what_it_says(data: DataSet) -> None:
    assert len(data.items) >= 200 and len(data.queries) >= 150
    for cat in ("zh", "ja", "ko", "mixed"):
        assert sum(q.category == cat for q in data.queries) >= 10
    for q in data.queries:
        assert all(data.visible(i) for i in q.relevant), q.id
        assert not any(data.visible(i) for i in q.forbidden), q.id


def test_lexical_recall_is_locked_and_never_shows_a_hidden_item(data: DataSet) -> None:
    index = data.index()
    system = run(index, data)
    assert by_category(data, system) == LOCKED_COVERAGE_R5
    rankings: tuple[Ranking, ...] = ("coverage", "bm25", "fused")
    for ranking in rankings:
        assert score(data, run(index, data, ranking), data.queries, K).forbidden_hits == 0


def test_one_hop_related_reads_recover_the_linked_procedures(data: DataSet) -> None:
    index = data.index()

    def system(q: Query) -> list[str]:
        hits = [h.id for h in index.search(q.text, limit=K, min_score=0.4, accept=data.visible)]
        return one_hop(hits, lambda i: data.items_by_id[i].related_to, max_reads=8, accept=data.visible, limit=K)

    related = [q for q in data.queries if q.category == "related"]
    assert score(data, system, related, K).recall_any == 1.0
    assert score(data, system, data.queries, K).forbidden_hits == 0


def test_fusion_with_embeddings_is_never_below_lexical_and_helps_paraphrase(data: DataSet) -> None:
    pytest.importorskip("wordllama")
    from gitmem.recall.embed import EmbeddingBranch, WordLlamaEmbedder

    branch = EmbeddingBranch(WordLlamaEmbedder(), background=False)
    index = data.index(RecallIndex(branch))
    assert branch.drain()
    lexical = by_category(data, run(index, data))
    fused = by_category(data, run(index, data, "fused"))
    for cat in CATEGORIES:
        assert fused[cat] >= lexical[cat], cat
    assert fused["paraphrase"] > lexical["paraphrase"]
    negatives = [q for q in data.queries if q.category in NEGATIVE]
    assert score(data, run(index, data, "fused"), negatives, K).forbidden_hits == 0

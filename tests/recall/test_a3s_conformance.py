"""The port reproduces A3S's locked retrieval results on its own fixtures (MIT, copied under bench/data/a3s)."""

from __future__ import annotations

import json

import pytest

from bench.recall_eval import Query, a3s_conformance, a3s_system, load_a3s_multilingual, load_a3s_retrieval
from gitmem.recall import RecallDoc, StoreRecall
from gitmem.recall.related import one_hop

from .support import SyncMemStore


def test_locked_summary() -> None:
    result = a3s_conformance()
    assert result["retrieval-v1 lexical"] == {"R@5": 0.6, "MRR": 0.6, "forbidden": 0}
    assert result["retrieval-v1 relation"] == {"R@5": 0.9, "MRR": 0.75, "forbidden": 0}
    assert result["multilingual-v1 lexical"] == {"R@3": 1.0, "MRR": 1.0, "forbidden": 0, "max nodes per query": 1}


def test_the_fixture_summary_is_what_we_reproduce() -> None:
    _, raw = load_a3s_retrieval()
    expected = raw["expected_summary"]
    assert isinstance(expected, dict)
    result = a3s_conformance()
    for mode in ("lexical", "relation"):
        assert result[f"retrieval-v1 {mode}"]["R@5"] == expected[mode]["recall_at_5"]
        assert result[f"retrieval-v1 {mode}"]["MRR"] == expected[mode]["mean_reciprocal_rank"]


def test_every_query_returns_exactly_the_expected_ids() -> None:
    data, raw = load_a3s_retrieval()
    index = data.index()
    policy = raw["policy"]
    assert isinstance(policy, dict)
    lexical = a3s_system(data, index, policy, related=False)
    relation = a3s_system(data, index, policy, related=True)
    queries = raw["queries"]
    assert isinstance(queries, list)
    for q in queries:
        query = Query(q["id"], q["query"], ())
        assert list(lexical(query)) == q["expected_lexical_ids"], q["id"]
        assert list(relation(query)) == q["expected_relation_ids"], q["id"]


def test_multilingual_through_a_store_with_namespaces_as_prefixes() -> None:
    data, raw = load_a3s_multilingual()
    store = SyncMemStore()
    for item in data.items:
        body = {"id": item.id, "text": item.text, "status": item.status}
        store.write(f"ns/{item.namespace}/{item.id}.json", json.dumps(body, ensure_ascii=False), expected=None)

    def to_doc(file: object) -> RecallDoc:
        body = json.loads(file.text)  # type: ignore[attr-defined]
        return RecallDoc(body["id"], body["text"], 0.0)

    recall = StoreRecall(store, to_doc, prefix="ns/main")
    policy = raw["policy"]
    assert isinstance(policy, dict)
    for q in data.queries:
        hits = recall.search(q.text, limit=policy["max_results"], min_score=policy["min_lexical_score"])
        visible = [h.id for h in hits if data.visible(h.id)]
        assert "foreign-private-cache" not in [h.id for h in hits]
        if q.relevant:
            assert visible == list(q.relevant), q.id
        else:
            assert visible == [], q.id


def test_one_hop_bounds_and_gates() -> None:
    edges = {"a": ["b", "c", "d"], "b": ["a", "e"], "x": ["y"]}
    related = edges.get

    def rel(i: str) -> list[str]:
        return related(i) or []

    assert one_hop(["a", "b"], rel, max_reads=8, accept=lambda i: True) == ["a", "b", "c", "d", "e"]
    assert one_hop(["a", "b"], rel, max_reads=2, accept=lambda i: True) == ["a", "b", "c", "d"]
    assert one_hop(["a"], rel, max_reads=8, accept=lambda i: i != "c") == ["a", "b", "d"]
    assert one_hop(["a"], rel, max_reads=0, accept=lambda i: True) == ["a"]
    assert one_hop(["a", "x"], rel, max_reads=8, accept=lambda i: True, limit=3) == ["a", "x", "b"]
    for bad in (-1, 101, True, 1.5):
        with pytest.raises(ValueError):
            one_hop(["a"], rel, max_reads=bad, accept=lambda i: True)  # type: ignore[arg-type]

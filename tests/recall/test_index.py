"""RecallIndex: coverage order and ties, accept before the limit, BM25, fusion, bad input, threads."""

from __future__ import annotations

import math
import random
import threading

import pytest

from gitmem.errors import MemoryStoreError
from gitmem.recall import RecallDoc, RecallHit, RecallIndex, rrf, tokenize


def make(*docs: tuple[str, str, float]) -> RecallIndex:
    index = RecallIndex()
    for doc_id, text, at in docs:
        index.upsert(RecallDoc(doc_id, text, at))
    return index


def ids(hits: list[RecallHit]) -> list[str]:
    return [h.id for h in hits]


def test_coverage_orders_by_score_then_newest_then_id() -> None:
    index = make(
        ("a", "rust formatting verification", 1.0),
        ("b", "rust formatting", 5.0),
        ("c", "rust formatting", 5.0),
        ("d", "rust formatting", 9.0),
        ("e", "nothing in common", 99.0),
    )
    hits = index.search("rust formatting verification", limit=10)
    assert ids(hits) == ["a", "d", "b", "c"]
    assert hits[0].score == 1.0 and hits[1].score == pytest.approx(2 / 3)
    assert hits[1].updated_at == 9.0


def test_zero_scores_are_dropped_and_min_score_filters() -> None:
    index = make(("a", "alpha beta", 1.0), ("b", "alpha", 1.0), ("c", "gamma", 1.0))
    assert ids(index.search("alpha beta", limit=10)) == ["a", "b"]
    assert ids(index.search("alpha beta", limit=10, min_score=0.6)) == ["a"]
    assert index.search("delta", limit=10) == []


def test_accept_filters_before_the_limit() -> None:
    index = make(*((f"d{i}", "release notes", float(i)) for i in range(10)))
    hits = index.search("release notes", limit=3, accept=lambda d: int(d[1:]) % 2 == 0)
    assert ids(hits) == ["d8", "d6", "d4"]
    hits = index.search("release notes", limit=3, ranking="bm25", accept=lambda d: d in {"d0", "d1"})
    assert sorted(ids(hits)) == ["d0", "d1"]


def test_upsert_replaces_and_remove_forgets() -> None:
    index = make(("a", "old words", 1.0))
    index.upsert(RecallDoc("a", "new words", 2.0))
    assert len(index) == 1 and "a" in index
    assert index.search("old", limit=5) == []
    assert ids(index.search("new", limit=5)) == ["a"]
    index.remove("a")
    index.remove("never-there")
    assert len(index) == 0 and "a" not in index
    assert index.search("words", limit=5) == []
    index.upsert(RecallDoc("b", "words", 1.0))
    index.clear()
    assert len(index) == 0 and index.search("words", limit=5) == []


@pytest.mark.parametrize(
    ("query", "limit"),
    [
        ("", 5),
        ("   ", 5),
        ("!!! ---", 5),
        (None, 5),
        (b"bytes", 5),
        ("ok", 0),
        ("ok", 101),
        ("ok", True),
        ("ok", 2.5),
        ("ok", "5"),
    ],
)
def test_bad_input_is_invalid_query(query: object, limit: object) -> None:
    index = make(("a", "ok", 1.0))
    with pytest.raises(MemoryStoreError) as caught:
        index.search(query, limit=limit)  # type: ignore[arg-type]
    assert caught.value.code == "invalid_query"


def test_bad_ranking_and_min_score_are_invalid_query() -> None:
    index = make(("a", "ok", 1.0))
    for kwargs in ({"ranking": "vector"}, {"min_score": math.nan}, {"min_score": "0.5"}):
        with pytest.raises(MemoryStoreError) as caught:
            index.search("ok", **kwargs)  # type: ignore[arg-type]
        assert caught.value.code == "invalid_query"
    assert ids(index.search("ok", limit=100)) == ["a"]


def test_bm25_prefers_rare_tokens_and_short_documents() -> None:
    index = make(
        ("common", "deploy deploy service", 1.0),
        ("rare", "deploy canary", 1.0),
        ("long", "deploy canary " + "filler " * 30, 1.0),
        *((f"f{i}", "deploy service", 1.0) for i in range(5)),
    )
    hits = index.search("canary deploy", limit=3, ranking="bm25")
    assert ids(hits)[:2] == ["rare", "long"]
    assert hits[0].score > hits[1].score > 0


def test_bm25_score_matches_the_formula() -> None:
    index = make(("a", "x y y", 1.0), ("b", "y z", 1.0))
    (hit_a,) = [h for h in index.search("y", limit=5, ranking="bm25") if h.id == "a"]
    n, df, tf, dl, avg = 2, 2, 2, 3, 2.5
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    assert hit_a.score == pytest.approx(idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avg)))


def test_bm25_pruning_never_stops_on_a_tie_an_unseen_document_could_win() -> None:
    # Two tokens of equal weight, each in one document of equal length: the two scores are
    # equal, so the newer document must win whichever token the pruned walk reads first.
    for newer in ("a", "b"):
        index = make(("a", "rust", 2.0 if newer == "a" else 1.0), ("b", "cargo", 2.0 if newer == "b" else 1.0))
        for query in ("rust cargo", "cargo rust"):
            assert ids(index.search(query, limit=1, ranking="bm25")) == [newer]


def test_bm25_pruned_walk_agrees_with_every_posting_scored_at_scale() -> None:
    # Common tokens keep impact buckets; the walk stops early and must still be exact.
    words = ["the", "of", "deploy", "canary", "rust", "cargo", "数据库", "ロック"]
    index = RecallIndex()
    for i in range(600):
        text = " ".join(words[(i * 7 + j * j) % len(words)] for j in range(1 + i % 11))
        index.upsert(RecallDoc(f"d{i}", text, float(i % 13)))
    for i in range(0, 600, 5):
        index.remove(f"d{i}")
    for query in ("the", "the of", "deploy canary rust", "数据库 the", "ロック cargo of the"):
        tokens = tokenize(query)
        for limit in (1, 5, 20):
            assert index._bm25(tokens, limit, 0.0, None, prune=True) == index._bm25(
                tokens, limit, 0.0, None, prune=False
            )


def test_bm25_pruned_walk_agrees_on_many_small_random_corpora() -> None:
    # Seeded and cheap: every pruning path (impact groups kept or made per query, counting
    # the query tokens per document early or late, levels visited whole or group by group).
    rng = random.Random(3)
    words = ["the", "of", "deploy", "cargo", "rust", "canary", "x1", "ロック", "alpha", "beta"]
    for _ in range(300):
        index = RecallIndex()
        index._count_after = rng.choice([0, 2, 16])
        index._level_visit = rng.choice([1, 4, 512])
        index._bucketed = rng.choice([1, 48])
        for i in range(rng.randint(5, 120)):
            text = " ".join(rng.choices(words, weights=[8, 6, 4, 3, 3, 2, 2, 1, 1, 1], k=rng.randint(1, 10)))
            index.upsert(RecallDoc(f"d{i}", text, float(rng.randint(0, 3))))
        tokens = tokenize(" ".join(rng.sample(words, rng.randint(2, 5))))
        limit = rng.randint(1, 8)
        floor = rng.choice([0.0, 0.0, 1.0])
        assert index._bm25(tokens, limit, floor, None, prune=True) == index._bm25(
            tokens, limit, floor, None, prune=False
        )


def test_coverage_counted_on_bitmaps_agrees_with_a_scan() -> None:
    from bench.recall_scan import scan_coverage

    rng = random.Random(5)
    words = ["the", "of", "deploy", "cargo", "rust", "canary", "x1", "ロック", "alpha", "beta"]
    for _ in range(200):
        index = RecallIndex()
        index._bitmaps_from = 0
        index._bucketed = rng.choice([1, 3, 48])
        truth: dict[str, RecallDoc] = {}
        for _i in range(rng.randint(1, 60)):
            text = " ".join(rng.choices(words, weights=[8, 6, 4, 3, 3, 2, 2, 1, 1, 1], k=rng.randint(1, 6)))
            doc = RecallDoc(f"d{rng.randint(0, 40)}", text, float(rng.randint(0, 3)))
            index.upsert(doc)
            truth[doc.id] = doc
            if rng.random() < 0.2:
                gone = f"d{rng.randint(0, 40)}"
                index.remove(gone)
                truth.pop(gone, None)
            if rng.random() < 0.1:
                index.search("the of deploy", limit=1, ranking="bm25")  # groups and bitmaps to keep up
        query = " ".join(rng.sample(words, rng.randint(2, 5)))
        limit = rng.randint(1, 10)
        floor = rng.choice([0.0, 0.3])
        want = scan_coverage(truth.values(), query, limit=limit, min_score=floor)
        assert index.search(query, limit=limit, min_score=floor) == want


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = rrf([["a", "b"], ["b", "c"]])
    assert fused == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 62})


def test_fused_without_a_semantic_branch_is_the_lexical_order() -> None:
    index = make(("a", "alpha beta", 1.0), ("b", "alpha", 2.0), ("c", "beta", 3.0))
    fused = index.search("alpha beta", limit=5, ranking="fused")
    assert ids(fused) == ids(index.search("alpha beta", limit=5))
    assert [h.score for h in fused] == pytest.approx([1 / 61, 1 / 62, 1 / 63])


def test_readers_and_writers_on_threads_see_whole_documents() -> None:
    index = RecallIndex()
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        i = 0
        while not stop.is_set():
            index.upsert(RecallDoc(f"w{n}-{i % 50}", f"shared token{i % 7} writer{n}", float(i)))
            if i % 3 == 0:
                index.remove(f"w{n}-{(i * 7) % 50}")
            i += 1

    def reader() -> None:
        try:
            for _ in range(300):
                for hit in index.search("shared token3", limit=20):
                    assert 0 < hit.score <= 1
                index.search("shared", limit=5, ranking="bm25")
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
    readers = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads + readers:
        t.start()
    for t in readers:
        t.join()
    stop.set()
    for t in threads:
        t.join()
    assert errors == []
    # After the storm the index answers exactly as one built afresh from its documents.
    rebuilt = RecallIndex()
    for doc_id in index.ids():
        doc = index.get(doc_id)
        assert doc is not None
        rebuilt.upsert(doc)
    for query in ("shared", "token3 writer1", "writer0"):
        for ranking in ("coverage", "bm25"):
            assert index.search(query, limit=100, ranking=ranking) == rebuilt.search(  # type: ignore[arg-type]
                query,
                limit=100,
                ranking=ranking,  # type: ignore[arg-type]
            )


@pytest.mark.parametrize("keep", [None, 2, 7, 97])
def test_large_score_levels_are_ordered_exactly_as_a_scan(keep: int | None) -> None:
    # Hundreds of documents share each score level, so BM25's ordering goes through the partial
    # (nsmallest) path, including its widening when accept rejects most of a chunk.
    from bench.recall_scan import scan_bm25, scan_coverage

    docs = [RecallDoc(f"d{i:04d}", "alpha beta" if i % 3 else "alpha", float(i % 17)) for i in range(900)]
    index = RecallIndex()
    for doc in docs:
        index.upsert(doc)
    accept = None if keep is None else (lambda d: int(d[1:]) % keep == 0)
    for limit in (1, 5, 40, 100):
        assert index.search("alpha beta", limit=limit, accept=accept) == scan_coverage(
            docs, "alpha beta", limit=limit, accept=accept
        )
        got = index.search("alpha beta", limit=limit, ranking="bm25", accept=accept)
        want = scan_bm25(docs, "alpha beta", limit=limit, accept=accept)
        assert [h.id for h in got] == [h.id for h in want]


def test_a_floor_above_one_returns_nothing() -> None:
    index = make(("a", "alpha", 1.0))
    assert index.search("alpha", min_score=1.0001) == []
    assert [h.id for h in index.search("alpha", min_score=1.0)] == ["a"]


@pytest.mark.parametrize(
    ("doc", "error"),
    [
        (RecallDoc("a", "text", math.nan), ValueError),
        (RecallDoc("a", "text", math.inf), ValueError),
        (RecallDoc("a", "text", True), ValueError),  # type: ignore[arg-type]
        (RecallDoc(1, "text", 0.0), TypeError),  # type: ignore[arg-type]
        (RecallDoc("a", None, 0.0), TypeError),  # type: ignore[arg-type]
        (("a", "text", 0.0), TypeError),
    ],
)
def test_a_malformed_document_is_refused_and_changes_nothing(doc: object, error: type[Exception]) -> None:
    index = make(("a", "kept words", 1.0))
    with pytest.raises(error):
        index.upsert(doc)  # type: ignore[arg-type]
    assert [h.id for h in index.search("kept")] == ["a"] and len(index) == 1

"""The index is never the source of truth: on random corpora, edits and queries it answers as a full scan does."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.recall_scan import scan_bm25, scan_coverage
from gitmem.errors import MemoryStoreError
from gitmem.recall import RecallDoc, RecallIndex, StoreRecall, bm25, tokenize

from .support import SyncMemStore, item, to_doc

# A small vocabulary in several scripts so random documents and queries overlap often.
WORDS = ["rust", "cargo", "Deploy", "canary", "\u03b1", "हिन्दी", "数据库", "迁移", "ロック", "배포", "x1", "2"]
text = st.lists(st.sampled_from([*WORDS, " ", ",", "数", "据"]), min_size=0, max_size=12).map(" ".join) | st.text(
    max_size=30
)
doc_ids = st.sampled_from([f"d{i}" for i in range(12)])
times = st.sampled_from([0.0, 1.0, 2.0, 1.5e9])
docs = st.builds(RecallDoc, doc_ids, text, times)
edit = st.one_of(st.tuples(st.just("upsert"), docs), st.tuples(st.just("remove"), doc_ids))
queries = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join) | st.text(min_size=1, max_size=12)


def run_edits(
    edits: list[tuple[str, object]], index: RecallIndex | None = None, truth: dict[str, RecallDoc] | None = None
) -> tuple[RecallIndex, dict[str, RecallDoc]]:
    index = RecallIndex() if index is None else index
    truth = {} if truth is None else truth
    for op, arg in edits:
        if op == "upsert":
            assert isinstance(arg, RecallDoc)
            index.upsert(arg)
            truth[arg.id] = arg
        else:
            assert isinstance(arg, str)
            index.remove(arg)
            truth.pop(arg, None)
    return index, truth


@given(
    st.lists(edit, max_size=30),
    queries,
    st.integers(1, 100),
    st.sampled_from([0.0, 0.25, 0.5, 1.0]),
    st.sets(doc_ids),
    st.sampled_from([(48, 1024), (1, 0), (2, 3)]),
)
def test_index_equals_a_full_scan(
    edits: list[tuple[str, object]],
    query: str,
    limit: int,
    floor: float,
    rejected: set[str],
    tuning: tuple[int, int],
) -> None:
    index = RecallIndex()
    # The pruning's thresholds as shipped, and lowered so small corpora take every path
    # (impact groups and bitmaps kept up to date through the edits, coverage counted on bitmaps).
    index._bucketed, index._bitmaps_from = tuning
    index._count_after = 0 if tuning[1] == 0 else bm25.COUNT_AFTER
    half = len(edits) // 2
    truth: dict[str, RecallDoc] = {}
    run_edits(edits[:half], index, truth)
    index.search("rust cargo deploy 数据库", limit=1, ranking="bm25")  # makes groups the later edits must keep up
    run_edits(edits[half:], index, truth)
    assert len(index) == len(truth)
    accept = None if not rejected else (lambda d: d not in rejected)
    for ranking, scan in (("coverage", scan_coverage), ("bm25", scan_bm25)):
        try:
            expected = scan(truth.values(), query, limit=limit, min_score=floor, accept=accept)
        except MemoryStoreError as error:
            with pytest.raises(MemoryStoreError) as caught:
                index.search(query, limit=limit, min_score=floor, ranking=ranking, accept=accept)  # type: ignore[arg-type]
            assert caught.value.code == error.code == "invalid_query"
            continue
        got = index.search(query, limit=limit, min_score=floor, ranking=ranking, accept=accept)  # type: ignore[arg-type]
        assert [h.id for h in got] == [h.id for h in expected]
        assert [h.score for h in got] == pytest.approx([h.score for h in expected])


@given(st.lists(st.tuples(st.sampled_from(["write", "delete"]), doc_ids, text, times), max_size=15), queries)
def test_store_recall_caught_up_equals_a_scan_of_the_store(ops: list[tuple[str, str, str, float]], query: str) -> None:
    store = SyncMemStore()
    recall = StoreRecall(store, to_doc)
    for n, (op, doc_id, body, at) in enumerate(ops):
        path = f"items/{doc_id}.json"
        try:
            current: str | None = store.read(path).version
        except MemoryStoreError:
            current = None
        if op == "write":
            store.write(path, item(body, at), expected=current)
        elif current is not None:
            store.delete(path, expected=current)
        if n % 3 == 0:
            recall.refresh()  # catch up part-way, so later refreshes apply real diffs
    truth = [d for f in store.list() if (d := to_doc(store.read(f.path))) is not None]
    try:
        expected = scan_coverage(truth, query, limit=100)
    except MemoryStoreError:
        return
    assert recall.search(query, limit=100) == expected


# Corpora big enough that common tokens keep impact buckets (``bm25.BUCKETED_POSTINGS``) and the
# pruned walk stops early; a skewed vocabulary, repeats (tf > 1) and varied lengths.
SKEWED = ["the", "the", "the", "of", "of", "deploy", "cargo", "rust", "canary", "数据库迁移", "x1", "ロック"]
long_text = st.lists(st.sampled_from(SKEWED), min_size=0, max_size=14).map(" ".join)
many_docs = st.lists(st.tuples(st.integers(0, 159), long_text, times), min_size=0, max_size=160)
pruned_queries = st.lists(st.sampled_from(SKEWED), min_size=1, max_size=5).map(" ".join)


@given(many_docs, many_docs, st.lists(st.integers(0, 159), max_size=40), pruned_queries, st.integers(1, 12), st.data())
def test_pruned_bm25_equals_every_posting_scored(
    corpus: list[tuple[int, str, float]],
    later: list[tuple[int, str, float]],
    removed: list[int],
    query: str,
    limit: int,
    data: st.DataObject,
) -> None:
    index = RecallIndex()
    index._bucketed = data.draw(st.sampled_from([1, 3, 48]))
    index._count_after = data.draw(st.sampled_from([0, 2, 16, 128]))
    index._level_visit = data.draw(st.sampled_from([1, 4, 512]))
    index.upsert_many(RecallDoc(f"d{n}", body, at) for n, body, at in corpus)
    tokens = tokenize(query)
    assert index._bm25(tokens, limit, 0.0, None, prune=True) == index._bm25(tokens, limit, 0.0, None, prune=False)
    # That query grouped its common tokens' postings by impact; later writes must keep the groups exact.
    for n, body, at in later:
        index.upsert(RecallDoc(f"d{n}", body, at))
    for n in removed:
        index.remove(f"d{n}")
    for token, groups in index._impacts.items():
        posting = index._postings[token]
        assert sorted(d for g in groups.values() for d in g) == sorted(posting)
        for key, members in groups.items():
            assert all((posting[d] << 32) | index._lengths[d] == key for d in members)
    assert set(index._impacts) <= set(index._postings) and set(index._bits) == set(index._impacts)
    for token, bits in index._bits.items():
        assert bits == sum(1 << index._slots[d] for d in index._postings[token])
    assert all(index._slot_ids[slot] == d for d, slot in index._slots.items())
    assert sorted(index._free) == [i for i, d in enumerate(index._slot_ids) if d is None]
    floor = data.draw(st.sampled_from([0.0, 0.0, 0.5, 1.5]))
    rejected = data.draw(st.sets(st.sampled_from([f"d{i}" for i in range(0, 160, 3)]), max_size=30))
    accept = None if not rejected else (lambda d: d not in rejected)
    for tokens in (tokenize(query), tokenize(data.draw(pruned_queries))):
        pruned = index._bm25(tokens, limit, floor, accept, prune=True)
        full = index._bm25(tokens, limit, floor, accept, prune=False)
        assert pruned == full  # ids, order and scores to the bit


def test_upsert_many_is_upsert_in_turn() -> None:
    docs = [RecallDoc(f"d{i % 7}", " ".join(SKEWED[: 1 + i % 9]), float(i)) for i in range(30)]
    one, many = RecallIndex(), RecallIndex()
    for doc in docs:
        one.upsert(doc)
    many.upsert_many(docs)
    assert one._postings == many._postings and one._lengths == many._lengths
    assert [one.get(d) for d in sorted(one.ids())] == [many.get(d) for d in sorted(many.ids())]

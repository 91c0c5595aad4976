"""An index restored from its saved tokenised form answers exactly as one filled from the texts.

The form (:meth:`RecallIndex.export_tokens`) is decoded one token at a time, as
queries and writes need it; these tests compare a restored index with a fresh
one through random corpora, writes after the restore, every ranking and the
pruning's tunings, and check that a damaged form is never trusted.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitmem.recall import RecallDoc, RecallIndex, bm25, postings

from .test_recall_properties import SKEWED, doc_ids, edit, queries, run_edits, text, times

corpus_docs = st.lists(st.builds(RecallDoc, doc_ids, text | st.lists(st.sampled_from(SKEWED)).map(" ".join), times))


def pair(docs: list[RecallDoc], tuning: tuple[int, int]) -> tuple[RecallIndex, RecallIndex]:
    """A fresh index of ``docs`` and one restored from its tokenised form (through JSON, as a snapshot is)."""
    fresh, restored = RecallIndex(), RecallIndex()
    for index in (fresh, restored):
        index._bucketed, index._bitmaps_from = tuning
        index._count_after = 0 if tuning[1] == 0 else bm25.COUNT_AFTER
    fresh.upsert_many(docs)
    saved = json.loads(json.dumps(fresh.export_tokens()))
    assert restored.restore([fresh.get(d) for d in fresh.ids()], saved)  # type: ignore[misc]
    assert restored.restored and not restored._postings  # nothing decoded before it is needed
    return fresh, restored


def same_answers(a: RecallIndex, b: RecallIndex, query: str, limit: int = 100) -> None:
    for ranking in ("coverage", "bm25", "fused"):
        try:
            want = a.search(query, limit=limit, ranking=ranking)  # type: ignore[arg-type]
        except Exception as error:  # an invalid query fails the same way on both
            with pytest.raises(type(error)):
                b.search(query, limit=limit, ranking=ranking)  # type: ignore[arg-type]
            continue
        got = b.search(query, limit=limit, ranking=ranking)  # type: ignore[arg-type]
        assert [(h.id, h.score, h.updated_at) for h in got] == [(h.id, h.score, h.updated_at) for h in want]


@given(
    corpus_docs,
    st.lists(edit, max_size=20),
    st.lists(queries, min_size=1, max_size=3),
    st.sampled_from([(48, 1024), (1, 0), (2, 3)]),
)
def test_a_restored_index_answers_as_a_fresh_one_through_later_writes(
    docs: list[RecallDoc], edits: list[tuple[str, object]], asked: list[str], tuning: tuple[int, int]
) -> None:
    fresh, restored = pair(docs, tuning)
    same_answers(fresh, restored, asked[0])  # decodes some tokens before the writes, leaves others
    run_edits(edits, fresh)
    run_edits(edits, restored)
    assert sorted(fresh.ids()) == sorted(restored.ids())
    for query in asked:
        same_answers(fresh, restored, query)
    for doc_id in fresh.ids():
        assert fresh.tokens_of(doc_id) == restored.tokens_of(doc_id)
    # A form saved again from the restored index restores to the same answers too.
    again = RecallIndex()
    again._bucketed, again._bitmaps_from, again._count_after = restored._bucketed, restored._bitmaps_from, restored._count_after
    assert again.restore([restored.get(d) for d in restored.ids()], restored.export_tokens())  # type: ignore[misc]
    for query in asked:
        same_answers(fresh, again, query)


def test_the_posting_string_round_trips_and_refuses_what_it_did_not_write() -> None:
    ids = ["a", "b", "c", "d"]
    position = {d: i for i, d in enumerate(ids)}
    posting = {"d": 1, "a": 3, "c": 1}
    text = postings.encode(posting, position)
    assert text == "0 2 1;0:3"
    assert postings.decode(text, ids) == posting
    for bad in ("", "x", "-1", "0 0", "3 1", "4", "0 2;1:2", "0;0:1", "0;0", 3, "0;0:x"):
        with pytest.raises(ValueError):
            postings.decode(bad, ids)  # type: ignore[arg-type]


DOCS = [RecallDoc(f"d{i}", f"the office of team {i % 7} and the cargo {i}", float(i)) for i in range(200)]


@pytest.mark.parametrize(
    "spoil",
    [
        lambda s: s["postings"].__setitem__("office", "0 0 0"),  # not ascending
        lambda s: s["postings"].__setitem__("office", "999"),  # past the documents
        lambda s: s["postings"].__setitem__("team", "1;1:1"),  # a repeat below 2
        lambda s: s["postings"].__setitem__("the", ["0"]),  # not a string
    ],
)
def test_a_damaged_posting_is_dropped_and_the_texts_tokenised_again(spoil: object) -> None:
    fresh = RecallIndex()
    fresh.upsert_many(DOCS)
    saved = fresh.export_tokens()
    spoil(saved)  # type: ignore[operator]
    restored = RecallIndex()
    assert restored.restore(DOCS, saved)
    same_answers(fresh, restored, "office team 3 the")
    assert not restored.restored  # it re-tokenised: the saved form is gone
    restored.upsert(RecallDoc("d5", "a new office", 9.0))
    fresh.upsert(RecallDoc("d5", "a new office", 9.0))
    same_answers(fresh, restored, "office new")


@pytest.mark.parametrize(
    "spoil",
    [
        lambda s: s["ids"].pop(),  # fewer ids than documents
        lambda s: s["ids"].__setitem__(0, "d1"),  # an id twice
        lambda s: s["ids"].__setitem__(0, "elsewhere"),  # an id that is no document
        lambda s: s["lengths"].__setitem__(3, -1),
        lambda s: s["lengths"].__setitem__(3, 2.5),
        lambda s: s["lengths"].pop(),
        lambda s: s.__setitem__("postings", []),
        lambda s: s.clear(),
    ],
)
def test_a_form_that_does_not_fit_the_documents_is_refused_and_changes_nothing(spoil: object) -> None:
    fresh = RecallIndex()
    fresh.upsert_many(DOCS)
    saved = fresh.export_tokens()
    spoil(saved)  # type: ignore[operator]
    restored = RecallIndex()
    assert not restored.restore(DOCS, saved)
    assert len(restored) == 0 and not restored.restored
    assert not restored.restore(DOCS, "not a form")
    restored.upsert_many(DOCS)  # what a caller does then
    same_answers(fresh, restored, "office team 3 the")


def test_restore_fills_only_an_empty_index() -> None:
    index = RecallIndex()
    index.upsert(RecallDoc("x", "kept", 1.0))
    fresh = RecallIndex()
    fresh.upsert_many(DOCS)
    assert not index.restore(DOCS, fresh.export_tokens())
    assert index.ids() == ["x"]


def test_writes_before_a_token_is_decoded_are_kept_when_it_is() -> None:
    fresh = RecallIndex()
    fresh.upsert_many(DOCS)
    restored = RecallIndex()
    assert restored.restore(DOCS, fresh.export_tokens())
    for index in (fresh, restored):
        index.upsert(RecallDoc("new", "the cargo zeppelin of team 3", 500.0))  # adds to undecoded tokens
        index.upsert(RecallDoc("d3", "now only about zeppelin", 3.0))  # replaces a restored document
        index.remove("d4")  # takes one out of postings still undecoded
        index.upsert(RecallDoc("d4", "the office again", 4.0))  # and brings its id back
    assert restored._raw  # most tokens are still undecoded here
    for query in ("the", "cargo", "office", "team 3", "zeppelin", "cargo 3", "about", "4", "office of team 4"):
        same_answers(fresh, restored, query)

"""The conversation profile's index is derived state: it answers as one rebuilt from the documents it holds.

An item is indexed with words of the item it follows, so a remove or a change of
that item must reach its followers, and a saved tokenised form of one profile
must never be taken up by an index of another (session, record and durable
memory each save one beside the repository, and handles of either profile may
open it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitmem import SyncGitFileStore
from gitmem.durable.recall import NamespaceRecall, RecallPolicy
from gitmem.durable.repository import DurableRepository
from gitmem.recall import RecallDoc, RecallIndex, StoreRecall
from gitmem.recall.index import Profile
from gitmem.records import RecordStore
from gitmem.session.location import open_session_memory
from gitmem.session.memory import SessionMemory
from tests.durable.support import NS, change, create

from .support import SyncMemStore, item, to_doc

WORDS = ["programming", "languages", "python", "volunteering", "volunteered", "東京", "hiking", "June", "dogs"]
ids = st.sampled_from([f"t{i}" for i in range(6)])
texts = st.lists(st.sampled_from(WORDS), max_size=5).map(" ".join)
follows = st.none() | ids
docs = st.builds(RecallDoc, ids, texts, st.sampled_from([1.0, 1.7e9]), follows)
edits = st.lists(
    st.one_of(
        st.tuples(st.just("upsert"), docs),
        st.tuples(st.just("many"), st.lists(docs, max_size=4)),
        st.tuples(st.just("remove"), ids),
    ),
    max_size=25,
)
queries = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)


def rebuilt(live: RecallIndex) -> RecallIndex:
    fresh = RecallIndex(profile="conversation")
    fresh.upsert_many([doc for doc_id in live.ids() if (doc := live.get(doc_id)) is not None])
    return fresh


@given(edits, st.lists(queries, min_size=1, max_size=3), st.booleans())
def test_after_any_writes_the_live_index_answers_as_a_rebuild(
    ops: list[tuple[str, object]], asked: list[str], filled: bool
) -> None:
    live = RecallIndex(profile="conversation")
    if filled:  # a first fill, then writes on top of it
        live.upsert_many([RecallDoc("t0", "programming languages", 1.0), RecallDoc("t1", "python", 2.0, "t0")])
    for op, arg in ops:
        if op == "upsert":
            assert isinstance(arg, RecallDoc)
            live.upsert(arg)
        elif op == "many":
            assert isinstance(arg, list)
            live.upsert_many(arg)
        else:
            assert isinstance(arg, str)
            live.remove(arg)
    fresh = rebuilt(live)
    for doc_id in live.ids():
        assert live.tokens_of(doc_id) == fresh.tokens_of(doc_id), doc_id
    for query in asked:
        for ranking in ("coverage", "bm25", "fused"):
            got = live.search(query, limit=10, ranking=ranking)  # type: ignore[arg-type]
            want = fresh.search(query, limit=10, ranking=ranking)  # type: ignore[arg-type]
            assert [(h.id, h.score) for h in got] == [(h.id, h.score) for h in want]


def test_removing_a_turn_takes_its_words_out_of_the_answer_after_it() -> None:
    index = RecallIndex(profile="conversation")
    index.upsert(RecallDoc("q1", "which programming languages do you like", 1.7e9))
    index.upsert(RecallDoc("a1", "Mostly Python and C++", 1.7e9 + 1, "q1"))
    assert [h.id for h in index.search("programming languages", ranking="bm25")] == ["q1", "a1"]
    index.remove("q1")
    assert index.search("programming languages", ranking="bm25") == []
    index.upsert(RecallDoc("q1", "which programming languages do you like", 1.7e9))  # back: a1 borrows again
    assert [h.id for h in index.search("programming languages", ranking="bm25")] == ["q1", "a1"]


@pytest.mark.parametrize(
    ("saved", "restored"), [("conversation", "word-cjk-bigram"), ("word-cjk-bigram", "conversation")]
)
def test_a_tokenised_form_is_restored_only_into_its_own_profile(saved: Profile, restored: Profile) -> None:
    docs = [RecallDoc("q", "which programming languages", 1.0), RecallDoc("a", "volunteering", 2.0, "q")]
    source = RecallIndex(profile=saved)
    source.upsert_many(docs)
    form = json.loads(json.dumps(source.export_tokens()))
    assert not RecallIndex(profile=restored).restore(docs, form)
    plain = RecallIndex()
    plain.upsert_many(docs)
    old = {k: v for k, v in plain.export_tokens().items() if k != "profile"}  # a form saved before it named one
    assert not RecallIndex().restore(docs, old)
    assert not RecallIndex().restore(docs, {**plain.export_tokens(), "profile": "word-cjk-bigram.v0"})
    assert RecallIndex().restore(docs, plain.export_tokens())


def test_a_session_snapshot_saved_under_one_profile_is_rebuilt_under_the_other(tmp_path: Path) -> None:
    base = open_session_memory(tmp_path / "mem")
    path = base.catalogue.snapshot
    conv = SessionMemory(base.store, catalogue_file=path, profile="conversation")
    conv.remember("which programming languages do you use at work")
    conv.remember("Mostly Python and C++ these days")
    assert len(conv.recall_similar("languages", 5)) == 2  # the conversation handle saved its snapshot
    fresh = open_session_memory(tmp_path / "mem", create=False)
    found = [r.item.content for r in fresh.recall_similar("programming", 5)]
    assert found == ["which programming languages do you use at work"]
    assert fresh.catalogue.resumed_from_snapshot  # the items came from the snapshot; its tokens did not
    again = SessionMemory(base.store, catalogue_file=path, profile="conversation")
    assert len(again.recall_similar("programming languages", 5)) == 2  # and back: a1 still borrows q1's words


def test_a_record_store_resumed_from_its_snapshot_keeps_what_each_record_follows(tmp_path: Path) -> None:
    store = SyncGitFileStore.init(tmp_path / "facts.git", kind="record")
    records = RecordStore(store, "alice", profile="conversation")
    records.add("Which programming languages do you use at work?")
    records.add("Mostly Python and C++ these days")
    records.add("Nice. Anything else?")
    first = [r.text for r in records.search("programming languages", limit=3)]
    assert first == ["Which programming languages do you use at work?", "Mostly Python and C++ these days"]
    reopened = RecordStore(SyncGitFileStore.open(tmp_path / "facts.git"), "alice", profile="conversation")
    assert [r.text for r in reopened.search("programming languages", limit=3)] == first
    assert reopened._recall_index().resumed_from_snapshot
    plain = RecordStore(SyncGitFileStore.open(tmp_path / "facts.git"), "alice")
    assert [r.text for r in plain.search("programming", limit=3)] == first[:1]


def test_store_recall_handles_of_two_profiles_sharing_one_snapshot_answer_as_rebuilds(tmp_path: Path) -> None:
    store = SyncMemStore()
    store.write("items/q.json", item("which programming languages", 1.0), expected=None)
    store.write("items/v.json", item("volunteering on weekends", 2.0), expected=None)
    snap = tmp_path / "shared.json"
    for profile in ("conversation", "word-cjk-bigram", "conversation", "word-cjk-bigram"):
        handle = StoreRecall(store, to_doc, snapshot=snap, snapshot_key="k", profile=profile)  # type: ignore[arg-type]
        rebuild = StoreRecall(store, to_doc, profile=profile)  # type: ignore[arg-type]
        for query in ("volunteer", "volunteering", "programming"):
            assert handle.search(query, ranking="bm25") == rebuild.search(query, ranking="bm25"), (profile, query)
        handle.save_snapshot()


def test_durable_recall_of_either_profile_over_one_namespace_answers_as_a_rebuild(tmp_path: Path) -> None:
    mount = tmp_path / "d.git"
    DurableRepository(SyncGitFileStore.init(mount, kind="durable")).apply(
        change(
            "k1",
            create("n1", "I started volunteering at the shelter", status="active"),
            create("n2", "the deploy key lives in the vault", status="active"),
        )
    )
    policy = RecallPolicy(max_results=5, min_score=0.0)
    for profile in ("conversation", "word-cjk-bigram", "conversation"):
        handle = NamespaceRecall(SyncGitFileStore.open(mount), NS, profile=profile)  # type: ignore[arg-type]
        got = [h.node.id for h in handle.search("volunteered shelter", policy).hits]
        assert got == ["n1"]
        exact = [h.node.id for h in handle.search("volunteer", policy).hits]
        assert exact == (["n1"] if profile == "conversation" else [])

"""The conversation profile and lexical-led fusion: what a user of record and session recall relies on."""

from __future__ import annotations

import gc
import json
import tracemalloc
from datetime import UTC, datetime

import pytest

from bench.convdata import generate
from gitmem.memstore import InMemoryFileStore
from gitmem.recall import RecallDoc, RecallIndex
from gitmem.recall.convo import query_tokens, stem
from gitmem.recall.fusion import lexical_led
from gitmem.records import RecordStore
from gitmem.session import SessionMemory

JUNE = datetime(2026, 6, 14, 9, tzinfo=UTC).timestamp()
MARCH = datetime(2026, 3, 2, 9, tzinfo=UTC).timestamp()


def test_inflections_meet_and_other_scripts_stay_exact() -> None:
    assert stem("volunteering") == stem("volunteered") == stem("volunteer") == stem("volunteers")
    assert stem("dogs") == stem("dog") and stem("hiking") == stem("hike")
    assert stem("über") == "über" and stem("собаки") == "собаки" and stem("東京都") == "東京都"
    assert stem("東京で") == "東京で" and stem("데이터베이스") == "데이터베이스"
    assert stem("bus") == "bus" and stem("2026") == "2026" and stem("x1000ing") == "x1000ing"


@pytest.mark.parametrize(
    "forms",
    [
        ("freiwilligenarbeit", "freiwilligenarbeiten"),  # German
        ("zeitung", "zeitungen"),
        ("hund", "hunde"),
        ("voyageons", "voyager", "voyagez"),  # French
        ("caminando", "caminar", "caminamos", "caminado"),  # Spanish
        ("canción", "canciones"),
        ("amigo", "amiga", "amigos"),
        ("viajando", "viajar", "viajamos"),  # Portuguese
        ("cachorro", "cachorros"),
        ("viaggiare", "viaggiando", "viaggiato"),  # Italian
        ("libro", "libri"),
    ],
)
def test_inflections_of_five_more_languages_meet(forms: tuple[str, ...]) -> None:
    assert len({stem(form) for form in forms}) == 1, [stem(form) for form in forms]


def test_short_english_words_keep_endings_another_language_would_strip() -> None:
    assert stem("lessons") == stem("lesson") == "lesson" and stem("nations") == stem("nation") == "nation"
    assert [stem(w) for w in ("garden", "parent", "summer", "water")] == ["garden", "parent", "summer", "water"]


def test_an_item_in_another_language_is_found_by_another_form_of_its_words() -> None:
    index = conversation(
        RecallDoc("es", "Ayer estuve caminando por el parque con mi perro.", 1.0),
        RecallDoc("fr", "Nous voyageons en Bretagne cet été.", 2.0),
        RecallDoc("de", "Ich mache Freiwilligenarbeit im Tierheim.", 3.0),
        RecallDoc("ja", "東京で会議があります。", 4.0),
    )
    assert index.search("¿Dónde le gusta caminar?", limit=1, ranking="bm25")[0].id == "es"
    assert index.search("voyager Bretagne", limit=1, ranking="bm25")[0].id == "fr"
    assert index.search("Freiwilligenarbeiten", limit=1, ranking="bm25")[0].id == "de"
    assert index.search("東京", limit=1, ranking="bm25")[0].id == "ja"


def test_query_drops_stop_words_unless_nothing_is_left() -> None:
    assert query_tokens("When did I go to the concert in June?") == {stem("go"), stem("concert"), stem("june")}
    assert query_tokens("what is it") == {"what", "is", "it"}
    assert "2026-06" in query_tokens("what happened in 2026-06")
    assert "東京" in query_tokens("the 東京 trip")


def conversation(*docs: RecallDoc) -> RecallIndex:
    index = RecallIndex(profile="conversation")
    index.upsert_many(docs)
    return index


def test_an_answer_is_found_through_the_turn_it_follows() -> None:
    index = conversation(
        RecallDoc("q", "Besides Rust, what other programming languages have you worked with?", 1.0),
        RecallDoc("a", "Mostly Python and Haskell, a bit of SQL.", 2.0, follows="q"),
        RecallDoc("x", "I finished the report on languages at work.", 3.0),
    )
    ids = [h.id for h in index.search("Which programming languages have I worked with?", limit=2, ranking="bm25")]
    assert set(ids) == {"q", "a"}
    plain = RecallIndex()
    plain.upsert_many([RecallDoc(d.id, d.text, d.updated_at) for d in map(index.get, ["q", "a", "x"]) if d])
    assert "a" not in [h.id for h in plain.search("programming languages worked", limit=2, ranking="bm25")]


def test_a_turn_ranks_above_the_turn_that_only_borrows_its_words() -> None:
    index = conversation(
        RecallDoc("fact", "My cousin Aiko is moving to Lisbon in the autumn.", 1.0),
        RecallDoc("next", "Good idea, tell me more.", 2.0, follows="fact"),
    )
    assert [h.id for h in index.search("Where is Aiko moving?", limit=2, ranking="bm25")] == ["fact", "next"]


def test_an_item_is_found_by_its_month_though_its_text_never_says_it() -> None:
    index = conversation(
        RecallDoc("june", "I bought a standing desk today.", JUNE),
        RecallDoc("march", "I bought a used kayak today.", MARCH),
    )
    assert index.search("What did I buy in June?", limit=1, ranking="bm25")[0].id == "june"
    assert index.search("purchases 2026-03", limit=1, ranking="bm25")[0].id == "march"


def test_a_weak_semantic_hit_never_passes_a_strong_lexical_answer() -> None:
    lexical = [("exact", 9.0), ("weak", 0.5)]
    fused = lexical_led(lexical, [("vague", 0.15), ("close", 0.99), ("exact", 0.1)], ideal=10.0)
    assert "vague" not in fused  # below the confidence gate: no effect at all
    assert fused["exact"] > fused["close"] > fused["weak"]  # a close vector passes only a weak lexical match
    strong = lexical_led([("exact", 9.0)], [(f"near{i}", 1.0) for i in range(10)], ideal=10.0)
    assert max(strong, key=strong.__getitem__) == "exact"


def test_the_profile_is_checked() -> None:
    with pytest.raises(ValueError, match="profile"):
        RecallIndex(profile="stemmed")  # type: ignore[arg-type]


def test_record_memory_records_what_each_record_follows() -> None:
    records = RecordStore(InMemoryFileStore(), "alice", profile="conversation")
    asked = records.add("What colour did you pick for the living room walls?")
    answer = records.add("A soft sage green, the samples looked nice.")
    records.add("Noted. Anything else on your mind today?")
    reopened = RecordStore(records.store, "alice", profile="conversation")
    found = [r.id for r in reopened.search("living room walls colour", limit=2)]
    assert found == [asked.id, answer.id]
    answer_file = next(e.path for e in records.store.list() if answer.id in e.path)
    assert f"follows: {asked.id}" in records.store.read(answer_file).text


def test_default_record_files_are_unchanged() -> None:
    records = RecordStore(InMemoryFileStore(), "bob")
    records.add("one")
    records.add("two")
    assert all("follows" not in records.store.read(e.path).text for e in records.store.list())


def test_session_memory_links_each_remembered_item_to_the_one_before() -> None:
    memory = SessionMemory(InMemoryFileStore(), profile="conversation")
    memory.remember("Which airline did you end up booking for the conference?")
    booked = memory.remember("Finnair, the times were better and it was cheaper.")
    assert booked.metadata["follows"]
    hits = [r.item.id for r in memory.recall_similar("airline for the conference", k=2, ranking="bm25")]
    assert booked.id in hits


def test_the_conversation_data_is_the_same_on_every_run_and_every_answer_is_a_turn() -> None:
    for seed in (1, 7):
        data = json.loads(json.dumps(generate(seed)))
        assert data == json.loads(json.dumps(generate(seed)))  # seeded: nothing of it is shipped
        turns = {item["id"] for item in data["items"]}
        assert len(turns) > 4000 and len(data["questions"]) > 250
        assert all(q["answers"] and set(q["answers"]) <= turns for q in data["questions"])


def test_queries_of_long_words_leave_nothing_behind_in_the_process() -> None:
    """A served index answers any number of queries: a megabyte "word" in each is stemmed and
    dropped, never kept by the stemmer's memo (which held 65,536 of them: gigabytes)."""
    index = RecallIndex(profile="conversation")
    index.upsert(RecallDoc("a", "hello world", 1.0))
    index.search("hello", ranking="bm25")
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(40):
            word = "q" * (1 << 17) + "".join(chr(ord("a") + int(d)) for d in str(n))
            assert [h.id for h in index.search(f"hello {word}", ranking="bm25")] == ["a"]
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 1 << 20  # 40 queries of 128 KiB kept 10 MiB
    index.upsert(RecallDoc("long", "x" * 80 + "ing", 2.0))  # a long word is stemmed by the same rules
    assert [h.id for h in index.search("x" * 80 + "ed", ranking="bm25")] == ["long"]

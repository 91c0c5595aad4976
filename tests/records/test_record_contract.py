"""The record-store contract, run over the git store of a record mount and the in-memory twin."""

from __future__ import annotations

from typing import Any

import pytest
from contract.support import error_of

from gitmem.records import MemoryRecord, RecordStore
from gitmem.records.rules import encode_cursor


def texts(page_records: tuple[MemoryRecord, ...] | list[MemoryRecord]) -> list[str]:
    return [r.text for r in page_records]


def all_records(store: RecordStore, limit: int = 100) -> list[MemoryRecord]:
    out: list[MemoryRecord] = []
    cursor = None
    while True:
        page = store.list(limit=limit, cursor=cursor)
        out.extend(page.records)
        if page.next_cursor is None:
            return out
        cursor = page.next_cursor


def test_add_keeps_the_text_verbatim_and_reads_back(backend: Any) -> None:
    store = RecordStore(backend, "alice")
    odd = "  leading spaces\n---\nnot frontmatter\n\ttab and trailing newline\n"
    for text in ("prefers green tea", odd, "喜欢绿茶", "x", "a" * 8000):
        record = store.add(text)
        assert record.text == text and record.score is None and record.updated_at is not None
        assert store.get(record.id) == record
    assert texts(store.list(limit=100).records) == ["prefers green tea", odd, "喜欢绿茶", "x", "a" * 8000]


def test_the_same_text_added_twice_keeps_both_records(backend: Any) -> None:
    """mem0 deleted the old memory when the same one was added again; here both stay."""
    store = RecordStore(backend, "alice")
    first = store.add("prefers green tea")
    second = store.add("prefers green tea")
    assert first.id != second.id
    assert [r.id for r in store.list().records] == [first.id, second.id]
    assert {r.id for r in store.search("green tea")} == {first.id, second.id}


def test_update_replaces_the_text_and_moves_updated_at(backend: Any) -> None:
    store = RecordStore(backend, "alice")
    record = store.add("prefers green tea")
    changed = store.update(record.id, "prefers oolong tea")
    assert changed.id == record.id and changed.text == "prefers oolong tea"
    assert changed.updated_at is not None and record.updated_at is not None
    assert changed.updated_at >= record.updated_at
    assert store.get(record.id) == changed
    assert [r.text for r in store.search("oolong")] == ["prefers oolong tea"]
    assert store.search("green") == []


def test_update_with_the_same_text_changes_nothing(backend: Any) -> None:
    store = RecordStore(backend, "alice")
    record = store.add("prefers green tea")
    before = backend.changes(None).cursor
    assert store.update(record.id, "prefers green tea") == record
    assert backend.changes(None).cursor == before


def test_a_deleted_record_is_never_listed_searched_or_read(backend: Any) -> None:
    """mem0 kept finding deleted memories in search."""
    store = RecordStore(backend, "alice")
    keep = store.add("drinks coffee in the morning")
    gone = store.add("drinks green tea in the evening")
    assert len(store.search("drinks")) == 2  # the index knows both before the delete
    store.delete(gone.id)
    assert [r.id for r in store.list().records] == [keep.id]
    assert [r.id for r in store.search("green tea evening drinks")] == [keep.id]
    assert error_of(store.get, gone.id).code == "record_not_found"
    assert error_of(store.delete, gone.id).code == "record_not_found"
    assert error_of(store.update, gone.id, "again").code == "record_not_found"
    # A fresh store over the same files (no index in memory yet) agrees.
    again = RecordStore(backend, "alice")
    assert [r.id for r in again.search("green tea evening drinks")] == [keep.id]


def test_search_scores_and_orders_by_closeness(backend: Any) -> None:
    store = RecordStore(backend, "alice")
    store.add("prefers green tea")
    store.add("lives in Berlin")
    store.add("green is the favourite colour")
    hits = store.search("which tea does she prefer: green tea?", limit=5)
    assert hits[0].text == "prefers green tea"
    assert all(h.score is not None and h.score > 0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score or 0 for h in hits), reverse=True)
    assert all(h.updated_at is not None for h in hits)
    assert len(store.search("green", limit=1)) == 1
    assert store.search("volcano") == []


def test_search_and_list_refuse_bad_limits_and_queries(backend: Any) -> None:
    store = RecordStore(backend, "alice")
    store.add("prefers green tea")
    for limit in (0, 101, -1, True, "5", 2.0):
        assert error_of(store.search, "tea", limit=limit).code == "invalid_query"
        assert error_of(store.list, limit=limit).code == "invalid_query"
    assert error_of(store.search, "   ").code == "invalid_query"


def test_list_pages_in_creation_order_without_repeats(backend: Any) -> None:
    store = RecordStore(backend, "alice")
    added = [store.add(f"record number {i}").id for i in range(45)]
    pages = []
    cursor = None
    while True:
        page = store.list(limit=20, cursor=cursor)
        pages.append([r.id for r in page.records])
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert [len(p) for p in pages] == [20, 20, 5]
    assert [i for p in pages for i in p] == added
    exact = store.list(limit=45)
    assert exact.next_cursor is None and len(exact.records) == 45


def test_a_cursor_sees_records_added_after_it(backend: Any) -> None:
    store = RecordStore(backend, "alice")
    for i in range(3):
        store.add(f"early {i}")
    page = store.list(limit=2)
    assert page.next_cursor is not None
    late = store.add("late")
    rest = store.list(limit=20, cursor=page.next_cursor)
    assert texts(rest.records) == ["early 2", "late"] and rest.records[-1].id == late.id


def test_a_cursor_of_a_deleted_record_still_pages_on(backend: Any) -> None:
    store = RecordStore(backend, "alice")
    ids = [store.add(f"r{i}").id for i in range(4)]
    page = store.list(limit=2)
    store.delete(ids[1])
    assert [r.id for r in store.list(cursor=page.next_cursor).records] == ids[2:]


@pytest.mark.parametrize("cursor", ["", "garbage", "01" * 13, "0" * 26 + ".000000000000", 7, ["x"], "../../etc/passwd"])
def test_an_invalid_cursor_is_refused(backend: Any, cursor: Any) -> None:
    store = RecordStore(backend, "alice")
    store.add("prefers green tea")
    assert error_of(store.list, cursor=cursor).code == "invalid_cursor"


def test_namespaces_never_see_or_change_each_other(backend: Any) -> None:
    alice = RecordStore(backend, "alice")
    bob = RecordStore(backend, "bob")
    mine = alice.add("alice prefers green tea")
    theirs = bob.add("bob prefers black coffee")
    assert [r.id for r in alice.list().records] == [mine.id]
    assert [r.text for r in alice.search("prefers coffee tea")] == ["alice prefers green tea"]
    for call, args in ((bob.get, ()), (bob.update, ("stolen",)), (bob.delete, ())):
        assert error_of(call, mine.id, *args).code == "record_not_found"
    assert alice.get(mine.id).text == "alice prefers green tea"
    # A cursor made for one namespace is refused by another, even for the same id.
    page_cursor = encode_cursor(alice.folder, mine.id)
    assert error_of(bob.list, cursor=page_cursor).code == "invalid_cursor"
    assert [r.id for r in bob.list().records] == [theirs.id]


@pytest.mark.parametrize(
    "crafted",
    [
        "../bob/00/x",
        "01JDQ6Z5V6R7XKQ3M8T2B4N9C",  # 25 characters
        "01JDQ6Z5V6R7XKQ3M8T2B4N9CWX",  # 27
        "01jdq6z5v6r7xkq3m8t2b4n9cw",  # lower case
        "81JDQ6Z5V6R7XKQ3M8T2B4N9CW",  # beyond 128 bits
        "01JDQ6Z5V6R7XKQ3M8T2B4N9CU",  # U is not in the alphabet
        "",
        None,
        42,
    ],
)
def test_a_crafted_id_is_not_found(backend: Any, crafted: Any) -> None:
    store = RecordStore(backend, "alice")
    store.add("prefers green tea")
    for call, args in ((store.get, ()), (store.update, ("changed",)), (store.delete, ())):
        assert error_of(call, crafted, *args).code == "record_not_found"


@pytest.mark.parametrize(
    "namespace", ["../bob", "a/b", ".git", "..", "Alice", "alice ", "用户", "x" * 60, "a.b", "%2e%2e", "\\"]
)
def test_an_unsafe_namespace_is_encoded_not_trusted(backend: Any, namespace: str) -> None:
    plain = RecordStore(backend, "alice")
    plain.add("alice's record")
    odd = RecordStore(backend, namespace)
    record = odd.add(f"record of {namespace!r}")
    assert [r.id for r in odd.list().records] == [record.id]
    assert [r.text for r in plain.list().records] == ["alice's record"]
    paths = [e.path for e in backend.list()]
    assert all(p.startswith((plain.folder + "/", odd.folder + "/")) for p in paths)
    assert "/" not in odd.folder and odd.folder not in (".", "..", ".git", plain.folder)


def test_bad_namespaces_are_refused(backend: Any) -> None:
    for namespace in ("", None, "x" * 200, "\ud800"):
        assert error_of(RecordStore, backend, namespace).code == "invalid_path"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("   \n\t", "blank"),
        ("a" * 8001, "8001 characters"),
        ("nul \x00 inside", "NUL"),
        ("lone \ud800 surrogate", "surrogate"),
        ("my key is sk-abcdefghijklmnopqrstuvwxyz123456", "secret"),
        ("password = hunter2hunter2", "secret assignment"),
        (None, "not text"),
        (b"bytes", "bytes"),
    ],
)
def test_bad_text_is_refused_and_changes_nothing(backend: Any, text: Any, why: str) -> None:
    store = RecordStore(backend, "alice")
    record = store.add("prefers green tea")
    before = ({e.path: e.version for e in backend.list()}, backend.changes(None).cursor)
    assert error_of(store.add, text).code == "invalid_text", why
    assert error_of(store.update, record.id, text).code == "invalid_text", why
    assert ({e.path: e.version for e in backend.list()}, backend.changes(None).cursor) == before
    assert store.get(record.id).text == "prefers green tea"


def test_unknown_ids_change_nothing(backend: Any) -> None:
    store = RecordStore(backend, "alice")
    store.add("prefers green tea")
    before = backend.changes(None).cursor
    unknown = "01JDQ6Z5V6R7XKQ3M8T2B4N9CW"
    assert error_of(store.update, unknown, "x").code == "record_not_found"
    assert error_of(store.delete, unknown).code == "record_not_found"
    assert backend.changes(None).cursor == before


def test_purge_empties_one_namespace_and_leaves_the_others(backend: Any) -> None:
    """mem0's delete_all reset every user; purge here erases one namespace only."""
    alice = RecordStore(backend, "alice")
    bob = RecordStore(backend, "bob")
    for i in range(5):
        alice.add(f"alice fact {i} about tea")
        bob.add(f"bob fact {i} about tea")
    assert len(alice.search("tea fact")) == 5
    alice.purge()
    assert alice.list().records == () and alice.search("tea fact") == []
    assert len(all_records(bob)) == 5 and len(bob.search("tea fact")) == 5
    assert RecordStore(backend, "alice").search("tea fact") == []
    again = alice.add("a fresh start")
    assert [r.id for r in alice.list().records] == [again.id]
    RecordStore(backend, "carol").purge()  # a namespace that never held anything
    assert len(all_records(bob)) == 5


def test_files_of_other_shapes_in_the_folder_are_ignored(backend: Any) -> None:
    store = RecordStore(backend, "alice")
    record = store.add("prefers green tea")
    backend.write(f"{store.folder}/notes.md", "a stray note\n", expected=None)
    backend.write(f"{store.folder}/zz/{record.id}.md", "wrong fan-out\n", expected=None)
    assert [r.id for r in store.list().records] == [record.id]
    assert [r.id for r in store.search("stray note prefers")] == [record.id]


def test_the_async_face_runs_the_same_calls(backend: Any) -> None:
    import asyncio

    from gitmem.records import AsyncRecordStore

    async def story() -> None:
        store = AsyncRecordStore(RecordStore(backend, "alice"))
        record = await store.add("prefers green tea")
        assert (await store.update(record.id, "prefers oolong tea")).text == "prefers oolong tea"
        assert [r.id for r in await store.search("oolong")] == [record.id]
        assert [r.id for r in (await store.list()).records] == [record.id]
        assert (await store.get(record.id)).text == "prefers oolong tea"
        assert (await store.call("ids")) == [record.id]
        await store.delete(record.id)
        assert (await store.list()).records == ()
        await store.purge()
        assert store.kind == "record"

    asyncio.run(story())

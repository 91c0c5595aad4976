"""StoreRecall over the git store and the in-memory twin: catch-up from changes(), rebuilds, prefixes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gitmem.errors import MemoryStoreError
from gitmem.gitstore import SyncGitFileStore
from gitmem.model import FileText
from gitmem.recall import RecallDoc, StoreRecall

from .support import SyncMemStore, git_store, item, to_doc

Write = Callable[..., str]


@pytest.fixture(params=["git", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SyncGitFileStore | SyncMemStore:
    return git_store(tmp_path) if request.param == "git" else SyncMemStore()


def write(store: SyncGitFileStore | SyncMemStore, path: str, text: str) -> str:
    try:
        current = store.read(path).version
    except MemoryStoreError:
        current = None
    return store.write(path, text, expected=current)


def test_first_search_builds_and_later_ones_catch_up(store: SyncGitFileStore | SyncMemStore) -> None:
    write(store, "items/a.json", item("deploy the canary ring", 1.0))
    write(store, "items/b.json", item("rotate the signing key", 2.0))
    recall = StoreRecall(store, to_doc, prefix="items")
    assert [h.id for h in recall.search("canary deploy")] == ["a"]
    assert recall.full_rebuilds == 1 and len(recall.index) == 2
    head = recall.cursor

    write(store, "items/a.json", item("drain the canary ring first", 3.0))
    write(store, "items/c.json", item("deploy on friday never", 4.0))
    assert [h.id for h in recall.search("deploy")] == ["c"]
    assert [h.id for h in recall.search("drain canary")] == ["a"]
    assert recall.full_rebuilds == 1 and recall.cursor != head

    store.delete("items/b.json", expected=store.read("items/b.json").version)
    assert recall.search("signing key") == []
    assert "b" not in recall.index and len(recall.index) == 2


def test_only_paths_under_the_prefix_are_indexed(store: SyncGitFileStore | SyncMemStore) -> None:
    write(store, "items/a.json", item("shared words", 1.0))
    write(store, "itemsx/b.json", item("shared words", 1.0))
    write(store, "other/c.json", item("shared words", 1.0))
    recall = StoreRecall(store, to_doc, prefix="items/")
    assert [h.id for h in recall.search("shared")] == ["a"]
    write(store, "other/d.json", item("shared words", 2.0))
    assert [h.id for h in recall.search("shared")] == ["a"]
    everything = StoreRecall(store, to_doc)
    assert sorted(h.id for h in everything.search("shared", limit=10)) == ["a", "b", "c", "d"]


def test_a_tombstone_and_a_bad_file_are_left_out(store: SyncGitFileStore | SyncMemStore) -> None:
    write(store, "items/a.json", item("shared words", 1.0))
    write(store, "items/b.json", "not json\n")
    recall = StoreRecall(store, to_doc)
    assert [h.id for h in recall.search("shared")] == ["a"]
    assert list(recall.skipped) == ["items/b.json"]
    write(store, "items/a.json", item("shared words", 2.0, status="tombstoned"))
    write(store, "items/b.json", item("shared words", 3.0))
    assert [h.id for h in recall.search("shared")] == ["b"]
    assert recall.skipped == {}


def test_a_move_follows_the_document(store: SyncGitFileStore | SyncMemStore) -> None:
    version = write(store, "items/a.json", item("moving words", 1.0, id="rec-1"))
    recall = StoreRecall(store, to_doc)
    assert [h.id for h in recall.search("moving")] == ["rec-1"]
    store.move("items/a.json", "archive/a.json", expected=version)
    assert [h.id for h in recall.search("moving")] == ["rec-1"]
    assert len(recall.index) == 1


def test_catch_up_reads_only_the_changed_file(tmp_path: Path) -> None:
    store = SyncMemStore()
    for i in range(20):
        write(store, f"items/{i}.json", item(f"note number {i}", float(i)))
    recall = StoreRecall(store, to_doc)
    recall.refresh()
    before = store.reads
    write(store, "items/3.json", item("changed note", 99.0))
    recall.refresh()
    # write() above read once to find the version; the refresh read one file.
    assert store.reads - before == 2
    assert recall.search("changed")[0].id == "3"


def test_purge_forces_a_full_rebuild() -> None:
    store = SyncMemStore()
    write(store, "items/a.json", item("words here", 1.0))
    recall = StoreRecall(store, to_doc)
    assert len(recall.search("words")) == 1
    store.purge()
    write(store, "items/b.json", item("words there", 1.0))
    assert [h.id for h in recall.search("words")] == ["b"]
    assert recall.full_rebuilds == 2


def test_an_unknown_cursor_rebuilds(tmp_path: Path) -> None:
    store = git_store(tmp_path)
    write(store, "items/a.json", item("words here", 1.0))
    recall = StoreRecall(store, to_doc)
    recall.cursor = "0" * 40
    assert [h.id for h in recall.search("words")] == ["a"]
    assert recall.full_rebuilds == 1


def test_a_store_error_other_than_not_found_propagates_and_keeps_the_cursor() -> None:
    store = SyncMemStore()
    write(store, "items/a.json", item("words", 1.0))
    recall = StoreRecall(store, to_doc)
    cursor = recall.refresh()
    write(store, "items/a.json", item("other words", 2.0))

    class Broken(SyncMemStore):
        def read(self, path: str) -> FileText:
            raise MemoryStoreError("unavailable", "disk on fire")

    recall.store = Broken(store.inner)
    with pytest.raises(MemoryStoreError) as caught:
        recall.refresh()
    assert caught.value.code == "unavailable"
    assert recall.cursor == cursor
    recall.store = store
    assert [h.id for h in recall.search("other")] == ["a"]


def test_the_doc_id_is_the_callers() -> None:
    store = SyncMemStore()
    write(store, "x/1.json", item("alpha", 1.0, id="record-7"))

    def custom(file: FileText) -> RecallDoc | None:
        return RecallDoc("custom:" + file.path, file.text, 0.0)

    assert [h.id for h in StoreRecall(store, to_doc).search("alpha")] == ["record-7"]
    assert [h.id for h in StoreRecall(store, custom).search("alpha")] == ["custom:x/1.json"]


def test_a_rebuild_that_fails_part_way_is_redone() -> None:
    store = SyncMemStore()
    for name in "abcdef":
        write(store, f"items/{name}.json", item(f"shared {name}", 1.0))
    recall = StoreRecall(store, to_doc)
    recall.refresh()
    store.purge()  # the next refresh must rebuild
    for name in "abcdef":
        write(store, f"items/{name}.json", item(f"shared {name}", 2.0))

    class FailsOnce(SyncMemStore):
        failed = False

        def read(self, path: str) -> FileText:
            if path.endswith("d.json") and not FailsOnce.failed:
                FailsOnce.failed = True
                raise MemoryStoreError("unavailable", "a passing fault")
            return super().read(path)

    recall.store = FailsOnce(store.inner)
    with pytest.raises(MemoryStoreError):
        recall.refresh()
    assert recall.cursor is None
    assert sorted(h.id for h in recall.search("shared", limit=10)) == list("abcdef")


def test_a_document_with_a_bad_time_is_skipped_not_fatal() -> None:
    store = SyncMemStore()
    write(store, "items/a.json", item("shared", 1.0))
    write(store, "items/b.json", '{"text": "shared", "updated_at": NaN, "status": "active"}')
    write(store, "items/c.json", '{"updated_at": 1}')
    recall = StoreRecall(store, to_doc)
    assert [h.id for h in recall.search("shared")] == ["a"]
    assert sorted(recall.skipped) == ["items/b.json", "items/c.json"]

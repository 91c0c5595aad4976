"""Snapshots: a new process resumes from the saved index and catches up; anything odd means a rebuild."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from gitmem.errors import MemoryStoreError
from gitmem.gitstore import SyncGitFileStore
from gitmem.model import Changes, FileEntry, FileText, FullResync
from gitmem.recall import StoreRecall

from .support import SyncMemStore, git_store, item, to_doc


def put(store: SyncGitFileStore, path: str, text: str) -> None:
    try:
        current: str | None = store.read(path).version
    except MemoryStoreError:
        current = None
    store.write(path, text, expected=current)


class Counting:
    """Counts reads through a store, to see what a resumed index still reads."""

    def __init__(self, inner: SyncGitFileStore) -> None:
        self.inner = inner
        self.reads = 0

    def list(self) -> list[FileEntry]:
        return self.inner.list()

    def read(self, path: str) -> FileText:
        self.reads += 1
        return self.inner.read(path)

    def changes(self, since: str | None) -> Changes | FullResync:
        return self.inner.changes(since)


def test_a_new_process_resumes_and_catches_up(tmp_path: Path) -> None:
    store = git_store(tmp_path)
    for i in range(30):
        put(store, f"items/{i}.json", item(f"note {i} about canaries", float(i)))
    snap = tmp_path / "snap" / "items.json"
    first = StoreRecall(store, to_doc, prefix="items", snapshot=snap, snapshot_key="items-v1")
    first.refresh()
    assert snap.is_file() and first.full_rebuilds == 1

    put(store, "items/3.json", item("changed note about zeppelins", 99.0))
    store.delete("items/4.json", expected=store.read("items/4.json").version)
    counting = Counting(store)
    second = StoreRecall(counting, to_doc, prefix="items", snapshot=snap, snapshot_key="items-v1")
    assert [h.id for h in second.search("zeppelins")] == ["3"]
    assert second.resumed_from_snapshot and second.full_rebuilds == 0
    assert counting.reads == 2  # only the changed and the deleted file
    assert "4" not in second.index and len(second.index) == 29
    fresh = StoreRecall(store, to_doc, prefix="items")
    assert second.search("note canaries", limit=100) == fresh.search("note canaries", limit=100)


@pytest.mark.parametrize(
    "spoil",
    [
        lambda p: p.write_text("{not json"),
        lambda p: p.write_text(p.read_text()[:50]),
        lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "profile": "another"})),
        lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "key": "other-v2"})),
        lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "docs": [[1, 2, 3, 4]]})),
        # a time no float holds: float() raised OverflowError out of the first search
        lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "docs": [["a.json", "a", "x", 10**400]]})),
        # finite, but no date: a record memory's search turned it into one and raised OverflowError
        lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "docs": [["items/a.json", "a", "x", 1e300]]})),
        lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "docs": [["items/a.json", "a", "x", -1e18]]})),
        lambda p: p.write_text(
            json.dumps({**json.loads(p.read_text()), "docs": [["items/a.json", "a", "x", math.nan]]})
        ),
        lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "cursor": "f" * 40})),
        lambda p: p.unlink(),
    ],
)
def test_a_spoilt_or_foreign_snapshot_means_a_rebuild(tmp_path: Path, spoil: object) -> None:
    store = git_store(tmp_path)
    put(store, "items/a.json", item("alpha words", 1.0))
    snap = tmp_path / "s.json"
    StoreRecall(store, to_doc, snapshot=snap, snapshot_key="items-v1").refresh()
    spoil(snap)  # type: ignore[operator]
    again = StoreRecall(store, to_doc, snapshot=snap, snapshot_key="items-v1")
    assert [h.id for h in again.search("alpha")] == ["a"]
    assert again.full_rebuilds == 1
    assert snap.is_file()  # the rebuild wrote a good one


def test_a_snapshot_of_a_purged_memory_is_not_trusted(tmp_path: Path) -> None:
    store = SyncMemStore()
    store.write("items/a.json", item("alpha", 1.0), expected=None)
    snap = tmp_path / "s.json"
    StoreRecall(store, to_doc, snapshot=snap).refresh()
    store.purge()
    store.write("items/b.json", item("alpha", 2.0), expected=None)
    again = StoreRecall(store, to_doc, snapshot=snap)
    assert [h.id for h in again.search("alpha")] == ["b"]
    assert again.full_rebuilds == 1


def test_saving_is_periodic_and_a_failure_to_write_is_not_raised(tmp_path: Path) -> None:
    store = SyncMemStore()
    store.write("items/a.json", item("alpha", 1.0), expected=None)
    snap = tmp_path / "s.json"
    recall = StoreRecall(store, to_doc, snapshot=snap, snapshot_every=2)
    recall.refresh()
    saved = snap.read_text()
    store.write("items/b.json", item("beta", 2.0), expected=None)
    recall.refresh()
    assert snap.read_text() == saved  # one change: not yet
    store.write("items/c.json", item("gamma", 3.0), expected=None)
    recall.refresh()
    assert snap.read_text() != saved and "gamma" in snap.read_text()
    snap.unlink()
    snap.mkdir()  # now a folder: the rename over it fails
    store.write("items/d.json", item("delta", 4.0), expected=None)
    store.write("items/e.json", item("epsilon", 5.0), expected=None)
    assert [h.id for h in recall.search("epsilon")] == ["e"]
    assert recall.snapshot_error is not None
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())


def _tokens(p: Path, change: object) -> None:
    body = json.loads(p.read_text())
    change(body["tokens"])  # type: ignore[operator]
    p.write_text(json.dumps(body))


@pytest.mark.parametrize(
    "spoil",
    [
        # token counts no float holds: BM25 divided them and raised OverflowError out of every search
        lambda t: t.update(lengths=[10**400]),
        lambda t: t.update(postings={k: f"0;0:{10**400}" for k in t["postings"]}),
        lambda t: t.update(lengths=[-1]),
    ],
    ids=["length", "repeat count", "negative length"],
)
def test_a_saved_token_count_no_document_holds_is_not_taken(tmp_path: Path, spoil: object) -> None:
    store = git_store(tmp_path)
    put(store, "items/a.json", item("alpha alpha words", 1.0))
    snap = tmp_path / "s.json"
    StoreRecall(store, to_doc, snapshot=snap, snapshot_key="items-v1").refresh()
    _tokens(snap, spoil)
    again = StoreRecall(store, to_doc, snapshot=snap, snapshot_key="items-v1")
    fresh = StoreRecall(store, to_doc, snapshot_key="items-v1")
    for ranking in ("bm25", "coverage"):
        assert again.search("alpha", ranking=ranking) == fresh.search("alpha", ranking=ranking)
        assert [h.id for h in again.search("alpha", ranking=ranking)] == ["a"]

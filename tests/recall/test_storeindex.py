"""StoreRecall over the git store and the in-memory twin: catch-up from changes(), rebuilds, prefixes."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gitmem.catchup import BulkSource
from gitmem.errors import MemoryStoreError
from gitmem.gitstore import SyncGitFileStore
from gitmem.model import Changes, FileEntry, FileText, FullResync
from gitmem.recall import RecallDoc, RecallIndex, StoreRecall

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


def test_a_document_with_a_bad_time_is_skipped_not_fatal() -> None:
    store = SyncMemStore()
    write(store, "items/a.json", item("shared", 1.0))
    write(store, "items/b.json", '{"text": "shared", "updated_at": NaN, "status": "active"}')
    write(store, "items/c.json", '{"updated_at": 1}')
    # A time no float holds, taken as it is (to_doc converts nothing) or converted by to_doc:
    # OverflowError went out of every search, the file never skipped.
    write(store, "items/d.json", '{"text": "shared", "updated_at": 1%s, "status": "active"}' % ("0" * 400))
    recall = StoreRecall(store, to_doc)
    assert [h.id for h in recall.search("shared")] == ["a"]
    assert sorted(recall.skipped) == ["items/b.json", "items/c.json", "items/d.json"]
    raw = StoreRecall(store, lambda f: RecallDoc(f.path, "shared", json.loads(f.text).get("updated_at", 0.0)))
    assert sorted(h.id for h in raw.search("shared")) == ["items/a.json", "items/c.json"]
    assert sorted(raw.skipped) == ["items/b.json", "items/d.json"]
    with pytest.raises(ValueError, match="finite number"):
        RecallIndex().upsert(RecallDoc("x", "shared", 10**400))  # type: ignore[arg-type]


class _ByPath:
    """The git store with only the three reads recall needs: no bulk read, so a rebuild reads file by file."""

    def __init__(self, inner: SyncGitFileStore) -> None:
        self.inner = inner

    def list(self) -> list[FileEntry]:
        return self.inner.list()

    def read(self, path: str) -> FileText:
        return self.inner.read(path)

    def changes(self, since: str | None) -> Changes | FullResync:
        return self.inner.changes(since)


def test_a_rebuild_from_one_tree_walk_equals_reading_file_by_file(tmp_path: Path) -> None:
    store = git_store(tmp_path)
    for i in range(30):
        write(store, f"items/{i % 4}/{i}.json", item(f"note number {i} about rust", float(i)))
    write(store, "items/dup-a.json", item("first holder", 1.0, id="same"))
    write(store, "items/dup-b.json", item("second holder", 2.0, id="same"))
    write(store, "items/gone.json", item("erased", 3.0, status="tombstoned"))
    write(store, "items/bad.json", "not json\n")
    write(store, "items/1/late.json", item("caf\u00e9 \u6570\u636e\u5e93\u8fc1\u79fb", 4.0))
    write(store, "other/outside.json", item("not under the prefix", 5.0))
    # A symbolic link and a submodule pushed with plain git: never read, either way.
    head = store.head()
    git = ["git", "--git-dir", store.path]
    link = subprocess.run([*git, "hash-object", "-w", "--stdin"], input="x", text=True, capture_output=True, check=True)
    listing = subprocess.run([*git, "ls-tree", f"{head}:items"], text=True, capture_output=True, check=True).stdout
    entries = f"{listing}120000 blob {link.stdout.strip()}\tlink.json\n160000 commit {head}\tsub.json\n"
    items = subprocess.run([*git, "mktree"], input=entries, text=True, capture_output=True, check=True).stdout.strip()
    root = subprocess.run([*git, "ls-tree", head], text=True, capture_output=True, check=True).stdout
    root = "".join(line + "\n" for line in root.splitlines() if not line.endswith("\titems"))
    tree = subprocess.run(
        [*git, "mktree"], input=f"{root}040000 tree {items}\titems\n", text=True, capture_output=True, check=True
    ).stdout.strip()
    commit = subprocess.run(
        [*git, "commit-tree", tree, "-p", head, "-m", "plain git"], text=True, capture_output=True, check=True
    ).stdout.strip()
    subprocess.run([*git, "update-ref", "refs/heads/main", commit, head], check=True)

    assert isinstance(store, BulkSource) and not isinstance(_ByPath(store), BulkSource)
    bulk, by_path = StoreRecall(store, to_doc, prefix="items"), StoreRecall(_ByPath(store), to_doc, prefix="items")
    assert bulk.refresh() == by_path.refresh() == commit
    assert sorted(bulk.index.ids()) == sorted(by_path.index.ids())
    assert all(bulk.index.get(d) == by_path.index.get(d) for d in by_path.index.ids())
    assert bulk.index.get("same") == RecallDoc("same", "second holder", 2.0)
    assert bulk.skipped == by_path.skipped and set(bulk.skipped) == {"items/bad.json"}
    assert bulk._by_path == by_path._by_path and bulk._paths_of == by_path._paths_of
    assert "link" not in bulk.index.ids() and "sub" not in bulk.index.ids()
    # Both then catch up the same way.
    write(store, "items/dup-b.json", item("moved on", 9.0, id="other"))
    bulk.refresh(), by_path.refresh()
    assert bulk.index.get("same") == by_path.index.get("same") == RecallDoc("same", "first holder", 1.0)
    assert bulk.search("holder") == by_path.search("holder")

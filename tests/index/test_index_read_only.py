"""A search of a current index only reads it: a new process makes no Whoosh writer, so no files."""

from __future__ import annotations

import os

from gitmem import SyncGitFileStore
from gitmem.index import engine


def test_a_new_handle_searching_a_current_index_writes_nothing_into_it(tmp_path: os.PathLike[str], monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = os.path.join(tmp_path, "notes.git")
    store = SyncGitFileStore.init(path)
    for n in range(12):
        store.write(f"notes/n{n:02}.md", f"note {n}\nthe colour is {'teal' if n % 3 else 'amber'}\n", expected=None)
    first = store.search("amber")  # builds the index inline (a small memory)
    folder = os.path.join(path, "gitmem", "index")
    before = sorted(os.listdir(folder))

    def no_writer(ix: object) -> None:
        raise AssertionError("a writer was opened for an index already at head")

    monkeypatch.setattr(engine, "writing", no_writer)
    again = SyncGitFileStore.open(path)  # what a new CLI process has: nothing seen yet
    assert again.search("amber") == first
    assert again.search("colour", path="notes/") == store.search("colour", path="notes/")
    assert sorted(os.listdir(folder)) == before
    monkeypatch.undo()
    store.write("notes/n99.md", "amber too\n", expected=None)  # behind: the writer catches up
    later = SyncGitFileStore.open(path).search("amber")
    assert len(later.matches) == len(first.matches) + 1
    assert SyncGitFileStore.open(path).index_status().state == "current"

"""A remember is one batch: the catalogue learns what this handle wrote, nothing is read back.

Each shortcut is paired with the case that must still end right: another handle
writing the same text meanwhile, and a handle that never refreshed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gitmem.memstore import InMemoryFileStore
from gitmem.model import Applied, Edit, FileText
from gitmem.session.location import open_session_memory
from gitmem.session.memory import SessionMemory

TEXT = "the deploy pipeline needs the staging cluster warmed up first"


class CountingStore(InMemoryFileStore):
    """The in-memory twin counting batches (refused ones too) and reads."""

    def __init__(self) -> None:
        super().__init__()
        self.batches = 0
        self.reads: list[str] = []

    def apply(self, edits: Sequence[Edit], **kwargs: Any) -> Applied:
        self.batches += 1
        return super().apply(edits, **kwargs)

    def read(self, path: str) -> FileText:
        self.reads.append(path)
        return super().read(path)


def test_remembering_the_same_text_again_merges_in_one_batch() -> None:
    store = CountingStore()
    memory = SessionMemory(store)
    memory.refresh()
    first = memory.remember(TEXT)
    store.batches, store.reads = 0, []
    merged = memory.remember(TEXT.upper())  # the same normalised text: a duplicate
    assert store.batches == 1 and store.reads == []  # no refused create first, nothing read
    assert merged.id == first.id and merged.metadata["duplicate_count"] == 1
    again = memory.remember(TEXT)
    assert again.metadata["duplicate_count"] == 2 and store.batches == 2
    assert len(memory) == 1


def test_a_duplicate_written_by_another_handle_meanwhile_still_merges(tmp_path: Path) -> None:
    mine = open_session_memory(tmp_path / "mem")
    theirs = open_session_memory(tmp_path / "mem")
    mine.refresh()
    first = mine.remember(TEXT)
    theirs.remember(TEXT)  # merges into the file `mine` learned: its version moves on
    third = mine.remember(TEXT)  # `mine` expects the version it learned: refused, then merged into theirs
    assert third.id == first.id and third.metadata["duplicate_count"] == 2
    assert [i.metadata["duplicate_count"] for i in mine.items()] == [2]


def test_a_handle_that_never_refreshed_learns_nothing_and_still_merges() -> None:
    store = CountingStore()
    memory = SessionMemory(store)
    memory.remember(TEXT)
    assert memory.catalogue.cursor is None and len(memory.catalogue) == 0
    store.batches = 0
    merged = memory.remember(TEXT)  # found by the store's compare-and-swap instead
    assert store.batches == 2 and merged.metadata["duplicate_count"] == 1
    assert len(memory) == 1


def test_what_was_learned_is_recalled_and_replaced_by_the_store_on_refresh() -> None:
    store = CountingStore()
    memory = SessionMemory(store)
    memory.refresh()
    item = memory.remember(TEXT)
    assert [r.item.id for r in memory.recall_similar("staging cluster deploy")] == [item.id]
    other = SessionMemory(store)
    other.delete(item.id)  # another handle deletes it
    assert memory.recall_similar("staging cluster deploy") == []  # the refresh re-reads the path


def test_a_learned_file_put_back_as_the_cursor_saw_it_is_read_again() -> None:
    """The change cursor cannot see a file that went back to its old content; what was learned is re-read anyway."""
    store = CountingStore()
    memory = SessionMemory(store)
    memory.remember(TEXT)
    memory.refresh()
    (path,) = [e.path for e in store.list()]
    before = store.read(path)
    merged = memory.remember(TEXT)  # learned: duplicate_count 1
    assert merged.metadata["duplicate_count"] == 1
    now = store.read(path)
    store.write(path, before.text, expected=now.version)  # someone restores the file as it was
    (item,) = memory.items()
    assert "duplicate_count" not in item.metadata

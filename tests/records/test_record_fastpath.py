"""A record write is one batch and one read back: the write confirmed.

Each is paired with the case that must still end right: another handle moving
the marker, a batch answer that does not confirm, a store that says it wrote
but did not, a purge under the handle.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from gitmem import InMemoryFileStore
from gitmem.errors import MemoryStoreError
from gitmem.model import Applied, Edit, FileText
from gitmem.records import RecordStore
from gitmem.records.rules import marker_path
from records.support import new_backend


class CountingStore(InMemoryFileStore):
    """The in-memory twin counting reads and batches."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []
        self.batches = 0

    def read(self, path: str) -> FileText:
        self.reads.append(path)
        return super().read(path)

    def apply(self, edits: Sequence[Edit], **kwargs: Any) -> Applied:
        self.batches += 1
        return super().apply(edits, **kwargs)


def test_each_add_is_one_batch_and_reads_its_record_back_once() -> None:
    backend = CountingStore()
    store = RecordStore(backend, "alice")
    added = [store.add(f"fact {i}") for i in range(5)]
    marker = marker_path(store.folder)
    assert backend.reads == [p for r in added for p in (marker, store._path(r.id))]
    assert backend.batches == 5


def test_a_store_that_answers_but_did_not_write_is_unconfirmed() -> None:
    class Liar(InMemoryFileStore):
        """Answers like a batch that landed, and writes nothing."""

        def apply(self, edits: Sequence[Edit], **kwargs: Any) -> Applied:
            return Applied("0" * 40, tuple("1" * 40 if e.text is not None else None for e in edits))

    store = RecordStore(Liar(), "alice")
    with pytest.raises(MemoryStoreError) as caught:
        store.add("prefers green tea")
    assert caught.value.code == "write_unconfirmed"


def test_an_update_reads_the_record_once_and_a_delete_too() -> None:
    backend = CountingStore()
    store = RecordStore(backend, "alice")
    record = store.add("prefers green tea")
    backend.reads.clear()
    store.update(record.id, "prefers oolong tea")
    store.delete(record.id)
    path = store._path(record.id)
    assert backend.reads == [path, path, path, path]  # each: the read before, the read back


def test_another_handle_moving_the_marker_makes_the_add_read_it(tmp_path: Path) -> None:
    backend = new_backend("git", tmp_path)
    mine, theirs = RecordStore(backend, "alice"), RecordStore(backend, "alice")
    first = mine.add("one")
    second = theirs.add("two")  # the marker moves under `mine`
    third = mine.add("three")
    assert first.id < second.id < third.id
    assert [r.text for r in mine.list().records] == ["one", "two", "three"]
    assert backend.read(marker_path(mine.folder)).text == third.id + "\n"


def test_a_batch_answer_without_a_commit_is_read_back() -> None:
    class Forgetful(InMemoryFileStore):
        """Writes, but answers as if nothing changed: the record store must look for itself."""

        def apply(self, edits: Sequence[Edit], **kwargs: Any) -> Applied:
            super().apply(edits, **kwargs)
            return Applied(None, ())

    backend = Forgetful()
    store = RecordStore(backend, "alice")
    record = store.add("prefers green tea")  # read back: there, so confirmed
    assert store.get(record.id).text == "prefers green tea"
    again = store.add("prefers black tea")
    assert [r.id for r in store.list().records] == [record.id, again.id]


def test_an_add_after_a_purge_starts_the_marker_again(backend: Any) -> None:
    store = RecordStore(backend, "alice")
    store.add("before the purge")
    store.purge()
    after = store.add("after the purge")
    assert [r.id for r in store.list().records] == [after.id]
    assert backend.read(marker_path(store.folder)).text == after.id + "\n"

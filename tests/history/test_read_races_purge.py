"""A read that a purge or forget overtakes reads the new head instead of failing.

A read takes the head and then that commit's objects, without the writer lock.
When a purge deletes those objects in between, the memory is whole; only the
read's commit is gone. The read must answer for the head as it is now (here:
the file was purged, so ``not_found``), never ``unavailable``. Whether the
old commit's objects are still reachable to this process depends on what its
handles have mapped, so the first step here purges *and* fails as a read of
deleted objects does; the store must notice that the head moved and read again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gitmem import GitFileStore
from gitmem.errors import MemoryStoreError


def _purge_once_before(store: Any, monkeypatch: pytest.MonkeyPatch, name: str, *, purge: bool = True) -> list[int]:
    """The first call of ``store.repo.<name>`` purges (through another handle) and fails as a read of gone objects."""
    real = getattr(store.repo, name)
    calls = [0]

    def racing(*args: Any, **kw: Any) -> Any:
        calls[0] += 1
        if calls[0] == 1:
            if purge:
                GitFileStore.open(store.path).sync.purge()
            raise KeyError("0" * 40)  # what pygit2 raises for an object that is not there
        return real(*args, **kw)

    monkeypatch.setattr(store.repo, name, racing)
    return calls


@pytest.fixture
def store(tmp_path: Path) -> Any:
    made = GitFileStore.init(tmp_path / "m.git").sync
    for n in range(3):
        made.write(f"notes/n{n}.md", f"note {n}\n", expected=None)
    return made


def test_a_read_overtaken_by_a_purge_answers_for_the_new_head(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _purge_once_before(store, monkeypatch, "read_at")
    with pytest.raises(MemoryStoreError) as caught:
        store.read("notes/n1.md")
    assert caught.value.code == "not_found"
    assert calls[0] == 2  # read again, on the purged head
    assert store.write("notes/n1.md", "after\n", expected=None)


def test_a_listing_and_a_bulk_read_overtaken_by_a_purge_see_the_new_head(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _purge_once_before(store, monkeypatch, "tree_id_of")
    assert store.list() == []
    store.write("notes/a.md", "a\n", expected=None)
    store.write("notes/b.md", "b\n", expected=None)
    monkeypatch.undo()
    from gitmem.git import bulk

    real, calls = bulk.files_under, [0]

    def racing(*args: Any, **kw: Any) -> Any:
        calls[0] += 1
        if calls[0] == 1:
            GitFileStore.open(store.path).sync.purge()
            raise KeyError("0" * 40)
        return real(*args, **kw)

    monkeypatch.setattr(bulk, "files_under", racing)
    assert store.read_under("notes/") == []
    assert calls[0] == 2


def test_a_read_of_an_explicit_revision_is_not_redirected(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    head = store.head()
    calls = _purge_once_before(store, monkeypatch, "read_at")
    with pytest.raises(MemoryStoreError) as caught:
        store.read("notes/n1.md", rev=head)
    assert caught.value.code == "unavailable"
    assert calls[0] == 1


def test_a_failed_read_on_a_head_that_did_not_move_is_not_retried(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _purge_once_before(store, monkeypatch, "read_at", purge=False)
    with pytest.raises(MemoryStoreError) as caught:
        store.read("notes/n1.md")
    assert caught.value.code == "unavailable"
    assert calls[0] == 1

"""A read that a purge or forget overtakes reads the new head instead of failing.

A read takes the head and then that commit's objects, without the writer lock.
When a purge deletes those objects in between, the memory is whole; only the
read's commit is gone. The read must answer for the head as it is now (here:
the file was purged, so ``not_found``), never ``unavailable``. Whether the
old commit's objects are still reachable to this process depends on what its
handles have mapped, so the first step here purges *and* fails as a read of
deleted objects does; the store must notice that the head moved and read again.

A read whose head did not move is made once more on a new handle (another
process's repack can hide an object from a handle's list of packs for a
moment); what is still missing then is ``unavailable``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gitmem import GitFileStore
from gitmem.errors import MemoryStoreError


def _purge_once_before(
    store: Any, monkeypatch: pytest.MonkeyPatch, name: str, *, purge: bool = True, owner: Any = None
) -> list[int]:
    """The first call of ``store.repo.<name>`` purges (through another handle) and fails as a read of gone objects.

    ``owner``: whose ``name`` that is, when not ``store.repo``: a read of ``main`` takes its
    objects in one walk (``store.repo.written.walk``), a read of a revision through ``read_at``.
    """
    owner = store.repo if owner is None else owner
    real = getattr(owner, name)
    calls = [0]

    def racing(*args: Any, **kw: Any) -> Any:
        calls[0] += 1
        if calls[0] == 1:
            if purge:
                GitFileStore.open(store.path).sync.purge()
            raise KeyError("0" * 40)  # what pygit2 raises for an object that is not there
        return real(*args, **kw)

    monkeypatch.setattr(owner, name, racing)
    return calls


@pytest.fixture
def store(tmp_path: Path) -> Any:
    made = GitFileStore.init(tmp_path / "m.git").sync
    for n in range(3):
        made.write(f"notes/n{n}.md", f"note {n}\n", expected=None)
    return made


def test_a_read_overtaken_by_a_purge_answers_for_the_new_head(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _purge_once_before(store, monkeypatch, "walk", owner=store.repo.written)
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
    # Looked for once more on a new handle, at the same revision, which the purge erased:
    # the answer a read made a moment later gets (the file is not read from another commit).
    assert caught.value.code == "not_found"
    assert calls[0] == 1


def test_an_object_missing_on_a_head_that_did_not_move_is_looked_for_on_a_new_handle(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle = store.repo.repo
    calls = _purge_once_before(store, monkeypatch, "walk", purge=False, owner=store.repo.written)
    assert store.read("notes/n1.md").text == "note 1\n"
    assert calls[0] == 2
    assert store.repo.repo is not handle


def test_an_object_still_missing_on_the_new_handle_is_unavailable(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = [0]

    def gone(*args: Any, **kw: Any) -> Any:
        calls[0] += 1
        raise KeyError("0" * 40)

    monkeypatch.setattr(store.repo.written, "walk", gone)  # every walk of main's objects
    with pytest.raises(MemoryStoreError) as caught:
        store.read("notes/n1.md")
    assert caught.value.code == "unavailable"
    assert calls[0] == 2  # once, and once on a new handle: no loop


def test_a_write_whose_head_objects_go_missing_for_a_moment_commits_on_a_new_handle(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitmem.git import engine

    real, calls = engine.Snapshot, [0]

    def hiding(*args: Any, **kw: Any) -> Any:
        calls[0] += 1
        if calls[0] == 1:
            raise KeyError("0" * 40)
        return real(*args, **kw)

    monkeypatch.setattr(engine, "Snapshot", hiding)
    current = store.read("notes/n1.md").version
    assert store.write("notes/n1.md", "edited\n", expected=current)
    assert calls[0] == 2
    assert store.read("notes/n1.md").text == "edited\n"

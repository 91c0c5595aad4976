"""A writer's own pack needs no listing of ``objects/pack`` after it, and anything else still gets one.

The read right after a write takes the folder's new stamp as checked (the write
engine saw it unchanged just before its pack landed). These tests hold the line
that this skips only the writer's own change: a FIFO planted in the pack folder
after the write, or before it, is still refused (``unavailable``) before libgit2
could open it and hang, and ``changes()`` after a write (served from the bytes
the writer kept) names the same paths as after a reopen.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitmem import GitFileStore, MemoryStoreError


def _fifo(repo: Path) -> Path:
    fifo = repo / "objects" / "pack" / f"pack-{'0' * 40}.idx"
    os.mkfifo(fifo)
    return fifo


def test_a_fifo_planted_after_a_write_is_refused_by_the_next_read(tmp_path: Path) -> None:
    store = GitFileStore.init(tmp_path / "m.git").sync
    store.write("a.md", "one\n", expected=None)
    store.read("a.md")
    store.write("b.md", "two\n", expected=None)
    _fifo(tmp_path / "m.git")
    with pytest.raises(MemoryStoreError) as caught:
        store.read("b.md")
    assert caught.value.code == "unavailable" and "not a regular file" in caught.value.message


def test_a_fifo_planted_before_a_write_is_refused_by_the_read_after_it(tmp_path: Path) -> None:
    store = GitFileStore.init(tmp_path / "m.git").sync
    store.write("a.md", "one\n", expected=None)
    store.read("a.md")
    fifo = _fifo(tmp_path / "m.git")
    with pytest.raises(MemoryStoreError) as caught:  # the write's own start checks the folder
        store.write("b.md", "two\n", expected=None)
    assert caught.value.code == "unavailable"
    fifo.unlink()
    store.write("b.md", "two\n", expected=None)
    assert store.read("b.md").text == "two\n"


def test_changes_after_own_writes_are_the_paths_a_fresh_handle_sees(tmp_path: Path) -> None:
    store = GitFileStore.init(tmp_path / "m.git").sync
    first = store.write("notes/a.md", "one\n", expected=None)
    second = store.write("notes/b.md", "two\n", expected=None)
    cursor = store.head()
    store.write("notes/b.md", "two, changed\n", expected=second)
    store.write("c.md", "three\n", expected=None)
    store.delete("notes/a.md", expected=first)
    own = store.changes(cursor)
    fresh = GitFileStore.open(tmp_path / "m.git").sync.changes(cursor)
    assert own == fresh and own.paths == ("c.md", "notes/a.md", "notes/b.md")

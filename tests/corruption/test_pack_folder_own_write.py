"""A FIFO planted in ``objects/pack`` is never opened, whenever it lands, and ``changes()`` after own writes is right.

The pack folder is checked where it is listed (a handle opening, libgit2's rescan,
a git process), not before every read: a read this process can answer from the
objects it wrote lists nothing, so it answers; anything that would list the folder
is refused (``unavailable``) before libgit2 could open the FIFO and hang. And
``changes()`` after a write (served from the bytes the writer kept) names the same
paths as after a reopen.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitmem import GitFileStore, MemoryStoreError


def _fifo(repo: Path) -> Path:
    """A FIFO as ``pack-*.idx`` beside a regular ``.pack`` (libgit2 ignores an index without one), newest of all."""
    stem = repo / "objects" / "pack" / f"pack-{'0' * 40}"
    stem.with_suffix(".pack").write_bytes(b"PACK\0\0\0\2\0\0\0\0" + bytes(20))
    os.utime(stem.with_suffix(".pack"), (2e9, 2e9))  # searched first
    os.mkfifo(stem.with_suffix(".idx"))
    return stem.with_suffix(".idx")


def test_a_fifo_planted_after_a_write_is_never_opened(tmp_path: Path) -> None:
    store = GitFileStore.init(tmp_path / "m.git").sync
    store.write("a.md", "one\n", expected=None)
    store.read("a.md")
    store.write("b.md", "two\n", expected=None)
    _fifo(tmp_path / "m.git")
    assert store.read("b.md").text == "two\n"  # its own objects: nothing lists the folder
    with pytest.raises(MemoryStoreError) as caught:  # a new handle lists it, and refuses first
        GitFileStore.open(tmp_path / "m.git").sync.read("b.md")
    assert caught.value.code == "unavailable" and "not a regular file" in caught.value.message


def test_a_fifo_planted_before_a_write_is_never_opened(tmp_path: Path) -> None:
    store = GitFileStore.init(tmp_path / "m.git").sync
    store.write("a.md", "one\n", expected=None)
    store.read("a.md")
    fifo = _fifo(tmp_path / "m.git")
    store.write("b.md", "two\n", expected=None)  # a pack of its own: the folder is not listed
    assert store.read("b.md").text == "two\n"
    with pytest.raises(MemoryStoreError) as caught:
        GitFileStore.open(tmp_path / "m.git").sync.read("a.md")
    assert caught.value.code == "unavailable"
    fifo.unlink()
    fifo.with_suffix(".pack").unlink()
    assert GitFileStore.open(tmp_path / "m.git").sync.read("b.md").text == "two\n"


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

"""show, diff and blame: old versions, unified hunks, and who last touched each line."""

from __future__ import annotations

import pytest

from gitmem import MemoryStoreError, Origin, SyncGitFileStore

from .conftest import Git

ALICE = Origin("run-a", "alice", "call-a")
BOB = Origin("run-b", "bob", "call-b")


def test_show_returns_the_file_as_it_was(store: SyncGitFileStore) -> None:
    v1 = store.write("a.md", "first\n", expected=None)
    old = store.head()
    store.write("a.md", "second\n", expected=v1)

    shown = store.show(old, "a.md")
    assert (shown.text, shown.version) == ("first\n", v1)
    assert store.show("main", "a.md").text == "second\n"
    with pytest.raises(MemoryStoreError) as err:
        store.show("main~2", "a.md")
    assert err.value.code == "not_found"
    with pytest.raises(MemoryStoreError) as err:
        store.show("nope", "a.md")
    assert err.value.code == "not_found"


def test_diff_gives_unified_hunks_per_file(store: SyncGitFileStore, git: Git) -> None:
    a = store.write("notes/a.md", "one\ntwo\nthree\n", expected=None)
    store.write("gone.md", "bye\n", expected=None)
    base = store.head()
    store.write("notes/a.md", "one\nTWO\nthree\n", expected=a)
    store.delete("gone.md", expected=store.read("gone.md").version)
    store.write("new.md", "hello", expected=None)

    diffs = {d.path: d for d in store.diff(base)}

    assert {p: d.status for p, d in diffs.items()} == {
        "notes/a.md": "modified",
        "gone.md": "deleted",
        "new.md": "added",
    }
    (hunk,) = diffs["notes/a.md"].hunks
    assert (hunk.old_start, hunk.old_lines, hunk.new_start, hunk.new_lines) == (1, 3, 1, 3)
    assert hunk.lines == (" one", "-two", "+TWO", " three")
    assert diffs["new.md"].hunks[0].lines == ("+hello", "\\ No newline at end of file")
    assert diffs["gone.md"].new_version is None and diffs["new.md"].old_version is None
    # The patch text is what git itself prints for the same change.
    cli = git("diff", base, "main", "--", "notes/a.md").stdout
    assert diffs["notes/a.md"].patch.split("@@", 1)[1] == cli.split("@@", 1)[1]


def test_diff_narrows_to_a_file_or_folder_and_shows_moves_as_renames(store: SyncGitFileStore) -> None:
    v = store.write("notes/a.md", "text\n", expected=None)
    store.write("top.md", "x\n", expected=None)
    base = store.head()
    store.move("notes/a.md", "archive/a.md", expected=v)
    store.write("top.md", "y\n", expected=store.read("top.md").version)

    (moved,) = store.diff(base, path="notes/a.md")
    assert (moved.status, moved.old_path, moved.path, moved.hunks) == ("renamed", "notes/a.md", "archive/a.md", ())
    assert [d.path for d in store.diff(base, "main", path="archive/")] == ["archive/a.md"]
    assert [d.path for d in store.diff(base, path="top.md")] == ["top.md"]
    assert store.diff(base, base) == []
    with pytest.raises(MemoryStoreError) as err:
        store.diff("nope")
    assert err.value.code == "not_found"


def test_blame_names_the_change_and_origin_of_each_line(store: SyncGitFileStore, git: Git) -> None:
    v = store.write("notes/a.md", "one\ntwo\nthree\n", expected=None, origin=ALICE)
    created = store.head()
    v = store.write("notes/a.md", "one\nTWO\nthree\n", expected=v, origin=BOB)
    edited = store.head()
    v = store.move("notes/a.md", "a.md", expected=v, origin=BOB)
    store.write("a.md", "one\nTWO\nthree\nfour\n", expected=v, origin=ALICE)
    appended = store.head()

    lines = store.blame("a.md")

    assert [(b.line, b.text) for b in lines] == [(1, "one"), (2, "TWO"), (3, "three"), (4, "four")]
    assert [b.commit for b in lines] == [created, edited, created, appended]
    assert [b.origin for b in lines] == [ALICE, BOB, ALICE, ALICE]
    assert [b.op for b in lines] == ["create", "edit", "create", "edit"]
    assert lines[0].path == "notes/a.md" and lines[3].path == "a.md"
    porcelain = git("blame", "--porcelain", "main", "--", "a.md").stdout
    cli = [line.split()[0] for line in porcelain.splitlines() if line[:40].isalnum() and len(line.split()) >= 3]
    assert [b.commit for b in lines] == [c for c in cli if len(c) == 40]


def test_blame_of_an_empty_or_missing_file(store: SyncGitFileStore) -> None:
    store.write("empty.md", "", expected=None)
    assert store.blame("empty.md") == []
    with pytest.raises(MemoryStoreError) as err:
        store.blame("missing.md")
    assert err.value.code == "not_found"

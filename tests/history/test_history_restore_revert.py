"""restore and revert: one new compare-and-swap commit each, never a history rewrite."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitmem import FileFormat, GitFileStore, MemoryStoreError, Origin, SyncGitFileStore

from .conftest import Git

ADMIN = Origin("run-r", "admin", "call-r")


def _ancestor(git: Git, old: str, new: str) -> bool:
    return git("merge-base", "--is-ancestor", old, new, check=False).returncode == 0


def test_restore_brings_back_a_deleted_file(store: SyncGitFileStore, git: Git) -> None:
    v = store.write("prefs.md", "Reply in Chinese.\n", expected=None)
    before = store.head()
    store.delete("prefs.md", expected=v)
    deleted = store.head()

    version = store.restore("prefs.md", before, expected=None, origin=ADMIN)

    assert version == v and store.read("prefs.md").text == "Reply in Chinese.\n"
    (entry,) = store.log(limit=1)
    assert (entry.op, entry.paths, entry.origin) == ("restore", ("prefs.md",), ADMIN)
    assert entry.summary == f"restore prefs.md to {before[:12]}"
    assert git("log", "-1", "--format=%(trailers:key=Gitmem-Rev,valueonly)").stdout.strip() == before
    assert _ancestor(git, deleted, store.head())
    assert git("fsck", "--strict").returncode == 0


def test_restore_of_a_moved_files_old_path(store: SyncGitFileStore) -> None:
    v = store.write("notes/a.md", "kept twice\n", expected=None)
    before = store.head()
    store.move("notes/a.md", "archive/a.md", expected=v)

    assert store.restore("notes/a.md", before, expected=None) == v

    assert store.read("notes/a.md").text == store.read("archive/a.md").text == "kept twice\n"


def test_restore_to_a_revision_without_the_file_deletes_it_only_when_asked(store: SyncGitFileStore) -> None:
    empty = store.head()
    v = store.write("a.md", "x\n", expected=None)
    head, tree = store.head(), store.repo.tree_of(store.head())
    with pytest.raises(MemoryStoreError) as refused:
        store.restore("a.md", empty, expected=v)
    assert refused.value.code == "not_found" and "delete=True" in refused.value.message
    assert store.head() == head and store.repo.tree_of(store.head()) == tree
    assert store.read("a.md").version == v
    assert store.restore("a.md", empty, expected=v, delete=True) is None
    with pytest.raises(MemoryStoreError) as err:
        store.read("a.md")
    assert err.value.code == "not_found"
    assert store.log(limit=1)[0].op == "restore"


def test_restore_is_compare_and_swap(store: SyncGitFileStore) -> None:
    v1 = store.write("a.md", "1\n", expected=None)
    old = store.head()
    v2 = store.write("a.md", "2\n", expected=v1)
    head = store.head()
    with pytest.raises(MemoryStoreError) as err:
        store.restore("a.md", old, expected=v1)
    assert err.value.code == "version_mismatch"
    assert err.value.current is not None and err.value.current.version == v2
    with pytest.raises(MemoryStoreError) as err:
        store.restore("a.md", old, expected=None)
    assert err.value.code == "already_exists"
    assert store.head() == head
    # Restoring the state the file is already in commits nothing.
    assert store.restore("a.md", "main", expected=v2) == v2
    assert store.head() == head


def test_restore_holds_old_content_to_todays_rules(tmp_path: Path) -> None:
    roomy = GitFileStore.init(tmp_path / "m.git").sync
    v = roomy.write("a.md", "x" * 500 + "\n", expected=None)
    old = roomy.head()
    v = roomy.write("a.md", "short\n", expected=v)
    strict = GitFileStore.open(tmp_path / "m.git", FileFormat(max_file_bytes=100)).sync
    with pytest.raises(MemoryStoreError) as err:
        strict.restore("a.md", old, expected=v)
    assert err.value.code == "too_large"
    with pytest.raises(MemoryStoreError) as err:
        strict.restore("a.md", "no-such-rev", expected=v)
    assert err.value.code == "not_found"


def test_revert_undoes_one_change(store: SyncGitFileStore, git: Git) -> None:
    v = store.write("a.md", "one\n", expected=None)
    store.write("b.md", "b\n", expected=None)
    v = store.write("a.md", "two\n", expected=v)
    edit = store.head()
    store.write("b.md", "b2\n", expected=store.read("b.md").version)

    new = store.revert(edit, origin=ADMIN)

    assert new == store.head() and store.read("a.md").text == "one\n" and store.read("b.md").text == "b2\n"
    (entry,) = store.log(limit=1)
    assert (entry.op, entry.paths, entry.origin) == ("revert", ("a.md",), ADMIN)
    assert edit[:12] in entry.summary
    assert _ancestor(git, edit, new)
    # Undoing it again finds nothing left to undo.
    assert store.revert(edit) is None and store.head() == new


def test_revert_of_a_move_puts_the_file_back(store: SyncGitFileStore) -> None:
    v = store.write("notes/a.md", "text\n", expected=None)
    store.move("notes/a.md", "archive/a.md", expected=v)
    store.revert("main")
    assert [e.path for e in store.list()] == ["notes/a.md"]


def test_revert_refuses_when_a_later_change_touched_the_same_file(store: SyncGitFileStore) -> None:
    v = store.write("a.md", "one\n", expected=None)
    v = store.write("a.md", "two\n", expected=v)
    edit = store.head()
    v = store.write("a.md", "three\n", expected=v)
    head = store.head()

    with pytest.raises(MemoryStoreError) as err:
        store.revert(edit)

    assert err.value.code == "version_mismatch"
    assert "a.md" in err.value.message
    assert err.value.current is not None and err.value.current.version == v
    assert store.head() == head and store.read("a.md").text == "three\n"


def test_revert_refuses_to_resurrect_over_a_recreated_file(store: SyncGitFileStore) -> None:
    v = store.write("a.md", "one\n", expected=None)
    store.delete("a.md", expected=v)
    deletion = store.head()
    store.write("a.md", "another file\n", expected=None)
    with pytest.raises(MemoryStoreError) as err:
        store.revert(deletion)
    assert err.value.code == "version_mismatch" and "a.md" in err.value.message
    with pytest.raises(MemoryStoreError) as err:
        store.revert("0" * 40)
    assert err.value.code == "not_found"

"""The store contract: move and delete, and the rule that empty folders do not exist."""

from __future__ import annotations

from contract.support import Subject, error_of, git
from gitmem import FileText


def test_move_renames_in_one_change_and_returns_the_version(store: Subject) -> None:
    v = store.create("inbox/a.md", "alpha\n")
    cursor = store.cursor()
    count = store.commit_count()
    assert store.move("inbox/a.md", "archive/2024/a.md", expected=v) == v
    assert store.files() == {"archive/2024/a.md": "alpha\n"}
    assert store.read("archive/2024/a.md") == FileText("archive/2024/a.md", "alpha\n", v)
    assert error_of(store.read, "inbox/a.md").code == "not_found"
    changes = store.changes(cursor)
    assert changes.paths == ("archive/2024/a.md", "inbox/a.md")  # both sides of the move
    if count is not None:
        assert store.commit_count() == count + 1


def test_move_onto_an_existing_file_fails_carrying_the_destination(store: Subject) -> None:
    va = store.create("a.md", "a\n")
    vb = store.create("b.md", "b\n")
    exc = error_of(store.move, "a.md", "b.md", expected=va)
    assert exc.code == "already_exists"
    assert exc.current == FileText("b.md", "b\n", vb)
    assert store.files() == {"a.md": "a\n", "b.md": "b\n"}


def test_move_onto_itself_is_already_exists(store: Subject) -> None:
    va = store.create("a.md", "a\n")
    exc = error_of(store.move, "a.md", "a.md", expected=va)
    assert exc.code == "already_exists"
    assert exc.current == FileText("a.md", "a\n", va)


def test_move_from_a_stale_source_fails_with_the_current_file(store: Subject) -> None:
    v1 = store.create("a.md", "1\n")
    v2 = store.write("a.md", "2\n", expected=v1)
    exc = error_of(store.move, "a.md", "b.md", expected=v1)
    assert exc.code == "version_mismatch"
    assert exc.current == FileText("a.md", "2\n", v2)
    assert store.files() == {"a.md": "2\n"}


def test_move_of_a_missing_source_is_not_found(store: Subject) -> None:
    exc = error_of(store.move, "a.md", "b.md", expected="0" * 40)
    assert exc.code == "not_found" and exc.current is None


def test_move_checks_the_source_before_the_destination(store: Subject) -> None:
    store.create("a.md", "a\n")
    store.create("b.md", "b\n")
    exc = error_of(store.move, "a.md", "b.md", expected="0" * 40)
    assert exc.code == "version_mismatch"


def test_move_into_a_file_or_onto_a_folder_is_invalid_path(store: Subject) -> None:
    va = store.create("a.md", "a\n")
    store.create("f.md", "f\n")
    store.create("dir/x.md", "x\n")
    assert error_of(store.move, "a.md", "f.md/inside.md", expected=va).code == "invalid_path"
    assert error_of(store.move, "a.md", "dir", expected=va).code == "invalid_path"
    assert store.files() == {"a.md": "a\n", "dir/x.md": "x\n", "f.md": "f\n"}


def test_moving_the_last_file_out_of_a_folder_frees_its_name(store: Subject) -> None:
    v = store.create("a/only.md", "x\n")
    assert store.move("a/only.md", "a", expected=v) == v
    assert store.files() == {"a": "x\n"}


def test_delete_removes_the_file(store: Subject) -> None:
    v = store.create("a.md", "a\n")
    store.create("b.md", "b\n")
    cursor = store.cursor()
    assert store.delete("a.md", expected=v) is None
    assert store.files() == {"b.md": "b\n"}
    assert store.changes(cursor).paths == ("a.md",)


def test_delete_at_a_stale_version_fails_with_the_current_file(store: Subject) -> None:
    v1 = store.create("a.md", "1\n")
    v2 = store.write("a.md", "2\n", expected=v1)
    exc = error_of(store.delete, "a.md", expected=v1)
    assert exc.code == "version_mismatch"
    assert exc.current == FileText("a.md", "2\n", v2)
    assert store.files() == {"a.md": "2\n"}


def test_delete_of_a_missing_file_is_not_found(store: Subject) -> None:
    exc = error_of(store.delete, "gone.md", expected="0" * 40)
    assert exc.code == "not_found" and exc.current is None


def test_delete_of_a_folder_is_refused(store: Subject) -> None:
    store.create("dir/a.md", "a\n")
    exc = error_of(store.delete, "dir", expected="0" * 40)
    assert exc.code == "not_found" and exc.current is None
    assert store.files() == {"dir/a.md": "a\n"}


def test_empty_folders_vanish(store: Subject) -> None:
    v = store.create("a/b/c/deep.md", "d\n")
    keep = store.create("a/keep.md", "k\n")
    store.delete("a/b/c/deep.md", expected=v)
    assert [e.path for e in store.list()] == ["a/keep.md"]
    # the folders a/b and a/b/c are gone: their names can now hold files
    store.create("a/b", "now a file\n")
    store.delete("a/keep.md", expected=keep)
    assert store.files() == {"a/b": "now a file\n"}
    if store.repo is not None:
        tree = git(store.repo, "ls-tree", "-r", "-t", "--name-only", "main").stdout.split()
        assert tree == ["a", "a/b"]


def test_deleting_everything_leaves_an_empty_tree(git_store: Subject) -> None:
    v = git_store.create("x/y/z.md", "z\n")
    git_store.delete("x/y/z.md", expected=v)
    assert git(git_store.repo, "ls-tree", "main").stdout == ""  # type: ignore[arg-type]

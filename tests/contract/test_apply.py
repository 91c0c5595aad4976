"""``apply``: many files written and deleted as ONE change, each under its own expectation.

Run against both stores. A batch either lands whole (one commit on git, one
journal entry in the twin) or changes nothing, with the same error a single
``write`` or ``delete`` of the failing path would give.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from contract.support import Subject, assert_fsck_clean, error_of, git
from contract.test_bad_input import BAD_PATHS, unchanged
from gitmem import FileFormat, FileText, Origin
from gitmem.fileformat import KIB
from gitmem.model import ANY, Applied, Edit, blob_version

WHO = Origin(run_id="run-7", principal_id="alice", tool_call_id="call-3")


def test_apply_writes_and_deletes_in_one_change(store: Subject) -> None:
    va = store.create("a.md", "alpha\n")
    store.create("gone.md", "bye\n")
    cursor = store.cursor()
    count = store.commit_count()
    done = store.apply(
        [
            Edit("a.md", "alpha 2\n", expected=va),
            Edit("new/b.md", "beta\n", expected=None),
            Edit("gone.md", None),
            Edit("c.md", "gamma\n"),
        ],
        origin=WHO,
    )
    assert isinstance(done, Applied) and done.commit is not None
    assert done.versions == (blob_version(b"alpha 2\n"), blob_version(b"beta\n"), None, blob_version(b"gamma\n"))
    assert store.files() == {"a.md": "alpha 2\n", "new/b.md": "beta\n", "c.md": "gamma\n"}
    assert store.changes(cursor).paths == ("a.md", "c.md", "gone.md", "new/b.md")
    assert store.changes(None).cursor == store.changes(cursor).cursor
    if count is not None:
        assert store.commit_count() == count + 1
        assert done.commit == store.head()


def test_apply_returns_versions_the_reads_agree_with(store: Subject) -> None:
    done = store.apply([Edit("x/1.md", "one\n", expected=None), Edit("x/2.md", "two\n", expected=None)])
    assert [store.read(p).version for p in ("x/1.md", "x/2.md")] == list(done.versions)


@pytest.mark.parametrize(
    ("edit", "code", "carries"),
    [
        (Edit("a.md", "x\n", expected=None), "already_exists", "a.md"),  # must not exist, but does
        (Edit("a.md", "x\n", expected="0" * 40), "version_mismatch", "a.md"),  # stale version
        (Edit("a.md", None, expected="0" * 40), "version_mismatch", "a.md"),  # delete at a stale version
        (Edit("gone.md", None, expected="0" * 40), "not_found", None),  # delete of a missing file
        (Edit("gone.md", "x\n", expected="0" * 40), "not_found", None),  # edit of a missing file
        (Edit("dir", "x\n"), "invalid_path", None),  # a file where a folder is
        (Edit("a.md/x.md", "x\n"), "invalid_path", None),  # a file under a file
    ],
)
def test_one_failed_check_refuses_the_whole_batch(store: Subject, edit: Edit, code: str, carries: str | None) -> None:
    store.create("a.md", "alpha\n")
    store.create("dir/b.md", "beta\n")
    with unchanged(store):
        exc = error_of(store.apply, [Edit("first.md", "written first\n"), edit, Edit("last.md", "last\n")])
    assert exc.code == code, exc
    if code in ("version_mismatch", "already_exists"):
        assert exc.current == (store.read(carries) if carries is not None else None)


def test_the_error_is_the_one_a_single_call_gives(store: Subject) -> None:
    v = store.create("a.md", "alpha\n")
    store.write("a.md", "alpha 2\n", expected=v)
    alone = error_of(store.write, "a.md", "x\n", expected=v)
    batched = error_of(store.apply, [Edit("a.md", "x\n", expected=v)])
    assert (batched.code, batched.message, batched.current) == (alone.code, alone.message, alone.current)
    alone = error_of(store.delete, "a.md", expected=v)
    batched = error_of(store.apply, [Edit("a.md", None, expected=v)])
    assert (batched.code, batched.message, batched.current) == (alone.code, alone.message, alone.current)


def test_any_takes_whatever_is_there_and_none_asserts_absence(store: Subject) -> None:
    store.create("a.md", "alpha\n")
    store.apply([Edit("a.md", "overwritten\n", expected=ANY), Edit("b.md", "new\n", expected=ANY)])
    assert store.files() == {"a.md": "overwritten\n", "b.md": "new\n"}
    # expected=None on a delete: "the path holds no file" — a check that changes nothing.
    assert store.apply([Edit("never.md", None, expected=None)]).commit is None
    exc = error_of(store.apply, [Edit("a.md", None, expected=None)])
    assert exc.code == "already_exists" and exc.current == store.read("a.md")


def test_a_batch_that_changes_nothing_makes_no_change(store: Subject) -> None:
    v = store.create("a.md", "alpha\n")
    with unchanged(store):
        done = store.apply([Edit("a.md", "alpha\n", expected=v), Edit("missing.md", None)])
        assert done == Applied(None, (v, None))
        assert store.apply([]) == Applied(None, ())


def test_a_delete_and_a_create_in_one_batch_can_turn_a_file_into_a_folder(store: Subject) -> None:
    v = store.create("notes", "a file named like a folder\n")
    store.apply([Edit("notes", None, expected=v), Edit("notes/a.md", "now a folder\n", expected=None)])
    assert store.files() == {"notes/a.md": "now a folder\n"}


def test_a_collision_inside_the_batch_refuses_it(store: Subject) -> None:
    with unchanged(store):
        exc = error_of(store.apply, [Edit("x", "file\n"), Edit("x/y.md", "under the file\n")])
    assert exc.code == "invalid_path"


@pytest.mark.parametrize("bad", BAD_PATHS)
def test_every_path_is_validated_before_anything_is_written(store: Subject, bad: Any) -> None:
    with unchanged(store):
        exc = error_of(store.apply, [Edit("ok.md", "fine\n"), Edit(bad, "x\n")])
    assert exc.code == "invalid_path"


@pytest.mark.parametrize(
    ("edits", "code"),
    [
        ([Edit("a.md", "x" * (200 * KIB))], "too_large"),
        ([Edit("a.md", "nul \x00 inside\n")], "invalid_file"),
        ([Edit("a.md", "key: AKIAIOSFODNN7EXAMPLE\n")], "invalid_file"),
        ([Edit("a.md", "one\n"), Edit("a.md", "two\n")], "invalid_path"),  # a path twice
        ([Edit("a.md", 5)], "invalid_file"),  # type: ignore[arg-type]
        (["a.md"], "invalid_path"),
        ("a.md", "invalid_path"),
    ],
)
def test_every_text_is_checked_by_the_mount_rules(store: Subject, edits: Any, code: str) -> None:
    with unchanged(store):
        exc = error_of(store.apply, edits)
    assert exc.code == code


@pytest.mark.parametrize(
    "kwargs",
    [
        {"op": "Not An Op"},
        {"op": ""},
        {"op": 5},
        {"summary": "two\nlines"},
        {"summary": ""},
        {"summary": "x" * 201},
        {"trailers": [("X-Other", "v")]},
        {"trailers": [("Gitmem-Path", "forged.md")]},
        {"trailers": [("Gitmem-Run", "someone-else")]},
        {"trailers": [("Gitmem-Note", "two\nlines")]},
        {"trailers": [("Gitmem-Note", "")]},
        {"trailers": [("Gitmem-Note",)]},
        {"trailers": "Gitmem-Note: x"},
    ],
)
def test_op_summary_and_trailers_are_checked(store: Subject, kwargs: dict[str, Any]) -> None:
    with unchanged(store):
        exc = error_of(store.apply, [Edit("a.md", "x\n")], **kwargs)
    assert exc.code == "invalid_path"


def test_a_full_memory_refuses_a_batch_and_a_delete_makes_room(make_store: Callable[..., Subject]) -> None:
    store = make_store(FileFormat(max_files=2, max_memory_bytes=1000))
    va = store.create("a.md", "a\n")
    store.create("b.md", "b\n")
    with unchanged(store):
        assert error_of(store.apply, [Edit("c.md", "c\n")]).code == "memory_full"
        assert error_of(store.apply, [Edit("b.md", "b" * 999)]).code == "memory_full"
    store.apply([Edit("a.md", None, expected=va), Edit("c.md", "c\n", expected=None)])
    assert sorted(store.files()) == ["b.md", "c.md"]


def test_the_commit_names_the_change_and_every_path(git_store: Subject) -> None:
    store = git_store
    v = store.create("r/1.md", "one\n")
    store.create("r/old.md", "old\n")
    done = store.apply(
        [Edit("r/1.md", "one again\n", expected=v), Edit("r/2.md", "two\n"), Edit("r/old.md", None), Edit("x.md", None)],
        origin=WHO,
        op="record-put",
        summary="put records 1 and 2",
        trailers=[("Gitmem-Record", "r-1"), ("Gitmem-Record", "r-2")],
    )
    assert done.commit == store.head()
    message = git(store.repo, "log", "-1", "--format=%B", "refs/heads/main").stdout  # type: ignore[arg-type]
    assert message == (
        "put records 1 and 2\n\n"
        "Gitmem-Op: record-put\n"
        "Gitmem-Path: r/1.md\nGitmem-Path: r/2.md\nGitmem-Path: r/old.md\n"
        "Gitmem-Run: run-7\nGitmem-Principal: alice\nGitmem-Tool-Call: call-3\n"
        "Gitmem-Record: r-1\nGitmem-Record: r-2\n\n"
    )
    assert git(store.repo, "log", "-1", "--format=%an", "refs/heads/main").stdout.strip() == "alice"  # type: ignore[arg-type]
    entry = store.log(limit=1)[0]
    assert (entry.op, entry.paths, entry.origin, entry.summary) == (
        "record-put",
        ("r/1.md", "r/2.md", "r/old.md"),
        WHO,
        "put records 1 and 2",
    )
    assert [e.commit for e in store.log("r/2.md")] == [done.commit]
    assert_fsck_clean(store.repo)  # type: ignore[arg-type]


def test_the_default_summary_names_the_op_and_paths(git_store: Subject) -> None:
    git_store.apply([Edit("a.md", "a\n"), Edit("b.md", "b\n")])
    assert git_store.log(limit=1)[0].summary == "apply a.md, b.md"


def test_write_move_and_delete_are_batches_of_one(store: Subject) -> None:
    """The single calls and their batch forms leave the same files and versions."""
    v = store.create("a.md", "a\n")
    assert store.move_many([("a.md", "b.md", v)]) == [v]
    store.delete_many([("b.md", v)])
    assert store.files() == {}
    assert store.move_many([]) == [] and store.delete_many([]) is None


def test_move_many_and_delete_many_are_all_or_nothing(store: Subject) -> None:
    va = store.create("box/a.md", "a\n")
    vb = store.create("box/b.md", "b\n")
    store.create("taken.md", "t\n")
    with unchanged(store):
        assert error_of(store.move_many, [("box/a.md", "c/a.md", va), ("box/b.md", "taken.md", vb)]).code == (
            "already_exists"
        )
        assert error_of(store.delete_many, [("box/a.md", va), ("box/b.md", "0" * 40)]).code == "version_mismatch"
        assert error_of(store.move_many, [("box/a.md", "c.md", va), ("box/a.md", "d.md", va)]).code == "invalid_path"
    assert store.move_many([("box/a.md", "c/a.md", va), ("box/b.md", "c/b.md", vb)]) == [va, vb]
    assert store.files() == {"c/a.md": "a\n", "c/b.md": "b\n", "taken.md": "t\n"}
    store.delete_many([("c/a.md", va), ("c/b.md", vb)])
    assert store.files() == {"taken.md": "t\n"}
    assert error_of(store.read, "c/a.md").code == "not_found"
    assert store.read("taken.md") == FileText("taken.md", "t\n", blob_version(b"t\n"))

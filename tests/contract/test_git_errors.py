"""No pygit2 or OS exception leaks out of the git store: each becomes a store error."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contract.support import Subject, error_of, git
from gitmem import GitFileStore, MemoryStoreError


def every_call(s: Subject, version: str) -> list[tuple[str, Callable[[], Any]]]:
    return [
        ("list", s.list),
        ("read", lambda: s.read("a.md")),
        ("create", lambda: s.write("new.md", "x\n", expected=None)),
        ("edit", lambda: s.write("a.md", "x\n", expected=version)),
        ("move", lambda: s.move("a.md", "b.md", expected=version)),
        ("delete", lambda: s.delete("a.md", expected=version)),
        ("changes", lambda: s.changes(None)),
        ("search", lambda: s.search("x")),
        ("purge", s.purge),
    ]


def test_a_memory_removed_under_an_open_store_answers_memory_deleted(git_store: Subject) -> None:
    assert git_store.repo is not None
    version = git_store.create("a.md", "a\n")
    git_store.list()
    shutil.rmtree(git_store.repo)
    for name, call in every_call(git_store, version):
        exc = error_of(call)
        assert exc.code == "memory_deleted", (name, exc)


def test_opening_a_missing_memory_is_memory_deleted(tmp_path: Path) -> None:
    with pytest.raises(MemoryStoreError) as info:
        GitFileStore.open(tmp_path / "nothing.git")
    assert info.value.code == "memory_deleted"


def test_initialising_over_an_existing_memory_is_refused(git_store: Subject) -> None:
    assert git_store.repo is not None
    with pytest.raises(MemoryStoreError) as info:
        GitFileStore.init(git_store.repo)
    assert info.value.code == "already_exists"
    assert git_store.list() == []


def test_a_main_pointing_at_a_missing_commit_is_unavailable(git_store: Subject) -> None:
    assert git_store.repo is not None
    version = git_store.create("a.md", "a\n")
    (git_store.repo / "refs/heads/main").write_text("1" * 40 + "\n")
    for name, call in every_call(git_store, version):
        if name in ("purge", "changes"):
            # purge replaces main whatever it points at; changes only hands out the ref's
            # value (a full resync), and the listing that follows is what fails
            call()
            continue
        try:
            call()
        except MemoryStoreError as exc:
            assert exc.code == "unavailable", (name, exc)
        else:
            raise AssertionError(f"{name} answered from a broken ref")


def test_a_memory_without_main_is_unavailable(git_store: Subject) -> None:
    assert git_store.repo is not None
    git(git_store.repo, "update-ref", "-d", "refs/heads/main")
    assert error_of(git_store.list).code == "unavailable"
    assert error_of(git_store.write, "a.md", "x\n", expected=None).code == "unavailable"


def test_a_write_onto_a_symlink_or_submodule_pushed_by_plain_git_is_refused(git_store: Subject) -> None:
    """gitmem never lists such entries, so replacing one would destroy what it cannot show."""
    repo = git_store.repo
    assert repo is not None
    version = git_store.create("a.md", "a\n")
    before = git_store.head()
    assert before is not None
    link = git(repo, "hash-object", "-w", "--stdin", input="a.md").stdout.strip()
    listing = git(repo, "ls-tree", "main").stdout
    entries = f"{listing}120000 blob {link}\tlink.md\n160000 commit {before}\tsub.md\n"
    tree = git(repo, "mktree", input=entries).stdout.strip()
    commit = git(repo, "commit-tree", tree, "-p", before, "-m", "plain git").stdout.strip()
    git(repo, "update-ref", "refs/heads/main", commit, before)
    sync = git_store.store

    for target in ("link.md", "sub.md"):
        refusals = [
            error_of(git_store.write, target, "x\n", expected=None),
            error_of(git_store.move, "a.md", target, expected=version),
            error_of(git_store.delete, target, expected=link),
            error_of(sync.restore, target, before, expected=None),
        ]
        for exc in refusals:
            assert exc.code == "invalid_path" and "remove it with git" in exc.message, exc

    assert git_store.head() == commit
    assert git(repo, "ls-tree", "main").stdout == git(repo, "ls-tree", commit).stdout
    assert [e.path for e in git_store.list()] == ["a.md"]


@pytest.mark.parametrize(
    ("key", "value"),
    [("gitmem.maxFiles", "lots"), ("gitmem.maxFileBytes", "0"), ("gitmem.maxMemoryBytes", "-5"), ("gitmem.maxPathBytes", "")],
)
def test_a_bad_limit_in_the_config_is_unavailable_naming_the_key(git_store: Subject, key: str, value: str) -> None:
    assert git_store.repo is not None
    git(git_store.repo, "config", key, value)
    with pytest.raises(MemoryStoreError) as info:
        GitFileStore.open(git_store.repo)
    assert info.value.code == "unavailable"
    assert key in info.value.message and repr(value) in info.value.message


def test_limits_in_the_config_read_as_git_reads_integers(git_store: Subject) -> None:
    assert git_store.repo is not None
    git(git_store.repo, "config", "gitmem.maxFileBytes", "2k")
    git(git_store.repo, "config", "gitmem.maxFiles", " 7 ")
    fmt = GitFileStore.open(git_store.repo).format
    assert (fmt.max_file_bytes, fmt.max_files) == (2048, 7)

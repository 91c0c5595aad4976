"""The store contract: ``changes(since)`` cursors, and ``purge`` (which on git destroys history)."""

from __future__ import annotations

import pytest

from contract.support import Subject, assert_fsck_clean, error_of, git
from gitmem import Changes, FullResync, GitFileStore


def test_no_cursor_means_full_resync(store: Subject) -> None:
    answer = store.changes(None)
    assert isinstance(answer, FullResync)
    assert isinstance(answer.cursor, str) and answer.cursor


def test_a_fresh_cursor_lists_nothing(store: Subject) -> None:
    store.create("a.md", "a\n")
    cursor = store.cursor()
    assert store.changes(cursor) == Changes(cursor, ())


def test_changes_lists_created_edited_and_deleted_paths_once(store: Subject) -> None:
    va = store.create("a.md", "a\n")
    vb = store.create("dir/b.md", "b\n")
    store.create("untouched.md", "u\n")
    cursor = store.cursor()
    store.create("dir/new.md", "n\n")
    va = store.write("a.md", "a2\n", expected=va)
    va = store.write("a.md", "a3\n", expected=va)
    store.delete("dir/b.md", expected=vb)
    answer = store.changes(cursor)
    assert isinstance(answer, Changes)
    assert answer.paths == ("a.md", "dir/b.md", "dir/new.md")
    assert answer.cursor != cursor
    assert store.changes(answer.cursor).paths == ()


def test_changes_lists_the_net_difference_since_the_cursor(store: Subject) -> None:
    va = store.create("a.md", "a\n")
    cursor = store.cursor()
    vx = store.create("x.md", "short-lived\n")
    store.delete("x.md", expected=vx)
    va2 = store.write("a.md", "a2\n", expected=va)
    store.write("a.md", "a\n", expected=va2)  # edited back to what the cursor saw
    vb = store.create("b.md", "b\n")
    moved = store.move("b.md", "c.md", expected=vb)
    store.move("c.md", "b.md", expected=moved)
    answer = store.changes(cursor)
    assert isinstance(answer, Changes) and answer.paths == ("b.md",)


def test_the_returned_cursor_never_skips_a_later_change(store: Subject) -> None:
    c0 = store.cursor()
    store.create("one.md", "1\n")
    first = store.changes(c0)
    assert isinstance(first, Changes) and first.paths == ("one.md",)
    store.create("two.md", "2\n")
    second = store.changes(first.cursor)
    assert isinstance(second, Changes) and second.paths == ("two.md",)


def test_an_old_cursor_stays_valid_across_many_changes(store: Subject) -> None:
    c0 = store.cursor()
    versions = {}
    for i in range(12):
        versions[f"f{i % 4}.md"] = store.write(f"f{i % 4}.md", f"{i}\n", expected=versions.get(f"f{i % 4}.md"))
    assert store.changes(c0).paths == ("f0.md", "f1.md", "f2.md", "f3.md")


@pytest.mark.parametrize(
    "since",
    ["", "garbage", "0" * 40, "f" * 40, "G" * 40, "mem:9:9", "mem:x:y", "a" * 39, "a" * 64, "main", "HEAD~1"],
)
def test_malformed_or_unknown_cursor_means_full_resync(store: Subject, since: str) -> None:
    store.create("a.md", "a\n")
    answer = store.changes(since)
    assert isinstance(answer, FullResync)
    assert answer.cursor == store.cursor()


def test_a_cursor_that_is_not_a_string_means_full_resync(store: Subject) -> None:
    assert isinstance(store.changes(42), FullResync)  # type: ignore[arg-type]


def test_purge_empties_the_memory_and_invalidates_cursors(store: Subject) -> None:
    store.create("a.md", "a\n")
    store.create("dir/b.md", "b\n")
    c1 = store.cursor()
    store.purge()
    assert store.list() == []
    assert error_of(store.read, "a.md").code == "not_found"
    assert isinstance(store.changes(c1), FullResync)
    # the memory is usable again, with working cursors
    c2 = store.cursor()
    store.create("a.md", "again\n")
    assert store.changes(c2).paths == ("a.md",)
    assert isinstance(store.changes(c1), FullResync)


def test_purge_of_an_empty_memory_is_fine(store: Subject) -> None:
    store.purge()
    assert store.list() == []


def test_purge_destroys_git_history(git_store: Subject) -> None:
    repo = git_store.repo
    assert repo is not None
    secret = "the thing to forget\n"
    v = git_store.create("notes/a.md", secret)
    v = git_store.write("notes/a.md", "edited\n", expected=v)
    old_head = git_store.head()
    assert old_head is not None
    git(repo, "update-ref", "refs/heads/side", old_head)
    git(repo, "cat-file", "-e", v)
    git_store.purge()
    for gone in (v, old_head):
        assert git(repo, "cat-file", "-e", gone, check=False).returncode != 0
    # nothing reachable from any ref, reflog or pack holds the old content; the one other
    # ref is the erasure ledger, which names the purged blobs by id only
    ledger = "refs/gitmem/erasures"
    assert git(repo, "rev-list", f"--exclude={ledger}", "--all").stdout.split() == [git_store.head()]
    assert git(repo, "ls-tree", "-r", "main").stdout == ""
    assert git(repo, "for-each-ref", "--format=%(refname)").stdout.split() == [ledger, "refs/heads/main"]
    found = git(repo, "grep", "-I", "-e", "forget", "-e", "edited", *git(repo, "rev-list", "--all").stdout.split(), check=False)
    assert found.stdout == ""
    assert v in git(repo, "show", f"{ledger}:entries.jsonl").stdout
    assert_fsck_clean(repo)


def test_purge_on_git_also_drops_packed_objects(git_store: Subject) -> None:
    repo = git_store.repo
    assert repo is not None
    v = git_store.create("a.md", "packed away\n")
    git(repo, "gc", "--quiet")
    git(repo, "cat-file", "-e", v)
    git_store.purge()
    assert git(repo, "cat-file", "-e", v, check=False).returncode != 0
    assert_fsck_clean(repo)
    git_store.create("b.md", "after\n")
    assert git_store.files() == {"b.md": "after\n"}


def test_a_git_cursor_off_the_current_line_means_full_resync(git_store: Subject) -> None:
    repo = git_store.repo
    assert repo is not None
    git_store.create("a.md", "a\n")
    # a commit that exists but is not an ancestor of main
    tree = git(repo, "rev-parse", "main^{tree}").stdout.strip()
    orphan = git(repo, "commit-tree", tree, "-m", "orphan").stdout.strip()
    assert isinstance(git_store.changes(orphan), FullResync)
    # a blob id is not a commit
    blob = git_store.read("a.md").version
    assert isinstance(git_store.changes(blob), FullResync)


def test_a_purge_through_another_handle_is_seen_by_this_one(git_store: Subject) -> None:
    """Two handles stand for two processes, each a long-lived thread: the one that did
    not purge must not answer from caches holding the purged commits and objects."""
    assert git_store.repo is not None
    here = git_store.store
    there = GitFileStore.open(git_store.repo).sync
    v = here.write("a.md", "before the purge\n", expected=None)
    cursor = here.head()
    assert here.read("a.md").version == v  # warm this handle's caches
    assert here.changes(cursor) == Changes(cursor, ())
    there.purge()
    assert isinstance(here.changes(cursor), FullResync)
    assert here.list() == []
    assert error_of(here.read, "a.md").code == "not_found"
    assert error_of(here.read, "a.md", rev=cursor).code == "not_found"
    here.write("b.md", "after\n", expected=None)
    assert [e.path for e in there.list()] == ["b.md"]

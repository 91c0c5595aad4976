"""log: newest first, with op, paths and origin from the trailers, filtered and following moves."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gitmem import MemoryStoreError, Origin, SyncGitFileStore

from .conftest import Git

ALICE = Origin("run-1", "alice", "call-1")
BOB = Origin("run-2", "bob", "call-2")


def test_log_lists_every_change_newest_first_like_git(store: SyncGitFileStore, git: Git) -> None:
    v = store.write("notes/a.md", "one\n", expected=None, origin=ALICE)
    v = store.write("notes/a.md", "two\n", expected=v, origin=BOB)
    v = store.move("notes/a.md", "archive/a.md", expected=v, origin=ALICE)
    store.delete("archive/a.md", expected=v, origin=BOB)

    entries = store.log()

    assert [e.commit for e in entries] == git("log", "--format=%H").stdout.split()
    assert [e.op for e in entries] == ["delete", "move", "edit", "create", "init"]
    assert entries[1].paths == ("notes/a.md", "archive/a.md")
    assert entries[1].summary == "move notes/a.md → archive/a.md"
    assert entries[0].origin == BOB and entries[0].author == "bob"
    assert entries[3].origin == ALICE
    assert all(e.time.tzinfo is not None for e in entries)
    assert entries[0].time >= entries[-1].time


def test_log_filters_by_run_principal_and_tool_call(store: SyncGitFileStore) -> None:
    a = store.write("a.md", "a\n", expected=None, origin=ALICE)
    store.write("b.md", "b\n", expected=None, origin=BOB)
    store.write("a.md", "a2\n", expected=a, origin=Origin("run-2", "alice", "call-3"))

    assert [e.summary for e in store.log(run="run-1")] == ["create a.md"]
    assert [e.summary for e in store.log(run="run-2")] == ["edit a.md", "create b.md"]
    assert [e.summary for e in store.log(principal="alice")] == ["edit a.md", "create a.md"]
    assert [e.summary for e in store.log(tool_call="call-2")] == ["create b.md"]
    assert [e.summary for e in store.log(run="run-2", principal="alice")] == ["edit a.md"]
    assert store.log(run="run-9") == []
    assert [e.summary for e in store.log("a.md", principal="bob")] == []


def test_path_log_follows_the_file_across_a_move(store: SyncGitFileStore, git: Git) -> None:
    v = store.write("notes/a.md", "one\n", expected=None, origin=ALICE)
    store.write("other.md", "x\n", expected=None)
    v = store.write("notes/a.md", "two\n", expected=v, origin=BOB)
    v = store.move("notes/a.md", "archive/a.md", expected=v, origin=ALICE)
    store.write("archive/a.md", "three\n", expected=v)
    store.write("notes/a.md", "a new file under the old name\n", expected=None)

    entries = store.log("archive/a.md")

    assert [e.op for e in entries] == ["edit", "move", "edit", "create"]
    assert entries[1].paths == ("notes/a.md", "archive/a.md")
    assert [e.paths for e in entries[2:]] == [("notes/a.md",), ("notes/a.md",)]
    follow = git("log", "--follow", "--format=%H", "--", "archive/a.md").stdout.split()
    assert [e.commit for e in entries] == follow
    # The old name has its own history: the file that lived there, then the new one.
    assert [e.op for e in store.log("notes/a.md")] == ["create", "move", "edit", "create"]


def test_path_log_follows_a_rename_made_by_plain_git(store: SyncGitFileStore, worktree: Callable[..., str]) -> None:
    store.write("draft.md", "a long enough body for rename detection\nline two\nline three\n", expected=None)
    worktree("pull", "-q", "--ff-only", "origin", "main")
    worktree("mv", "draft.md", "final.md")
    worktree("commit", "-q", "-m", "rename by hand")
    worktree("push", "-q", "origin", "main")
    store.write(
        "final.md",
        "a long enough body for rename detection\nline two\nline 3\n",
        expected=store.read("final.md").version,
    )

    entries = store.log("final.md")

    assert [e.op for e in entries] == ["edit", "unknown", "create"]
    assert entries[1].paths == ("draft.md", "final.md")
    assert entries[1].summary == "rename by hand"
    assert entries[2].paths == ("draft.md",)


def test_since_and_until_take_revisions_or_datetimes(store: SyncGitFileStore) -> None:
    v = store.write("a.md", "1\n", expected=None)
    first = store.head()
    v = store.write("a.md", "2\n", expected=v)
    second = store.head()
    store.write("a.md", "3\n", expected=v)

    assert [e.summary for e in store.log(since=first)] == ["edit a.md", "edit a.md"]
    assert [e.commit for e in store.log("a.md", until=second)] == [second, first]
    assert [e.commit for e in store.log(since=first, until=second)] == [second]
    now = datetime.now(UTC)
    assert len(store.log(since=now - timedelta(hours=1))) == 4
    assert store.log(since=now + timedelta(hours=1)) == []
    assert store.log(until=now - timedelta(hours=1)) == []
    naive = (now + timedelta(hours=1)).replace(tzinfo=None)
    assert len(store.log(until=naive)) == 4


def test_limit_cuts_the_newest(store: SyncGitFileStore) -> None:
    v = store.write("a.md", "0\n", expected=None)
    for i in range(1, 6):
        v = store.write("a.md", f"{i}\n", expected=v)
    assert len(store.log("a.md", limit=3)) == 3
    assert store.log(limit=1)[0].commit == store.head()


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"limit": 0}, "invalid_pattern"),
        ({"limit": True}, "invalid_pattern"),
        ({"run": ""}, "invalid_pattern"),
        ({"since": 5}, "invalid_pattern"),
        ({"since": "no-such-rev"}, "not_found"),
        ({"until": "0" * 40}, "not_found"),
        ({"path": "../x"}, "invalid_path"),
    ],
)
def test_bad_arguments_are_refused_with_a_code(store: SyncGitFileStore, kwargs: dict[str, object], code: str) -> None:
    with pytest.raises(MemoryStoreError) as err:
        store.log(**kwargs)  # type: ignore[arg-type]
    assert err.value.code == code


def test_plain_git_commits_are_judged_by_their_trees_not_their_trailers(
    store: SyncGitFileStore, git: Git, worktree: Callable[..., str]
) -> None:
    store.write("a.md", "a\n", expected=None)
    store.write("b.md", "b\n", expected=None)
    worktree("pull", "-q", "--ff-only", "origin", "main")
    # A person's commit that copied gitmem trailers naming a.md but changed b.md.
    Path(worktree.path, "b.md").write_text("b by hand\n")  # type: ignore[attr-defined]
    worktree("commit", "-q", "-am", "edit a.md\n\nGitmem-Op: edit\nGitmem-Path: a.md")
    # A side branch merged back: its edit shows, the merge itself does not (as in git log).
    worktree("checkout", "-q", "-b", "side")
    Path(worktree.path, "b.md").write_text("b on the side\n")  # type: ignore[attr-defined]
    worktree("commit", "-q", "-am", "side edit")
    worktree("checkout", "-q", "main")
    Path(worktree.path, "c.md").write_text("c\n")  # type: ignore[attr-defined]
    worktree("add", "c.md")
    worktree("commit", "-q", "-m", "add c")
    worktree("merge", "-q", "--no-ff", "-m", "merge side", "side")
    worktree("push", "-q", "origin", "main")

    entries = store.log("b.md")

    assert [e.summary for e in entries] == ["side edit", "edit a.md", "create b.md"]
    assert [e.commit for e in entries] == git("log", "--format=%H", "--", "b.md").stdout.split()
    assert [e.summary for e in store.log("a.md")] == ["create a.md"]

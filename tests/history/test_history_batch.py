"""move_many / delete_many: several files changed as ONE commit, all or nothing.

What a user relies on: a folder rename or delete is one commit naming every path
in its trailers; one stale version, taken destination or folder/file collision
refuses the whole batch with the head unchanged; and ``log`` and ``forget``
still follow a file through a folder rename.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gitmem import GitFileStore, MemoryStoreError, Origin, SyncGitFileStore
from gitmem.provenance import commit_message, parse_message

from .conftest import Git

ALICE = Origin("run-1", "alice", "toolu_1")


def commits(git: Git) -> int:
    return int(git("rev-list", "--count", "main").stdout)


def tree(git: Git) -> list[str]:
    return git("ls-tree", "-r", "--name-only", "main").stdout.split()


def fill(store: SyncGitFileStore, *names: str) -> dict[str, str]:
    return {name: store.write(name, f"{name}\n", expected=None) for name in names}


def fsck_clean(git: Git) -> None:
    done = git("fsck", "--strict", check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_folder_rename_is_one_commit_naming_every_path(store: SyncGitFileStore, git: Git) -> None:
    v = fill(store, "box/a.md", "box/sub/b.md", "keep.md")
    before = commits(git)

    got = store.move_many(
        [("box/a.md", "crate/a.md", v["box/a.md"]), ("box/sub/b.md", "crate/sub/b.md", v["box/sub/b.md"])],
        origin=ALICE,
    )

    assert got == [v["box/a.md"], v["box/sub/b.md"]], "the files' versions, unchanged by the move"
    assert commits(git) == before + 1
    assert tree(git) == ["crate/a.md", "crate/sub/b.md", "keep.md"], "the emptied folder vanished"
    message = git("log", "-1", "--format=%B").stdout
    assert git("log", "-1", "--format=%(trailers:key=Gitmem-Path,valueonly,separator=%x20)").stdout.split() == [
        "crate/a.md",
        "crate/sub/b.md",
    ]
    assert git("log", "-1", "--format=%(trailers:key=Gitmem-From,valueonly,separator=%x20)").stdout.split() == [
        "box/a.md",
        "box/sub/b.md",
    ]
    info = parse_message(message)
    assert info.op == "move" and info.origin == ALICE
    assert info.moves() == (("box/a.md", "crate/a.md"), ("box/sub/b.md", "crate/sub/b.md"))
    entry = store.log(limit=1)[0]
    assert entry.op == "move" and entry.paths == ("box/a.md", "crate/a.md", "box/sub/b.md", "crate/sub/b.md")
    fsck_clean(git)


def test_log_follows_a_file_through_folder_renames(store: SyncGitFileStore) -> None:
    v = fill(store, "box/a.md", "box/b.md")
    v2 = store.write("box/b.md", "b edited\n", expected=v["box/b.md"])
    store.move_many([("box/a.md", "crate/a.md", v["box/a.md"]), ("box/b.md", "crate/b.md", v2)])
    store.write("other.md", "unrelated\n", expected=None)
    store.move_many([("crate/a.md", "bin/x/a.md", v["box/a.md"]), ("crate/b.md", "bin/x/b.md", v2)])

    assert [e.summary for e in store.log("bin/x/b.md")] == [
        "move 2 files: crate/a.md → bin/x/a.md, crate/b.md → bin/x/b.md",
        "move 2 files: box/a.md → crate/a.md, box/b.md → crate/b.md",
        "edit box/b.md",
        "create box/b.md",
    ]
    assert [e.op for e in store.log("bin/x/a.md")] == ["move", "move", "create"]
    assert store.log("box/b.md")[0].op == "move", "the old name's history ends with the rename"


def test_forget_follows_a_file_through_a_folder_rename(store: SyncGitFileStore, git: Git) -> None:
    v = fill(store, "box/a.md", "box/b.md")
    store.move_many([("box/a.md", "crate/a.md", v["box/a.md"]), ("box/b.md", "crate/b.md", v["box/b.md"])])

    report = store.forget("crate/a.md")

    assert set(report.names) == {"crate/a.md", "box/a.md"}
    assert git("cat-file", "-e", v["box/a.md"], check=False).returncode != 0, "the old name's content is erased"
    assert store.read("crate/b.md").text == "box/b.md\n"


def test_one_stale_version_moves_nothing(store: SyncGitFileStore, git: Git) -> None:
    v = fill(store, "box/a.md", "box/b.md", "box/c.md")
    newer = store.write("box/b.md", "changed meanwhile\n", expected=v["box/b.md"])
    head = store.head()

    with pytest.raises(MemoryStoreError) as caught:
        store.move_many([(f"box/{n}.md", f"crate/{n}.md", v[f"box/{n}.md"]) for n in "abc"])

    assert caught.value.code == "version_mismatch"
    assert caught.value.current is not None
    assert (caught.value.current.path, caught.value.current.version) == ("box/b.md", newer)
    assert store.head() == head
    assert tree(git) == ["box/a.md", "box/b.md", "box/c.md"]


def test_a_missing_source_moves_nothing(store: SyncGitFileStore) -> None:
    v = fill(store, "box/a.md", "box/b.md")
    store.delete("box/b.md", expected=v["box/b.md"])
    head = store.head()
    with pytest.raises(MemoryStoreError) as caught:
        store.move_many([("box/a.md", "x/a.md", v["box/a.md"]), ("box/b.md", "x/b.md", v["box/b.md"])])
    assert caught.value.code == "not_found" and caught.value.current is None
    assert store.head() == head


def test_a_taken_destination_moves_nothing(store: SyncGitFileStore) -> None:
    v = fill(store, "box/a.md", "box/b.md", "crate/b.md")
    head = store.head()
    with pytest.raises(MemoryStoreError) as caught:
        store.move_many([("box/a.md", "crate/a.md", v["box/a.md"]), ("box/b.md", "crate/b.md", v["box/b.md"])])
    assert caught.value.code == "already_exists"
    assert caught.value.current is not None and caught.value.current.path == "crate/b.md"
    assert store.head() == head
    with pytest.raises(MemoryStoreError) as caught:  # a swap names a destination that exists
        store.move_many([("box/a.md", "box/b.md", v["box/a.md"]), ("box/b.md", "box/a.md", v["box/b.md"])])
    assert caught.value.code == "already_exists"
    assert store.head() == head


@pytest.mark.parametrize(
    "destinations",
    [
        ("crate/a.md", "folder"),  # a file where a folder is
        ("crate/a.md", "file.md/b.md"),  # a folder below a file
        ("crate/a.md", "crate/a.md/b.md"),  # two destinations collide with each other
        ("crate/a.md", "crate/a.md"),  # the same destination twice
        ("crate/a.md", "../b.md"),  # not a path
    ],
)
def test_collisions_and_bad_paths_move_nothing(
    store: SyncGitFileStore, git: Git, destinations: tuple[str, str]
) -> None:
    v = fill(store, "box/a.md", "box/b.md", "folder/x.md", "file.md")
    head = store.head()
    with pytest.raises(MemoryStoreError) as caught:
        store.move_many([("box/a.md", destinations[0], v["box/a.md"]), ("box/b.md", destinations[1], v["box/b.md"])])
    assert caught.value.code == "invalid_path"
    assert store.head() == head
    fsck_clean(git)


def test_bad_batches_are_refused(store: SyncGitFileStore) -> None:
    v = fill(store, "a.md")
    for bad in ("a.md", [("a.md", "b.md")], [("a.md", "b.md", v["a.md"]), ("a.md", "c.md", v["a.md"])], None):
        with pytest.raises(MemoryStoreError) as caught:
            store.move_many(bad)  # type: ignore[arg-type]
        assert caught.value.code == "invalid_path", bad
    head = store.head()
    assert store.move_many([]) == [] and store.head() == head, "an empty batch commits nothing"


def test_a_folder_delete_is_one_commit_or_nothing(store: SyncGitFileStore, git: Git) -> None:
    v = fill(store, "box/a.md", "box/sub/b.md", "box/c.md", "keep.md")
    newer = store.write("box/c.md", "changed meanwhile\n", expected=v["box/c.md"])
    head, before = store.head(), commits(git)

    with pytest.raises(MemoryStoreError) as caught:
        store.delete_many([(p, v[p]) for p in ("box/a.md", "box/sub/b.md", "box/c.md")], origin=ALICE)
    assert caught.value.code == "version_mismatch"
    assert caught.value.current is not None and caught.value.current.path == "box/c.md"
    assert store.head() == head and len(tree(git)) == 4

    store.delete_many(
        [("box/a.md", v["box/a.md"]), ("box/sub/b.md", v["box/sub/b.md"]), ("box/c.md", newer)], origin=ALICE
    )
    assert commits(git) == before + 1
    assert tree(git) == ["keep.md"], "the emptied folders vanished"
    entry = store.log(limit=1)[0]
    assert entry.op == "delete" and entry.paths == ("box/a.md", "box/sub/b.md", "box/c.md")
    assert entry.origin == ALICE
    assert [e.op for e in store.log("box/sub/b.md")] == ["delete", "create"]
    fsck_clean(git)


def test_the_async_twins_commit_once(tmp_path: Path) -> None:
    store = GitFileStore.init(tmp_path / "m.git")

    async def script() -> list[str]:
        a = await store.write("box/a.md", "a\n", expected=None)
        b = await store.write("box/b.md", "b\n", expected=None)
        await store.move_many([("box/a.md", "c/a.md", a), ("box/b.md", "c/b.md", b)], origin=ALICE)
        moved = [e.path for e in await store.list()]
        await store.delete_many([("c/a.md", a), ("c/b.md", b)], origin=ALICE)
        return moved

    assert asyncio.run(script()) == ["c/a.md", "c/b.md"]
    assert asyncio.run(store.list()) == []
    assert [e.op for e in store.sync.log(limit=4)] == ["delete", "move", "create", "create"]


def test_single_move_messages_are_unchanged() -> None:
    message = commit_message("move", ("a.md", "b.md"), ALICE)
    assert message.startswith("move a.md → b.md\n\nGitmem-Op: move\nGitmem-Path: b.md\nGitmem-From: a.md\n")
    info = parse_message(message)
    assert info.paths == ("a.md", "b.md") and info.moves() == (("a.md", "b.md"),)
    assert parse_message(commit_message("delete", ("a.md", "b.md"), ALICE)).moves() == ()

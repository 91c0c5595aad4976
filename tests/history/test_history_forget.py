"""forget: a path and all its versions leave every commit, checked with the real git CLI."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gitmem import Changes, FullResync, GitFileStore, MemoryStoreError, Origin, SyncGitFileStore

from .conftest import Git

ALICE = Origin("run-1", "alice", "call-1")
ADMIN = Origin("run-9", "admin", "call-9")
KEEP_FORMAT = "%s|%an|%ae|%at|%cn|%ct|%(trailers:only,unfold)"


def _secret_history(store: SyncGitFileStore) -> tuple[list[str], str]:
    """A secret that was edited and moved, beside a file that must survive; returns its versions."""
    versions = [store.write("secret.md", "token one\n", expected=None, origin=ALICE)]
    store.write("keep.md", "keep\n", expected=None, origin=ALICE)
    versions.append(store.write("secret.md", "token two\n", expected=versions[-1], origin=ALICE))
    moved = store.move("secret.md", "notes/secret.md", expected=versions[-1], origin=ALICE)
    versions.append(store.write("notes/secret.md", "token three\n", expected=moved, origin=ALICE))
    keep = store.write("keep.md", "keep 2\n", expected=store.read("keep.md").version, origin=ALICE)
    return versions, keep


def _gone(git: Git, versions: list[str], *names: str) -> None:
    for blob in versions:
        assert git("cat-file", "-e", blob, check=False).returncode != 0, blob
    assert git("log", "--all", "--format=%H", "--", *names).stdout == ""
    listed = git("rev-list", "--objects", "--all").stdout
    for text in (*versions, *names):
        assert text not in listed
    assert git("fsck", "--strict", "--no-dangling").returncode == 0


def test_forget_erases_every_version_under_every_name(store: SyncGitFileStore, git: Git) -> None:
    versions, keep = _secret_history(store)
    keep_log = git("log", f"--format={KEEP_FORMAT}", "--", "keep.md").stdout
    commits_before = len(git("rev-list", "main").stdout.split())

    report = store.forget("notes/secret.md", origin=ADMIN)

    _gone(git, versions, "notes/secret.md", "secret.md")
    assert report.names == ("notes/secret.md", "secret.md")
    assert set(report.erased_versions) == set(versions) and report.shared_versions == ()
    assert report.head == store.head() and report.refs_updated == ("refs/heads/main",)
    # keep.md: same content, same history with the same messages, people, times and trailers.
    assert store.read("keep.md").version == keep
    assert git("log", f"--format={KEEP_FORMAT}", "--", "keep.md").stdout == keep_log
    # Commits that only touched the secret stay as empty changes, and one commit records the forget.
    assert len(git("rev-list", "main").stdout.split()) == commits_before + 1
    (entry,) = store.log(limit=1)
    assert (entry.op, entry.origin, entry.summary) == ("forget", ADMIN, f"forget (erasure {report.erasure})")
    assert [e.op for e in store.log("notes/secret.md")] == ["forget"]
    # No message of any commit names the erased path any more, the forget's own included.
    messages = git("log", "--all", "--format=%B").stdout
    assert "secret.md" not in messages and "[erased]" in messages
    assert [e.path for e in store.list()] == ["keep.md"]
    # A version read before the rewrite still works for a write after it.
    store.write("keep.md", "keep 3\n", expected=keep)


def test_cursors_older_than_the_rewrite_answer_full_resync(store: SyncGitFileStore) -> None:
    before_secret = store.head()
    store.write("keep.md", "keep\n", expected=None)
    early = store.head()
    store.write("secret.md", "token\n", expected=None)
    late = store.head()

    store.forget("secret.md")

    assert isinstance(store.changes(late), FullResync)
    # Commits from before the path existed were not rewritten: their cursors still get exact answers.
    assert store.changes(early) == Changes(store.head(), ())
    assert store.changes(before_secret) == Changes(store.head(), ("keep.md",))


def test_forget_with_packs_tags_and_branches(store: SyncGitFileStore, git: Git) -> None:
    versions, _ = _secret_history(store)
    git("tag", "light", "main~1")
    git("tag", "-a", "-m", "annotated", "annotated", "main~2")
    git("branch", "side", "main~3")
    git("gc", "--quiet")
    assert "packs: 1" in git("count-objects", "-v").stdout

    report = store.forget("notes/secret.md")

    _gone(git, versions, "notes/secret.md", "secret.md")
    assert report.refs_updated == ("refs/heads/main", "refs/heads/side", "refs/tags/annotated", "refs/tags/light")
    assert git("cat-file", "-t", "annotated").stdout.strip() == "tag"
    assert git("log", "-1", "--format=%s", "annotated").stdout.strip() == "move [erased] → [erased]"


def test_forget_keeps_content_another_file_still_holds(store: SyncGitFileStore, git: Git) -> None:
    shared = store.write("a.md", "same words\n", expected=None)
    store.write("b.md", "same words\n", expected=None)

    report = store.forget("a.md")

    assert report.shared_versions == (shared,)
    assert store.read("b.md").text == "same words\n"
    assert git("log", "--all", "--format=%H", "--", "a.md").stdout == ""


def test_forget_of_a_path_never_written_changes_nothing(store: SyncGitFileStore) -> None:
    store.write("a.md", "x\n", expected=None)
    head = store.head()
    with pytest.raises(MemoryStoreError) as err:
        store.forget("b.md")
    assert err.value.code == "not_found"
    with pytest.raises(MemoryStoreError) as err:
        store.forget("../a.md")
    assert err.value.code == "invalid_path"
    assert store.head() == head


WRITER = """
import sys
from gitmem import GitFileStore
store = GitFileStore.open(sys.argv[1]).sync
version = store.read("other.md").version
with open(sys.argv[2], "a") as acks:
    for i in range(int(sys.argv[3])):
        version = store.write("other.md", f"edit {i}\\n", expected=version)
        acks.write(f"{i}\\n")
        acks.flush()
"""


@pytest.mark.slow
def test_a_writer_racing_forget_loses_nothing(store: SyncGitFileStore, git: Git, tmp_path: Path) -> None:
    versions, _ = _secret_history(store)
    store.write("other.md", "start\n", expected=None)
    acks = tmp_path / "acks"
    acks.touch()
    rounds = 200
    proc = subprocess.Popen([sys.executable, "-c", WRITER, store.path, str(acks), str(rounds)])
    try:
        deadline = time.monotonic() + 60
        while not acks.read_text() and time.monotonic() < deadline:
            time.sleep(0.005)
        store.forget("notes/secret.md")
    finally:
        assert proc.wait(timeout=120) == 0

    assert store.read("other.md").text == f"edit {rounds - 1}\n"
    assert len(store.log("other.md", limit=1000)) == rounds + 1
    ops = [e.op for e in store.log(limit=1000)]
    assert ops[0] == "edit", "the writer should still have been writing when forget ran"
    assert ops.count("forget") == 1
    _gone(git, versions, "notes/secret.md", "secret.md")


def test_async_forget(tmp_path: Path) -> None:
    import asyncio

    async def main() -> None:
        store = GitFileStore.init(tmp_path / "m.git")
        await store.write("a.md", "x\n", expected=None)
        report = await store.forget("a.md")
        assert report.names == ("a.md",)
        assert await store.list() == []

    asyncio.run(main())


def _shape(git: Git, rev: str) -> list[tuple[str, ...]]:
    """Each commit's parent count, summary, author, time and encoding, in topological order."""
    lines = git("log", "--topo-order", "--format=%P|%s|%an|%at|%e", rev).stdout.splitlines()
    return [(str(len(line.split("|", 1)[0].split())), *line.split("|")[1:]) for line in lines]


def test_forget_rewrites_plain_git_merges_and_keeps_their_bytes(
    store: SyncGitFileStore, git: Git, worktree: Callable[..., str]
) -> None:
    secret = store.write("secret.md", "token\n", expected=None)
    worktree("pull", "-q", "--ff-only", "origin", "main")
    worktree("checkout", "-q", "-b", "side")
    Path(worktree.path, "side.md").write_text("side\n")  # type: ignore[attr-defined]
    worktree("add", "side.md")
    worktree("-c", "i18n.commitEncoding=ISO-8859-1", "commit", "-q", "-m", "caf\xe9 on the side")
    worktree("checkout", "-q", "main")
    Path(worktree.path, "main.md").write_text("main\n")  # type: ignore[attr-defined]
    worktree("add", "main.md")
    worktree("commit", "-q", "-m", "main side")
    worktree("merge", "-q", "--no-ff", "-m", "merge side", "side")
    worktree("push", "-q", "origin", "main")
    shape = _shape(git, "main")

    store.forget("secret.md")

    _gone(git, [secret], "secret.md")
    # The same shape, bytes and encodings; only the erased name left the messages.
    assert _shape(git, "main~1") == [tuple(f.replace("secret.md", "[erased]") for f in row) for row in shape]
    merges = git("rev-list", "--merges", "main").stdout.split()
    assert len(merges) == 1
    encoded = git("log", "-1", "--format=%e", f"{merges[0]}^2").stdout.strip()
    assert encoded == "ISO-8859-1"
    assert sorted(e.path for e in store.list()) == ["main.md", "side.md"]


def test_forget_a_whole_folder(store: SyncGitFileStore, git: Git) -> None:
    one = store.write("people/ann.md", "Ann's address\n", expected=None)
    two = store.write("people/bo/notes.md", "Bo's phone\n", expected=None)
    store.write("topics.md", "public\n", expected=None)

    report = store.forget("people")

    _gone(git, [one, two], "people")
    assert set(report.erased_versions) == {one, two}
    assert [e.path for e in store.list()] == ["topics.md"]


FORGETTER = """
import sys
from gitmem import GitFileStore
GitFileStore.open(sys.argv[1]).sync.forget("secret.md")
"""


def test_a_long_lived_reader_cannot_show_a_version_forgotten_by_another_process(
    store: SyncGitFileStore, git: Git
) -> None:
    store.write("secret.md", "token\n", expected=None)
    old = store.head()
    git("gc", "--quiet")
    assert store.show(old, "secret.md").text == "token\n"  # this handle now has the pack open

    subprocess.run([sys.executable, "-c", FORGETTER, store.path], check=True)

    with pytest.raises(MemoryStoreError) as err:
        store.show(old, "secret.md")
    assert err.value.code == "not_found"
    assert [e.op for e in store.log()] == ["forget", "create", "init"]


def test_forgotten_revisions_cannot_be_restored_or_reverted(store: SyncGitFileStore) -> None:
    store.write("secret.md", "token\n", expected=None)
    old = store.head()
    store.forget("secret.md")
    for attempt in (lambda: store.restore("secret.md", old, expected=None), lambda: store.revert(old)):
        with pytest.raises(MemoryStoreError) as err:
            attempt()
        assert err.value.code == "not_found"
    assert [e.path for e in store.list()] == []


def test_tree_entries_are_found_only_at_entry_boundaries() -> None:
    from gitmem.git.rewritepack import entry_named

    decoy = b"x100644 secret.md\x00xx"  # a 20-byte id that happens to spell an entry
    assert len(decoy) == 20
    raw = b"100644 a.md\x00" + decoy + b"100644 z.md\x00" + b"\x01" * 20
    assert entry_named(b"secret.md").match(raw) is None
    found = entry_named(b"z.md").match(raw)
    assert found is not None and found.start(1) == 32 and found.group(2) == b"\x01" * 20


def test_a_forget_stopped_before_its_prune_is_finished_by_the_next_gc_or_forget(
    store: SyncGitFileStore, git: Git
) -> None:
    # What a forget killed between moving the refs and pruning leaves: an unreachable
    # version still on disk, and the pending mark.
    orphan = git("hash-object", "-w", "--stdin", input="leaked token\n").stdout.strip()
    pending = Path(store.path, "gitmem", "forget-pending")
    pending.write_text("secret.md\n")

    store.gc()

    assert git("cat-file", "-e", orphan, check=False).returncode != 0
    assert not pending.exists()

    orphan = git("hash-object", "-w", "--stdin", input="another leak\n").stdout.strip()
    pending.write_text("secret.md\n")
    with pytest.raises(MemoryStoreError) as err:
        store.forget("never-written.md")
    assert err.value.code == "not_found"
    assert git("cat-file", "-e", orphan, check=False).returncode != 0
    assert not pending.exists()
    # Without a pending mark, gc keeps git's grace period for unreachable objects.
    orphan = git("hash-object", "-w", "--stdin", input="fresh, unreferenced\n").stdout.strip()
    store.gc()
    assert git("cat-file", "-e", orphan, check=False).returncode == 0


FORGET_SLOWLY = """
import sys
from gitmem import GitFileStore
GitFileStore.open(sys.argv[1]).sync.forget("secret.md")
"""


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.15, 0.3, 0.45])
def test_a_killed_forget_leaves_either_old_history_or_none_of_it(
    store: SyncGitFileStore, git: Git, delay: float
) -> None:
    import signal

    versions = [store.write("secret.md", "token 0\n", expected=None)]
    for i in range(1, 30):
        versions.append(store.write("secret.md", f"token {i}\n", expected=versions[-1]))
        store.write(f"other-{i}.md", f"{i}\n", expected=None)
    proc = subprocess.Popen([sys.executable, "-c", FORGET_SLOWLY, store.path])
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    store.gc()  # finishes an interrupted prune, if the kill left one

    kept = git("log", "--all", "--format=%H", "--", "secret.md").stdout.split()
    present = [v for v in versions if git("cat-file", "-e", v, check=False).returncode == 0]
    if kept:  # killed before the refs moved: all of the old history is still there
        assert present == versions and store.read("secret.md").version == versions[-1]
    else:  # the refs moved: nothing of the path survives
        _gone(git, versions, "secret.md")
    assert git("fsck", "--strict", "--no-dangling").returncode == 0
    store.write("after.md", "the store still works\n", expected=None)

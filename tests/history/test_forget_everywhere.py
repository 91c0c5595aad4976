"""forget and purge reach every ref and every derived file, or change nothing.

Checked from outside: ``git log --all``, ``git cat-file --batch-all-objects``
and a byte search over every file of the mount for the erased words.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitmem import MemoryStoreError, SyncGitFileStore, review
from gitmem.index import mount as index_mount

from .conftest import Git

RUN = "run-7"
SECRET = "hunter2swordfish"


def _files_holding(root: str, needle: str) -> list[str]:
    """Every file under ``root`` whose bytes contain ``needle`` (zlib-packed objects aside: see _objects_holding)."""
    found = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as fh:
                    if needle.encode() in fh.read():
                        found.append(os.path.relpath(path, root))
            except OSError:
                continue
    return found


def _objects_holding(git: Git, needle: str) -> list[str]:
    """Every object in the repository (reachable or not) whose content holds ``needle``."""
    done = subprocess.run(
        ["git", f"--git-dir={git('rev-parse', '--git-dir').stdout.strip()}", "cat-file", "--batch-all-objects",
         "--batch"],
        capture_output=True,
        check=True,
    )
    return [SECRET] if needle.encode() in done.stdout else []


def _nothing_left(store: SyncGitFileStore, git: Git, *names: str) -> None:
    assert git("log", "--all", "--format=%H", "--", *names).stdout == ""
    assert _objects_holding(git, SECRET) == []
    assert _files_holding(store.path, SECRET) == []
    assert git("fsck", "--strict", "--no-dangling").returncode == 0


def test_forget_of_a_moved_file_reaches_a_proposal_that_edited_its_old_name(
    store: SyncGitFileStore, git: Git
) -> None:
    version = store.write("secret.md", f"{SECRET} one\n", expected=None)
    store.write("keep.md", "keep\n", expected=None)
    review.enable(store)
    agent = store.for_run(RUN)
    agent.write("secret.md", f"{SECRET} on the proposal\n", expected=version)
    agent.write("agent-notes.md", "the run's own note\n", expected=None)
    moved = store.move("secret.md", "notes/secret.md", expected=version)
    store.write("notes/secret.md", f"{SECRET} three\n", expected=moved)
    assert store.search(SECRET).matches  # the index now holds the words too

    report = store.forget("notes/secret.md")

    assert f"refs/heads/proposals/{RUN}" in report.refs_updated
    _nothing_left(store, git, "secret.md", "notes/secret.md")
    # The proposal keeps everything else it changed, and stays a branch off main.
    assert [e.path for e in agent.list()] == ["agent-notes.md", "keep.md"]
    assert agent.read("agent-notes.md").text == "the run's own note\n"
    assert store.search(SECRET).matches == ()


HOLD_INDEX = """
import fcntl, sys
fd = open(sys.argv[1], "a+")
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()  # until the test closes our stdin (or kills us)
"""


class IndexHolder:
    """Another process holding the mount's index lock, as a long rebuild would."""

    def __init__(self, store: SyncGitFileStore) -> None:
        lock = os.path.join(store.path, "gitmem", "index.lock")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLD_INDEX, lock], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "held\n"

    def release(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()


@pytest.fixture
def short_index_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_mount, "ERASE_WAIT", 0.3)


def _indexed_secret(store: SyncGitFileStore) -> None:
    version = store.write("secret.md", f"{SECRET} one\n", expected=None)
    store.write("keep.md", "keep\n", expected=None)
    store.write("secret.md", f"{SECRET} two\n", expected=version)
    assert [m.path for m in store.search(SECRET).matches] == ["secret.md"]
    assert _files_holding(os.path.join(store.path, "gitmem", "index"), SECRET)


@pytest.mark.usefixtures("short_index_wait")
def test_forget_with_the_index_held_by_another_process_changes_nothing(store: SyncGitFileStore, git: Git) -> None:
    _indexed_secret(store)
    head, refs = store.head(), git("for-each-ref").stdout
    holder = IndexHolder(store)
    try:
        with pytest.raises(MemoryStoreError) as err:
            store.forget("secret.md")
        assert err.value.code == "unavailable" and "nothing was changed" in err.value.message
        # History, refs and the pending mark are as they were; the file still reads.
        assert (store.head(), git("for-each-ref").stdout) == (head, refs)
        assert store.read("secret.md").text == f"{SECRET} two\n"
        assert not Path(store.path, "gitmem", "forget-pending").exists()
    finally:
        holder.release()

    report = store.forget("secret.md")

    assert report.names == ("secret.md",)
    _nothing_left(store, git, "secret.md")
    assert store.search(SECRET).matches == () and store.search("keep").matches


@pytest.mark.usefixtures("short_index_wait")
def test_purge_with_the_index_held_by_another_process_changes_nothing(store: SyncGitFileStore, git: Git) -> None:
    _indexed_secret(store)
    head = store.head()
    holder = IndexHolder(store)
    try:
        with pytest.raises(MemoryStoreError) as err:
            store.purge()
        assert err.value.code == "unavailable"
        assert store.head() == head and store.read("secret.md").text == f"{SECRET} two\n"
    finally:
        holder.release()

    store.purge()

    assert store.list() == []
    _nothing_left(store, git, "secret.md")


def test_a_forget_retried_after_failing_past_the_ref_move_finishes_the_erasure(
    store: SyncGitFileStore, git: Git, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitmem.git import rewrite

    _indexed_secret(store)
    real_prune = rewrite._prune_now

    def gc_fails(repo: object, keep: str | None = None) -> None:
        raise MemoryStoreError("unavailable", "git gc --prune=now failed: disk full")

    monkeypatch.setattr(rewrite, "_prune_now", gc_fails)
    with pytest.raises(MemoryStoreError) as err:
        store.forget("secret.md")
    assert err.value.code == "unavailable"
    # The refs moved and the index is gone already; the old objects wait for a prune.
    assert git("log", "--all", "--format=%H", "--", "secret.md").stdout == ""
    assert not os.path.exists(os.path.join(store.path, "gitmem", "index"))
    assert _objects_holding(git, SECRET)
    monkeypatch.setattr(rewrite, "_prune_now", real_prune)

    report = store.forget("secret.md")  # the retry finishes it rather than answering not_found

    assert (report.path, report.commits_rewritten) == ("secret.md", 0)
    _nothing_left(store, git, "secret.md")
    with pytest.raises(MemoryStoreError) as err:
        store.forget("secret.md")  # once finished, the path is simply not there
    assert err.value.code == "not_found"


def test_an_indexer_that_read_the_head_before_a_forget_does_not_index_it_again(
    store: SyncGitFileStore, git: Git
) -> None:
    from gitmem.git.repo import GitRepo
    from gitmem.index import MountIndex

    _indexed_secret(store)
    git("gc", "--quiet")  # packed: a stale handle could still map the old pack
    other = MountIndex(GitRepo.open(store.path))  # another process's view of the mount
    stale_head = other.repo.head()
    assert other.repo.blob(store.read("secret.md").version)

    store.forget("secret.md")

    assert other.refresh(stale_head) is False  # its head is gone: nothing to index

    _nothing_left(store, git, "secret.md")


def test_forget_refuses_a_kept_pack_before_changing_anything(store: SyncGitFileStore, git: Git) -> None:
    _indexed_secret(store)
    git("gc", "--quiet")
    [pack] = Path(store.path, "objects", "pack").glob("*.pack")
    keep = pack.with_suffix(".keep")
    keep.write_text("")
    head = store.head()

    with pytest.raises(MemoryStoreError) as err:
        store.forget("secret.md")

    assert err.value.code == "unavailable" and ".keep" in err.value.message
    assert store.head() == head and store.read("secret.md").text == f"{SECRET} two\n"
    keep.unlink()
    store.forget("secret.md")
    _nothing_left(store, git, "secret.md")


def test_forget_and_purge_refuse_a_mount_that_borrows_objects_before_changing_anything(tmp_path: Path) -> None:
    origin = SyncGitFileStore.init(tmp_path / "origin.git")
    origin.write("secret.md", f"{SECRET}\n", expected=None)
    subprocess.run(["git", "clone", "-q", "--bare", "--shared", origin.path, tmp_path / "shared.git"], check=True)
    shared = SyncGitFileStore.open(tmp_path / "shared.git")
    head = shared.head()

    for erase in (lambda: shared.forget("secret.md"), shared.purge):
        with pytest.raises(MemoryStoreError) as err:
            erase()
        assert err.value.code == "unavailable" and "alternates" in err.value.message
        assert shared.head() == head and shared.read("secret.md").text == f"{SECRET}\n"

    # As the message says: copy the borrowed objects in, stop borrowing, and the erasure goes through.
    subprocess.run(["git", "-C", shared.path, "repack", "-q", "-a", "-d"], check=True)
    Path(shared.path, "objects", "info", "alternates").unlink()
    shared.forget("secret.md")

    def in_shared(*args: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess[str]:
        command = ["git", f"--git-dir={shared.path}", *args]
        return subprocess.run(command, capture_output=True, text=True, check=check, input=input)

    _nothing_left(shared, in_shared, "secret.md")
    assert origin.read("secret.md").text == f"{SECRET}\n"  # the repository it borrowed from is its own


# A search that read the head just before the prune can find a version gone mid-read:
# it answers unavailable (the next one reads the new history), never the erased text.
SEARCH_LOOP = """
import sys, time
from gitmem import GitFileStore, MemoryStoreError
store = GitFileStore.open(sys.argv[1]).sync
print("ready", flush=True)
deadline = time.monotonic() + 60
while time.monotonic() < deadline and sys.stdin.readline():  # one search per line the test sends
    try:
        store.search(sys.argv[2])
        store.find(sys.argv[2])
    except MemoryStoreError as exc:
        if exc.code != "unavailable":
            raise
"""


@pytest.mark.slow
def test_a_process_searching_throughout_a_forget_leaves_no_erased_words(store: SyncGitFileStore, git: Git) -> None:
    for i in range(20):
        store.write(f"other-{i}.md", f"other words {i}\n", expected=None)
    _indexed_secret(store)
    searcher = subprocess.Popen(
        [sys.executable, "-c", SEARCH_LOOP, store.path, SECRET], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert searcher.stdin is not None and searcher.stdout is not None
    assert searcher.stdout.readline() == "ready\n"
    try:
        for _ in range(5):  # searches in flight before, during and after the forget
            searcher.stdin.write("go\n" * 3)
            searcher.stdin.flush()
        store.forget("secret.md")
        searcher.stdin.write("go\n" * 3)
        searcher.stdin.flush()
    finally:
        searcher.stdin.close()
        assert searcher.wait(timeout=120) == 0
        searcher.stdout.close()

    _nothing_left(store, git, "secret.md")
    assert store.search("other words").matches


def test_forget_reaches_a_proposal_that_moved_the_file_itself(store: SyncGitFileStore, git: Git) -> None:
    version = store.write("secret.md", f"{SECRET} one\n", expected=None)
    review.enable(store)
    agent = store.for_run(RUN)
    moved = agent.move("secret.md", "filed/secret-copy.md", expected=version)
    agent.write("filed/secret-copy.md", f"{SECRET} edited on the proposal\n", expected=moved)
    agent.write("agent-notes.md", "kept\n", expected=None)
    store.write("keep.md", "keep\n", expected=None)

    report = store.forget("secret.md")

    assert f"refs/heads/proposals/{RUN}" in report.refs_updated
    _nothing_left(store, git, "secret.md", "filed/secret-copy.md")
    assert report.names == ("filed/secret-copy.md", "secret.md")
    assert [e.path for e in agent.list()] == ["agent-notes.md"]  # forked before keep.md
    assert [e.path for e in store.list()] == ["keep.md"]


def test_a_look_alike_file_on_a_proposal_is_not_taken_for_a_move(store: SyncGitFileStore, git: Git) -> None:
    from gitmem.model import Edit

    text = "".join(f"line {i} of a long shared note\n" for i in range(30))
    version = store.write("secret.md", text + f"{SECRET}\n", expected=None)
    review.enable(store)
    agent = store.for_run(RUN)
    # One commit deletes the file and writes a similar but different one: no move.
    agent.apply([Edit("secret.md", None, version), Edit("mine.md", text + "my own last line\n", None)])

    store.forget("secret.md")

    _nothing_left(store, git, "secret.md")
    assert agent.read("mine.md").text == text + "my own last line\n"

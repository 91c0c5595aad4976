"""The index as a projection of git: built on search, caught up, rebuilt, never trusted blindly."""

from __future__ import annotations

import asyncio
import fcntl
import gc
import os
import shutil
import subprocess
import threading

import pytest

from gitmem import GitFileStore, MemoryStoreError
from gitmem.fileformat import decode_stored
from gitmem.grep import compile_pattern, scan
from gitmem.index import catch_up, engine
from gitmem.index import mount as mount_index
from gitmem.model import SearchResult


@pytest.fixture
def store(tmp_path: os.PathLike[str]) -> GitFileStore:
    return GitFileStore.init(os.path.join(tmp_path, "notes.git"))


def git(cwd: str, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def full_scan(store: GitFileStore, pattern: str, **kw: bool) -> SearchResult:
    repo = store.sync.repo
    files = [(p, decode_stored(repo.blob(oid))) for p, oid in repo.files_at(repo.head())]
    return scan(files, compile_pattern(pattern, **kw), 100)


def index_dir(store: GitFileStore) -> str:
    return os.path.join(store.path, "gitmem", "index")


def fill(store: GitFileStore, count: int = 12) -> None:
    for n in range(count):
        store.sync.write(f"notes/n{n:02}.md", f"note {n}\nthe colour is {'teal' if n % 3 else 'amber'}\n", expected=None)


def test_the_first_search_builds_the_index_and_status_names_its_commit(store: GitFileStore) -> None:
    fill(store)
    assert store.sync.index_status().state == "missing"
    result = store.sync.search("amber")
    assert result == full_scan(store, "amber") and len(result.matches) == 4
    status = store.sync.index_status()
    assert status.state == "current" and status.current
    assert status.commit == store.sync.head()
    assert status.documents == 12


def test_writes_leave_the_index_alone_and_the_next_search_catches_up(store: GitFileStore) -> None:
    fill(store)
    store.sync.search("amber")
    indexed = store.sync.head()
    before = sorted(os.listdir(index_dir(store)))
    version = store.sync.write("notes/extra.md", "amber again\n", expected=None)
    store.sync.delete("notes/n00.md", expected=store.sync.read("notes/n00.md").version)
    assert sorted(os.listdir(index_dir(store))) == before
    status = store.sync.index_status()
    assert status.state == "behind" and status.commit == indexed

    result = store.sync.search("amber")
    assert result == full_scan(store, "amber")
    assert "notes/extra.md" in {m.path for m in result.matches}
    assert "notes/n00.md" not in {m.path for m in result.matches}
    status = store.sync.index_status()
    assert status.state == "current" and status.documents == 12
    assert version


def test_a_deleted_index_directory_is_rebuilt(store: GitFileStore) -> None:
    fill(store)
    store.sync.search("amber")
    shutil.rmtree(index_dir(store))
    assert store.sync.index_status().state == "missing"
    assert store.sync.search("teal") == full_scan(store, "teal")
    assert store.sync.index_status().state == "current"


@pytest.mark.parametrize("damage", ["garbage", "truncated", "junk-only", "a-file"])
def test_a_corrupt_index_is_rebuilt(store: GitFileStore, damage: str) -> None:
    fill(store)
    store.sync.search("amber")
    folder = index_dir(store)
    if damage == "garbage":
        for name in os.listdir(folder):
            with open(os.path.join(folder, name), "wb") as fh:
                fh.write(os.urandom(300))
    elif damage == "truncated":
        for name in os.listdir(folder):
            with open(os.path.join(folder, name), "r+b") as fh:
                fh.truncate(7)
    elif damage == "junk-only":
        shutil.rmtree(folder)
        os.makedirs(folder)
        with open(os.path.join(folder, "stray.bin"), "wb") as fh:
            fh.write(b"not an index")
    else:
        shutil.rmtree(folder)
        with open(folder, "wb") as fh:
            fh.write(b"a file where the index folder should be")
    fresh = GitFileStore.open(store.path)  # a new process would see the damage cold
    assert fresh.sync.search("amber") == full_scan(store, "amber")
    assert fresh.sync.find("amber")  # ranked search works again too
    status = fresh.sync.index_status()
    assert status.state == "current" and status.documents == 12
    assert "stray.bin" not in os.listdir(folder)


def test_catch_up_after_a_push_with_the_git_cli(store: GitFileStore, tmp_path: os.PathLike[str]) -> None:
    fill(store)
    store.sync.search("amber")
    work = os.path.join(tmp_path, "work")
    git(os.fspath(tmp_path), "clone", "-q", store.path, work)
    with open(os.path.join(work, "pushed.md"), "w") as fh:
        fh.write("an amber note from a person\n")
    os.remove(os.path.join(work, "notes", "n03.md"))
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "by hand")
    git(work, "push", "-q", "origin", "main")

    assert store.sync.index_status().state == "behind"
    result = store.sync.search("amber")
    assert result == full_scan(store, "amber")
    assert {m.path for m in result.matches} >= {"pushed.md"}
    assert "notes/n03.md" not in {m.path for m in result.matches}
    assert store.sync.index_status().commit == git(store.path, "rev-parse", "main")


def test_catch_up_after_commit_tree_and_update_ref(store: GitFileStore) -> None:
    fill(store, 3)
    store.sync.search("amber")
    blob = git(store.path, "hash-object", "-w", "--stdin", stdin="plumbing amber line\n")
    old = git(store.path, "rev-parse", "main")
    listing = git(store.path, "ls-tree", "main")
    tree = git(store.path, "mktree", stdin=f"{listing}\n100644 blob {blob}\tplumbed.md\n")
    commit = git(store.path, "commit-tree", tree, "-p", old, "-m", "plumbing")
    git(store.path, "update-ref", "refs/heads/main", commit, old)

    assert catch_up(store.path) is True  # what the post-receive hook calls
    status = store.sync.index_status()
    assert status.state == "current" and status.commit == commit
    assert store.sync.search("plumbing amber") == full_scan(store, "plumbing amber")
    assert store.sync.search("plumbing amber").matches[0].path == "plumbed.md"


def mount_holds(store: GitFileStore, word: bytes) -> bool:
    """Whether any file of the mount's folder (objects, refs, gitmem state, index) holds ``word``."""
    for folder, _, names in os.walk(store.path):
        for name in names:
            with open(os.path.join(folder, name), "rb") as fh:
                if word in fh.read():
                    return True
    return False


def test_after_purge_the_index_answers_from_the_new_state(store: GitFileStore) -> None:
    store.sync.write("secret.md", "the codeword is zanzibarquux\n", expected=None)
    assert len(store.sync.search("zanzibar").matches) == 1
    assert mount_holds(store, b"zanzibarquux")  # the index keeps words in plain bytes

    store.sync.purge()

    assert not mount_holds(store, b"zanzibarquux")  # gone before purge returned, not at the next search
    assert store.sync.index_status().state == "missing"
    assert store.sync.search("zanzibar") == SearchResult()
    assert store.sync.find("zanzibarquux") == []
    assert not mount_holds(store, b"zanzibarquux")
    store.sync.write("fresh.md", "zanzibar is a place\n", expected=None)
    assert [m.path for m in store.sync.search("zanzibar").matches] == ["fresh.md"]
    assert store.sync.index_status().commit == store.sync.head()


def test_forget_leaves_no_erased_word_in_the_index(store: GitFileStore) -> None:
    fill(store, 4)
    store.sync.write("secret.md", "the codeword is zanzibarquux\n", expected=None)
    run_view = store.sync.for_run("run-1")
    assert [m.path for m in run_view.search("zanzibarquux").matches] == ["secret.md"]
    assert [h.path for h in store.sync.find("zanzibarquux")] == ["secret.md"]
    assert mount_holds(store, b"zanzibarquux")

    store.sync.forget("secret.md")

    assert not mount_holds(store, b"zanzibarquux")
    assert store.sync.search("zanzibarquux") == SearchResult()
    assert store.sync.search("amber") == full_scan(store, "amber") and store.sync.search("amber").matches
    assert store.sync.index_status().state == "current"
    assert not mount_holds(store, b"zanzibarquux")


def test_an_index_of_history_that_is_no_longer_an_ancestor_is_rebuilt(store: GitFileStore) -> None:
    fill(store, 4)
    store.sync.search("amber")
    # Someone resets main to unrelated history (what a rewrite leaves behind).
    blob = git(store.path, "hash-object", "-w", "--stdin", stdin="amber, rewritten\n")
    tree = git(store.path, "mktree", stdin=f"100644 blob {blob}\tother.md\n")
    root = git(store.path, "commit-tree", tree, "-m", "unrelated root")
    git(store.path, "update-ref", "refs/heads/main", root)
    assert store.sync.index_status().state == "outdated"
    assert [m.path for m in store.sync.search("amber").matches] == ["other.md"]
    status = store.sync.index_status()
    assert status.state == "current" and status.documents == 1


def test_an_index_of_an_older_format_is_rebuilt(store: GitFileStore, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(store, 4)
    store.sync.search("amber")
    monkeypatch.setattr(engine, "FORMAT", engine.FORMAT + 1)
    fresh = GitFileStore.open(store.path)
    assert fresh.sync.index_status().state == "outdated"
    assert fresh.sync.search("amber") == full_scan(store, "amber")
    assert fresh.sync.index_status().state == "current"


def test_a_foreign_holder_of_whooshs_own_lock_only_delays_the_index(store: GitFileStore) -> None:
    fill(store, 4)
    store.sync.search("amber")
    store.sync.write("late.md", "amber, late\n", expected=None)
    fd = os.open(os.path.join(index_dir(store), "MAIN_WRITELOCK"), os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert store.sync.search("amber") == full_scan(store, "amber")
        assert store.sync.index_status().state == "behind"
    finally:
        os.close(fd)
    assert store.sync.search("amber") == full_scan(store, "amber")
    assert store.sync.index_status().state == "current"


def test_explicit_rebuild_reports_a_current_index(store: GitFileStore) -> None:
    fill(store, 5)
    status = store.sync.rebuild_index()
    assert status.state == "current" and status.documents == 5 and status.segments == 1
    assert asyncio.run(store.rebuild_index()).commit == store.sync.head()
    assert asyncio.run(store.index_status()).current


def test_many_catch_ups_keep_the_index_compact(store: GitFileStore) -> None:
    store.sync.write("a.md", "amber 0\n", expected=None)
    for n in range(1, 90):
        version = store.sync.read("a.md").version
        store.sync.write("a.md", f"amber {n}\n", expected=version)
        store.sync.search("amber")
    status = store.sync.index_status()
    assert status.documents == 1
    assert status.segments <= 8 and status.deleted <= 70  # merged along the way, not 90 segments
    assert store.sync.search("amber").matches[0].text == "amber 89"


def test_patterns_the_index_cannot_narrow_are_scanned_without_an_index(store: GitFileStore) -> None:
    fill(store, 4)
    assert store.sync.search("am") == full_scan(store, "am")  # too short for a trigram
    assert store.sync.search("a.*b|c", regex=True) == full_scan(store, "a.*b|c", regex=True)
    assert store.sync.index_status().state == "missing"  # nothing needed it yet


# -- ranked search --


def test_find_ranks_files_by_their_words(store: GitFileStore) -> None:
    store.sync.write("garden/tomatoes.md", "Tomatoes need sun.\nWater tomatoes daily.\nTomatoes!\n", expected=None)
    store.sync.write("garden/herbs.md", "Basil likes sun.\nOne tomato plant nearby.\n", expected=None)
    store.sync.write("kitchen/sauce.md", "A sauce of tomatoes and basil.\n", expected=None)
    store.sync.write("kitchen/bread.md", "Flour, water, salt.\n", expected=None)

    hits = store.sync.find("tomatoes")
    assert [h.path for h in hits][:1] == ["garden/tomatoes.md"]
    assert {h.path for h in hits} == {"garden/tomatoes.md", "kitchen/sauce.md"}
    assert hits[0].score >= hits[1].score > 0
    assert "Tomatoes" in hits[0].snippet
    assert hits[0].version == store.sync.read("garden/tomatoes.md").version

    assert [h.path for h in store.sync.find("tomatoes", path="kitchen/")] == ["kitchen/sauce.md"]
    assert [h.path for h in store.sync.find("sauce")] == ["kitchen/sauce.md"]  # words of the path count
    assert len(store.sync.find("sun basil flour", limit=2)) == 2
    assert store.sync.find("the and of") == []  # only stop words


def test_find_follows_changes_and_refuses_bad_input(store: GitFileStore) -> None:
    version = store.sync.write("a.md", "kumquat season\n", expected=None)
    assert [h.path for h in store.sync.find("kumquat")] == ["a.md"]
    store.sync.delete("a.md", expected=version)
    assert store.sync.find("kumquat") == []
    store.sync.write("b.md", "東京の天気\n", expected=None)
    assert [h.path for h in asyncio.run(store.find("東京"))] == ["b.md"]
    for bad in ("", "   "):
        with pytest.raises(MemoryStoreError) as err:
            store.sync.find(bad)
        assert err.value.code == "invalid_pattern"
    with pytest.raises(MemoryStoreError) as err:
        store.sync.find("kumquat", limit=0)
    assert err.value.code == "invalid_pattern"
    with pytest.raises(MemoryStoreError) as err:
        store.sync.find("kumquat", path="../x/")
    assert err.value.code == "invalid_path"


def test_clear_removes_the_index_and_the_next_search_rebuilds_it(store: GitFileStore) -> None:
    fill(store, 3)
    store.sync.search("amber")
    store.sync.index.clear()  # for callers erasing content (purge, forget) that want it gone now
    assert not os.path.exists(index_dir(store))
    assert store.sync.index_status().state == "missing"
    assert store.sync.search("amber") == full_scan(store, "amber")
    assert store.sync.index_status().state == "current"


def test_catch_up_keeps_a_path_that_is_not_utf8(store: GitFileStore) -> None:
    """Plain git can name a file with any bytes; the index must find it like the scan does."""
    fill(store, 2)
    store.sync.search("amber")
    blob = git(store.path, "hash-object", "-w", "--stdin", stdin="amber, oddly named\n")
    old = git(store.path, "rev-parse", "main")
    listing = subprocess.run(["git", "ls-tree", "main"], cwd=store.path, capture_output=True, check=True).stdout
    entry = f"100644 blob {blob}\t".encode() + b"\xff\xfeodd.md\n"
    tree = subprocess.run(
        ["git", "mktree"], cwd=store.path, input=listing + entry, capture_output=True, check=True
    ).stdout.decode().strip()
    commit = git(store.path, "commit-tree", tree, "-p", old, "-m", "odd name")
    git(store.path, "update-ref", "refs/heads/main", commit, old)
    result = store.sync.search("oddly named")
    assert result == full_scan(store, "oddly named") and len(result.matches) == 1
    assert store.sync.index_status().commit == commit


def open_fds() -> int:
    """Open descriptors, leaving out pack files: libgit2 keeps those in a bounded cache
    (``MWINDOW_FILE_LIMIT``), and each write adds a pack until compaction folds them."""
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        found += "/objects/pack/" not in target
    return found


def test_run_views_are_kept_and_share_the_stores_caches_and_index(
    store: GitFileStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(store, 6)
    sync = store.sync
    expected = sync.search("amber")
    listing = sync.list()
    view = sync.for_run("run-0")
    assert sync.for_run("run-0") is view and view.for_run("run-1") is sync.for_run("run-1")
    assert view.index is sync.index  # the index describes main; a proposal's search scans
    read: list[str] = []
    blob = sync.repo.blob
    monkeypatch.setattr(sync.repo, "blob", lambda oid: read.append(oid) or blob(oid))
    assert sync.for_run("run-2").list() == listing and read == []  # no file read again for a new view
    monkeypatch.undo()

    gc.collect()
    before = open_fds()
    for n in range(200):  # what an agent server does: one view per tool call
        agent = store.for_run(f"run-{n}") if n % 2 else store.for_run(f"run-{n % 5}")
        assert asyncio.run(agent.search("amber")) == expected
        assert asyncio.run(agent.list()) == listing
    gc.collect()
    assert open_fds() == before


def test_threads_that_indexed_and_ended_leave_no_descriptors_open(store: GitFileStore) -> None:
    fill(store, 4)
    store.sync.search("amber")
    gc.collect()
    before = open_fds()
    for _ in range(3):
        threads = [threading.Thread(target=store.sync.rebuild_index) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    gc.collect()
    assert open_fds() == before


def test_catch_up_keeps_one_index_per_mount(store: GitFileStore) -> None:
    fill(store, 3)
    assert catch_up(store.path) is True
    gc.collect()
    before = open_fds()
    for n in range(50):
        store.sync.write("notes/extra.md", f"amber {n}\n", expected=None if n == 0 else store.sync.read("notes/extra.md").version)
        assert catch_up(store.path) is True
    gc.collect()
    assert open_fds() == before
    assert store.sync.index_status().state == "current"
    assert mount_index._index_of(store.path) is mount_index._index_of(store.path)

"""Recycled files (``gitmem.git.spares``): commits reuse what folds and ref moves give up, and never harm a reader.

What a user depends on: the memory stays plain git (``fsck --strict``, every
version readable, ``git log``), a file someone still has open or mapped is
never overwritten, a spare with a second name is never overwritten, erasure
leaves no folded pack behind in the pool, and where leases are refused writes
go on as before.
"""

from __future__ import annotations

import errno
import fcntl
import gc
import mmap
import os
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

import pytest
from contract.support import assert_fsck_clean, git

from gitmem import GitFileStore, MemoryStoreError
from gitmem.git import packwrite, spares
from gitmem.git import repo as gitrepo
from gitmem.git.loose import open_repository
from gitmem.gitstore import SyncGitFileStore

pytestmark = pytest.mark.skipif(not spares._enabled[0], reason="no file leases on this system")


def _pool(store_path: str) -> Path:
    return Path(store_path) / "gitmem" / "spares"


def _churn(store: SyncGitFileStore, start: int, count: int) -> dict[str, str]:
    written = {}
    for n in range(start, start + count):
        path = f"notes/{n % 7}/{n}.md"
        store.write(path, f"note {n}\n", expected=None)
        written[path] = f"note {n}\n"
    return written


@pytest.fixture
def folding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gitrepo, "MAX_PACKS", 4)  # a fold every few commits
    monkeypatch.setattr(packwrite, "GRACE_SECONDS", 0.0)  # folded packs go at the next fold


def _warm(tmp_path: Path) -> SyncGitFileStore:
    """A memory whose folds have filled the pool."""
    store = GitFileStore.init(tmp_path / "m.git").sync
    _churn(store, 0, 40)
    return store


def _clean(store: SyncGitFileStore) -> None:
    assert_fsck_clean(store.path)  # folds ran inside the writes: nothing changes the packs now


def _inodes(folder: Path) -> set[int]:
    return {entry.stat().st_ino for entry in folder.iterdir()} if folder.is_dir() else set()


def test_commits_reuse_folded_files_and_stay_plain_git(tmp_path: Path, folding: None) -> None:
    store = GitFileStore.init(tmp_path / "m.git").sync
    written = _churn(store, 0, 40)
    pool = _pool(store.path)
    before = _inodes(pool)
    assert before, "folds gave their folded packs to the pool"
    pack_folder = Path(store.path) / "objects" / "pack"
    old_packs = _inodes(pack_folder)
    written.update(_churn(store, 40, 3))
    new_files = _inodes(pack_folder) - old_packs
    ref_inode = (Path(store.path) / "refs" / "heads" / "main").stat().st_ino
    assert new_files & before, "the new pack and index are files that were in the pool"
    assert ref_inode in before | _inodes(pool) or ref_inode in before
    for path, text in written.items():
        assert store.read(path).text == text
    _clean(store)
    log = git(store.path, "log", "--format=%H").stdout.split()
    assert len(log) == len(written) + 1  # every write one commit, plus the root
    main = (Path(store.path) / "refs" / "heads" / "main").read_text()
    assert main.strip() == log[0] and main.endswith("\n") and len(main) == 41
    assert (Path(store.path) / "refs" / "heads" / "main").stat().st_mode & 0o777 == spares.created_mode(0o644)
    for entry in pack_folder.iterdir():
        if entry.suffix in (".pack", ".idx"):
            assert entry.stat().st_mode & 0o777 == spares.created_mode(0o444), entry


def test_a_spare_someone_maps_or_holds_open_is_never_overwritten(tmp_path: Path, folding: None) -> None:
    store = _warm(tmp_path)
    pool = _pool(store.path)
    spares_now = sorted(pool.iterdir())
    assert len(spares_now) >= 2
    mapped, held = spares_now[0], spares_now[1]
    mapped_bytes, held_bytes = mapped.read_bytes(), held.read_bytes()
    fd = os.open(mapped, os.O_RDONLY)
    view = mmap.mmap(fd, 0, prot=mmap.PROT_READ) if mapped_bytes else None
    os.close(fd)  # only the mapping keeps it now, as libgit2 keeps a pack it read
    holder = open(held, "rb")  # held open across the writes on purpose
    try:
        _churn(store, 40, 30)
        assert mapped.exists() and mapped.read_bytes() == mapped_bytes
        assert held.exists() and held.read_bytes() == held_bytes
        if view is not None:
            assert view[:] == mapped_bytes
    finally:
        holder.close()
        if view is not None:
            view.close()
    _clean(store)


def test_a_spare_with_a_second_name_is_dropped_not_overwritten(tmp_path: Path, folding: None) -> None:
    store = _warm(tmp_path)
    pool = _pool(store.path)
    for n, spare in enumerate(sorted(pool.iterdir())):
        os.link(spare, tmp_path / f"other-name-{n}")  # as a crash between the ref hand-over's two steps leaves
    kept = {p: p.read_bytes() for p in tmp_path.glob("other-name-*")}
    _churn(store, 40, 10)
    for path, data in kept.items():
        assert path.read_bytes() == data
        assert path.stat().st_nlink == 1  # its pool name was dropped
    _clean(store)


def test_purge_and_forget_drain_the_pool(tmp_path: Path, folding: None) -> None:
    store = GitFileStore.init(tmp_path / "m.git").sync
    store.write("secret.md", "the launch code is 0000-PLUTO\n", expected=None)
    _churn(store, 0, 40)
    assert any(_pool(store.path).iterdir())
    store.forget("secret.md")
    assert not any(_pool(store.path).iterdir()), "erasure leaves no recycled copy of a folded pack"
    _churn(store, 40, 40)
    assert any(_pool(store.path).iterdir())
    store.purge()
    assert not any(_pool(store.path).iterdir())
    _clean(store)


def test_without_leases_writes_create_files_as_before(
    tmp_path: Path, folding: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _warm(tmp_path)
    real = fcntl.fcntl

    def no_leases(fd: int, cmd: int, arg: int = 0) -> object:
        if cmd == getattr(fcntl, "F_SETLEASE", -1) and arg != fcntl.F_UNLCK:
            raise OSError(errno.EINVAL, "leases not supported")
        return real(fd, cmd, arg)

    monkeypatch.setattr(spares.fcntl, "fcntl", no_leases)
    monkeypatch.setattr(spares, "_enabled", [True])
    pool_before = {p: p.read_bytes() for p in _pool(store.path).iterdir()}
    written = _churn(store, 40, 12)
    assert spares._enabled == [False]  # switched off for the process at the first refusal
    for path, data in pool_before.items():
        assert not path.exists() or path.read_bytes() == data
    for path, text in written.items():
        assert store.read(path).text == text
    _clean(store)


def test_a_foreign_lock_is_honoured_with_a_recycled_lock_file(tmp_path: Path, folding: None) -> None:
    store = _warm(tmp_path)
    assert any(_pool(store.path).iterdir())
    lock = Path(store.path) / "refs" / "heads" / "main.lock"
    lock.write_text("held by another git\n")
    head = git(store.path, "rev-parse", "main").stdout.strip()
    outcome: list[object] = []

    def write() -> None:
        try:
            outcome.append(store.write("blocked.md", "x\n", expected=None))
        except MemoryStoreError as exc:
            outcome.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(0.5)
    assert lock.read_text() == "held by another git\n"  # not linked over, not written through
    assert git(store.path, "rev-parse", "main").stdout.strip() == head
    lock.unlink()
    writer.join(timeout=60)
    assert not writer.is_alive()
    if isinstance(outcome[0], MemoryStoreError):
        assert outcome[0].code == "unavailable"
    else:
        assert store.read("blocked.md").text == "x\n"
    store.write("after.md", "y\n", expected=None)
    assert_fsck_clean(store.path)


def test_someone_opening_a_spare_being_filled_waits_and_kills_nobody(tmp_path: Path, folding: None) -> None:
    """A lease break signals the holder (SIGIO would end the process); gitmem asks for SIGURG, ignored."""
    store = _warm(tmp_path)
    taken = spares.take(store.path, 100)
    assert taken is not None
    path, fd, _ = taken
    opener = subprocess.Popen(
        [sys.executable, "-c", f"open({path!r}, 'rb').close(); print('opened')"], stdout=subprocess.PIPE, text=True
    )
    try:
        time.sleep(0.3)  # the opener is blocked on our lease meanwhile; this process must still be running
        assert opener.poll() is None
    finally:
        spares.release(fd)
    out, _ = opener.communicate(timeout=30)
    assert out.strip() == "opened"
    _churn(store, 40, 5)
    assert_fsck_clean(store.path)


def test_a_local_clone_sharing_pack_files_by_hard_link_stays_whole(tmp_path: Path, folding: None) -> None:
    """``git clone`` of a local path hard-links the packs: folded ones reach the pool with a second name."""
    store = GitFileStore.init(tmp_path / "m.git").sync
    _churn(store, 0, 10)
    clone = tmp_path / "clone.git"
    subprocess.run(["git", "clone", "-q", "--bare", "--local", store.path, str(clone)], check=True)
    linked = [p for p in (clone / "objects" / "pack").iterdir() if p.stat().st_nlink > 1]
    assert linked, "the clone shares pack files with the memory"
    before = {p: p.read_bytes() for p in linked}
    _churn(store, 10, 60)
    for path, data in before.items():
        assert path.read_bytes() == data
    assert_fsck_clean(clone)
    assert_fsck_clean(store.path)


def test_spares_another_process_took_are_skipped_and_the_pool_listed_again(tmp_path: Path, folding: None) -> None:
    store = _warm(tmp_path)
    pool = _pool(store.path)
    names = sorted(pool.iterdir())
    assert len(names) >= 4
    for n, path in enumerate(names):  # what this process knew is gone; what is there now it never listed
        path.rename(pool / f"b1-0-{n}-renamed")
    taken = spares.take(store.path, 100)
    assert taken is not None
    path, fd, _ = taken
    spares.release(fd)
    assert Path(path).name.endswith("-renamed")
    written = _churn(store, 40, 5)
    for name, text in written.items():
        assert store.read(name).text == text
    assert_fsck_clean(store.path)


def test_a_pool_that_cannot_be_used_changes_nothing_but_speed(tmp_path: Path, folding: None) -> None:
    store = GitFileStore.init(tmp_path / "m.git").sync
    (Path(store.path) / "gitmem" / "spares").write_text("not a folder\n")
    written = _churn(store, 0, 40)
    folded = (Path(store.path) / packwrite.FOLDED).read_text().split()[::2]
    pack_folder = Path(store.path) / "objects" / "pack"
    assert len(list(pack_folder.glob("*.idx"))) <= 3 * gitrepo.MAX_PACKS + len(folded)  # folded packs still go
    for path, text in written.items():
        assert store.read(path).text == text
    store.forget("notes/0/0.md")
    assert (Path(store.path) / "gitmem" / "spares").read_text() == "not a folder\n"
    _clean(store)


def test_a_dropped_handle_is_freed_at_once_so_its_packs_can_be_recycled(tmp_path: Path) -> None:
    """pygit2's handles hold themselves in a cycle; gitmem's do not, so dropping one unmaps its packs now."""
    store = GitFileStore.init(tmp_path / "m.git").sync
    store.write("a.md", "one\n", expected=None)
    handle = open_repository(store.path)
    assert [name for name in handle.references] == ["refs/heads/main"]
    commit = handle[handle.references["refs/heads/main"].target]
    assert commit.tree["a.md"].data == b"one\n"  # read from the commit's pack: now open and mapped
    del commit
    gone = weakref.ref(handle)
    gc.disable()
    try:
        del handle
        assert gone() is None
    finally:
        gc.enable()

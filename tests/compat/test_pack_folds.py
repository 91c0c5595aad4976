"""Pack folds run inside the write that found them due: nothing changes the memory's files after it returned.

A caller may delete a memory's folder the moment its last write returned; a
fold still running then (the first design ran it in a background thread) made
and deleted files in it. The fold is paid by the write that found it due, after
the writer lock is let go; writers that find the fold lock busy do not wait for
it unless the packs pile up, so the pack count stays bounded.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from pathlib import Path

import pytest
from contract.support import assert_fsck_clean

from gitmem import GitFileStore
from gitmem.git import engine, packwrite
from gitmem.git import repo as gitrepo


def _listing(repo: Path) -> list[str]:
    return sorted(os.listdir(repo / "objects" / "pack"))


def test_the_write_that_finds_a_fold_due_folds_before_it_returns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "MAX_PACKS", 3)
    for attempt in range(5):
        repo = tmp_path / f"m{attempt}.git"
        store = GitFileStore.init(repo).sync
        for n in range(engine.MAX_PACKS):
            store.write(f"f{n}.md", f"{n}\n", expected=None)
        before = packwrite.pack_count(str(repo))
        store.write("last.md", "the write that finds the fold due\n", expected=None)
        after = _listing(repo)
        assert not [t for t in threading.enumerate() if t.name == "gitmem-fold"]
        assert packwrite.pack_count(str(repo)) < before  # folded already, not later
        assert (repo / packwrite.FOLDED).exists()
        assert_fsck_clean(repo)
        assert _listing(repo) == after  # nothing runs on once the write returned
        shutil.rmtree(repo)  # what a caller may do right away: nothing is left to trip on it


def test_async_writes_fold_before_the_await_returns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The async face runs each call in a worker thread: the fold is paid there, before the await returns."""
    monkeypatch.setattr(engine, "MAX_PACKS", 2)

    async def writes(repo: Path) -> list[int]:
        store = GitFileStore.init(repo)
        counts = []
        for n in range(3 * (engine.MAX_PACKS + 1)):
            await store.write(f"f{n}.md", f"{n}\n", expected=None)
            counts.append(packwrite.pack_count(str(repo)))
            listing = _listing(repo)
            await asyncio.sleep(0)  # let anything the call left behind run
            assert _listing(repo) == listing
        return counts

    for attempt in range(3):
        repo = tmp_path / f"m{attempt}.git"
        counts = asyncio.run(writes(repo))
        assert max(counts) <= engine.MAX_PACKS + 2 and min(counts[engine.MAX_PACKS :]) < max(counts)
        assert not [t for t in threading.enumerate() if t.name == "gitmem-fold"]
        assert_fsck_clean(repo)
        shutil.rmtree(repo)


def _fold_lock_held_elsewhere(repo: Path) -> tuple[threading.Event, threading.Event, threading.Thread]:
    """A thread holding the memory's fold lock (another process's fold, as far as the lock goes) until ``leave``."""
    held, leave = threading.Event(), threading.Event()

    def fold_elsewhere() -> None:
        with gitrepo.GitRepo(str(repo)).fold_lock.hold("fold"):
            held.set()
            leave.wait(60)

    holder = threading.Thread(target=fold_elsewhere)
    holder.start()
    return held, leave, holder


def test_a_busy_fold_lock_does_not_hold_writers_and_a_later_write_folds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "MAX_PACKS", 3)
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    held, leave, holder = _fold_lock_held_elsewhere(repo)
    try:
        assert held.wait(60)
        for n in range(engine.MAX_PACKS + 2):  # past the interval, not yet twice it: nobody waits
            store.write(f"f{n}.md", f"{n}\n", expected=None)
        busy = packwrite.pack_count(str(repo))
        assert busy > engine.MAX_PACKS
    finally:
        leave.set()
        holder.join(60)
    counts = []
    for n in range(engine.MAX_PACKS + 1):
        store.write(f"next{n}.md", "folds now\n", expected=None)
        counts.append(packwrite.pack_count(str(repo)))
    assert min(counts) < busy
    assert_fsck_clean(repo)


def test_writers_that_outrun_a_busy_fold_wait_for_it_once_the_packs_pile_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Back-pressure: past twice the interval with the lock busy all along, a write waits and folds."""
    monkeypatch.setattr(engine, "MAX_PACKS", 2)
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    fold_once = gitrepo.GitRepo.fold_once
    waited: list[int] = []

    def noting(self: gitrepo.GitRepo, wait: bool) -> bool:
        if wait:
            waited.append(packwrite.pack_count(self.path))
            leave.set()  # the other fold may end now: this write waits for it, then folds
        return fold_once(self, wait)

    monkeypatch.setattr(gitrepo.GitRepo, "fold_once", noting)
    held, leave, holder = _fold_lock_held_elsewhere(repo)
    try:
        assert held.wait(60)
        most = 0
        for n in range(20):
            store.write(f"f{n}.md", f"{n}\n", expected=None)
            most = max(most, packwrite.pack_count(str(repo)))
            if waited:
                break
    finally:
        leave.set()
        holder.join(60)
    assert waited and waited[0] > 2 * engine.MAX_PACKS
    assert most <= 3 * engine.MAX_PACKS + 2
    assert packwrite.pack_count(str(repo)) < waited[0]  # it folded once the lock was its
    assert_fsck_clean(repo)

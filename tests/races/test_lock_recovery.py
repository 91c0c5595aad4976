"""Crashes around the writer lock: a dead writer's leftovers, a stuck holder, an unfinished purge.

The writer flock records its holder. A gitmem writer that died holding it leaves
a record still marked held by a process that no longer exists, and the ref lock
files it created since then are cleared by the next writer at once, whatever
``stale_lock_seconds`` says (that wait is only for foreign git processes). A
holder that never lets go makes writers fail as ``unavailable`` after their
``lock_timeout`` instead of hanging. A purge killed after moving ``main`` but
before pruning is finished by the next ``gc``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from race_support import Worker, assert_fsck_clean, git, wait_stopped

from gitmem import GitFileStore, MemoryStoreError

pytestmark = pytest.mark.slow

LIVENESS = 120.0  # a writer still blocked after this is stuck, not slow


def test_ref_lock_of_a_crashed_gitmem_writer_is_cleared_without_the_stale_wait(tmp_path: Path) -> None:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    version = store.write("a.md", "one\n", expected=None)
    dying = Worker(tmp_path, "die_holding_ref_lock", repo=str(repo))
    dying.wait_for("holding")
    wait_stopped(dying.pid)
    dying.kill()
    lock = repo / "refs" / "heads" / "main.lock"
    assert lock.exists()
    # Were this lock taken for a foreign git's, the write would wait ten minutes.
    store.repo.stale_lock_seconds = 600.0
    errors: list[BaseException] = []

    def write() -> None:
        try:
            store.write("a.md", "two\n", expected=version)
        except BaseException as exc:
            errors.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    writer.join(timeout=LIVENESS)
    assert not writer.is_alive(), "the crashed writer's main.lock was treated as a live foreign lock"
    assert not errors, errors
    assert store.read("a.md").text == "two\n"
    assert not lock.exists()
    assert_fsck_clean(repo)


def _state(pid: int) -> str:
    """The process state letter from ``/proc/<pid>/stat`` (``Z`` for a zombie)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to see a zombie")
def test_a_killed_writer_not_yet_reaped_is_recovered_from_at_once(tmp_path: Path) -> None:
    """A zombie answers ``kill(pid, 0)``, so liveness must not be asked of the dead holder's pid.

    The writer is SIGKILLed while holding the writer lock and ``main.lock``, and
    its parent (this test) does not reap it. With ``stale_lock_seconds`` at ten
    minutes and the lock timeout at one second, a write that took the zombie for
    a live foreign git would fail ``unavailable`` or hang; recovery must clear
    the lock without waiting.
    """
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    version = store.write("a.md", "one\n", expected=None)
    dying = Worker(tmp_path, "die_holding_ref_lock", repo=str(repo))
    dying.wait_for("holding")
    wait_stopped(dying.pid)
    os.kill(dying.pid, signal.SIGKILL)
    deadline = time.monotonic() + LIVENESS
    while _state(dying.pid) != "Z":  # dead, not reaped: a zombie
        assert time.monotonic() < deadline, "the killed writer never became a zombie"
        time.sleep(0.005)
    os.kill(dying.pid, 0)  # what the old liveness check asked: the zombie still "exists"
    lock = repo / "refs" / "heads" / "main.lock"
    assert lock.exists()
    store.repo.stale_lock_seconds = 600.0
    store.repo.lock_timeout = 1.0
    errors: list[BaseException] = []

    def write() -> None:
        try:
            store.write("a.md", "two\n", expected=version)
        except BaseException as exc:
            errors.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    writer.join(timeout=LIVENESS)
    assert not writer.is_alive(), "the zombie's main.lock was treated as a live foreign lock"
    assert not errors, errors
    assert _state(dying.pid) == "Z"  # still unreaped: recovery did not depend on the reaping
    dying.kill()
    assert store.read("a.md").text == "two\n"
    assert not lock.exists()
    assert_fsck_clean(repo)


def test_a_held_writer_lock_makes_writers_unavailable_after_the_timeout(tmp_path: Path) -> None:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    holder = Worker(tmp_path, "hold_writer_lock", repo=str(repo))
    holder.wait_for("holding")
    store.repo.lock_timeout = 0.5
    with pytest.raises(MemoryStoreError) as caught:
        store.write("a.md", "blocked\n", expected=None)
    assert caught.value.code == "unavailable"
    assert str(holder.pid) in str(caught.value)  # names who holds it
    holder.kill()  # the kernel drops the flock: writes go on
    store.write("a.md", "after\n", expected=None)
    assert store.read("a.md").text == "after\n"


def test_writers_keep_waiting_behind_maintenance_past_their_timeout(tmp_path: Path) -> None:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    holder = Worker(tmp_path, "hold_writer_lock", repo=str(repo), op="forget")
    holder.wait_for("holding")
    store.repo.lock_timeout = 0.2
    errors: list[BaseException] = []

    def write() -> None:
        try:
            store.write("a.md", "waited\n", expected=None)
        except BaseException as exc:
            errors.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    writer.join(timeout=1.0)  # five timeouts: an ordinary holder would have failed it by now
    assert writer.is_alive() and not errors, errors
    holder.kill()
    writer.join(timeout=LIVENESS)
    assert not writer.is_alive() and not errors, errors
    assert store.read("a.md").text == "waited\n"


def test_purge_killed_before_its_prune_is_finished_by_the_next_gc(tmp_path: Path) -> None:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    store.write("secret.md", "the purged words\n", expected=None)
    git(repo, "gc", "--quiet")  # some of it packed, some loose
    store.write("loose.md", "more purged words\n", expected=None)
    old_blobs = [store.read(p).version for p in ("secret.md", "loose.md")]
    old_head = git(repo, "rev-parse", "main").strip()

    purge = Worker(tmp_path, "stop_before_prune", repo=str(repo))
    moved = purge.wait_for("moved")
    wait_stopped(purge.pid)
    purge.kill()
    assert purge.proc.returncode == -signal.SIGKILL
    assert git(repo, "rev-parse", "main").strip() == moved[1] != old_head
    assert (repo / "gitmem" / "forget-pending").exists()  # marked unfinished
    for blob in old_blobs:  # not pruned yet
        git(repo, "cat-file", "-e", blob)

    store.gc()

    for blob in [*old_blobs, old_head]:
        gone = subprocess.run(["git", "-C", str(repo), "cat-file", "-e", blob], capture_output=True)
        assert gone.returncode != 0, f"{blob} survived the finished purge"
    assert not (repo / "gitmem" / "forget-pending").exists()
    # The killed purge's erasure reaches the ledger all the same, through the prune that finished it.
    (entry,) = store.erasure_ledger()
    assert entry.kind == "purge" and set(old_blobs) <= set(entry.blobs)
    assert not (repo / "gitmem" / "erasure-pending.json").exists()
    assert store.list() == []
    store.write("new.md", "after the purge\n", expected=None)
    assert_fsck_clean(repo)

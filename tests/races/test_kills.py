"""Writers killed with SIGKILL: acknowledged writes survive, locks left behind are recovered.

A writer can die holding gitmem's flock (the kernel releases it) or, much more
rarely, between libgit2 creating ``refs/heads/main.lock`` and renaming it into
place, which leaves the lock file behind and blocks every git client. The random
rounds hit both by chance; the other tests leave a real stale lock on purpose.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from race_support import (
    Worker,
    assert_fsck_clean,
    assert_linear,
    git,
    head_files,
    history_blobs,
    wait_stopped,
)

from gitmem import GitFileStore

pytestmark = pytest.mark.slow

ROUNDS = 10


def test_killed_writers_lose_no_acknowledged_write(tmp_path: Path) -> None:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    store.write("counter.txt", "0\n", expected=None)
    lock = repo / "refs" / "heads" / "main.lock"
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    workers: list[Worker] = []
    caught_in_ref_lock = 0
    for round_ in range(ROUNDS):
        # A ref lock a killed gitmem writer left must be cleared at once, not after a stale wait.
        pair = [Worker(tmp_path, "forever", repo=str(repo), wid=2 * round_ + i, stale=600) for i in range(2)]
        workers += pair
        for worker in pair:
            worker.wait_for("ready")
        time.sleep(rng.uniform(0.02, 0.25))
        if round_ % 2:
            # Freeze both first, so a ref lock seen now is one a dying writer holds.
            for worker in pair:
                os.kill(worker.pid, signal.SIGSTOP)
            for worker in pair:
                wait_stopped(worker.pid)
            caught_in_ref_lock += lock.exists()
        for worker in pair:
            worker.kill()
            assert worker.proc.returncode == -signal.SIGKILL, worker.stderr()

    # A new writer proceeds, recovering a stale ref lock if the last kill left one.
    store.repo.stale_lock_seconds = 600.0
    started = time.monotonic()
    final = threading.Thread(
        target=store.write, args=("after.md", "the memory still takes writes\n"), kwargs={"expected": None}
    )
    final.start()
    final.join(timeout=120)
    assert not final.is_alive(), "a killed writer's ref lock was waited for as if a foreign git held it"
    recovery = time.monotonic() - started
    assert store.read("after.md").text == "the memory still takes writes\n"

    files, history = head_files(repo), history_blobs(repo)
    file_acks = [line[1:] for w in workers for line in w.lines() if line[0] == "f"]
    counter_acks = [line[1:] for w in workers for line in w.lines() if line[0] == "c"]
    assert file_acks and counter_acks, "the writers never got to write: the test proves nothing"
    assert all((path, version) in history for path, version, _ in file_acks)
    last: dict[str, int] = {}
    for path, _, seq in file_acks:
        last[path] = max(last.get(path, -1), int(seq))
    for path, seq in last.items():
        final = int(store.read(path).text.split()[1])
        # The next write to a path (seq + 4) may have committed without its ack reaching us.
        assert final in (seq, seq + 4), (path, seq, final)
    assert files[path] == store.read(path).version
    values = [int(value) for value, _ in counter_acks]
    assert len(values) == len(set(values)), "two writers acknowledged the same counter value"
    assert all(("counter.txt", version) in history for _, version in counter_acks)
    final_counter = int(store.read("counter.txt").text)
    assert final_counter >= max(values)
    counter_commits = git(repo, "log", "--format=%H", "main", "--", "counter.txt").split()
    assert len(counter_commits) == final_counter + 1  # every increment that landed is its own commit
    assert_linear(repo)
    assert_fsck_clean(repo)
    git(repo, "update-ref", "refs/heads/probe", "main")  # plain git is not blocked either
    print(
        f"\n[kills] seed {seed}: {ROUNDS} rounds, {len(file_acks) + len(counter_acks)} acked writes, "
        f"{caught_in_ref_lock} frozen while holding main.lock; final writer waited {recovery:.2f}s"
    )


def leave_stale_ref_lock(repo: Path) -> float:
    """Kill a real ``git update-ref`` while it holds ``main.lock``; return when it took the lock."""
    head = git(repo, "rev-parse", "main").strip()
    tree = git(repo, "rev-parse", "main^{tree}").strip()
    new = git(repo, "commit-tree", tree, "-p", head, "-m", "never lands").strip()
    proc = subprocess.Popen(
        ["git", "-C", str(repo), "update-ref", "--stdin"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"start\nupdate refs/heads/main {new} {head}\nprepare\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == "start: ok"
    assert proc.stdout.readline().strip() == "prepare: ok"  # main.lock is held now
    taken = time.time()
    proc.kill()
    proc.wait()
    proc.stdin.close()
    proc.stdout.close()
    assert (repo / "refs" / "heads" / "main.lock").exists()
    return taken


def test_stale_ref_lock_of_a_killed_git_is_recovered(tmp_path: Path) -> None:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    version = store.write("a.md", "one\n", expected=None)
    before = git(repo, "rev-parse", "main").strip()
    taken = leave_stale_ref_lock(repo)
    # Plain git is stuck on the lock too: that is why gitmem has to clear it.
    blocked = subprocess.run(
        ["git", "-C", str(repo), "update-ref", "refs/heads/main", before, before], capture_output=True
    )
    assert blocked.returncode != 0

    stale_after = store.repo.stale_lock_seconds = 1.0  # the default (30 s) is too long for a test
    store.write("a.md", "two\n", expected=version)
    waited = time.time() - taken
    # The lock was only removed once it was old enough to be a crash's leftover. Staleness
    # is judged from the file's mtime, which the kernel stamps from a coarse clock (a few
    # ms behind time.time()), hence the small allowance.
    assert waited >= stale_after - 0.05
    assert store.read("a.md").text == "two\n"
    assert git(repo, "rev-parse", "main~1").strip() == before
    assert not (repo / "refs" / "heads" / "main.lock").exists()
    assert_fsck_clean(repo)
    print(
        f"\n[stale main.lock] stale_lock_seconds={stale_after}: write completed {waited:.2f}s after the lock was taken"
    )


def test_live_ref_lock_is_waited_for_not_broken(tmp_path: Path) -> None:
    """A foreign git holding main.lock briefly delays gitmem; gitmem then builds on its commit."""
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    store.repo.stale_lock_seconds = 600.0  # this lock is alive: it must never look stale here
    head = git(repo, "rev-parse", "main").strip()
    tree = git(repo, "rev-parse", "main^{tree}").strip()
    foreign = git(repo, "commit-tree", tree, "-p", head, "-m", "foreign").strip()
    proc = subprocess.Popen(
        ["git", "-C", str(repo), "update-ref", "--stdin"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"start\nupdate refs/heads/main {foreign} {head}\nprepare\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == "start: ok"
    assert proc.stdout.readline().strip() == "prepare: ok"

    errors: list[BaseException] = []

    def write() -> None:
        try:
            store.write("mine.md", "gitmem\n", expected=None)
        except BaseException as exc:
            errors.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(0.3)
    assert writer.is_alive(), "gitmem moved main while another process held main.lock"
    proc.stdin.write("commit\n")
    proc.stdin.close()
    assert proc.stdout.readline().strip() == "commit: ok"
    proc.wait()
    proc.stdout.close()
    writer.join(timeout=120)
    assert not writer.is_alive() and not errors, errors
    assert git(repo, "rev-parse", "main~1").strip() == foreign  # rebuilt on the foreign commit
    assert store.read("mine.md").text == "gitmem\n"
    assert_fsck_clean(repo)


def test_writer_killed_inside_critical_section_releases_the_lock(tmp_path: Path) -> None:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    stopped = Worker(tmp_path, "stop_in_cas", repo=str(repo))
    stopped.wait_for("in-cas")
    wait_stopped(stopped.pid)  # frozen holding the writer flock, its commit object written
    waiting = Worker(tmp_path, "distinct", repo=str(repo), wid=9, writes=3, files=3)
    time.sleep(0.3)
    assert waiting.lines() == [], "a second writer got past a held writer lock"
    killed_at = time.monotonic()
    stopped.kill()
    waiting.join()
    recovery = time.monotonic() - killed_at
    files = head_files(repo)
    assert "stopped.md" not in files  # never acknowledged, never on main
    assert len(waiting.lines()) == 3 and all(path in files for path, _, _ in waiting.lines())
    assert_fsck_clean(repo)
    assert store.write("last.md", "ok\n", expected=None)
    print(f"\n[killed in critical section] next writer finished {recovery:.2f}s after the kill")


def test_planted_ref_lock_stalls_running_writers_only_until_it_is_stale(tmp_path: Path) -> None:
    """Writers in two processes meet a dead ``main.lock``: one clears it, both carry on."""
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    store.write("counter.txt", "0\n", expected=None)
    stale = 0.5
    writers = [Worker(tmp_path, "forever", repo=str(repo), wid=w, stale=stale) for w in range(2)]
    try:
        for writer in writers:
            writer.wait_for("f")
        lock = repo / "refs" / "heads" / "main.lock"
        # What a writer killed mid-update leaves behind, created atomically and only when no
        # writer holds the lock right now (overwriting a live one would corrupt main).
        planted_file = tmp_path / "planted"
        planted_file.write_text("0" * 40 + "\n")
        # Staleness is judged from the lock file's mtime, which the link keeps from the
        # write above, however long the loop below waits for a free moment.
        stamped = planted_file.stat().st_mtime
        while True:
            try:
                os.link(planted_file, lock)
                break
            except FileExistsError:
                time.sleep(0.001)
        planted = time.monotonic()
        before = [len(w.lines()) for w in writers]
        while lock.exists() and time.monotonic() - planted < 120:
            time.sleep(0.005)
        cleared = time.monotonic() - planted
        age = time.time() - stamped  # the lock's age by its mtime when it was found gone
        # Both writers get going again once it is gone.
        while any(len(w.lines()) < n + 3 for w, n in zip(writers, before, strict=True)):
            assert all(w.proc.poll() is None for w in writers), [w.stderr() for w in writers]
            time.sleep(0.005)
    finally:
        for writer in writers:
            writer.kill()
    # A lock younger than stale_lock_seconds is never broken. Its age counts from its mtime,
    # stamped from a coarse kernel clock (a few ms behind time.time()), hence the allowance.
    assert age >= stale - 0.05, (age, cleared)
    assert not lock.exists() or lock.read_text() != "0" * 40 + "\n"
    acks = [line for w in writers for line in w.lines() if line[0] == "c"]
    values = [int(line[1]) for line in acks]
    assert len(values) == len(set(values))
    assert int(store.read("counter.txt").text) >= max(values)
    assert_fsck_clean(repo)
    print(f"\n[planted main.lock] stale_lock_seconds={stale}: cleared after {cleared:.2f}s with two writers waiting")

"""Group commit: threads of one process that wait for a mount's writer lock commit in the holder's group.

Each change stays its own commit (its author, message and trailers), chained on
the one before it; the group is one pack and one ref move. A change that
refuses or fails is answered with its own error and leaves nothing behind; the
others land. A process killed holding a group loses nothing it acknowledged.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from race_support import Worker, assert_fsck_clean, assert_linear, git, head_files, history_blobs, wait_stopped

from gitmem import FileFormat, GitFileStore, MemoryStoreError, Origin
from gitmem.git import engine, packwrite
from gitmem.git.snapshot import Plan, Snapshot

WRITERS = 8


@pytest.fixture
def store(tmp_path: Path) -> Any:
    sync = GitFileStore.init(tmp_path / "m.git").sync
    sync.write("seed.md", "seed\n", expected=None)
    return sync


@pytest.fixture(autouse=True)
def _grouping_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "GROUPING", True)


def waiting(store: Any) -> int:
    queue = engine._queues.get(store.repo.path)
    return 0 if queue is None else len(queue.waiting)


def hold_the_line(store: Any) -> tuple[threading.Thread, threading.Event, list[Any]]:
    """A writer whose plan blocks until released: everything queued meanwhile commits in the next group."""
    entered, release, out = threading.Event(), threading.Event(), []

    def plan(snap: Snapshot) -> Plan[None]:
        entered.set()
        assert release.wait(60)
        blob = snap.write_blob(b"first\n")
        return Plan((("first.md", blob),), "write", ("first.md",), Origin(principal_id="first"), None)

    thread = threading.Thread(target=lambda: out.append(engine.transact(store.repo, plan).commit))
    thread.start()
    assert entered.wait(60)
    return thread, release, out


def run_queued(store: Any, calls: list[Callable[[], Any]]) -> list[Any]:
    """Start ``calls`` one by one while another writer holds the lock (each queued before the next starts), then let go.

    Returns each call's result or the exception it raised, in order, and the packs written.
    """
    holder, release, _ = hold_the_line(store)
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            results[i] = calls[i]()
        except Exception as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    deadline = time.monotonic() + 60
    for i, thread in enumerate(threads):
        thread.start()
        while waiting(store) < i + 1:
            assert time.monotonic() < deadline, "the writers never queued"
            time.sleep(0.001)
    packs_before = set(os.listdir(Path(store.repo.path) / "objects" / "pack"))
    release.set()
    holder.join(60)
    for thread in threads:
        thread.join(60)
    results.append(set(os.listdir(Path(store.repo.path) / "objects" / "pack")) - packs_before)
    return results


def commits_since(repo: str, base: str) -> Iterator[tuple[str, str, str]]:
    """``(commit, author name, full message)`` of each commit after ``base`` on main, oldest first."""
    out = git(repo, "log", "--reverse", "--format=%H%x00%an%x00%B%x01", f"{base}..main")
    for record in out.split("\x01"):
        record = record.strip("\n")
        if record:
            commit, author, message = record.split("\x00", 2)
            yield commit, author, message


def test_queued_writers_each_get_their_own_commit_in_one_pack(store: Any) -> None:
    repo = store.repo.path
    base = git(repo, "rev-parse", "main").strip()
    calls = [
        (
            lambda i=i: store.write(
                f"a{i}/note.md", f"note {i}\n", expected=None, origin=Origin(principal_id=f"agent{i}")
            )
        )
        for i in range(WRITERS)
    ]
    *versions, new_packs = run_queued(store, calls)
    assert all(isinstance(v, str) for v in versions), versions
    # The holder's own commit, then the queued group: two packs, two ref moves, WRITERS + 1 commits.
    assert len([p for p in new_packs if p.endswith(".pack")]) == 2
    made = list(commits_since(repo, base))
    assert len(made) == WRITERS + 1 and len({c for c, _, _ in made}) == WRITERS + 1
    assert made[0][1] == "first"
    by_author = {author: (commit, message) for commit, author, message in made[1:]}
    assert set(by_author) == {f"agent{i}" for i in range(WRITERS)}
    for i in range(WRITERS):
        commit, message = by_author[f"agent{i}"]
        assert f"Gitmem-Path: a{i}/note.md" in message
        assert message.count("Gitmem-Path:") == 1  # each change is its own commit, nothing more
        # The commit changes exactly its own file.
        assert git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", commit).split() == [f"a{i}/note.md"]
        assert store.read(f"a{i}/note.md").version == versions[i]
    assert_linear(repo)
    assert_fsck_clean(repo)


def test_a_refusal_in_a_group_fails_alone(store: Any, tmp_path: Path) -> None:
    repo = store.repo.path
    taken = store.write("taken.md", "old\n", expected=None)
    base = git(repo, "rev-parse", "main").strip()

    def broken(snap: Snapshot) -> Plan[None]:
        snap.write_blob(b"half of a broken plan\n")
        raise RuntimeError("a plan that fails")

    calls: list[Callable[[], Any]] = [
        lambda: store.write("ok1.md", "one\n", expected=None),
        lambda: store.write("taken.md", "refused change\n", expected=None),  # exists already
        lambda: engine.transact(store.repo, broken),
        lambda: store.write("taken.md", "stale\n", expected="0" * 40),  # version mismatch
        lambda: store.write("ok2.md", "two\n", expected=None),
        lambda: store.write("taken.md", "new\n", expected=taken),
    ]
    ok1, exists, failed, stale, ok2, edited, _ = run_queued(store, calls)
    assert isinstance(exists, MemoryStoreError) and exists.code == "version_mismatch"
    assert exists.current is not None and exists.current.text == "old\n"
    assert isinstance(failed, RuntimeError) and str(failed) == "a plan that fails"
    assert isinstance(stale, MemoryStoreError) and stale.code == "version_mismatch"
    assert store.read("ok1.md").version == ok1 and store.read("ok2.md").version == ok2
    assert store.read("taken.md").text == "new\n" and store.read("taken.md").version == edited
    assert len(list(commits_since(repo, base))) == 4  # the holder's and the three that landed
    # Nothing of the refused or failed changes was written, not even unreachable.
    for text in (b"refused change\n", b"half of a broken plan\n", b"stale\n"):
        oid = subprocess.run(["git", "hash-object", "--stdin"], input=text, capture_output=True, check=True)
        missing = subprocess.run(["git", "-C", repo, "cat-file", "-e", oid.stdout.decode().strip()], check=False)
        assert missing.returncode != 0, text
    assert_fsck_clean(repo)


def second_pack_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk full at the second pack written: the queued group's (the holder's own goes first)."""
    real = packwrite.write_pack_files
    calls_made = [0]

    def full_disk(*a: Any, **kw: Any) -> None:
        calls_made[0] += 1
        if calls_made[0] == 2:
            raise OSError(28, "No space left on device")
        real(*a, **kw)

    monkeypatch.setattr(packwrite, "write_pack_files", full_disk)


def test_a_failed_group_answers_every_change_and_the_next_one_commits(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = store.repo.path
    base = git(repo, "rev-parse", "main").strip()
    second_pack_fails(monkeypatch)
    calls = [(lambda i=i: store.write(f"g{i}.md", f"{i}\n", expected=None)) for i in range(4)]
    *answers, _ = run_queued(store, calls)
    assert all(isinstance(a, MemoryStoreError) and a.code == "unavailable" for a in answers), answers
    assert len(list(commits_since(repo, base))) == 1  # only the holder's: nothing of the group moved
    assert store.write("after.md", "after\n", expected=None)
    assert waiting(store) == 0
    assert_fsck_clean(repo)


def test_a_group_runs_again_when_a_foreign_git_moved_the_ref(store: Any) -> None:
    repo = store.repo.path
    holder, release, out = hold_the_line(store)
    results: list[Any] = []
    threads = [
        threading.Thread(target=lambda i=i: results.append(store.write(f"q{i}.md", f"{i}\n", expected=None)))
        for i in range(3)
    ]
    for thread in threads:
        thread.start()
    while waiting(store) < 3:
        time.sleep(0.002)
    # A plain git commit, outside gitmem's lock, while the holder's plan runs.
    tree = git(repo, "rev-parse", "main^{tree}").strip()
    head = git(repo, "rev-parse", "main").strip()
    foreign = git(repo, "commit-tree", tree, "-p", head, "-m", "foreign").strip()
    git(repo, "update-ref", "refs/heads/main", foreign, head)
    release.set()
    holder.join(60)
    for thread in threads:
        thread.join(60)
    assert out and len(results) == 3
    assert foreign in git(repo, "rev-list", "main").split()
    assert {p for p in head_files(repo)} >= {"first.md", "q0.md", "q1.md", "q2.md"}
    assert_linear(repo)
    assert_fsck_clean(repo)


def test_alone_when_the_thread_holds_the_lock(store: Any) -> None:
    """A writer already holding the lock (inside maintenance) commits at once, not behind a queue."""
    with store.repo.lock.hold("gc"):
        assert store.write("inside.md", "x\n", expected=None)
    assert store.read("inside.md").text == "x\n"


@pytest.mark.slow
@pytest.mark.parametrize("stop", ["before", "after", None])
def test_a_process_killed_holding_a_group_loses_nothing_acknowledged(tmp_path: Path, stop: str | None) -> None:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    store.write("seed.md", "seed\n", expected=None)
    acked: list[list[str]] = []
    for _ in range(2):
        worker = Worker(tmp_path, "group_threads", repo=str(repo), threads=6, stop=stop)
        worker.wait_for("ready")
        if stop:
            worker.wait_for("holding")  # stopping itself inside a group of two or more
            wait_stopped(worker.pid)
        else:
            while len(worker.lines()) < 60:
                time.sleep(0.005)
        os.kill(worker.pid, signal.SIGKILL)
        worker.proc.wait()
        acked += [line[1:] for line in worker.lines() if line[0] == "f"]
    assert acked, "nothing was acknowledged: the test proves nothing"
    # The lock comes free and a new writer commits.
    assert store.write("after.md", "after\n", expected=None)
    history, files = history_blobs(repo), head_files(repo)
    for path, version, _ in acked:
        assert (path, version) in history and files[path] == version, path
    assert_linear(repo)
    assert_fsck_clean(repo)


class Interrupted(BaseException):
    """What a committing thread may be hit by that is no error of a plan (a KeyboardInterrupt, a SystemExit)."""


def test_a_committer_interrupted_mid_group_answers_its_waiters(store: Any) -> None:
    repo = store.repo.path
    base = git(repo, "rev-parse", "main").strip()
    holder, release, _ = hold_the_line(store)  # its group: its own change only
    entered, go, caught = threading.Event(), threading.Event(), []

    def interrupted(snap: Snapshot) -> Plan[None]:
        entered.set()
        assert go.wait(60)
        raise Interrupted

    def lead() -> None:
        try:
            engine.transact(store.repo, interrupted)
        except Interrupted as exc:
            caught.append(exc)

    leader = threading.Thread(target=lead)
    leader.start()
    while waiting(store) < 1:
        time.sleep(0.001)
    answers: list[Any] = []

    def write(i: int) -> None:
        try:
            answers.append(store.write(f"w{i}.md", f"{i}\n", expected=None))
        except MemoryStoreError as exc:
            answers.append(exc)

    writers = [threading.Thread(target=write, args=(i,)) for i in range(3)]
    for i, thread in enumerate(writers):
        thread.start()
        while waiting(store) < i + 2:
            time.sleep(0.001)
    release.set()  # the first group ends; the interrupted plan's thread commits the next one
    holder.join(60)
    assert entered.wait(60)
    go.set()
    leader.join(60)
    for thread in writers:
        thread.join(60)
    assert caught, "the interrupted committer did not see its own interruption"
    assert len(answers) == 3 and all(isinstance(a, MemoryStoreError) and a.code == "unavailable" for a in answers)
    assert len(list(commits_since(repo, base))) == 1  # the first holder's; nothing of the interrupted group
    assert waiting(store) == 0
    assert store.write("after.md", "after\n", expected=None)
    assert_fsck_clean(repo)


def test_a_waiter_interrupted_leaves_the_queue(store: Any) -> None:
    """Ctrl-C in a main thread waiting its turn takes it out of the queue; the writers after it go on."""
    holder, release, _ = hold_the_line(store)
    main = threading.main_thread().ident
    assert main == threading.get_ident()

    def interrupt_once_queued() -> None:
        while waiting(store) < 1:
            time.sleep(0.001)
        time.sleep(0.05)  # the main thread blocked in its wait
        signal.pthread_kill(main, signal.SIGINT)  # a real signal: it wakes the wait (as Ctrl-C does)

    # Python's own Ctrl-C handler, whatever an earlier test of the session left installed.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        threading.Thread(target=interrupt_once_queued).start()
        with pytest.raises(KeyboardInterrupt):
            store.write("never.md", "interrupted\n", expected=None)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        signal.signal(signal.SIGINT, previous)
    assert waiting(store) == 0
    later: list[str] = []
    writer = threading.Thread(target=lambda: later.append(store.write("later.md", "x\n", expected=None)))
    writer.start()
    while waiting(store) < 1:
        time.sleep(0.001)
    release.set()
    holder.join(60)
    writer.join(60)
    assert later and store.read("later.md").text == "x\n"
    assert "never.md" not in head_files(store.repo.path)


def test_a_restore_under_a_byte_limit_counts_a_file_written_earlier_in_its_group(tmp_path: Path) -> None:
    """The byte limit sums every file's size: one an earlier change of the group wrote is in no pack yet."""
    store = GitFileStore.init(tmp_path / "m.git", FileFormat(max_memory_bytes=100_000)).sync
    store.write("seed.md", "seed\n", expected=None)
    old = store.write("r.md", "old\n", expected=None)
    rev = git(store.repo.path, "rev-parse", "main").strip()
    now = store.write("r.md", "new\n", expected=old)
    calls: list[Callable[[], Any]] = [
        lambda: store.write("fresh.md", "written in the group\n", expected=None),
        lambda: store.restore("r.md", rev, expected=now),
    ]
    fresh, restored, _ = run_queued(store, calls)
    assert isinstance(fresh, str), fresh
    assert restored == old, restored  # as if one after the other: the restore fits
    assert store.read("r.md").text == "old\n"
    assert_fsck_clean(store.repo.path)


def test_writers_behind_a_held_lock_time_out_together_not_one_after_another(store: Any) -> None:
    """The lock held past its timeout answers every queued writer about when a lone writer would be."""
    timeout = 0.5
    store.repo.lock.timeout = timeout
    held, release = threading.Event(), threading.Event()

    def holder() -> None:  # maintenance holding the lock, outside the engine
        with store.repo.lock.hold("write"):
            held.set()
            release.wait(60)

    keeper = threading.Thread(target=holder)
    keeper.start()
    assert held.wait(60)
    took: list[float] = []

    def write(i: int) -> None:
        started = time.monotonic()
        with pytest.raises(MemoryStoreError):
            store.write(f"t{i}.md", f"{i}\n", expected=None)
        took.append(time.monotonic() - started)

    writers = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    try:
        for thread in writers:
            thread.start()
        for thread in writers:
            thread.join(60)
    finally:
        release.set()
        keeper.join(60)
    assert len(took) == 4
    assert max(took) < 2 * timeout + 0.5, took  # not 4 timeouts in a row
    assert waiting(store) == 0
    assert store.write("after.md", "after\n", expected=None)


def test_a_refusal_that_saw_a_change_of_a_failed_group_is_answered_with_the_failure(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change refused against an earlier change of its group that never landed was refused by nothing real."""
    second_pack_fails(monkeypatch)
    calls: list[Callable[[], Any]] = [
        lambda: store.write("a.md", "one\n", expected=None),
        lambda: store.write("a.md", "two\n", expected=None),  # refused against "one", which never lands
    ]
    first, second, _ = run_queued(store, calls)
    assert isinstance(first, MemoryStoreError) and first.code == "unavailable", first
    assert "a.md" not in head_files(store.repo.path)
    # Not version_mismatch showing "one\n" as the file now: the file never held it.
    assert isinstance(second, MemoryStoreError) and second.code == "unavailable", second


def test_a_mount_no_store_holds_keeps_no_queue_or_trees(tmp_path: Path) -> None:
    """The queue and its parsed trees live as long as a store of the mount does, not as long as the process.

    A server writing many memories (one per user) would otherwise hold every memory's folders for good.
    """
    import gc

    paths = []
    for i in range(3):
        store = GitFileStore.init(tmp_path / f"m{i}.git").sync
        store.write("a/b.md", "x\n", expected=None)
        paths.append(store.repo.path)
        assert paths[-1] in engine._queues
        del store
    gc.collect()
    assert not [p for p in paths if p in engine._queues]


def test_a_child_forked_while_a_group_commits_writes_on_its_own(store: Any) -> None:
    """gitmem serve forks workers: a child inherits no queue (its committer thread is not in the child)."""
    holder, release, _ = hold_the_line(store)  # the parent's queue is busy, its committer mid-plan
    queued = threading.Thread(target=lambda: store.write("parent.md", "p\n", expected=None))
    queued.start()
    while waiting(store) < 1:
        time.sleep(0.001)
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 1
            try:
                # The parent's committer holds the flock: the child waits for it like any other process.
                done = threading.Event()

                def child_write() -> None:
                    store.write("child.md", "c\n", expected=None)
                    done.set()

                threading.Thread(target=child_write, daemon=True).start()
                code = 0 if done.wait(30) else 2
            finally:
                os._exit(code)
        time.sleep(0.3)  # the child is waiting for the flock, not in the parent's queue
        release.set()
        holder.join(60)
        queued.join(60)
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    files = head_files(store.repo.path)
    assert "child.md" in files and "parent.md" in files and "first.md" in files
    assert_fsck_clean(store.repo.path)


def test_a_group_whose_ref_moved_before_its_move_failed_tells_no_waiter_it_did_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ref renamed into place, then its folder's fsync fails: the changes are on the ref, so no waiter
    may be told the commit failed before the memory moved (a retry would make the change twice)."""
    from gitmem.git import looseref

    store = GitFileStore.init(tmp_path / "m.git", durable=True).sync
    store.write("seed.md", "seed\n", expected=None)
    real = looseref.open_folder
    calls_made = [0]

    def failing_fsync(path: str) -> int:
        calls_made[0] += 1
        if calls_made[0] == 2:  # the queued group's ref move (the holder's own went first)
            raise OSError(5, "Input/output error")
        return real(path)

    monkeypatch.setattr(looseref, "open_folder", failing_fsync)
    calls = [(lambda i=i: store.write(f"g{i}.md", f"{i}\n", expected=None)) for i in range(3)]
    *answers, _ = run_queued(store, calls)
    files = head_files(store.repo.path)
    for i, answer in enumerate(answers):
        if f"g{i}.md" in files:
            assert isinstance(answer, str) or (
                isinstance(answer, MemoryStoreError) and answer.code == "write_unconfirmed"
            ), answer


def test_a_refused_change_that_wrote_a_blob_an_earlier_change_needs_leaves_it_in_the_pack(store: Any) -> None:
    """Removing a refused plan's objects removes only those it added: the same content written by an
    earlier change of the group stays for that change's commit."""
    store.write("taken.md", "old\n", expected=None)
    calls: list[Callable[[], Any]] = [
        lambda: store.write("a.md", "same\n", expected=None),
        lambda: store.write("taken.md", "same\n", expected=None),  # refused: exists; same blob as a.md
        lambda: store.write("b.md", "same\n", expected=None),
    ]
    first, refused, third, _ = run_queued(store, calls)
    assert isinstance(refused, MemoryStoreError) and refused.code == "version_mismatch"
    assert store.read("a.md").text == "same\n" and store.read("b.md").text == "same\n"
    assert first == third == store.read("a.md").version
    assert store.read("taken.md").text == "old\n"
    assert_fsck_clean(store.repo.path)


def test_a_file_count_limit_holds_across_a_group(tmp_path: Path) -> None:
    """Two creations queued together where one fits: the second is memory_full, as one after the other."""
    store = GitFileStore.init(tmp_path / "m.git", FileFormat(max_files=3)).sync
    store.write("seed.md", "seed\n", expected=None)  # with the holder's first.md: one place left
    calls: list[Callable[[], Any]] = [
        lambda: store.write("a.md", "a\n", expected=None),
        lambda: store.write("b.md", "b\n", expected=None),
    ]
    fits, full, _ = run_queued(store, calls)
    assert isinstance(fits, str), fits
    assert isinstance(full, MemoryStoreError) and full.code == "memory_full", full
    assert sorted(head_files(store.repo.path)) == ["a.md", "first.md", "seed.md"]

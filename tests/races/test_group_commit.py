"""Group commit: threads of one process that queue on a memory are committed together, each as itself.

Each caller must get exactly its own outcome (its commit, or its own conflict),
every change stays its own commit, and a process killed at any step of a round
leaves a memory ``git fsck --strict`` accepts with every acknowledged write on
``main`` (see ``gitmem.git.group``).
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from race_support import Worker, assert_fsck_clean, assert_linear, commit_count, git, head_files, wait_stopped

from gitmem import GitFileStore, MemoryStoreError
from gitmem.git import group, packwrite
from gitmem.git.repo import GitRepo

pytestmark = pytest.mark.slow


def _queued(path: str) -> int:
    return len(group._group(path).queue)


def _run_held(store: Any, jobs: list[Any]) -> list[Any]:
    """Start ``jobs`` in threads while another handle holds the writer lock; release once all have queued."""
    blocker = GitRepo.open(store.path)
    outcomes: list[Any] = [None] * len(jobs)

    def run(i: int) -> None:
        try:
            outcomes[i] = jobs[i]()
        except MemoryStoreError as exc:
            outcomes[i] = exc

    with blocker.lock.hold():
        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        # One thread leads (waiting for the flock), the others wait in the queue.
        while _queued(store.path) < len(jobs) - 1 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert _queued(store.path) == len(jobs) - 1
    for t in threads:
        t.join(timeout=60)
    return outcomes


def test_queued_writers_share_one_pack_and_each_gets_its_own_commit(tmp_path: Path) -> None:
    store = GitFileStore.init(tmp_path / "m.git").sync
    before = commit_count(tmp_path / "m.git")
    packs_before = packwrite.pack_count(str(tmp_path / "m.git"))
    jobs = [lambda n=n: store.write(f"f{n}.md", f"{n}\n", expected=None) for n in range(6)]
    outcomes = _run_held(store, jobs)
    assert all(isinstance(v, str) for v in outcomes), outcomes
    for n, version in enumerate(outcomes):
        assert store.read(f"f{n}.md").version == version
    assert commit_count(tmp_path / "m.git") == before + 6  # one commit per write
    assert_linear(tmp_path / "m.git")
    # The leader's round took its own write; the five queued meanwhile went in the next round: two packs.
    assert packwrite.pack_count(str(tmp_path / "m.git")) - packs_before <= 2
    for n in range(6):  # each commit names its own path
        log = git(tmp_path / "m.git", "log", "--format=%H", "--", f"f{n}.md").split()
        assert len(log) == 1
    assert_fsck_clean(tmp_path / "m.git")


def test_conflicts_inside_a_round_are_each_callers_own(tmp_path: Path) -> None:
    """Five writers expect the same version: the first in the round wins, the rest see its write."""
    store = GitFileStore.init(tmp_path / "m.git").sync
    base = store.write("shared.md", "base\n", expected=None)
    other = store.write("other.md", "x\n", expected=None)
    jobs: list[Any] = [lambda n=n: store.write("shared.md", f"writer {n}\n", expected=base) for n in range(5)]
    jobs.append(lambda: store.write("other.md", "y\n", expected=other))
    jobs.append(lambda: store.write("bad.md", "z\n", expected=base))  # expects a file that is not there
    outcomes = _run_held(store, jobs)
    wins = [v for v in outcomes[:5] if isinstance(v, str)]
    losses = [v for v in outcomes[:5] if isinstance(v, MemoryStoreError)]
    assert len(wins) == 1 and len(losses) == 4
    assert all(e.code == "version_mismatch" and e.current is not None for e in losses)
    assert all(e.current.version == wins[0] for e in losses)  # each saw the winner's write
    assert store.read("shared.md").version == wins[0]
    assert isinstance(outcomes[5], str) and store.read("other.md").text == "y\n"
    assert isinstance(outcomes[6], MemoryStoreError) and outcomes[6].code in ("version_mismatch", "not_found")
    assert "bad.md" not in head_files(tmp_path / "m.git")
    assert_fsck_clean(tmp_path / "m.git")


def test_a_round_failing_to_write_fails_every_caller_in_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No caller is told its write is in when the round's pack could not be written."""
    store = GitFileStore.init(tmp_path / "m.git").sync
    head = store.head()

    def full_disk(*_: object, **__: object) -> str:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(packwrite, "write_pack", full_disk)
    outcomes = _run_held(store, [lambda n=n: store.write(f"f{n}.md", "x\n", expected=None) for n in range(4)])
    assert all(isinstance(v, MemoryStoreError) and v.code == "unavailable" for v in outcomes), outcomes
    assert store.head() == head
    monkeypatch.undo()
    assert store.write("after.md", "ok\n", expected=None)
    assert_fsck_clean(tmp_path / "m.git")


@pytest.mark.parametrize("step", [0, 1, 2])
def test_process_killed_in_a_group_round(tmp_path: Path, step: int) -> None:
    """SIGKILL before the round's pack, between pack and ref, and after the ref: nothing acknowledged is lost."""
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    before_round = None
    worker = Worker(tmp_path, "group_stop", repo=str(repo), step=step, threads=4)
    line = worker.wait_for("in-round")
    wait_stopped(worker.pid)
    before_round = git(repo, "rev-parse", "main").strip()
    worker.kill()
    assert worker.proc.returncode == -signal.SIGKILL, worker.stderr()
    assert int(line[2]) >= 2
    acked: dict[str, int] = {}
    for fields in worker.lines():
        if fields[0] == "w":
            acked[f"t{fields[1]}.md"] = max(acked.get(f"t{fields[1]}.md", -1), int(fields[2]))
    files = head_files(repo)
    for path, seq in acked.items():  # every acknowledged write is on main (or a later one of its writer)
        assert int(git(repo, "show", f"main:{path}").strip()) >= seq, (path, seq)
    assert set(acked) <= set(files)
    on_main = set(git(repo, "rev-list", "main").split())
    round_commits = line[3:]
    if step < 2:  # the round never moved main: none of its commits is there
        assert not on_main & set(round_commits)
    else:  # the ref moved before anyone was answered: the whole chain is there
        assert set(round_commits) <= on_main
    assert git(repo, "rev-parse", "main").strip() == before_round
    assert_fsck_clean(repo)
    assert_linear(repo)
    version = store.read("t0.md").version if "t0.md" in files else None
    store.write("t0.md", "after the kill\n", expected=version)  # the next writer is not blocked
    assert_fsck_clean(repo)

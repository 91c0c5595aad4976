"""Group commit across processes: a waiter's request committed by the lock holder, exactly once.

Every scenario uses real processes (``spool_worker.py``) and real ``SIGKILL``s at
fixed points of the holder's round (``gitmem.git.spool.hook``): a request is
applied by exactly one round, an acknowledged write is on ``main``, a killed
waiter's request is never applied once the holder saw it dead, and
``git fsck --strict`` accepts the memory after every kill.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from race_support import HANG_SECONDS, Worker, assert_fsck_clean, assert_linear, commit_count, git

from gitmem import GitFileStore, MemoryStoreError
from gitmem.git import packwrite, spool
from gitmem.git.repo import GitRepo

pytestmark = pytest.mark.slow

SCRIPT = str(Path(__file__).with_name("spool_worker.py"))


class SpoolWorker:
    def __init__(self, tmp: Path, name: str, repo: Path, path: str, text: str, expected: str | None, **extra: object) -> None:
        self.acks = tmp / f"ack-{name}"
        self.signals = tmp / f"sig-{name}"
        self.signals.mkdir()
        self.errors = tmp / f"err-{name}"
        args = {"repo": str(repo), "path": path, "text": text, "expected": expected, "acks": str(self.acks)}
        args.update(signals=str(self.signals), **extra)
        with open(self.errors, "wb") as err:
            self.proc = subprocess.Popen([sys.executable, SCRIPT, json.dumps(args)], stdout=subprocess.DEVNULL, stderr=err)
        Worker.live.append(self)  # type: ignore[arg-type]  # killed after the test whatever happened

    def at(self, point: str) -> None:
        _until(lambda: (self.signals / f"at-{point}").exists() or self.proc.poll() is not None, f"{point}")
        assert (self.signals / f"at-{point}").exists(), self.errors.read_text()

    def go(self, point: str) -> None:
        (self.signals / f"go-{point}").touch()

    def outcome(self) -> list[str]:
        try:
            self.proc.wait(timeout=HANG_SECONDS)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"worker hung:\n{self.errors.read_text()}") from None
        assert self.proc.returncode == 0, self.errors.read_text()
        return self.acks.read_text().split()

    def killed(self) -> None:
        self.proc.wait(timeout=HANG_SECONDS)
        assert self.proc.returncode == -9, self.errors.read_text()
        assert not self.acks.exists()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def _until(cond: object, what: str) -> None:
    deadline = time.monotonic() + HANG_SECONDS
    while time.monotonic() < deadline:
        if cond():  # type: ignore[operator]
            return
        time.sleep(0.002)
    raise AssertionError(f"timed out waiting for {what}")


def _slots(repo: Path) -> dict[str, str]:
    """Each slot file in the spool and its state."""
    folder = Path(spool.spool_dir(str(repo)))
    found = {}
    for slot in folder.glob("*.slot") if folder.exists() else []:
        header = spool._decode(slot.read_bytes()[:160])
        found[slot.name] = header.state if header else "?"
    return found


def _queued(repo: Path, n: int) -> None:
    _until(lambda: sum(s == "queued" for s in _slots(repo).values()) >= n, f"{n} queued requests")


def _commits_naming(repo: Path, path: str) -> int:
    return len(git(repo, "log", "--format=%H", "refs/heads/main", "--", path).split())


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "m.git"
    store = GitFileStore.init(path).sync
    store.write("seed.md", "seed\n", expected=None)
    return path


def test_a_holder_commits_other_processes_requests_each_as_its_own_commit(tmp_path: Path, repo: Path) -> None:
    store = GitFileStore.open(repo).sync
    base = store.write("shared.md", "base\n", expected=None)
    before, packs = commit_count(repo), packwrite.pack_count(str(repo))
    holder = SpoolWorker(tmp_path, "h", repo, "h.md", "holder\n", None, hooks={"round": "wait"})
    holder.at("round")  # it holds the writer lock and has not read the spool yet
    waiters = [
        SpoolWorker(tmp_path, "w1", repo, "w1.md", "one\n", None),
        SpoolWorker(tmp_path, "w2", repo, "shared.md", "two\n", base),
        SpoolWorker(tmp_path, "w3", repo, "shared.md", "three\n", base),
    ]
    _queued(repo, 3)
    holder.go("round")
    outcomes = [w.outcome() for w in waiters]
    assert holder.outcome()[0] == "ok"
    assert outcomes[0][0] == "ok" and store.read("w1.md").version == outcomes[0][1]
    # Both expected the same version of shared.md: exactly one wins, the other is told so.
    assert sorted(o[0] for o in outcomes[1:]) == ["err", "ok"], outcomes
    assert [o[1] for o in outcomes[1:] if o[0] == "err"] == ["version_mismatch"]
    winner = next(o[1] for o in outcomes[1:] if o[0] == "ok")
    assert store.read("shared.md").version == winner
    # One round, one pack: each accepted write is its own commit, naming its own path.
    assert commit_count(repo) == before + 3
    assert packwrite.pack_count(str(repo)) - packs == 1
    assert _commits_naming(repo, "w1.md") == 1 and _commits_naming(repo, "h.md") == 1
    assert_linear(repo)
    assert all(state == "empty" for state in _slots(repo).values())
    assert_fsck_clean(repo)


@pytest.mark.parametrize("point", ["pending", "landed"])
def test_a_holder_killed_mid_round_leaves_each_request_applied_exactly_once(
    tmp_path: Path, repo: Path, point: str
) -> None:
    """Killed after writing the outcomes but before moving main (the waiter commits it itself), or after (it is done)."""
    holder = SpoolWorker(tmp_path, "h", repo, "h.md", "holder\n", None, hooks={"round": "wait", point: "kill"})
    holder.at("round")
    waiter = SpoolWorker(tmp_path, "w", repo, "w.md", "waiter\n", None)
    _queued(repo, 1)
    holder.go("round")
    holder.killed()
    ok, version = waiter.outcome()
    store = GitFileStore.open(repo).sync
    assert ok == "ok" and store.read("w.md").version == version
    assert _commits_naming(repo, "w.md") == 1  # never applied twice
    # The holder's own write landed only if it was killed after main moved (unacknowledged either way).
    assert _commits_naming(repo, "h.md") == (1 if point == "landed" else 0)
    assert_linear(repo)
    assert_fsck_clean(repo)


def test_a_killed_waiters_request_is_never_applied(tmp_path: Path, repo: Path) -> None:
    holder = SpoolWorker(tmp_path, "h", repo, "h.md", "holder\n", None, hooks={"round": "wait"})
    holder.at("round")
    waiter = SpoolWorker(tmp_path, "w", repo, "w.md", "waiter\n", None)
    _queued(repo, 1)
    waiter.kill()
    holder.go("round")
    assert holder.outcome()[0] == "ok"
    assert _commits_naming(repo, "w.md") == 0
    assert _slots(repo) == {}  # the holder dropped the dead waiter's slot (and its own process is gone too)
    assert_fsck_clean(repo)


def test_a_waiter_that_gives_up_withdraws_its_request(tmp_path: Path, repo: Path) -> None:
    """The lock stays taken past the waiter's timeout: it answers unavailable, and nobody applies it later."""
    blocker = GitRepo.open(str(repo))
    with blocker.lock.hold():
        waiter = SpoolWorker(tmp_path, "w", repo, "w.md", "waiter\n", None, lock_timeout=1.0)
        assert waiter.outcome() == ["err", "unavailable"]
    store = GitFileStore.open(repo).sync
    store.write("later.md", "later\n", expected=None)  # a round that reads the spool
    assert _commits_naming(repo, "w.md") == 0
    with pytest.raises(MemoryStoreError) as refused:
        store.read("w.md")
    assert refused.value.code == "not_found"
    assert_fsck_clean(repo)


def test_a_request_no_holder_took_is_committed_by_its_own_process(tmp_path: Path, repo: Path) -> None:
    """The holder is not a group-commit round (here: a held lock, as maintenance holds it)."""
    blocker = GitRepo.open(str(repo))
    with blocker.lock.hold():
        waiter = SpoolWorker(tmp_path, "w", repo, "w.md", "waiter\n", None)
        _queued(repo, 1)
    ok, version = waiter.outcome()
    assert ok == "ok" and GitFileStore.open(repo).sync.read("w.md").version == version
    assert os.path.isdir(spool.spool_dir(str(repo)))
    assert_fsck_clean(repo)

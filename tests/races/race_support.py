"""Parent-side helpers for the race and crash tests: start workers, read acks, ask git."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar

WORKER = str(Path(__file__).with_name("race_worker.py"))
# A liveness guard for the whole worker phase, not a performance bound: a worker
# stuck this long is deadlocked.
HANG_SECONDS = 120.0


class Worker:
    """One ``race_worker.py`` process and the file it acknowledges writes in."""

    live: ClassVar[list[Worker]] = []  # killed after each test (see conftest.py), whatever happened

    def __init__(self, tmp: Path, mode: str, **args: object) -> None:
        self.acks = tmp / f"acks-{mode}-{time.monotonic_ns()}.txt"
        self.acks.touch()
        self.errors = self.acks.with_suffix(".stderr")
        args = {"mode": mode, "acks": str(self.acks), **args}
        with open(self.errors, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, WORKER, json.dumps(args)], stdout=subprocess.DEVNULL, stderr=err
            )
        Worker.live.append(self)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def lines(self) -> list[list[str]]:
        """Acknowledged lines, split; an unterminated tail (a kill mid-line) is not an ack."""
        text = self.acks.read_text()
        complete = text[: text.rfind("\n") + 1]
        return [line.split(" ") for line in complete.splitlines()]

    def wait_for(self, first_field: str) -> list[str]:
        """Block until an ack line starting with ``first_field`` appears (or the worker dies)."""
        deadline = time.monotonic() + HANG_SECONDS
        while time.monotonic() < deadline:
            for line in self.lines():
                if line[0] == first_field:
                    return line
            if self.proc.poll() is not None:
                raise AssertionError(f"worker exited early:\n{self.stderr()}")
            time.sleep(0.005)
        raise AssertionError(f"no {first_field!r} ack within {HANG_SECONDS}s")

    def join(self) -> None:
        """Wait for a clean exit; a failing or hung worker fails the test with its stderr."""
        try:
            self.proc.wait(timeout=HANG_SECONDS)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"worker hung (deadlock?):\n{self.stderr()}") from None
        assert self.proc.returncode == 0, f"worker failed ({self.proc.returncode}):\n{self.stderr()}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def stderr(self) -> str:
        return self.errors.read_text(errors="replace")


def run_all(workers: Iterable[Worker], go: Path) -> float:
    """Release workers waiting on ``go`` and wait for all; return the elapsed seconds."""
    workers = list(workers)
    start = time.monotonic()
    go.touch()
    try:
        for worker in workers:
            worker.join()
    finally:
        for worker in workers:
            worker.kill()
    return time.monotonic() - start


def wait_stopped(pid: int) -> None:
    """Wait until the kernel reports ``pid`` as stopped (state ``T``)."""
    deadline = time.monotonic() + HANG_SECONDS
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
        if state in ("T", "t"):
            return
        time.sleep(0.001)
    raise AssertionError(f"process {pid} never stopped")


def git(repo: str | os.PathLike[str], *argv: str) -> str:
    done = subprocess.run(["git", "-C", os.fspath(repo), *argv], capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(argv)} failed:\n{done.stderr}"
    return done.stdout


def assert_fsck_clean(repo: str | os.PathLike[str]) -> None:
    """``git fsck --strict`` passes; dangling objects (from killed writers) are allowed."""
    done = subprocess.run(
        ["git", "-C", os.fspath(repo), "fsck", "--strict", "--no-progress", "--no-dangling"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and not done.stdout.strip(), f"fsck:\n{done.stdout}\n{done.stderr}"
    assert "error" not in done.stderr and "missing" not in done.stderr, done.stderr


def commit_count(repo: str | os.PathLike[str]) -> int:
    return int(git(repo, "rev-list", "--count", "refs/heads/main"))


def assert_linear(repo: str | os.PathLike[str]) -> None:
    """Nothing was merged: every commit on main has at most one parent."""
    assert git(repo, "rev-list", "--min-parents=2", "refs/heads/main").strip() == ""


def history_blobs(repo: str | os.PathLike[str]) -> set[tuple[str, str]]:
    """Every ``(path, blob id)`` some commit on main set, from ``git log --raw``."""
    out = git(repo, "log", "--raw", "--no-abbrev", "--no-renames", "--format=", "refs/heads/main")
    found = set()
    for line in out.splitlines():
        if line.startswith(":"):
            meta, path = line.split("\t", 1)
            found.add((path, meta.split()[3]))
    return found


def head_files(repo: str | os.PathLike[str]) -> dict[str, str]:
    """``path -> blob id`` of the tree at main, from ``git ls-tree -r``."""
    out = git(repo, "ls-tree", "-r", "refs/heads/main")
    files = {}
    for line in out.splitlines():
        meta, path = line.split("\t", 1)
        files[path] = meta.split()[2]
    return files

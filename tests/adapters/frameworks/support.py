"""Helpers of the framework adapters' own tests: git's view of a mount, and worker processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

WORKER = str(Path(__file__).with_name("fw_worker.py"))
HANG_SECONDS = 180  # a liveness guard against a deadlock, not a performance bound


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def commits(repo: Path) -> list[str]:
    """The subjects on main, newest first."""
    return git(repo, "log", "--format=%s", "main").splitlines()


def fsck(repo: Path) -> None:
    result = subprocess.run(["git", "-C", str(repo), "fsck", "--strict"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def run_workers(tmp: Path, jobs: list[dict[str, object]]) -> list[list[str]]:
    """Start every job as its own process, let them go together, and return each one's lines."""
    go = tmp / "go"
    procs = []
    for n, job in enumerate(jobs):
        out = tmp / f"out-{n}"
        out.touch()
        args = {**job, "out": str(out), "go": str(go)}
        procs.append((subprocess.Popen([sys.executable, WORKER, json.dumps(args)]), out))
    go.touch()
    for proc, _ in procs:
        assert proc.wait(HANG_SECONDS) == 0
    return [out.read_text().split() for _, out in procs]

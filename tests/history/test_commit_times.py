"""Commits whose time no date can hold: git takes them, and every reader of history must still answer.

A commit's author and committer lines carry seconds since the epoch and an offset that git
checks only for overflow: ``253402300800 +0000`` (the first second of the year 10000) and an
offset of ``+9959`` pass ``git fsck`` and gitmem's push checks. One such commit pushed to a
memory made every ``log`` (and the history tool) of it fail, and one at a proposal's tip made
``review list`` fail. The time is shown clamped to the dates a ``datetime`` holds instead.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CODE = "from gitmem.adapters.cli import main; main()"


def git(repo: Path, *args: str, data: str | None = None) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], input=data, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CODE, "--root", str(root), *args], capture_output=True, text=True, timeout=120
    )


def dated_commit(work: Path, when: str, text: str) -> str:
    (work / "a.md").write_text(text)
    git(work, "add", "a.md")
    tree, parent = git(work, "write-tree"), git(work, "rev-parse", "HEAD")
    body = f"tree {tree}\nparent {parent}\nauthor bob <b@x> {when}\ncommitter bob <b@x> {when}\n\nat {when}\n"
    commit = git(work, "hash-object", "-t", "commit", "-w", "--stdin", "--literally", data=body)
    git(work, "update-ref", "HEAD", commit)
    return commit


@pytest.mark.parametrize("when", ["253402300800 +0000", "1700000000 +9959", "1700000000 -9959", "99999999999999 +0000"])
def test_a_commit_time_past_the_dates_leaves_history_readable(tmp_path: Path, when: str) -> None:
    root = tmp_path / "root"
    assert cli(root, "init", "t").returncode == 0
    subprocess.run([sys.executable, "-c", CODE, "--root", str(root), "write", "t", "a.md", "--create"],
                   input="alpha\n", capture_output=True, text=True, check=True)  # fmt: skip
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(root / "t.git"), str(work)], check=True)
    commit = dated_commit(work, when, "alpha\nbeta\n")
    git(work, "push", "-q", "origin", "HEAD:main")
    git(work, "push", "-q", "origin", "HEAD:refs/heads/proposals/bob/late")
    for args in (["log", "t"], ["log", "t", "a.md"], ["show", "t", commit, "a.md"], ["review", "list", "t"]):
        done = cli(root, *args, "--json")
        assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done.stdout[-500:], done.stderr[-1500:])
        json.loads(done.stdout)
        shown = cli(root, *args)
        assert shown.returncode == 0, (args, shown.stderr[-1500:])
    entries = json.loads(cli(root, "log", "t", "--json").stdout)["entries"]
    assert entries[0]["commit"] == commit and entries[0]["time"][:1] in "0123456789"

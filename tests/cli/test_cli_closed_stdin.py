"""A command that reads stdin, run with stdin closed (a process manager may start it so), answers with its error.

Python then has no ``sys.stdin`` at all: the bounded readers went on to ``sys.stdin.buffer``
and ended in an ``AttributeError`` traceback, not a refusal a caller can read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _closed_stdin() -> None:
    os.close(0)


def _gitmem(root: Path, *args: str, closed: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gitmem.adapters.cli", "--root", str(root), *args],
        stdin=None if closed else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_closed_stdin if closed else None,
    )


@pytest.mark.parametrize(
    ("init", "command"),
    [
        (("init", "user"), ("write", "user", "a.md", "--create")),
        (("records", "init", "rec"), ("records", "add", "rec", "-")),
        (None, ("durable", "apply", "dm", "--create")),
    ],
)
def test_a_command_reading_a_closed_stdin_refuses_with_its_code(
    tmp_path: Path, init: tuple[str, ...] | None, command: tuple[str, ...]
) -> None:
    root = tmp_path / "root"
    if init is not None:
        assert _gitmem(root, *init).returncode == 0
    done = _gitmem(root, *command, "--json", closed=True)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (1, 2), (done.returncode, done.stderr)
    assert "stdin" in json.loads(done.stdout)["message"], done.stdout

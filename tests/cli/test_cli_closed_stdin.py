"""A command that reads stdin, run with stdin closed (a process manager may start it so), answers with its error.

Python then has no ``sys.stdin`` at all: the bounded readers went on to ``sys.stdin.buffer``
and ended in an ``AttributeError`` traceback, not a refusal a caller can read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
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


def test_the_hint_of_an_unreadable_stdin_speaks_of_stdin_not_the_root(tmp_path: Path) -> None:
    """The hint of ``unavailable`` was the store's (check the ``--root`` folder), which has nothing to do with it."""
    root = tmp_path / "root"
    assert _gitmem(root, "init", "user").returncode == 0
    refusal = json.loads(_gitmem(root, "write", "user", "a.md", "--create", "--json", closed=True).stdout)
    assert refusal["error"] == "unavailable", refusal
    assert "--root" not in refusal["hint"], refusal
    assert "stdin" in refusal["hint"], refusal


def test_a_non_blocking_stdin_is_read_to_its_end_not_to_its_first_pause(tmp_path: Path) -> None:
    """A stdin left non-blocking by whoever started the command (it shares the pipe's flags) whose
    writer pauses: the whole content is written, as from a blocking one, not what had arrived by then
    (a file cut at the first pause, reported created)."""
    root = tmp_path / "root"
    assert _gitmem(root, "init", "user").returncode == 0
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    child = subprocess.Popen(
        [sys.executable, "-m", "gitmem.adapters.cli", "--root", str(root), "write", "user", "a.md", "--create"],
        stdin=read_end,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(read_end)
    with os.fdopen(write_end, "wb", buffering=0) as writer:
        writer.write(b"first half\n")
        # The second half is written only once the command has read the first (or ended): the
        # pipe is empty at that moment, as when a slow producer pauses.
        while child.poll() is None and _pipe_holds(child.pid):
            time.sleep(0.01)
        try:
            writer.write(b"second half\n")
        except BrokenPipeError:
            pass
    child.communicate(timeout=300)
    shown = _gitmem(root, "cat", "user", "a.md")
    assert shown.stdout == "first half\nsecond half\n", (child.returncode, shown.stdout)


def _pipe_holds(pid: int) -> bool:
    """Whether the pipe on ``pid``'s stdin still holds bytes it has not read (``FIONREAD`` on its end)."""
    import fcntl
    import struct
    import termios

    try:
        fd = os.open(f"/proc/{pid}/fd/0", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0] > 0
    finally:
        os.close(fd)

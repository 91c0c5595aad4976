"""What a caller of `git/cli.run_git` relies on: whole input and output past a pipe's buffer, the
caller's folder and exit code, a deadline that stops the whole process group, git's SIGPIPE at its
default, no descriptor of this process leaking into git, and git scheduled with its caller (the
caller's session) unless a terminal is there to leave. Real git processes throughout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitmem.errors import MemoryStoreError
from gitmem.git.cli import run_git


def test_input_and_output_larger_than_a_pipe_both_arrive_whole(tmp_path: Path) -> None:
    data = b"".join(b"line %d of the note\n" % i for i in range(200_000))  # ~4 MB in, ~4 MB out
    done = run_git(["-c", "core.bigFileThreshold=1g", "hash-object", "--stdin"], stdin=data, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    expected = run_git(["hash-object", "--stdin"], stdin=data).stdout
    assert done.stdout == expected and len(done.stdout.strip()) == 40
    assert run_git(["init", "-q", "--bare", str(tmp_path / "r.git")]).returncode == 0
    oid = done.stdout.strip()
    run_git(["hash-object", "-w", "--stdin"], stdin=data, git_dir=str(tmp_path / "r.git"), check=True)
    shown = run_git(["cat-file", "-p", oid], cwd=str(tmp_path / "r.git"))
    assert shown.stdout.encode() == data


def test_the_folder_the_exit_code_and_what_git_said_are_the_callers(tmp_path: Path) -> None:
    run_git(["init", "-q", "--bare", "-b", "main", str(tmp_path / "r.git")], check=True)
    assert run_git(["rev-parse", "--git-dir"], cwd=str(tmp_path / "r.git")).stdout.strip() == "."
    done = run_git(["rev-parse", "--verify", "-q", "refs/heads/main"], cwd=str(tmp_path / "r.git"))
    assert done.returncode == 1 and done.stdout == ""
    wrong = run_git(["no-such-command"], cwd=str(tmp_path))
    assert wrong.returncode != 0 and "no-such-command" in wrong.stderr
    with pytest.raises(MemoryStoreError) as caught:
        run_git(["no-such-command"], cwd=str(tmp_path), check=True, what="the probe")
    assert caught.value.code == "unavailable" and "the probe failed" in caught.value.message


def test_a_call_past_its_deadline_is_stopped_with_everything_it_started(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    # git runs a shell alias that leaves a grandchild sleeping: the whole group must go.
    alias = f"!sleep 30 & echo $! > {marker}; wait"
    start = time.monotonic()
    with pytest.raises(MemoryStoreError) as caught:
        run_git(["-c", f"alias.hang={alias}", "hang"], cwd=str(tmp_path), timeout=1, what="git hang")
    assert time.monotonic() - start < 20
    assert caught.value.code == "unavailable" and "took longer than 1 s" in caught.value.message
    grandchild = int(marker.read_text())
    for _ in range(100):
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(grandchild, signal.SIGKILL)
        pytest.fail("the sleeping grandchild outlived the stopped call")


def test_git_starts_with_sigpipe_at_its_default(tmp_path: Path) -> None:
    # Python ignores SIGPIPE; a git child must not inherit that (subprocess restores it too).
    done = run_git(["-c", "alias.sig=!grep SigIgn /proc/$$/status", "sig"], cwd=str(tmp_path))
    ignored = int(done.stdout.split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1)), done.stdout


def test_git_holds_no_descriptor_of_this_process_but_its_pipes(tmp_path: Path) -> None:
    # gitmem serve makes its listening socket inheritable for its workers; git must not keep it open.
    kept, other = os.pipe()
    os.set_inheritable(kept, True)
    try:
        done = run_git(["-c", "alias.fds=!ls /proc/$$/fd", "fds"], cwd=str(tmp_path))
        held = {int(n) for n in done.stdout.split()}
        assert kept not in held and other not in held, held
        assert {0, 1, 2} <= held
    finally:
        os.close(kept)
        os.close(other)


# Run in a process of its own session (no terminal), which with `tty` takes a pseudo-terminal as its
# controlling terminal first; prints its own ids and those of the shell git runs.
_IDS = """
import fcntl, json, os, sys, termios
if sys.argv[1] == "tty":
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSCTTY, 0)
from gitmem.git.cli import run_git
def group(path):
    try:
        with open(path) as f:
            return f.read().split()[0]
    except OSError:
        return None
alias = "!cat /proc/$$/stat; cat /proc/$$/autogroup 2>/dev/null || echo none"
out = run_git(["-c", "alias.ids=" + alias, "ids"], check=True).stdout.splitlines()
fields = out[0].rsplit(")", 1)[1].split()
print(json.dumps({"pid": os.getpid(), "pgrp": os.getpgrp(), "sid": os.getsid(0),
                  "child_pgrp": int(fields[2]), "child_sid": int(fields[3]),
                  "group": group("/proc/self/autogroup"), "child_group": out[1].split()[0]}))
"""


def _ids(tmp_path: Path, terminal: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _IDS, terminal], cwd=tmp_path, capture_output=True, text=True,
        start_new_session=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    ids: dict[str, object] = json.loads(done.stdout)
    return ids


def test_without_a_terminal_git_stays_in_the_callers_session_in_a_group_of_its_own(tmp_path: Path) -> None:
    # A new session is a new scheduling group on Linux (autogroup): git would lose the priority
    # given to the command that waits for it. Its own process group is what a deadline kills.
    ids = _ids(tmp_path, "none")
    assert ids["child_sid"] == ids["sid"] == ids["pid"], ids
    assert ids["child_pgrp"] not in (ids["pgrp"], ids["pid"]), ids
    if ids["group"] is not None:
        assert ids["child_group"] == ids["group"], ids


def test_with_a_terminal_git_leaves_the_session_so_it_cannot_prompt_on_it(tmp_path: Path) -> None:
    # ssh asking about a host key from a background group would stop there, not fail.
    ids = _ids(tmp_path, "tty")
    assert ids["child_sid"] != ids["sid"] and ids["child_sid"] == ids["child_pgrp"], ids

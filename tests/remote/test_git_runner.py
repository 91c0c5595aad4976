"""What a caller of `git/cli.run_git` relies on: whole input and output past a pipe's buffer, the
caller's folder and exit code, a deadline that stops the whole process group, git's SIGPIPE at its
default, and no descriptor of this process leaking into git. Real git processes throughout.
"""

from __future__ import annotations

import os
import signal
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

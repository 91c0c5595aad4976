"""A process killed while objects wait in its quarantine: what it received never outlives the next writer.

- a real ``gitmem serve`` is SIGKILLed while a push that brings an erased text
  back sits in its quarantine (git's ``index-pack`` has written the pack and is
  held there by a wrapper). The mount's object store never has the text; ``fsck
  --erasures`` says truthfully where it still is (the killed push's quarantine);
  then ``gitmem gc``, or the next push to a restarted server, deletes the folder;
- a process holding a quarantine and the writer lock (as a pull or an import does
  while it lands) is never swept while it lives, and once SIGKILLed the next store
  write, which finds the lock's holder dead, deletes its quarantine.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitmem import Root
from gitmem.adapters.tokens import token_entry
from gitmem.git.quarantine import PREFIX, holds, leftovers, sweep
from gitmem.model import Origin

from .support import (
    GIT_ENV,
    GIT_TIMEOUT,
    GITMEM,
    commit_all,
    fsck_clean,
    git,
    has_object,
    seed,
    start_serve,
    stop_serve,
    write,
)

ALICE = "tok-alice-quarantine-0123456789abcdef"
SECRET = "Dana's home address is 4 Elm Road\n"

# index-pack runs for real, then stays (as a slow disk or a big pack would keep it) until killed.
WRAPPER = """#!/bin/sh
if [ "$1" = "index-pack" ]; then
  "{git}" "$@" || exit $?
  echo $$ > "{marker}"
  exec sleep 120
fi
exec "{git}" "$@"
"""


class Server:
    """``gitmem serve`` as a process of its own; ``path`` goes in front of ``PATH``."""

    def __init__(self, root: Root, tokens: Path) -> None:
        self.root = root
        self.tokens = tokens
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self, path: Path | None = None) -> Server:
        env = dict(GIT_ENV)
        if path is not None:
            env["PATH"] = f"{path}{os.pathsep}{env.get('PATH', '')}"
        self.proc, info = start_serve(self.root.path, self.tokens, env=env)
        self.url = info["url"]
        return self

    def git_url(self) -> str:
        return f"{self.url.replace('://', f'://alice:{ALICE}@', 1)}/notes.git"

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.communicate(timeout=GIT_TIMEOUT)

    def stop(self) -> None:
        if self.proc is not None:
            stop_serve(self.proc)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    root = Root(tmp_path / "root")
    seed(root.mount("notes", create=True))
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(token_entry(ALICE, "alice", ["notes"], "write"))
    served = Server(root, tokens)
    try:
        yield served
    finally:
        served.stop()


def _cli(root: Root, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*GITMEM, "--root", str(root.path), *args], capture_output=True, text=True, env=GIT_ENV, timeout=GIT_TIMEOUT
    )


def _quarantines(mount: Path) -> list[str]:
    return sorted(n for n in os.listdir(mount / "gitmem") if n.startswith(PREFIX))


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + GIT_TIMEOUT
    while not (path.exists() and path.read_text().strip()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the push never reached index-pack"
        time.sleep(0.01)


@pytest.mark.parametrize("cleaner", ["gc", "next_push"])
def test_a_push_killed_in_its_quarantine_leaves_nothing_past_the_next_writer(
    server: Server, tmp_path: Path, cleaner: str
) -> None:
    mount = server.root.mount_path("notes")
    store = server.root.mount("notes").sync
    erased = store.write("people/dana.md", SECRET, expected=None)
    store.forget("people/dana.md", origin=Origin(principal_id="admin"))
    head = store.head()

    wrapped = tmp_path / "bin"
    wrapped.mkdir()
    marker = tmp_path / "index-pack.pid"
    real_git = shutil.which("git")
    assert real_git is not None
    (wrapped / "git").write_text(WRAPPER.format(git=real_git, marker=marker))
    (wrapped / "git").chmod(0o755)
    server.start(path=wrapped)

    work = tmp_path / "stale"
    git("clone", "-q", server.git_url(), str(work))
    write(work, "people/dana.md", SECRET)
    commit_all(work, "bring it back")
    pusher = subprocess.Popen(
        ["git", "push", "origin", "HEAD:main"], cwd=work, env=GIT_ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    held = 0
    try:
        _wait_for(marker, pusher)
        held = int(marker.read_text())
        (name,) = _quarantines(mount)
        assert holds(str(mount / "gitmem" / name / "objects"), [erased]) == [erased]
        server.kill()
    finally:
        if held:
            os.kill(held, signal.SIGKILL)
        if pusher.poll() is None:
            pusher.kill()
        pusher.communicate(timeout=GIT_TIMEOUT)

    # The killed push's quarantine is still there, with the erased text; the object store never had it.
    assert _quarantines(mount) == [name] and [lo.path for lo in leftovers(str(mount))] == [str(mount / "gitmem" / name)]
    assert not has_object(mount, erased)
    done = _cli(server.root, "fsck", "notes", "--erasures")
    assert done.returncode == 1 and f"gitmem/{name}" in done.stdout and "killed" in done.stdout, done.stdout
    assert "object store" in done.stdout and "reachable" not in done.stdout, done.stdout

    if cleaner == "gc":
        assert _cli(server.root, "gc", "notes").returncode == 0
        assert store.head() == head
    else:
        server.start()  # on a new port
        git("remote", "set-url", "origin", server.git_url(), cwd=work)
        git("fetch", "-q", "origin", cwd=work)
        git("reset", "-q", "--hard", "origin/main", cwd=work)
        write(work, "notes/after.md", "after the kill\n")
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", "after the kill", cwd=work, env={"GIT_AUTHOR_NAME": "alice"})
        after = git("rev-parse", "HEAD", cwd=work).stdout.strip()
        git("push", "-q", "origin", "HEAD:main", cwd=work)
        assert store.head() == after

    assert _quarantines(mount) == []
    done = _cli(server.root, "fsck", "notes", "--erasures")
    assert done.returncode == 0 and done.stdout.startswith("ok"), done.stdout
    fsck_clean(mount)


HOLDER = """
import sys, time
from gitmem.git.quarantine import Quarantine
from gitmem.git.repo import GitRepo
repo = GitRepo(sys.argv[1])
quarantine = Quarantine(sys.argv[1])
with open(sys.argv[2], "rb") as blob:
    data = blob.read()
import pygit2
pygit2.Repository(quarantine.path).create_blob(data)
with repo.lock.hold("pull"):
    print(quarantine.path, flush=True)
    time.sleep(120)
"""


def test_a_live_quarantine_is_kept_and_a_dead_one_goes_with_the_next_store_write(tmp_path: Path) -> None:
    root = Root(tmp_path / "root")
    store = root.mount("notes", create=True).sync
    mount = root.mount_path("notes")
    seed_head = store.write("seed.md", "seed\n", expected=None)
    assert seed_head
    payload = tmp_path / "payload"
    payload.write_text(SECRET)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(mount), str(payload)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=GIT_ENV,
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        ready, _, _ = select.select([holder.stdout], [], [], GIT_TIMEOUT)
        assert ready, holder.communicate()
        path = holder.stdout.readline().strip()
        assert os.path.isdir(path)
        # Alive: no sweep touches it, and it is no leftover.
        assert sweep(str(mount)) == [] and leftovers(str(mount)) == [] and os.path.isdir(path)
    finally:
        holder.kill()
        holder.communicate(timeout=GIT_TIMEOUT)
    assert os.path.isdir(path) and [lo.path for lo in leftovers(str(mount))] == [path]

    # The next writer finds the writer lock's holder dead, and clears what it left.
    store.write("after.md", "after\n", expected=None)
    assert not os.path.exists(path) and leftovers(str(mount)) == []
    fsck_clean(mount)

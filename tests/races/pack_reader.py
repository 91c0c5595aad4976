"""A reader process for ``test_pack_readers.py``: reads a memory in a loop until a stop file appears.

``python pack_reader.py MODE REPO STOP`` prints ``ok N`` (N loops, each a full
read) at the end, or ``error ...`` with what failed, and exits non-zero then.
Modes: ``gitmem`` (a store handle, which reopens after a fold deletes packs),
``pygit2`` (one raw libgit2 handle that never reopens), ``catfile`` (one long-lived
``git cat-file --batch``), ``log`` (``git log -p`` and ``git cat-file -p`` processes),
``clone`` (``git clone --no-local``: ``upload-pack`` and ``pack-objects``) and
``mktree`` (``git ls-tree`` then ``git mktree``, whose entry check is git's *quick*
look-up that does not rescan the packs when an object is missing).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from bench.gitenv import isolated_git_env

FILES = 5
ENV = {**os.environ, **isolated_git_env()}


def git(repo: str, *argv: str, data: bytes | None = None) -> bytes:
    done = subprocess.run(["git", "--git-dir", repo, *argv], input=data, capture_output=True, check=False, env=ENV)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(argv)}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def check(text: str, where: str) -> None:
    if not text.strip().isdigit():
        raise RuntimeError(f"{where}: unexpected content {text!r}")


def loop_gitmem(repo: str, stop: str) -> int:
    from gitmem import GitFileStore

    store = GitFileStore.open(repo).sync
    n = 0
    while not os.path.exists(stop):
        for f in range(FILES):
            check(store.read(f"f{f}.md").text, f"read f{f}.md")
        if len(store.list()) != FILES:
            raise RuntimeError("list: wrong number of files")
        n += 1
    return n


def loop_pygit2(repo: str, stop: str) -> int:
    import pygit2

    handle = pygit2.Repository(repo)
    n = 0
    while not os.path.exists(stop):
        with open(os.path.join(repo, "refs", "heads", "main")) as fh:
            head = fh.read().strip()
        commit = handle[head]
        for entry in commit.peel(pygit2.Tree):
            check(handle[entry.id].data.decode(), f"blob {entry.name}")
        for parent in commit.parents[:3]:  # older commits: objects in older (maybe folded) packs
            parent.peel(pygit2.Tree)
        n += 1
    return n


def loop_catfile(repo: str, stop: str) -> int:
    proc = subprocess.Popen(
        ["git", "--git-dir", repo, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=ENV
    )
    assert proc.stdin is not None and proc.stdout is not None
    n = 0
    try:
        while not os.path.exists(stop):
            for f in range(FILES):
                proc.stdin.write(f"main:f{f}.md\n".encode())
                proc.stdin.flush()
                header = proc.stdout.readline().decode()
                if header.endswith("missing\n"):
                    raise RuntimeError(f"cat-file --batch: {header.strip()}")
                size = int(header.split()[2])
                check(proc.stdout.read(size + 1).decode(), f"cat-file main:f{f}.md")
            n += 1
    finally:
        proc.stdin.close()
        proc.wait()
    return n


def loop_log(repo: str, stop: str) -> int:
    n = 0
    while not os.path.exists(stop):
        git(repo, "log", "-p", "-n", "5", "main")
        check(git(repo, "cat-file", "-p", f"main:f{n % FILES}.md").decode(), "cat-file -p")
        n += 1
    return n


def loop_clone(repo: str, stop: str) -> int:
    n = 0
    while not os.path.exists(stop):
        dest = tempfile.mkdtemp(prefix="gitmem-clone-")
        try:
            done = subprocess.run(
                ["git", "clone", "--bare", "--no-local", "-q", repo, os.path.join(dest, "c.git")],
                capture_output=True,
                check=False,
                env=ENV,
            )
            if done.returncode != 0:
                raise RuntimeError(f"clone: {done.stderr.decode(errors='replace').strip()}")
            git(os.path.join(dest, "c.git"), "fsck", "--no-dangling")
        finally:
            shutil.rmtree(dest, ignore_errors=True)
        n += 1
    return n


def loop_mktree(repo: str, stop: str) -> int:
    n = 0
    while not os.path.exists(stop):
        listing = git(repo, "ls-tree", "main")
        git(repo, "mktree", data=listing)
        n += 1
    return n


MODES = {
    "gitmem": loop_gitmem,
    "pygit2": loop_pygit2,
    "catfile": loop_catfile,
    "log": loop_log,
    "clone": loop_clone,
    "mktree": loop_mktree,
}


def main() -> int:
    mode, repo, stop = sys.argv[1:4]
    try:
        loops = MODES[mode](repo, stop)
    except Exception as exc:
        print(f"error {mode}: {type(exc).__name__}: {exc}", flush=True)
        return 1
    print(f"ok {loops}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

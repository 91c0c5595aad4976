"""The other baseline: one commit per write made with the git CLI's plumbing.

This is what a store would do if it drove ``git`` as a subprocess instead of
linking libgit2. Per write, under the same kind of writer ``flock`` gitmem uses:

1. ``git rev-parse main main:<path>`` — the head and the file's blob (the CAS check);
2. ``git hash-object -w --stdin`` — the new blob;
3. ``git update-index --cacheinfo`` on a private index file kept in step with ``main``;
4. ``git write-tree``;
5. ``git commit-tree`` with the same message and trailers gitmem writes;
6. ``git update-ref refs/heads/main <new> <old>`` — the ref CAS.

Keeping the index between writes (instead of ``read-tree`` of the whole 10k-file
tree every time) is the cheaper variant, so the comparison favours the CLI.
Durability is set per call: ``core.fsync=none`` or ``core.fsync=committed``
(objects and refs), matching libgit2 with and without ``enable_fsync_gitdir``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
from collections.abc import Iterator

from bench.gitenv import isolated_git_env
from gitmem.errors import MemoryStoreError
from gitmem.fileformat import encode_text, validate_path
from gitmem.model import Origin
from gitmem.provenance import commit_message

MAIN = "refs/heads/main"


class GitCliStore:
    """CAS writes to ``main`` of a bare repo, one git subprocess per plumbing step."""

    def __init__(self, repo_path: str, *, fsync: bool = False) -> None:
        self.repo = os.path.abspath(repo_path)
        self.fsync = fsync
        self.env = {
            **os.environ,
            "GIT_DIR": self.repo,
            "GIT_INDEX_FILE": os.path.join(self.repo, "bench-cli.index"),
            **isolated_git_env(),
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@localhost",
            "GIT_COMMITTER_NAME": "gitmem",
            "GIT_COMMITTER_EMAIL": "gitmem@localhost",
        }
        self._lock_fd = os.open(os.path.join(self.repo, "bench-cli.lock"), os.O_RDWR | os.O_CREAT, 0o644)
        self._git("read-tree", MAIN)

    def set_fsync(self, fsync: bool) -> None:
        self.fsync = fsync

    def _git(self, *args: str, stdin: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        fsync = (
            ["-c", "core.fsync=committed", "-c", "core.fsyncMethod=fsync"] if self.fsync else ["-c", "core.fsync=none"]
        )
        done = subprocess.run(["git", *fsync, *args], input=stdin, env=self.env, capture_output=True, check=False)
        if check and done.returncode != 0:
            raise MemoryStoreError("unavailable", f"git {args[0]} failed: {done.stderr.decode(errors='replace')}")
        return done

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def write(self, path: str, text: str, *, expected: str | None, origin: Origin | None = None) -> str:
        path = validate_path(path)
        data = encode_text(text)
        with self._locked():
            found = self._git("rev-parse", MAIN, f"{MAIN}:{path}", check=False)
            lines = found.stdout.decode().split()
            if found.returncode == 0 and len(lines) == 2:
                head, current = lines
            else:
                head, current = self._git("rev-parse", MAIN).stdout.decode().strip(), None
            if current != expected:
                raise MemoryStoreError("version_mismatch", f"{path} is at {current}, not {expected}")
            blob = self._git("hash-object", "-w", "--stdin", stdin=data).stdout.decode().strip()
            if blob == current:
                return blob
            self._git("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
            tree = self._git("write-tree").stdout.decode().strip()
            message = commit_message("create" if current is None else "edit", (path,), origin or Origin())
            commit = (
                self._git("commit-tree", tree, "-p", head, "-F", "-", stdin=message.encode()).stdout.decode().strip()
            )
            moved = self._git("update-ref", MAIN, commit, head, check=False)
            if moved.returncode != 0:
                raise MemoryStoreError("version_mismatch", f"{MAIN} moved under {path}")
            return blob

    def close(self) -> None:
        os.close(self._lock_fd)

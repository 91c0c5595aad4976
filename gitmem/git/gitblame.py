"""Which commit last changed each line of a file, asked of ``git blame``.

libgit2's blame compares whole trees at every commit it steps through, so its
cost grows with the memory: 0.5-0.9 s for a recently edited file of a memory of
100k files, where ``git blame`` answers in ~10 ms. gitmem asks git when it is
on the ``PATH`` and libgit2 otherwise (:func:`gitmem.git.history.blame`); both
follow the file across renames, and the answers are compared in the tests.

The call is made so that the user's or the repository's git config cannot
change which commit a line is given to: the revisions a ``blame.ignoreRevsFile``
lists are cleared with ``--ignore-revs-file=`` (a listed commit would hand its
lines to older ones; ``-c blame.ignoreRevsFile=`` does not clear them), paths are printed unquoted
(``core.quotePath=false``) and pathspecs are literal. ``--incremental`` names
the file each group of lines came from in every group. Anything unexpected
(git missing, failing, past its deadline, an id that is not SHA-1, a quoted
path) answers ``None``, and the caller asks libgit2.
"""

from __future__ import annotations

import logging
import re
import subprocess
from typing import NamedTuple

from gitmem.git.cli import git_env
from gitmem.git.control import check_packs_of, check_refs_of
from gitmem.git.gitgrep import available

log = logging.getLogger("gitmem.history")

TIMEOUT = 120.0
"""Seconds one ``git blame`` may run (a liveness bound)."""

_HEADER = re.compile(rb"([0-9a-f]{40}) (\d+) (\d+) (\d+)")


class Hunk(NamedTuple):
    """Lines ``start`` .. ``start + lines - 1`` (1-based) of the file came from ``commit``, where it was ``path``."""

    commit: str
    start: int
    lines: int
    path: str


def blame(git_dir: str, commit: str, path: str) -> list[Hunk] | None:
    """The hunks of ``path`` at ``commit``, ordered by line; ``None``: ask libgit2 instead."""
    if not available():
        return None
    check_packs_of(git_dir)  # git opens every pack index it lists, blocking
    check_refs_of(git_dir)  # and reads refs/heads/<id>, packed-refs and the like for the id, blocking
    env = git_env()
    env["GIT_LITERAL_PATHSPECS"] = "1"
    cmd = [
        "git", "-c", "core.quotePath=false", f"--git-dir={git_dir}",
        "blame", "--incremental", "--ignore-revs-file=", commit, "--", path,
    ]  # fmt: skip
    try:
        done = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("git blame in %s did not answer, asking libgit2: %r", git_dir, exc)
        return None
    if done.returncode != 0:
        log.warning("git blame in %s failed (%d): %r", git_dir, done.returncode, done.stderr[-300:])
        return None
    return _parse(done.stdout)


def _parse(out: bytes) -> list[Hunk] | None:
    hunks: list[Hunk] = []
    head: re.Match[bytes] | None = None
    for line in out.split(b"\n"):
        if head is None:
            if not line:
                continue
            head = _HEADER.fullmatch(line)
            if head is None:
                return None
        elif line.startswith(b"filename "):
            name = line[len(b"filename ") :]
            if name.startswith(b'"'):
                return None
            hunks.append(
                Hunk(head[1].decode(), int(head[3]), int(head[4]), name.decode("utf-8", "surrogateescape"))
            )
            head = None
    if head is not None:
        return None
    hunks.sort(key=lambda hunk: hunk.start)
    return hunks

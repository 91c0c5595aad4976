"""Which files of a commit hold a line matching a boolean expression, asked of ``git grep``.

A fresh clone, a new machine or an erasure leaves a mount without its search
index. Building one takes about a millisecond a file, so a search must not wait
for it; ``git grep`` reads a commit's blobs with threads straight from the packs
and answers in a fraction of that. gitmem uses it only to *pick candidate files*
(the caller's scan decides every line), so the expression it is given must be
implied by every match: see :mod:`gitmem.index.fallback`, which builds it.

The call is made so that nothing in the user's or the repository's git config
changes its meaning: fixed strings (``-F``), ``-i`` with ``LC_ALL=C`` (ASCII
case folding only, every other byte compared as it is), ``--text`` (files with
a NUL are searched too), ``--no-color``, ``-z`` (paths as raw bytes), literal
pathspecs. When git is missing, fails or runs past its deadline the answer is
``None`` and the caller reads the files itself.
"""

from __future__ import annotations

import functools
import logging
import shutil
import subprocess
from collections.abc import Sequence

from gitmem.git.cli import git_env

log = logging.getLogger("gitmem.index")

TIMEOUT = 120.0
"""Seconds one ``git grep`` may run (a liveness bound; at 100k files it takes about one)."""


@functools.cache
def available() -> bool:
    """Whether a ``git`` command is on the ``PATH`` (looked up once per process)."""
    return shutil.which("git") is not None


def files_matching(git_dir: str, commit: str, expression: Sequence[str], prefix: str = "") -> set[str] | None:
    """The paths under folder ``prefix`` at ``commit`` with a line matching ``expression``; ``None``: ask elsewhere.

    The expression is ``git grep``'s own (``-e PATTERN``, ``--and``, ``--or``,
    ``(``, ``)``), every pattern a fixed string, ASCII case ignored. Paths come
    back as gitmem names them (bytes that are not UTF-8 as surrogates), symbolic
    links and submodules included: the caller keeps only regular files.
    """
    if not available():
        return None
    env = git_env()
    env["GIT_LITERAL_PATHSPECS"] = "1"
    cmd = ["git", f"--git-dir={git_dir}", "grep", "--no-color", "--text", "--fixed-strings", "--ignore-case",
           "--files-with-matches", "-z", *expression, commit, "--", *([prefix.rstrip("/")] if prefix else [])]  # fmt: skip
    try:
        proc = subprocess.Popen(
            cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        log.warning("git grep in %s did not start, reading the files instead: %r", git_dir, exc)
        return None
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        log.warning("git grep in %s did not answer, reading the files instead: %r", git_dir, exc)
        return None
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
    if proc.returncode not in (0, 1):  # 1: nothing matched
        log.warning("git grep in %s failed (%d): %r", git_dir, proc.returncode, err[-300:])
        return None
    return _names(out, len(commit) + 1)


def _names(out: bytes, lead: int) -> set[str]:
    """The paths of ``-z`` output, each printed as ``<commit>:<path>``."""
    return {name[lead:].decode("utf-8", "surrogateescape") for name in out.split(b"\0") if name}

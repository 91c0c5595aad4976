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


Query = tuple[Sequence[str], bool]
"""One ``git grep`` question: its expression and whether it ignores (ASCII) case."""


def files_matching(git_dir: str, commit: str, queries: Sequence[Query], prefix: str = "") -> list[set[str]] | None:
    """For each query, the paths under folder ``prefix`` at ``commit`` with a line matching it; ``None``: ask elsewhere.

    A query's expression is ``git grep``'s own (``-e PATTERN``, ``--and``,
    ``--or``, ``(``, ``)``), every pattern a fixed string. The queries run side
    by side, one ``git grep`` each (git compiles a pattern outside ASCII under
    ``-i`` as a regex, ~40 % slower than fixed strings: such patterns are better
    asked case-sensitively in a query of their own). Paths come back as gitmem
    names them (bytes that are not UTF-8 as surrogates), symbolic links and
    submodules included: the caller keeps only regular files.
    """
    if not available():
        return None
    env = git_env()
    env["GIT_LITERAL_PATHSPECS"] = "1"
    base = ["git", f"--git-dir={git_dir}", "grep", "--no-color", "--text", "--fixed-strings", "--files-with-matches", "-z"]
    where = [commit, "--", *([prefix.rstrip("/")] if prefix else [])]
    procs: list[subprocess.Popen[bytes]] = []
    answers: list[set[str]] = []
    try:
        for expression, ignore_case in queries:
            cmd = [*base, *(["--ignore-case"] if ignore_case else []), *expression, *where]
            procs.append(
                subprocess.Popen(
                    cmd,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                )
            )
        for proc in procs:
            out, err = proc.communicate(timeout=TIMEOUT)
            if proc.returncode not in (0, 1):  # 1: nothing matched
                log.warning("git grep in %s failed (%d): %r", git_dir, proc.returncode, err[-300:])
                return None
            answers.append(_names(out, len(commit) + 1))
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        log.warning("git grep in %s did not answer, reading the files instead: %r", git_dir, exc)
        return None
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                proc.wait()
    return answers


def _names(out: bytes, lead: int) -> set[str]:
    """The paths of ``-z`` output, each printed as ``<commit>:<path>``."""
    return {name[lead:].decode("utf-8", "surrogateescape") for name in out.split(b"\0") if name}

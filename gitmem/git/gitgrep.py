"""Which files of a commit hold a line matching a boolean expression, asked of ``git grep``.

A fresh clone, a new machine or an erasure leaves a mount without its search
index. Building one takes about a millisecond a file, so a search must not wait
for it; ``git grep`` reads a commit's blobs with threads straight from the packs
and answers in a fraction of that. gitmem uses it only to *pick candidate files*
(the caller's scan decides every line), so the expression it is given must be
implied by every match: see :mod:`gitmem.index.fallback`, which builds it.

Two questions are asked: which files hold a matching line
(:func:`files_matching`), and which lines (:func:`matching_lines`, streamed, so
a grep that has its fill of lines stops git there). The lines come straight from
the blobs git read, so no tree or blob is looked up again in Python: the caller
decodes each line and decides it with its own rule.

The call is made so that nothing in the user's or the repository's git config
changes its meaning: fixed strings (``-F``), ``-i`` with ``LC_ALL=C`` (ASCII
case folding only, every other byte compared as it is), ``--text`` (files with
a NUL are searched too), ``--no-color``, ``--no-column`` (``grep.column``),
``--no-recurse-submodules`` (``submodule.recurse``), ``-z`` (paths as raw
bytes), literal pathspecs. Only regular files are searched (git skips links and
submodules in a tree), in git's tree order.

One thread (``--threads=1``, which also overrides ``grep.threads``): grepping a
commit rather than a work tree, git's threads take turns at one object-reading
lock, so on the bench's memories more threads only cost more (10k files: 76 ms
wall and 69 ms CPU with one, 84 / 88 with the default; 100k: 760 / 635 against
1,037 / 939), and the one thread leaves the other core to the caller. When git is missing, fails or runs
past its deadline the answer is ``None`` (or :class:`GitGrepFailed` part way
through a stream) and the caller reads the files itself.
"""

from __future__ import annotations

import functools
import os
import selectors
import subprocess
import time
from collections.abc import Generator, Iterator, Sequence

from gitmem.git.cli import git_env, own_group
from gitmem.git.control import check_packs_of, check_refs_of


def _warn(message: str, *args: object) -> None:
    """Logged as ``gitmem.index``; ``logging`` is imported only when there is something to say."""
    import logging

    logging.getLogger("gitmem.index").warning(message, *args)


TIMEOUT = 120.0
"""Seconds one ``git grep`` may run (a liveness bound; at 100k files it takes about one)."""


class GitGrepFailed(Exception):
    """``git grep`` stopped part way through :func:`matching_lines` (logged); the caller answers another way."""


@functools.cache
def available() -> bool:
    """Whether a ``git`` command is on the ``PATH`` (looked up once per process)."""
    # What shutil.which answers (and where subprocess looks); shutil itself, with the
    # compression modules it loads, would cost a first grep more than this loop.
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder, "git")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return True
    return False


def files_matching(git_dir: str, commit: str, expression: Sequence[str], prefix: str = "") -> set[str] | None:
    """The paths under folder ``prefix`` at ``commit`` with a line matching ``expression``; ``None``: ask elsewhere.

    The expression is ``git grep``'s own (``-e PATTERN``, ``--and``, ``--or``,
    ``(``, ``)``), every pattern a fixed string, ASCII case ignored. Paths come
    back as gitmem names them (bytes that are not UTF-8 as surrogates), symbolic
    links and submodules included: the caller keeps only regular files.
    """
    proc = _start(git_dir, commit, ["--files-with-matches", *expression], prefix)
    if proc is None:
        return None
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        _warn("git grep in %s did not answer, reading the files instead: %r", git_dir, exc)
        return None
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
    if proc.returncode not in (0, 1):  # 1: nothing matched
        _warn("git grep in %s failed (%d): %r", git_dir, proc.returncode, err[-300:])
        return None
    return _names(out, len(commit) + 1)


def matching_lines(
    git_dir: str, commit: str, expression: Sequence[str], prefix: str = ""
) -> Lines | None:
    """Each line under folder ``prefix`` at ``commit`` matching ``expression``, as ``(path, number, raw bytes)``.

    Lines come in git's tree order, numbered from 1 by ``\\n`` (a ``\\r`` before it
    kept, a last line without one included), without their ``\\n``. ``None``: git is
    missing or did not start. The iterator raises :class:`GitGrepFailed` when git
    fails or runs past :data:`TIMEOUT`; leaving it early (or closing it) kills git.
    """
    proc = _start(git_dir, commit, ["--line-number", "--no-column", *expression], prefix)
    if proc is None:
        return None
    return Lines(proc, _stream(proc, git_dir, len(commit) + 1))


class Lines:
    """The lines of :func:`matching_lines`, as an iterator that :meth:`close` ends along with git.

    A generator closed before its first line was asked for never runs its ``finally``
    (a caller that decides to answer another way before reading), so git is ended
    here too, and reaped: never left running, never a zombie.
    """

    def __init__(self, proc: subprocess.Popen[bytes], lines: Generator[tuple[str, int, bytes]]) -> None:
        self._proc = proc
        self._lines = lines

    def __iter__(self) -> Lines:
        return self

    def __next__(self) -> tuple[str, int, bytes]:
        return next(self._lines)

    def close(self) -> None:
        self._lines.close()
        proc = self._proc
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def _start(git_dir: str, commit: str, args: Sequence[str], prefix: str) -> subprocess.Popen[bytes] | None:
    if not available():
        return None
    check_packs_of(git_dir)  # git opens every pack index it lists, blocking
    check_refs_of(git_dir)  # and reads refs/heads/<id>, packed-refs and the like for the id, blocking
    env = git_env()
    env["GIT_LITERAL_PATHSPECS"] = "1"
    cmd = ["git", f"--git-dir={git_dir}", "grep", "--threads=1", "--no-color", "--no-recurse-submodules", "--text",
           "--fixed-strings", "--ignore-case", "-z", *args, commit, "--", *([prefix.rstrip("/")] if prefix else [])]  # fmt: skip
    session, group = own_group()
    try:
        return subprocess.Popen(
            cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=session, process_group=group,
        )  # fmt: skip
    except OSError as exc:
        _warn("git grep in %s did not start, reading the files instead: %r", git_dir, exc)
        return None


def _stream(proc: subprocess.Popen[bytes], git_dir: str, lead: int) -> Generator[tuple[str, int, bytes]]:
    """Records ``<commit>:<path>\\0<number>\\0<line>\\n`` parsed as they arrive (a path may hold
    a newline and a line a NUL, so each field ends at the first separator of its own kind)."""
    assert proc.stdout is not None and proc.stderr is not None
    deadline = time.monotonic() + TIMEOUT
    err = b""
    records = _Records(lead)
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            selector.register(proc.stderr, selectors.EVENT_READ)
            open_pipes = 2
            while open_pipes:
                left = deadline - time.monotonic()
                ready = selector.select(left) if left > 0 else []
                if not ready:
                    raise _failed(git_dir, "did not answer in time")
                for key, _ in ready:
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        open_pipes -= 1
                    elif key.fileobj is proc.stderr:
                        err = (err + chunk)[-300:]
                    else:
                        yield from records.feed(chunk)
        code = proc.wait(max(deadline - time.monotonic(), 0.001))
    except subprocess.TimeoutExpired:
        raise _failed(git_dir, "did not end in time") from None
    except (OSError, ValueError) as exc:
        raise _failed(git_dir, repr(exc)) from None
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    if code not in (0, 1) or records.partial():  # 1: nothing matched
        raise _failed(git_dir, f"failed ({code}): {err!r}")


class _Records:
    """The parser of :func:`matching_lines`' output: each separator is searched for once, from
    where the last search stopped, so a long line arriving in many chunks costs one pass."""

    def __init__(self, lead: int) -> None:
        self.lead = lead  # the ``<commit>:`` before each path
        self.buf = bytearray()
        self.start = 0  # where the record being read begins
        self.look = 0  # where the next separator is searched from
        self.ends: list[int] = []  # the separators of this record found so far

    def feed(self, chunk: bytes) -> Iterator[tuple[str, int, bytes]]:
        buf = self.buf
        buf += chunk
        while True:
            at = buf.find(b"\n" if len(self.ends) == 2 else b"\0", self.look)
            if at < 0:
                self.look = len(buf)
                break
            self.ends.append(at)
            self.look = at + 1
            if len(self.ends) == 3:
                path_end, number_end, line_end = self.ends
                path = bytes(buf[self.start + self.lead : path_end]).decode("utf-8", "surrogateescape")
                yield path, int(buf[path_end + 1 : number_end]), bytes(buf[number_end + 1 : line_end])
                self.start = self.look
                self.ends = []
        if self.start:
            del buf[: self.start]
            self.look -= self.start
            self.ends = [end - self.start for end in self.ends]
            self.start = 0

    def partial(self) -> bool:
        """Whether the output ended inside a record (git was cut off)."""
        return bool(self.buf)


def _failed(git_dir: str, why: str) -> GitGrepFailed:
    _warn("git grep in %s %s, reading the files instead", git_dir, why)
    return GitGrepFailed(why)


def _names(out: bytes, lead: int) -> set[str]:
    """The paths of ``-z`` output, each printed as ``<commit>:<path>``."""
    return {name[lead:].decode("utf-8", "surrogateescape") for name in out.split(b"\0") if name}

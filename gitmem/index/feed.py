"""A rebuild's documents, made in a second process while this one writes them into Whoosh.

Of a rebuild's CPU, about 40 % is making the documents (reading and decoding
each blob, its trigram signature: :func:`gitmem.index.engine.file_document`)
and 60 % is Whoosh's (tokenising, sorting and writing postings). Both are pure
Python, so threads would take turns on one core; a child process makes the
documents while the parent writes, and the rebuild takes about as long as the
larger half. The child is ``python -m gitmem.index documents PATH COMMIT``: a
new interpreter (not a fork, which a threaded host such as ``gitmem serve``
must not do) that reads the commit's files and writes one ``marshal`` record
per file to its stdout, then an end mark.

Nothing here changes what a rebuild writes or when it is usable: the parent
still holds the index lock and stamps the last batch. If the parent dies the
child's next write fails (the pipe is gone) and it ends; if the child dies, the
stream ends without its end mark and the rebuild fails like any other, leaving
an index without a stamp, which no search uses. With one CPU, or a memory of
at most :data:`SMALL` files (the child's start-up would cost more than it
saves), or when no child can be started, the documents are made in-process.
"""

from __future__ import annotations

import itertools
import logging
import marshal
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from gitmem.fileformat import decode_stored
from gitmem.index.source import GitSource

log = logging.getLogger("gitmem.index")

SMALL = 2000
"""Files up to which a rebuild makes its documents itself (a child costs ~0.2 s to start)."""

_FIELDS = ("key", "path", "file", "sig", "body", "name")
_END = "end"
_PIPE_BYTES = 1 << 20  # lets the child run ahead while the parent commits a batch


def local(repo: GitSource, head: str) -> Iterator[dict[str, Any]]:
    """The documents of every file at ``head``, made in this process."""
    from gitmem.index import engine

    for path, oid in repo.files_at(head):
        yield engine.file_document(path, oid, decode_stored(repo.blob(oid)))


def produce(path: str, head: str, out: IO[bytes]) -> None:
    """The child's side: every document of ``head`` in the mount at ``path``, then the end mark."""
    from gitmem.git.repo import GitRepo

    for doc in local(GitRepo.open(path), head):
        marshal.dump(tuple(doc[name] for name in _FIELDS), out)
    marshal.dump(_END, out)
    out.flush()


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def _worth_a_child(repo: GitSource, head: str) -> bool:
    if _cpus() < 2:
        return False
    return sum(1 for _ in itertools.islice(repo.files_at(head), SMALL + 1)) > SMALL


@contextmanager
def documents(repo: GitSource, head: str) -> Iterator[Iterator[dict[str, Any]]]:
    """The documents of every file at ``head``, from a child process where that pays.

    The child is killed and reaped when the block ends, however it ends. A
    child that fails makes the iterator raise :class:`RuntimeError` once its
    records stop (never a silently short index).
    """
    proc = _start(repo, head) if _worth_a_child(repo, head) else None
    if proc is None:
        yield local(repo, head)
        return
    assert proc.stdout is not None
    try:
        yield _read(proc.stdout, proc)
    finally:
        proc.stdout.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _start(repo: GitSource, head: str) -> subprocess.Popen[bytes] | None:
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gitmem.index", "documents", repo.path, head],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
    except OSError as exc:
        log.warning("making the documents in this process: cannot start a child: %r", exc)
        return None
    assert proc.stdout is not None
    try:
        import fcntl

        fcntl.fcntl(proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    except (ImportError, AttributeError, OSError):  # not Linux, or above the system's pipe limit
        pass
    return proc


def _read(stream: IO[bytes], proc: subprocess.Popen[bytes]) -> Iterator[dict[str, Any]]:
    while True:
        try:
            record = marshal.load(stream)
        except (EOFError, ValueError, TypeError) as exc:
            code = proc.wait()
            raise RuntimeError(f"the document process ended early (exit {code})") from exc
        if record == _END:
            return
        yield dict(zip(_FIELDS, record, strict=True))

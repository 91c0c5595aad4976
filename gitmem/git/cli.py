"""The one way gitmem runs the git command-line client.

Pruning (forget, purge, gc), packing and the network transfers of push and pull
go through the real ``git``: see :mod:`gitmem.git.rewrite` and
:mod:`gitmem.git.remote` for why. Every such call needs the same care, so it
lives here once:

- the environment is scrubbed of the variables that would point git at another
  repository (they are set when gitmem itself runs inside a git hook), and git
  never prompts for credentials;
- every call has a deadline. A hung ``git gc`` under the writer lock would
  otherwise block every writer of the memory for good;
- the child runs in its own process group (a new session), so on a
  timeout or any exception in the waiting thread the whole group (git and the
  helpers it spawned, such as ``repack`` or ``pack-objects``) is killed, never
  only the top process. No ``preexec_fn``: it is unsafe in a threaded process.

A call is started with ``os.posix_spawnp`` (in a new session, its folder given as
``git -C``) and its pipes read here, without :mod:`subprocess`: importing that
module (with ``threading``, ``selectors``, ``signal`` and ``locale``) costs a
``gitmem push`` process, whose only child is ``git push``, a fifth of what git's
own push costs. A call that hands the child descriptors (``pass_fds``) goes
through :mod:`subprocess`, which closes every other one in the child.

What happens when gitmem itself is SIGKILLed while git runs is the caller's
business; a pruning caller passes the writer lock's descriptor in ``pass_fds``
so the child keeps holding the lock until it exits (see ``_prune_now`` in
:mod:`gitmem.git.rewrite`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Final

from gitmem.errors import MemoryStoreError
from gitmem.git.control import check_packs_of

DEFAULT_TIMEOUT = 600.0
"""Seconds one git command may run before it is stopped (a liveness bound, not a target)."""

# Variables that would point git at another repository than the one named.
_REPO_VARIABLES = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_QUARANTINE_PATH",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
    }
)


def git_env() -> dict[str, str]:
    """This process's environment without repository pointers, with prompts off and C messages."""
    env = {k: v for k, v in os.environ.items() if k not in _REPO_VARIABLES}
    env.update({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"})
    return env


class Done:
    """What a git call did: the command, its exit code, and what it wrote (decoded, bad bytes replaced)."""

    __slots__ = ("args", "returncode", "stderr", "stdout")

    def __init__(self, args: list[str], returncode: int, stdout: str, stderr: str) -> None:
        self.args = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


def _kill_group(pid: int) -> None:
    """SIGKILL the child's whole process group, then reap the child."""
    import signal

    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass  # already reaped


FETCH: Final = (
    "-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "fetch.writeCommitGraph=false",
    "fetch", "--no-tags", "--no-write-fetch-head",
)  # fmt: skip
"""``git fetch`` into a quarantine: objects only (no gc or maintenance process, commit graph, tags or
``FETCH_HEAD`` left behind)."""

CHECKED_FETCH: Final = ("-c", "fetch.fsckObjects=true", *FETCH)
""":data:`FETCH` that also holds every object it receives to git's strict object rules (``index-pack
--strict``, or ``unpack-objects --strict`` for a few objects; the rules a push meets) and fails when
one breaks them. The strictness is git's own: the user's ``fetch.fsck.*`` settings apply."""


def run_git(
    args: Sequence[str],
    *,
    git_dir: str | None = None,
    cwd: str | None = None,
    what: str | None = None,
    stdin: bytes | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    check: bool = False,
    pass_fds: Sequence[int] = (),
) -> Done:
    """Run ``git [--git-dir=GIT_DIR] ARGS`` in ``cwd``; output decoded, undecodable bytes replaced.

    Failing to start, or running past ``timeout`` seconds, is ``unavailable``
    naming ``what`` (default: the git subcommand); so is a non-zero exit with
    ``check``.
    """
    what = what or f"git {args[0] if args else ''}".strip()
    for repo in (git_dir, cwd):
        if repo is not None and os.path.isdir(os.path.join(repo, "objects")):
            check_packs_of(repo)  # git opens every pack index it lists, blocking
    cmd = ["git", *([f"--git-dir={git_dir}"] if git_dir is not None else []), *args]
    try:
        if pass_fds:
            code, out, err = _run_passing(cmd, cwd, stdin, timeout, pass_fds)
        else:
            code, out, err = _run(cmd, cwd, stdin, timeout)
    except FileNotFoundError:
        raise MemoryStoreError("unavailable", f"{what} needs the git command, which is not installed") from None
    except TimeoutError:
        raise MemoryStoreError("unavailable", f"{what} took longer than {timeout:.0f} s and was stopped") from None
    except OSError as exc:
        raise MemoryStoreError("unavailable", f"{what} could not run git: {exc}") from None
    done = Done(cmd, code, out.decode(errors="replace"), err.decode(errors="replace"))
    if check and done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise MemoryStoreError("unavailable", f"{what} failed: {' / '.join(said[-3:]) or done.returncode}")
    return done


def _run(cmd: list[str], cwd: str | None, stdin: bytes | None, timeout: float) -> tuple[int, bytes, bytes]:
    """``cmd`` in a new session, ``stdin`` fed and both outputs read until it exits; ``TimeoutError``
    (the group killed) past ``timeout`` seconds. The child starts with SIGPIPE and SIGXFSZ at
    their defaults, as :mod:`subprocess` starts it (Python ignores them)."""
    import select
    import signal

    spawned = ["git", "-C", cwd, *cmd[1:]] if cwd is not None else cmd
    into, feed = os.pipe() if stdin is not None else (-1, -1)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
        (os.POSIX_SPAWN_DUP2, into, 0) if stdin is not None else (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, out_w, 1),
        (os.POSIX_SPAWN_DUP2, err_w, 2),
    ]
    actions.extend((os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable() if fd not in (into, out_w, err_w))
    defaults = (signal.SIGPIPE, signal.SIGXFSZ)
    try:
        pid = os.posix_spawnp("git", spawned, git_env(), file_actions=actions, setsid=True, setsigdef=defaults)
    except BaseException:
        for fd in (into, feed, out_r, out_w, err_r, err_w):
            if fd >= 0:
                os.close(fd)
        raise
    for fd in (into, out_w, err_w):
        if fd >= 0:
            os.close(fd)
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    pending = memoryview(stdin or b"")
    poller = select.poll()
    for fd in (out_r, err_r):
        poller.register(fd, select.POLLIN)
    live = [out_r, err_r]
    if feed >= 0:
        os.set_blocking(feed, False)
        poller.register(feed, select.POLLOUT)
        live.append(feed)
    deadline = time.monotonic() + timeout
    try:
        while live:
            if feed in live and not pending:
                poller.unregister(feed)
                live.remove(feed)
                os.close(feed)
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            for fd, _ in poller.poll(left * 1000):
                if fd == feed:
                    try:
                        pending = pending[os.write(feed, pending[: 1 << 16]) :]
                    except BrokenPipeError:
                        pending = pending[:0]  # git stopped reading: what it says tells why
                    continue
                data = os.read(fd, 1 << 16)
                if data:
                    chunks[fd].append(data)
                else:
                    poller.unregister(fd)
                    live.remove(fd)
                    os.close(fd)
        _, status = os.waitpid(pid, 0)
    except BaseException:
        for fd in live:
            os.close(fd)
        _kill_group(pid)
        raise
    return os.waitstatus_to_exitcode(status), b"".join(chunks[out_r]), b"".join(chunks[err_r])


def _inheritable() -> list[int]:
    """This process's descriptors above 2 that a child would inherit: closed in git's child, as
    :mod:`subprocess` closes every one (``gitmem serve`` makes its listening socket inheritable
    for the workers it forks; git must not hold it)."""
    found = []
    for name in os.listdir("/dev/fd"):
        fd = int(name)
        try:
            if fd > 2 and os.get_inheritable(fd):
                found.append(fd)
        except OSError:
            continue  # the listing's own descriptor, closed by now
    return found


def _run_passing(
    cmd: list[str], cwd: str | None, stdin: bytes | None, timeout: float, pass_fds: Sequence[int]
) -> tuple[int, bytes, bytes]:
    """:func:`_run` through :mod:`subprocess`, the child also holding ``pass_fds`` (and no other descriptor)."""
    import subprocess

    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=git_env(),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        pass_fds=tuple(pass_fds),
    )
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except BaseException as exc:
        _kill_group(proc.pid)
        proc.returncode = -9  # reaped above: the object must not wait again
        if isinstance(exc, subprocess.TimeoutExpired):
            raise TimeoutError from None
        raise
    return proc.returncode, out, err

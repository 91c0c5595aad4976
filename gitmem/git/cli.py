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
- the child runs in its own process group (:func:`own_group`), so on a
  timeout or any exception in the waiting thread the whole group (git and the
  helpers it spawned, such as ``repack`` or ``pack-objects``) is killed, never
  only the top process. No ``preexec_fn``: it is unsafe in a threaded process.

What happens when gitmem itself is SIGKILLed while git runs is the caller's
business; a pruning caller passes the writer lock's descriptor in ``pass_fds``
so the child keeps holding the lock until it exits (see ``_prune_now`` in
:mod:`gitmem.git.rewrite`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from gitmem.errors import MemoryStoreError
from gitmem.git.control import check_packs_of, check_refs_of

TYPE_CHECKING = False
if TYPE_CHECKING:  # subprocess (and signal) load on the first git call: a read that runs none pays nothing
    import subprocess
    from typing import Final

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


def own_group() -> tuple[bool, int | None]:
    """``(start_new_session, process_group)`` for a git child gitmem waits for: its own process group, always.

    The group is what a timeout kills whole. It leaves this process's session
    too only when this process has a controlling terminal, which a child could
    otherwise prompt on from the background (``ssh`` asking about a host key
    would stop there, not fail); a new session has none. Without a terminal
    (an agent's tool shell, ``gitmem serve``, CI, cron) it stays in the
    session: on Linux a new session is a new scheduling group (autogroup) that
    does not carry the priority given to the caller's, so under load ``git
    push`` ran at the default share while the command that waited for it, and
    a plain ``git push`` run the same way, kept theirs (~2x the wall time at
    the same CPU under load 7, ``bench/bench_forge.py``).
    """
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:  # no controlling terminal (ENXIO), or none a child could use either
        return False, 0
    os.close(fd)
    return True, None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's whole group, reap it, and close its pipes (a helper git left running
    outside the group may hold them open, so they are not read to their end)."""
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


FETCH: Final = (
    "-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "fetch.writeCommitGraph=false",
    "fetch", "--no-tags", "--no-write-fetch-head",
)  # fmt: skip
"""``git fetch`` into a quarantine: objects only (no gc or maintenance process, commit graph, tags or
``FETCH_HEAD`` left behind)."""


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
) -> subprocess.CompletedProcess[str]:
    """Run ``git [--git-dir=GIT_DIR] ARGS``; output decoded, undecodable bytes replaced.

    Failing to start, or running past ``timeout`` seconds, is ``unavailable``
    naming ``what`` (default: the git subcommand); so is a non-zero exit with
    ``check``.
    """
    import subprocess

    what = what or f"git {args[0] if args else ''}".strip()
    for repo in (git_dir, cwd):
        if repo is not None and os.path.isdir(os.path.join(repo, "objects")):
            check_packs_of(repo)  # git opens every pack index it lists, blocking
            check_refs_of(repo)  # and reads every ref, its own and its alternates', blocking
    cmd = ["git", *([f"--git-dir={git_dir}"] if git_dir is not None else []), *args]
    session, group = own_group()
    try:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=git_env(),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=session,
            process_group=group,
            pass_fds=tuple(pass_fds),
        )
    except FileNotFoundError:
        raise MemoryStoreError("unavailable", f"{what} needs the git command, which is not installed") from None
    except OSError as exc:
        raise MemoryStoreError("unavailable", f"{what} could not run git: {exc}") from None
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise MemoryStoreError("unavailable", f"{what} took longer than {timeout:.0f} s and was stopped") from None
    except BaseException:
        _kill_group(proc)
        raise
    done = subprocess.CompletedProcess(cmd, proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"))
    if check and done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise MemoryStoreError("unavailable", f"{what} failed: {' / '.join(said[-3:]) or done.returncode}")
    return done

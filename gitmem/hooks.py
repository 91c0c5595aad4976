"""Server-side git hooks that hold pushes over ssh or a file path to the store's rules.

``gitmem serve`` checks pushes itself; a mount that people also push to with plain
git (``git push /srv/memories/user.git``, or over ssh) needs git's own hooks:

- ``pre-receive`` runs :func:`gitmem.git.pushcheck.check_updates` on every ref the
  push updates (fast-forward on ``main``, paths, content, secrets). One refusal
  rejects the whole push, and git shows each reason to the pusher as ``remote:``
  lines. The new objects are still in git's quarantine directory at that point, so a
  refused push leaves nothing behind in the mount.
- ``post-receive`` brings the mount's search index up to date when ``main`` moved,
  in a detached process so the pusher does not wait for it. That process runs
  with ``python -P`` from ``/``: with the mount as working directory its own
  ``gitmem/`` data folder would be imported in place of the gitmem package. What
  it prints, and any failure, is appended to ``<mount>/gitmem/hooks.log`` (the
  pusher has gone by then), as is a push the pre-receive hook could not check.

:func:`install_hooks` writes both into ``<mount>/hooks/`` with the current Python
interpreter in the ``#!`` line, so the hooks run the same gitmem the installer has.
The repository's ``hooks/`` folder holds the same scripts for copying by hand.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import visible
from gitmem.git.mountconfig import format_from_repo
from gitmem.git.pushcheck import RefUpdate, check_updates
from gitmem.git.refs import MAIN
from gitmem.git.repo import GitRepo
from gitmem.index import catch_up
from gitmem.localfile import local_folder_fd, open_folder, open_private, read_control, replace_file

if TYPE_CHECKING:
    from gitmem.git.forgecheck import RangeCheck

MARKER = "# gitmem-hook"
HOOK_NAMES = ("pre-receive", "post-receive")

_BODY = '''{marker}: {name} (written by `gitmem hooks install`; edits are overwritten)
"""{doc}"""
import sys

from gitmem.hooks import {func}

sys.exit({func}())
'''
_DOCS = {
    "pre-receive": "Refuse pushes that break the memory's rules (see gitmem.git.pushcheck).",
    "post-receive": "Bring the memory's search index up to date after a push.",
}
_FUNCS = {"pre-receive": "pre_receive_main", "post-receive": "post_receive_main"}


def hook_script(name: str, python: str | None = None) -> str:
    """The text of hook ``name``, run by ``python`` (default: ``/usr/bin/env python3``)."""
    shebang = f"#!{python}" if python else "#!/usr/bin/env python3"
    return shebang + "\n" + _BODY.format(marker=MARKER, name=name, doc=_DOCS[name], func=_FUNCS[name])


def install_hooks(mount_path: str | os.PathLike[str], *, force: bool = False, python: str | None = None) -> list[Path]:
    """Write gitmem's hooks into a mount; returns the files written.

    A hook already there that gitmem did not write is left alone (``already_exists``)
    unless ``force`` is set: it may be someone's own check.
    """
    mount = Path(mount_path)
    if not (mount / "HEAD").is_file() or not (mount / "objects").is_dir():
        raise MemoryStoreError("not_found", f"{mount} is not a bare git repository")
    folder = mount / "hooks"
    targets = [folder / name for name in HOOK_NAMES]
    try:
        for target in targets:
            if os.path.lexists(target) and not force and not _written_by_gitmem(target):
                raise MemoryStoreError(
                    "already_exists", f"{target} exists and was not written by gitmem; pass force to replace it"
                )
        # Written through the folder's descriptor, no link followed on the way from the mount: a
        # ``hooks`` planted as a link (or swapped for one meanwhile) would take the scripts elsewhere.
        folder.mkdir(exist_ok=True)  # as git makes it (the umask's mode), not the private 0700 of gitmem's own
        dir_fd = local_folder_fd(folder, root=mount)
        try:
            for target in targets:
                script = hook_script(target.name, python or sys.executable)
                replace_file(target.name, script, mode=0o755, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as exc:  # e.g. a mount owned by another user, a read-only disk
        raise MemoryStoreError("unavailable", f"cannot write the hooks into {folder}: {exc}") from exc
    return targets


def check_repository(path: str, rev_range: str = "HEAD") -> RangeCheck:
    """The ``pre-receive`` hook's rules for a forge that runs no gitmem (``gitmem check``).

    Every commit of ``rev_range`` in the plain git repository at ``path`` is judged
    by the checks a push meets (:mod:`gitmem.git.forgecheck`); a CI job turns the
    verdict into a required status check.
    """
    from gitmem.git.forgecheck import check_range

    return check_range(path, rev_range)


def _written_by_gitmem(hook: Path) -> bool:
    """Whether the hook file is one gitmem wrote: read as a control file (a link, a FIFO or a
    large file is someone else's, never followed, waited on or loaded)."""
    try:
        raw = read_control(hook, 1 << 20)
    except MemoryStoreError:
        return False
    return raw is not None and MARKER.encode() in raw


def _read_updates(stdin: TextIO) -> list[RefUpdate]:
    updates = []
    for line in stdin:
        fields = line.split()
        if len(fields) == 3:
            updates.append(RefUpdate(ref=fields[2], old=fields[0], new=fields[1]))
    return updates


def _repo_dir(env: Mapping[str, str]) -> str:
    return os.path.abspath(env.get("GIT_DIR") or ".")


def pre_receive_main(
    stdin: TextIO | None = None, stderr: TextIO | None = None, env: Mapping[str, str] | None = None
) -> int:
    """The ``pre-receive`` hook: exit status 0 lets the push in, 1 refuses all of it."""
    stdin = stdin or sys.stdin
    stderr = stderr or sys.stderr
    env = os.environ if env is None else env
    path = _repo_dir(env)
    updates = _read_updates(stdin)
    # git keeps the pushed objects in a quarantine until every hook said yes.
    quarantine = env.get("GIT_QUARANTINE_PATH") or env.get("GIT_OBJECT_DIRECTORY")
    try:
        fmt = format_from_repo(GitRepo(path))
        verdicts = check_updates(
            path, updates, fmt, object_dirs=[quarantine] if quarantine else [], strict_objects=True
        )
    except MemoryStoreError as exc:
        relay(f"gitmem: cannot check this push, so it is refused: {exc}", stderr)
        log_line(path, f"pre-receive: a push was refused because it could not be checked: {exc}")
        return 1
    refused = [r for refusals in verdicts.values() for r in refusals]
    if not refused:
        return 0
    relay("gitmem: push refused; a memory only takes changes a store write would accept:", stderr)
    for refusal in refused:
        relay(f"gitmem:   {refusal}", stderr)
    return 1


def relay(message: str, stderr: TextIO) -> None:
    """Lines for git to relay to the pusher's terminal (``remote: ...``), each made :func:`visible`.

    A refusal can quote what was pushed (a path, a secret rule's match, git's own
    complaint about an object); its escape sequences must show as text there.
    """
    for line in message.splitlines() or [""]:
        print(visible(line), file=stderr)


def post_receive_main(
    stdin: TextIO | None = None, env: Mapping[str, str] | None = None, *, background: bool = True
) -> int:
    """The ``post-receive`` hook: refresh the index when ``main`` moved. Never fails the push.

    By default the refresh runs in a detached process, so the pusher does not wait
    for it (a Whoosh catch-up can take seconds); ``background=False`` runs it here.
    """
    stdin = stdin or sys.stdin
    env = os.environ if env is None else env
    if any(u.ref == MAIN and not u.deleting for u in _read_updates(stdin)):
        try:
            if background:
                refresh_index_detached(_repo_dir(env))
            else:
                refresh_index(_repo_dir(env))
        except Exception as exc:  # the push has landed; the index is derived and catches up later
            print(f"gitmem: the index was not updated ({exc}); it catches up on the next search", file=sys.stderr)
            log_line(_repo_dir(env), f"post-receive: the index was not updated: {exc!r}")
    return 0


LOG_NAME = "hooks.log"
_HOOK_LIMIT = 1024 * 1024  # an existing hook is read to see whether gitmem wrote it
_LOG_LIMIT = 1024 * 1024
"""Past this size ``hooks.log`` is moved to ``hooks.log.1`` (one old generation is kept)."""

_REFRESH = "import sys; from gitmem.hooks import refresh_index_logged; sys.exit(refresh_index_logged(sys.argv[1]))"


def log_path(mount_path: str) -> str:
    """``<mount>/gitmem/hooks.log``: where the hooks report what the pusher cannot see."""
    return os.path.join(mount_path, "gitmem", LOG_NAME)


def _open_log(path: str, mount_path: str) -> int:
    """The hooks log at ``path`` opened to append; its folder, when inside the mount, is made of real folders.

    ``<mount>/gitmem`` planted as a link would have the log written (or rotated) wherever it
    points: from the mount down no folder may be a link, and the log is rotated and opened
    through the descriptor of the folder so checked (:func:`gitmem.localfile.local_folder_fd`),
    never by a path a swapped folder would redirect.
    """
    folder, name = os.path.split(os.path.abspath(path))
    mount = os.path.abspath(mount_path)
    if os.path.commonpath([folder, mount]) == mount:
        dir_fd = local_folder_fd(folder, root=mount)
    else:  # a log the caller named outside the mount is the caller's
        os.makedirs(folder, exist_ok=True)
        dir_fd = open_folder(folder, follow=True)
    try:
        try:
            if os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_size > _LOG_LIMIT:
                os.replace(name, name + ".1", src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except OSError:
            pass
        # a FIFO there must not hang a push
        return open_private(name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def log_line(mount_path: str, text: str, *, path: str | None = None) -> None:
    """Append one timestamped line to the hooks log; never raises (logging must not fail a push)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    try:
        fd = _open_log(path or log_path(mount_path), mount_path)
        try:
            os.write(fd, f"{stamp} {text}\n".encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except (OSError, MemoryStoreError):  # MemoryStoreError: a link or FIFO planted as the log
        pass


def refresh_index_detached(mount_path: str, *, log_file: str | None = None) -> int:
    """Start :func:`refresh_index` in its own session and return its pid at once.

    git waits for every holder of the hook's stdout and stderr before it answers
    the pusher, so the child writes to the hooks log instead. It runs with
    ``-P`` so that neither the working directory (git runs hooks inside the
    mount, which has a ``gitmem/`` folder) nor anything else unsafe on the path
    can shadow the gitmem package.
    """
    target = log_file or log_path(mount_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GITMEM_HOOKS_LOG"] = target
    fd = _open_log(target, mount_path)
    try:
        return os.posix_spawn(
            sys.executable,
            [sys.executable, "-P", "-c", _REFRESH, os.path.abspath(mount_path)],
            env,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, fd, 1),
                (os.POSIX_SPAWN_DUP2, fd, 2),
            ],
            setsid=True,
        )
    finally:
        os.close(fd)


def refresh_index_logged(mount_path: str) -> int:
    """The detached refresh: the whole catch-up in this process (it is off the push's path already), so a
    failure reaches the hooks log rather than the null output of yet another detached indexer."""
    target = os.environ.get("GITMEM_HOOKS_LOG") or log_path(mount_path)
    try:
        current = catch_up(mount_path, inline=False)  # detached already: the whole catch-up is done here
    except Exception as exc:
        log_line(mount_path, f"post-receive: the index refresh of {mount_path} failed: {exc!r}", path=target)
        return 1
    if not current:
        log_line(mount_path, f"post-receive: the index of {mount_path} was not brought to main (another "
                 "indexer held it, or the warning above says why); the next search catches it up", path=target)  # fmt: skip
        return 1
    return 0


def refresh_index(mount_path: str) -> None:
    """Bring the mount's search index up to date (:func:`gitmem.index.catch_up`).

    The index is derived from git and catches up on its own at the next search, so
    this only moves that work off the first reader's path. The push waits for the
    hook, so a rebuild is left to a detached indexer (:mod:`gitmem.index.background`).
    """
    from gitmem.index import background

    with background.detached():
        catch_up(mount_path)

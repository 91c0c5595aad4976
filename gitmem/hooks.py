"""Server-side git hooks that hold pushes over ssh or a file path to the store's rules.

``gitmem serve`` checks pushes itself; a mount that people also push to with plain
git (``git push /srv/memories/user.git``, or over ssh) needs git's own hooks:

- ``pre-receive`` runs :func:`gitmem.git.pushcheck.check_updates` on every ref the
  push updates (fast-forward on ``main``, paths, content, secrets). One refusal
  rejects the whole push, and git shows each reason to the pusher as ``remote:``
  lines. The new objects are still in git's quarantine directory at that point, so a
  refused push leaves nothing behind in the mount.
- ``post-receive`` brings the mount's search index up to date when ``main`` moved,
  in a detached process so the pusher does not wait for it.

:func:`install_hooks` writes both into ``<mount>/hooks/`` with the current Python
interpreter in the ``#!`` line, so the hooks run the same gitmem the installer has.
The repository's ``hooks/`` folder holds the same scripts for copying by hand.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from gitmem.errors import MemoryStoreError
from gitmem.git.mountconfig import format_from_repo
from gitmem.git.pushcheck import RefUpdate, check_updates
from gitmem.git.refs import MAIN
from gitmem.git.repo import GitRepo
from gitmem.index import catch_up

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
            if target.exists() and not force and MARKER not in target.read_text(encoding="utf-8", errors="replace"):
                raise MemoryStoreError(
                    "already_exists", f"{target} exists and was not written by gitmem; pass force to replace it"
                )
        folder.mkdir(exist_ok=True)
        for target in targets:
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            try:
                tmp.write_text(hook_script(target.name, python or sys.executable), encoding="utf-8")
                tmp.chmod(0o755)
                os.replace(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)
    except OSError as exc:  # e.g. a mount owned by another user, a read-only disk
        raise MemoryStoreError("unavailable", f"cannot write the hooks into {folder}: {exc}") from exc
    return targets


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
        verdicts = check_updates(path, updates, fmt, object_dirs=[quarantine] if quarantine else [])
    except MemoryStoreError as exc:
        print(f"gitmem: cannot check this push, so it is refused: {exc}", file=stderr)
        return 1
    refused = [r for refusals in verdicts.values() for r in refusals]
    if not refused:
        return 0
    print("gitmem: push refused; a memory only takes changes a store write would accept:", file=stderr)
    for refusal in refused:
        print(f"gitmem:   {refusal}", file=stderr)
    return 1


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
    return 0


_REFRESH = "import sys; from gitmem.hooks import refresh_index; refresh_index(sys.argv[1])"


def refresh_index_detached(mount_path: str) -> None:
    """Start :func:`refresh_index` in its own session and return at once.

    Its output goes nowhere: git waits for every holder of the hook's stdout and
    stderr before it answers the pusher.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.Popen(
        [sys.executable, "-c", _REFRESH, mount_path],
        cwd=mount_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def refresh_index(mount_path: str) -> None:
    """Bring the mount's search index up to date (:func:`gitmem.index.catch_up`).

    The index is derived from git and catches up on its own at the next search, so
    this only moves that work off the first reader's path.
    """
    catch_up(mount_path)

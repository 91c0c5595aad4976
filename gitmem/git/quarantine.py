"""Where objects from outside wait before they may enter a mount: one quarantine for every way in.

Objects reach a mount from outside on several paths: a push to ``gitmem serve``
(:mod:`gitmem.adapters.receive_pack`), a push to ``refs/for/main`` that the
server merges (:mod:`gitmem.git.queue`), a pull (:mod:`gitmem.git.pull`),
``gitmem import --history`` (:mod:`gitmem.git.historyimport`), a proposal's
approval (the merge commit :func:`gitmem.git.merge.integrate` writes), a
conflict proposal opened by ``pull --propose`` and each resolution written into
it (:mod:`gitmem.git.conflict`), and the
installed hooks' re-check of git's own receive quarantine
(:func:`strict_check`). Each opens a :class:`Quarantine`, the
way git's own receive-pack works:

- a bare repository ``<mount>/gitmem/quarantine-XXXX/`` whose object folder
  borrows the mount's (``objects/info/alternates``): what is fetched, received or
  merged there reads together with the mount's objects, and none of it is in the
  mount;
- the checks (:mod:`gitmem.git.pushcheck`) run against it;
- :meth:`Quarantine.admit` moves into the mount ONE new pack of exactly the
  objects the accepted commits reach and the mount's refs do not. A refused
  commit's files, a fetched erasure ledger, any object a crafted pack carried
  that nothing accepted reaches: none of it ever enters, whatever else the
  folder holds;
- the folder is deleted when its owner is done, whatever happened.

A process can die at any point, SIGKILL included. Its owner holds an ``flock``
on the folder for as long as it uses it, and the kernel drops that lock when the
process dies. :func:`sweep` deletes every quarantine whose lock is free. It runs
before each new quarantine is made (the next push, pull, import or approval), in
a writer that finds the writer lock's previous holder died, and in ``gitmem gc``,
``forget`` and ``purge``. So nothing a killed process received, refused or erased
objects included, outlives the next of those.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from gitmem.errors import MemoryStoreError
from gitmem.git.cli import own_group
from gitmem.git.packs import (
    TIMEOUT,
    PackError,
    git_said,
    index_pack,
    install_pack,
    only_needed,
    pack_ids,
    pack_reachable,
    quarantine_env,
    ref_tips,
    rev_lines,
)
from gitmem.git.perms import make_private_dir, write_private
from gitmem.localfile import open_folder

PREFIX = "quarantine-"
"""Folder names of quarantines inside a mount's ``gitmem/`` state folder."""

_LEGACY_STATE = ("scratch-",)
"""Scratch repositories of earlier gitmem versions (in ``gitmem/``): never locked, so always leftovers."""
_LEGACY_OBJECTS = ("tmp_objdir-gitmem-",)
"""Earlier versions' push quarantines and check folders inside ``objects/``: never locked either."""
_GIT_RECEIVE = "tmp_objdir-incoming-"
"""git's own receive-pack quarantine (a push over ssh or a path, with the hooks installed)."""
GIT_RECEIVE_STALE_SECONDS = 3600.0
"""git's own quarantine has no lock to ask: one this old belongs to a receive-pack that died."""


class Quarantine:
    """A locked bare repository inside the mount that borrows its objects; see the module docstring.

    Use :func:`open_quarantine` (a context manager), which deletes it afterwards.
    """

    def __init__(self, repo_path: str) -> None:
        self.repo_path = os.path.abspath(repo_path)
        self.mount_objects = os.path.join(self.repo_path, "objects")
        state = os.path.join(self.repo_path, "gitmem")
        try:
            make_private_dir(state)
            sweep(self.repo_path)
            self.path, self._fd = _make_locked(state)
        except OSError as exc:
            raise MemoryStoreError("unavailable", f"cannot make a quarantine in {state}: {exc}") from exc
        self.objects = os.path.join(self.path, "objects")
        self._admitted = 0
        try:
            _init_bare(self.path, self.mount_objects)
        except (MemoryStoreError, OSError) as exc:
            self.close()
            raise MemoryStoreError("unavailable", f"cannot prepare a quarantine in {self.path}: {exc}") from exc

    def receive(self, read: Callable[[int], bytes], max_size: int | None) -> int:
        """Stream a pushed pack in through ``git index-pack --strict`` (:func:`gitmem.git.packs.index_pack`)."""
        return index_pack(self.repo_path, self.objects, read, max_size)

    def admit(
        self,
        tips: Sequence[str],
        *,
        known: Sequence[str] | None = None,
        reached: set[bytes] | None = None,
        durable: bool = False,
    ) -> list[str]:
        """Move into the mount one pack of what ``tips`` reach beyond ``known``; returns the files added.

        ``tips`` are what was accepted, and only what they reach moves: the rest
        stays here and goes with the folder. ``known`` defaults to what every ref
        of the mount points at. When ``reached`` (the objects the checks saw the
        tips reach) covers every object of a single received pack the mount
        lacks, that pack moves in as it is instead of being packed again.
        ``durable`` (the mount's ``gitmem.durable``): the pack and its folder are
        on disk before this returns, so a ref moved after it never names objects
        a power cut took back.
        """
        wanted = [t for t in tips if t.strip("0")]
        if not wanted:
            return []
        received = None
        if reached is not None and self._admitted == 0:
            received = only_needed(self.repo_path, self.objects, reached)
        self._admitted += 1
        if received is None:
            dest = os.path.join(self.path, f"admit{self._admitted}")
            known = ref_tips(self.repo_path) if known is None else known
            received = pack_reachable(self.repo_path, [self.objects], dest, wanted, known)
        added = install_pack(received, self.mount_objects)
        if durable and added:
            from gitmem.git.packwrite import fsync_together  # the write engine's: a pull need not load it otherwise

            fsync_together([*added, os.path.join(self.mount_objects, "pack")])
        return added

    def close(self) -> None:
        """Delete the folder, then let its lock go (a sweeper never sees it half deleted and unlocked)."""
        fd, self._fd = self._fd, -1
        if fd < 0:
            return
        try:
            shutil.rmtree(self.path, ignore_errors=True)
        finally:
            os.close(fd)


@contextmanager
def open_quarantine(repo_path: str) -> Iterator[Quarantine]:
    """A :class:`Quarantine` of the mount at ``repo_path``, deleted on the way out whatever happened."""
    quarantine = Quarantine(repo_path)
    try:
        yield quarantine
    finally:
        quarantine.close()


def _init_bare(path: str, borrowed: str) -> None:
    """The few files git and libgit2 need to open ``path`` as a bare repository that borrows ``borrowed``.

    Written by hand: ``git init`` or libgit2's also copy templates (hooks,
    description, exclude), and every file made is one more to delete per push.
    """
    for folder in ("objects", "objects/pack", "objects/info", "refs"):
        os.mkdir(os.path.join(path, folder), 0o700)
    write_private(os.path.join(path, "HEAD"), "ref: refs/heads/main\n")
    write_private(os.path.join(path, "config"), "[core]\n\trepositoryformatversion = 0\n\tbare = true\n")
    write_private(os.path.join(path, "objects", "info", "alternates"), borrowed + "\n")


def _make_locked(state: str) -> tuple[str, int]:
    """A new folder in ``state`` and a descriptor holding its lock.

    Between ``mkdtemp`` and the lock a sweeper could take the new folder for a
    dead one; then the lock is refused or the folder is gone, and another is made.
    """
    for _ in range(16):
        path = tempfile.mkdtemp(prefix=PREFIX, dir=state)
        try:
            fd = open_folder(path)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino:
                return path, fd
        except OSError:
            pass
        os.close(fd)
    raise OSError(errno.EAGAIN, "every new quarantine folder was swept away before it could be locked")


# --- leftovers of processes that died ------------------------------------------------


@dataclass(frozen=True, slots=True)
class Leftover:
    """A quarantine folder no live process holds: what a killed push, pull, import or approval left."""

    path: str
    kind: str  # "gitmem" (locked folders), "legacy" (an earlier version's), "git" (git's own receive quarantine)

    @property
    def objects(self) -> str:
        """Its object folder: a repository's ``objects/``, or the folder itself when it is one."""
        inner = os.path.join(self.path, "objects")
        return inner if os.path.isdir(inner) and not os.path.islink(inner) else self.path


def is_quarantine(name: str) -> bool:
    """Whether a folder named ``name`` in a mount's ``gitmem/`` is a quarantine (this version's or an earlier one's)."""
    return name.startswith((PREFIX, *_LEGACY_STATE))


def _unheld(repo_path: str) -> Iterator[tuple[str, str, int]]:
    """Each quarantine no live process holds: its path, kind and a descriptor holding its lock (see :func:`_dead`)."""
    state = os.path.join(repo_path, "gitmem")
    for folder, prefixes, kind in (
        (state, (PREFIX,), "gitmem"),
        (state, _LEGACY_STATE, "legacy"),
        (os.path.join(repo_path, "objects"), _LEGACY_OBJECTS, "legacy"),
        (os.path.join(repo_path, "objects"), (_GIT_RECEIVE,), "git"),
    ):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            fd = _dead(os.path.join(folder, name), kind) if name.startswith(prefixes) else None
            if fd is not None:
                yield os.path.join(folder, name), kind, fd


def _dead(path: str, kind: str) -> int | None:
    """A descriptor holding the lock of ``path`` when no live process uses it (``-1``: nothing to lock), else ``None``."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode):
        return -1  # a planted file or link: nothing gitmem made, removed without following it
    if kind == "git":
        return -1 if time.time() - info.st_mtime > GIT_RECEIVE_STALE_SECONDS else None
    try:
        fd = open_folder(path)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None  # its owner is alive and working in it
    return fd


def leftovers(repo_path: str) -> list[Leftover]:
    """The quarantine folders of the mount that no live process holds (nothing is changed)."""
    found = []
    for path, kind, fd in _unheld(os.path.abspath(repo_path)):
        if fd >= 0:
            os.close(fd)
        found.append(Leftover(path, kind))
    return found


def sweep(repo_path: str) -> list[str]:
    """Delete every quarantine of the mount that no live process holds; returns the folders removed."""
    removed = []
    for path, _kind, fd in _unheld(os.path.abspath(repo_path)):
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass
        finally:
            if fd >= 0:
                os.close(fd)
        if not os.path.lexists(path):
            removed.append(path)
    return removed


def holds(objects: str, oids: Sequence[str]) -> list[str]:
    """Which of ``oids`` the object folder ``objects`` itself stores (loose or in an indexed pack; no alternates)."""
    wanted = set(oids)
    found = {o for o in wanted if os.path.isfile(os.path.join(objects, o[:2], o[2:]))}
    pack = os.path.join(objects, "pack")
    try:
        names = os.listdir(pack)
    except OSError:
        names = []
    for name in names:
        if name.endswith(".idx"):
            try:
                found.update(i.hex() for i in pack_ids(os.path.join(pack, name)) if i.hex() in wanted)
            except (OSError, PackError):
                continue  # a damaged index: the folder still goes with the next sweep
    return sorted(found)


def unindexed(objects: str) -> bool:
    """Whether ``objects`` holds pack data without an index (a transfer killed mid-way): its objects cannot be listed."""
    pack = os.path.join(objects, "pack")
    try:
        names = os.listdir(pack)
    except OSError:
        return False
    indexed = {n[: -len(".idx")] for n in names if n.endswith(".idx")}
    return any(n.startswith("tmp_") or (n.endswith(".pack") and n[: -len(".pack")] not in indexed) for n in names)


# --- git's strict object rules on what sits in git's own receive quarantine ---------------


def strict_check(repo_path: str, objects: Sequence[str], tips: Sequence[str], known: Sequence[str]) -> str | None:
    """git's strict object rules on what ``tips`` bring beyond ``known``; ``None`` or why not.

    For objects already sitting in a quarantine (``objects``): they are packed and
    read back by ``git index-pack --strict`` in a quarantine of their own that is
    removed afterwards, so nothing is written to the mount or to ``objects``.
    """
    if not tips:
        return None
    mount_objects = os.path.join(os.path.abspath(repo_path), "objects")
    with open_quarantine(repo_path) as held:
        scratch = held.objects
        sources = [*objects, mount_objects]
        reader = quarantine_env(repo_path, sources[0], sources[1:])
        session, group = own_group()
        packer = subprocess.Popen(
            ["git", "pack-objects", "--revs", "--stdout", "--quiet"],
            cwd=repo_path,
            env=reader,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=session,
            process_group=group,
        )
        assert packer.stdout is not None and packer.stdin is not None
        packer.stdin.write(rev_lines(tips, known))
        packer.stdin.close()
        checker = subprocess.run(
            ["git", "index-pack", "--stdin", "--strict"],
            cwd=repo_path,
            env=quarantine_env(repo_path, scratch, sources),
            stdin=packer.stdout,
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
        packer.stdout.close()
        packer.wait(timeout=TIMEOUT)
        assert packer.stderr is not None
        packer_err = packer.stderr.read()
        packer.stderr.close()
        if packer.returncode != 0:
            return git_said(packer_err, f"git pack-objects exited with {packer.returncode}")
        if checker.returncode != 0:
            return git_said(checker.stderr, f"git index-pack exited with {checker.returncode}")
        indexes = [os.path.join(scratch, "pack", n) for n in os.listdir(os.path.join(scratch, "pack"))]
        reached = {i for path in indexes if path.endswith(".idx") for i in pack_ids(path)}
        return _unreached(repo_path, objects, reached)


def _unreached(repo_path: str, objects: Sequence[str], reached: set[bytes]) -> str | None:
    """Why the quarantine ``objects`` hold something no update reaches and the mount lacks, or ``None``.

    git moves a whole quarantine into the mount once the hooks accept, so an
    object that no pushed ref reaches (a crafted pack can carry any) would stay
    readable with ``git cat-file`` without ever having been checked.
    """
    if not objects:
        return None
    from gitmem.git.loose import object_db, open_repository  # the hooks' re-check only: a pull's check has no folders

    with open_repository(os.path.abspath(repo_path)) as repo:
        mount = repo.odb
        for folder in objects:
            for oid in object_db(folder):  # lists every index in its pack folder: checked first
                if oid.raw not in reached and not mount.exists(oid):
                    return f"the push carries object {oid} that none of its refs reaches"
        return None

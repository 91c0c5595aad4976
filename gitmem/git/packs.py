"""Pushed objects through git's own checks, and only what an accepted update needs into the mount.

libgit2 (and dulwich) parse objects leniently: a tree with duplicate or unsorted
entries, a zero-padded file mode, a file entry that points at a commit, or a commit
with a bad time zone or a NUL in its message all read fine there, yet ``git fsck``
and every remote with ``receive.fsckObjects`` refuse them, and ``git gc`` stops on
some. So a push is held to git's strict rules by git itself:

- :func:`index_pack` streams the pushed pack into ``git index-pack --strict
  --fix-thin`` inside the push's quarantine (the mount's objects are an
  alternate): every object is checked with fsck's rules, deltas are resolved
  against the mount, and a truncated pack, a wrong object count or a missing
  delta base is a :class:`PackError` with git's own message, never a crash;
- :func:`gitmem.git.quarantine.strict_check` does the same for objects that are
  already in a quarantine (git's own receive-pack, running gitmem's ``pre-receive``
  hook), with this module's pieces and a quarantine of its own;
- :func:`pack_reachable` writes a new pack of exactly the objects the accepted
  updates reach and the mount lacks. Only that pack moves into the mount, so
  nothing a refused update (or a garbage object in a crafted pack) carried stays.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterable, Sequence

from gitmem.git.cli import git_env, own_group
from gitmem.git.control import check_packs_of
from gitmem.localfile import read_local

_CHUNK = 64 * 1024
TIMEOUT = 600.0
"""Seconds one git process of a push may run (a liveness bound, not a target)."""


class PackError(Exception):
    """git refused the pushed objects; the message is git's own (last lines of its stderr)."""


class PackTooLarge(PackError):
    """The pushed pack is larger than the cap."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the pack is larger than the limit of {limit} bytes")
        self.limit = limit


def quarantine_env(repo_path: str, objects: str, alternates: Sequence[str] = ()) -> dict[str, str]:
    """git's environment for working in object directory ``objects`` that borrows the mount's objects."""
    borrowed = [os.path.abspath(a) for a in alternates] or [os.path.join(os.path.abspath(repo_path), "objects")]
    check_packs_of(repo_path, objects, *borrowed)  # git opens every pack index it lists, blocking
    env = git_env()
    env["GIT_DIR"] = os.path.abspath(repo_path)
    env["GIT_OBJECT_DIRECTORY"] = os.path.abspath(objects)
    env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = os.pathsep.join(borrowed)
    return env


def git_said(stderr: bytes, fallback: str) -> str:
    """What git said on ``stderr`` (its last three lines, shortened), or ``fallback`` when it said nothing."""
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    text = " / ".join(lines[-3:]) or fallback
    return text[:400]


def index_pack(repo_path: str, quarantine: str, read: Callable[[int], bytes], max_bytes: int | None = None) -> int:
    """Stream a pack from ``read`` into ``quarantine`` through ``git index-pack --strict``.

    Returns the number of bytes received (0: the client sent no pack at all).
    Raises :class:`PackTooLarge` past ``max_bytes`` and :class:`PackError` when git
    refuses the pack; either way nothing of it is left in ``quarantine``.
    """
    first = read(_CHUNK)
    if not first:
        return 0
    args = ["git", "index-pack", "--stdin", "--fix-thin", "--strict"]
    if max_bytes is not None:
        args.append(f"--max-input-size={max_bytes}")
    session, group = own_group()
    proc = subprocess.Popen(
        args,
        cwd=repo_path,
        env=quarantine_env(repo_path, quarantine),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=session,
        process_group=group,
    )
    assert proc.stdin is not None
    received = 0
    try:
        chunk = first
        while chunk:
            received += len(chunk)
            if max_bytes is not None and received > max_bytes:
                proc.kill()
                proc.communicate()
                _clear(quarantine)
                raise PackTooLarge(max_bytes)
            try:
                proc.stdin.write(chunk)
            except BrokenPipeError:
                break  # git stopped reading: it found the pack broken and says why below
            chunk = read(_CHUNK)
        try:
            _, err = proc.communicate(timeout=TIMEOUT)
        except (BrokenPipeError, ValueError):
            proc.wait(timeout=TIMEOUT)
            err = proc.stderr.read() if proc.stderr is not None else b""
    except BaseException:
        proc.kill()
        proc.wait()
        _clear(quarantine)
        raise
    if proc.returncode != 0:
        _clear(quarantine)
        if max_bytes is not None and b"pack exceeds maximum allowed size" in err:
            raise PackTooLarge(max_bytes)
        raise PackError(git_said(err, f"git index-pack exited with {proc.returncode}"))
    return received


def _clear(objects: str) -> None:
    """Remove everything a failed index-pack left in an object directory (tmp_pack_* files)."""
    pack = os.path.join(objects, "pack")
    for name in os.listdir(pack) if os.path.isdir(pack) else ():
        try:
            os.unlink(os.path.join(pack, name))
        except OSError:
            pass


def rev_lines(tips: Iterable[str], known: Iterable[str]) -> bytes:
    """``git pack-objects --revs`` input: the objects ``tips`` reach and ``known`` do not."""
    lines = [*list(tips), "--not", *known]
    return ("\n".join(lines) + "\n").encode("ascii")


def pack_reachable(
    repo_path: str, objects: Sequence[str], dest: str, tips: Sequence[str], known: Sequence[str]
) -> list[str]:
    """Write into ``dest/pack`` one pack of the objects reachable from ``tips`` and not from ``known``.

    ``objects`` are the object directories to read from (a quarantine; the
    mount's own objects are always read too). Returns the files written (pack
    first, index last), or ``[]`` when the mount already has every object.
    """
    os.makedirs(os.path.join(dest, "pack"), exist_ok=True)
    base = os.path.join(dest, "pack", "pack")
    mount_objects = os.path.join(os.path.abspath(repo_path), "objects")
    env = quarantine_env(repo_path, objects[0], [*objects[1:], mount_objects])
    done = subprocess.run(
        ["git", "pack-objects", "--revs", "--quiet", "--delta-base-offset", base],
        cwd=repo_path,
        env=env,
        input=rev_lines(tips, known),
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        raise PackError(git_said(done.stderr, f"git pack-objects exited with {done.returncode}"))
    name = done.stdout.decode("ascii", "replace").strip().splitlines()
    if not name:
        return []
    stem = f"{base}-{name[-1]}"
    files = [f"{stem}{ext}" for ext in (".pack", ".rev", ".idx") if os.path.exists(f"{stem}{ext}")]
    if os.path.getsize(f"{stem}.pack") <= 32:  # header and checksum only: no object was new
        for path in files:
            os.unlink(path)
        return []
    return files


def ref_tips(repo_path: str) -> list[str]:
    """What every ref of the repository points at: the objects a pack need not carry again."""
    import pygit2  # loaded only here and below: a fast-forward pull whose pack moves in as it is needs neither

    from gitmem.git.loose import open_repository

    with open_repository(os.path.abspath(repo_path)) as repo:
        found: list[str] = []
        for name in repo.references:
            try:
                found.append(str(repo.references[name].resolve().target))
            except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
                continue
        return sorted(set(found))


def install_pack(files: Sequence[str], objects: str) -> list[str]:
    """Move a pack written by :func:`pack_reachable` into an object directory; returns the files added.

    The pack goes in before its index (as git does), so a reader never finds an
    index whose pack is missing.
    """
    dest = os.path.join(objects, "pack")
    os.makedirs(dest, exist_ok=True)
    order = {".pack": 0, ".rev": 1, ".idx": 2}
    moved = []
    for path in sorted(files, key=lambda f: order.get(os.path.splitext(f)[1], 3)):
        target = os.path.join(dest, os.path.basename(path))
        if os.path.exists(target):  # the mount has this very pack already: it is not ours to remove later
            os.unlink(path)
        else:
            os.replace(path, target)
            moved.append(target)
    return moved


def remove_pack(files: Sequence[str]) -> None:
    """Delete a pack installed by :func:`install_pack`: index first, so no reader finds an index without its pack."""
    order = {".idx": 0, ".rev": 1, ".pack": 2}
    for path in sorted(files, key=lambda f: order.get(os.path.splitext(f)[1], 3)):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def pack_ids(idx_path: str) -> list[bytes]:
    """The raw object ids a version-2 pack index lists."""
    data = read_local(idx_path, 1 << 31)
    if data is None:
        raise PackError(f"{idx_path} is not a regular file gitmem can read (a link, FIFO or over 2 GiB)")
    if data[:4] != b"\xfftOc" or int.from_bytes(data[4:8], "big") != 2:
        raise PackError(f"{idx_path} is not a version-2 pack index")
    count = int.from_bytes(data[8 + 255 * 4 : 8 + 256 * 4], "big")
    start = 8 + 256 * 4
    return [data[start + 20 * i : start + 20 * (i + 1)] for i in range(count)]


def _mount_has(repo_path: str, oids: Sequence[bytes]) -> bool:
    """Whether the mount stores every one of ``oids`` (the bases a thin pack's fix added, mostly).

    Its pack indexes and loose files are looked up directly (:meth:`gitmem.git.peek.Peek.has`);
    a mount that reader leaves to libgit2 (objects borrowed from elsewhere, say) is asked through libgit2.
    """
    from gitmem.git.peek import CannotPeek, Peek

    try:
        peek = Peek(repo_path)
        return all(peek.has(i) for i in oids)
    except CannotPeek:
        pass
    import pygit2

    from gitmem.git.loose import open_repository

    with open_repository(os.path.abspath(repo_path)) as repo:
        return all(repo.odb.exists(pygit2.Oid(raw=i)) for i in oids)


def only_needed(repo_path: str, objects: str, reached: set[bytes]) -> list[str] | None:
    """The received pack's files when it holds nothing but ``reached`` objects and ones the mount has.

    Then it can move in as it is (no re-pack); ``[]`` when it is empty. ``None`` when it holds anything
    else (an object of a refused update, or one no update reaches), or when the
    quarantine does not hold exactly one pack.
    """
    folder = os.path.join(objects, "pack")
    indexes = [n for n in os.listdir(folder) if n.endswith(".idx")]
    if len(indexes) != 1:
        return None
    stem = os.path.join(folder, indexes[0][: -len(".idx")])
    ids = pack_ids(stem + ".idx")
    if not ids:
        return []  # an empty pack (the push only names objects the mount has): nothing to keep
    extra = [i for i in ids if i not in reached]
    if extra and not _mount_has(repo_path, extra):
        return None
    return [f"{stem}{ext}" for ext in (".pack", ".rev", ".idx") if os.path.exists(f"{stem}{ext}")]

"""A mount's control files, checked before libgit2 or git reads them: its ``config`` and its alternates.

libgit2 (and every git command gitmem runs) opens a repository's ``config`` and
``objects/info/alternates`` with a plain blocking read that follows links: a
FIFO planted there hangs every call on the mount, a link sends the read outside
it. These files say how the mount behaves (its limits, its kind, whether writes
are durable, where objects come from), so they pass the rule of every control
file gitmem reads: a regular file, not a link, of bounded size, read without
blocking; anything else makes the mount ``unavailable``, naming the file, instead
of being read as if absent (which would drop a limit or hide borrowed objects).

The check is a ``lstat`` per opened handle, so it costs nothing a call notices.
What is only gitmem's to read (the alternates list) is read here through
:func:`gitmem.localfile.read_control`.
"""

from __future__ import annotations

import os
import stat
import time

from gitmem.errors import MemoryStoreError
from gitmem.localfile import read_control

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Container
    from typing import Final

#: A mount's config holds a few dozen lines; a larger one is not read.
CONFIG_LIMIT: Final = 1 << 20
#: ``objects/info/alternates``: one folder per line.
ALTERNATES_LIMIT: Final = 64 << 10
#: ``packed-refs``: a line per ref (a mount holds a few, and its proposals).
PACKED_REFS_LIMIT: Final = 64 << 20
#: A loose ref holds an id or ``ref: <name>``; libgit2 and git read the whole file.
LOOSE_REF_LIMIT: Final = 4096
#: The control files of a mount (relative to its git folder) and their size limits. libgit2 and
#: git read ``packed-refs`` whenever a ref is not loose, blocking and following a link.
CONTROL_FILES: Final = (
    ("config", CONFIG_LIMIT),
    (os.path.join("objects", "info", "alternates"), ALTERNATES_LIMIT),
    ("packed-refs", PACKED_REFS_LIMIT),
)


def check_control_files(git_dir: str) -> None:
    """``unavailable`` when a control file of the mount at ``git_dir`` is a link, not a regular file, or too
    large, or when its config holds a NUL byte (libgit2 would stop reading there and take the rest for absent).

    A missing file passes: libgit2 and git have their defaults for it. What the
    config says is then parsed by libgit2, which refuses what it cannot parse.
    """
    for name, limit in CONTROL_FILES:
        check_control_file(os.path.join(git_dir, name), limit)
    check_config_text(os.path.join(git_dir, "config"))
    check_repository_folder(git_dir)


WRITTEN_FOLDERS: Final = frozenset({"gitmem", "objects", "refs"})
"""The folders of a repository gitmem writes in: its own state (locks, the last commit's copy, caches
holding texts), the packs of every commit and the refs. Planted as a link, all of it would land wherever it points."""


class _Every:
    """Every name: for :func:`check_folder`'s ``real``, a folder none of whose entries may be a link."""

    def __contains__(self, name: object) -> bool:
        return True


EVERY: Final = _Every()


def check_repository_folder(git_dir: str) -> None:
    """:func:`check_folder` for the repository's own folder and its ``info``: git reads ``HEAD``,
    ``shallow``, ``info/grafts`` and ``info/attributes`` there (libgit2 the first three), blocking.

    The :data:`WRITTEN_FOLDERS` must be real folders, and so must the folders in
    ``objects`` (``pack``, ``info``, the loose objects') and in ``refs`` (``heads``,
    ``tags``): packs and refs are written into them. The folders deeper under
    ``refs`` (``heads/proposals/<principal>``, one per principal: thousands on a
    team's memory) are not listed here, on every open, but where a ref is moved
    (:func:`check_ref_folders`); a git process has all of them checked first
    (:func:`check_refs_of`).
    """
    check_folder(git_dir, real=WRITTEN_FOLDERS)
    check_folder(os.path.join(git_dir, "info"))
    check_folder(os.path.join(git_dir, "objects"), real=EVERY)
    refs = os.path.join(git_dir, "refs")
    for name in check_folder(refs, real=EVERY):
        check_folder(os.path.join(refs, name), real=EVERY)


def check_ref_folders(git_dir: str, ref: str) -> None:
    """``unavailable`` when a folder on the way to ref ``ref`` (``refs/heads/proposals/alice/x``) is a link.

    Run before a ref is written by hand or by libgit2, both of which follow a
    folder link: a ``proposals/<principal>`` planted as one would have the ref
    written wherever it points. One ``lstat`` a folder; an absent one is made
    a real folder by the write.
    """
    folders = _ref_folders.get((git_dir, ref))
    if folders is None:
        if len(_ref_folders) >= 256:
            _ref_folders.clear()
        here, made = git_dir, []
        for part in ref.split("/")[:-1]:
            here = os.path.join(here, part)
            made.append(here)
        folders = _ref_folders[(git_dir, ref)] = tuple(made)
    for here in folders:
        try:
            mode = os.lstat(here).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            raise MemoryStoreError("unavailable", f"cannot look at {here}: {exc.strerror or exc}") from None
        if stat.S_ISLNK(mode):
            raise MemoryStoreError(
                "unavailable", f"{here} is a link; gitmem writes there, never through a link: make it a folder again"
            )


_ref_folders: dict[tuple[str, str], tuple[str, ...]] = {}  # the folders on the way to a ref, joined once


def check_config_text(path: str) -> None:
    """``unavailable`` when the config at ``path`` cannot be read as a control file or holds a NUL byte."""
    try:
        raw = read_control(path, CONFIG_LIMIT)
    except MemoryStoreError as exc:
        raise MemoryStoreError("unavailable", exc.message) from None
    if raw is not None and b"\0" in raw:
        raise MemoryStoreError(
            "unavailable", f"{path} holds a NUL byte, which no git config has: the mount is not used until it is fixed"
        )


def check_control_file(path: str, limit: int) -> None:
    """:func:`check_control_files` for one file."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise MemoryStoreError("unavailable", f"cannot read {path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode):
        problem = "is a symbolic link (control files are read without following links)"
    elif not stat.S_ISREG(info.st_mode):
        problem = "is not a regular file (a FIFO, device, socket or folder)"
    elif info.st_size > limit:
        problem = f"is larger than {limit} bytes, more than such a file holds"
    else:
        return
    raise MemoryStoreError("unavailable", f"{path} {problem}: the mount is not used until it is a plain file again")


def read_alternates(objects: str) -> list[str]:
    """The lines of ``<objects>/info/alternates`` (without comments or blanks); none when it is absent.

    ``unavailable`` when the file is there but is not a regular file of bounded
    size: a list of borrowed object folders that cannot be read must not read
    as "borrows nothing".
    """
    path = os.path.join(objects, "info", "alternates")
    try:
        raw = read_control(path, ALTERNATES_LIMIT)
    except MemoryStoreError as exc:
        raise MemoryStoreError("unavailable", exc.message) from None
    if raw is None:
        return []
    try:
        if b"\0" in raw:
            raise ValueError("a NUL byte")
        text = raw.decode("utf-8")
    except ValueError as exc:  # folder names gitmem cannot read as libgit2 does: it must not guess them
        reason = "a NUL byte" if b"\0" in raw else f"text that is not UTF-8 (byte {getattr(exc, 'start', 0)})"
        raise MemoryStoreError(
            "unavailable", f"{path} holds {reason}, not a list of folders: the mount is not used until it is fixed"
        ) from None
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


# folder -> the stamp it had when last found clean, and its folders then
_STAMPS: dict[str, tuple[tuple[int, int, int], tuple[str, ...]]] = {}
_RACY_NS: Final = 50_000_000  # a folder changed this recently may change again without a new mtime


def check_pack_folder(folder: str) -> None:
    """``unavailable`` naming the first entry of ``folder`` (an ``objects/pack``) or of its object folder's
    ``info`` (and ``info/commit-graphs``) that is no regular file.

    libgit2 and git open every index they list there, the multi-pack index and the
    commit graphs with a blocking open that follows links: a FIFO planted as
    ``pack-*.idx`` or ``objects/info/commit-graph`` would hang that read for good.
    So this runs right before anything lists the folder: any pygit2 handle, object
    database or pack reader being made (all in :mod:`gitmem.git.loose`), libgit2
    listing it again because an object was in none of the packs it knew
    (:class:`gitmem.git.loose.LooseGuard` is asked first, and checks before its
    writer writes), a git process started on the repository. Not before every
    read: every commit adds a pack, and listing the folder after each one was
    most of the cost of a read right after a write. Each folder is listed again
    only when its ``mtime`` or change time moved (see :func:`check_folder`). Nothing when absent.
    """
    info = os.path.join(os.path.dirname(folder), "info")
    for each in (folder, info, os.path.join(info, "commit-graphs")):
        check_folder(each)


def check_folder(folder: str, *, real: Container[str] = frozenset()) -> tuple[str, ...]:
    """``unavailable`` naming the first entry of ``folder`` that is neither a regular file nor a folder;
    else the names of its folders.

    No list of names: for a folder git and libgit2 read files from (blocking, following
    links), whatever they open there tomorrow is covered too. A link is taken only to a
    folder (a shared ``hooks``), and never as an entry named in ``real`` (those gitmem writes in).
    Listed again only when the folder's ``mtime`` or change time moved, or is too recent
    to trust; the listing's entry types come with it, so no entry costs a call of its own.
    Nothing when absent or not a folder (git opens nothing under it); ``unavailable``
    when it cannot be listed.
    """
    try:
        info = os.stat(folder)
        if not stat.S_ISDIR(info.st_mode):
            return ()  # git opens nothing under a file (ENOTDIR, as absent); the folder holding it vets it
        # The change time too: whoever plants an entry can set the mtime back (``touch -d``),
        # but setting it moves the change time, which nobody but the clock's owner sets.
        stamp = (info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
        known = _STAMPS.get(folder)
        if known is not None and known[0] == stamp:
            return known[1]
        # The kernel stamps a folder from a coarse clock (a tick of up to 10 ms): an
        # entry added within the tick of the listing leaves the stamp as it was. So
        # a stamp that recent is not trusted (git's "racy" rule); the next check lists again.
        racy = time.time_ns() - max(info.st_mtime_ns, info.st_ctime_ns) < _RACY_NS
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return ()  # absent (or under a file): nothing there for git to open
    except OSError as exc:  # unreadable: what git would open there is not known to be safe
        raise MemoryStoreError("unavailable", f"cannot list {folder}: {exc.strerror or exc}") from None
    folders = []
    for entry in entries:
        if entry.name in real and entry.is_symlink():
            raise MemoryStoreError(
                "unavailable",
                f"{entry.path} is a link; gitmem writes there, never through a link: make it a folder again",
            )
        if entry.is_file(follow_symlinks=False):
            continue
        if entry.is_dir(follow_symlinks=entry.is_symlink()):
            folders.append(entry.name)
            continue
        if not os.path.lexists(entry.path):
            continue  # renamed or deleted since the listing: a writer's lock file, moved in
        raise MemoryStoreError(
            "unavailable",
            f"{entry.path} is not a regular file (a link, FIFO or socket), which git would block or follow on: "
            "remove it",
        )
    found = tuple(folders)
    if racy:
        _STAMPS.pop(folder, None)
        return found
    if len(_STAMPS) >= 4096:
        _STAMPS.clear()
    _STAMPS[folder] = (stamp, found)
    return found


def check_packs_of(git_dir: str, *more: str) -> None:
    """:func:`check_pack_folder` for the repository at ``git_dir`` and the object folders it borrows from.

    git and libgit2 list the packs of every folder in ``objects/info/alternates``
    (and of theirs) as well as their own; ``more`` are further object folders
    the caller hands git (``GIT_OBJECT_DIRECTORY``, ``GIT_ALTERNATE_OBJECT_DIRECTORIES``).
    """
    for objects in (os.path.join(git_dir, "objects"), *more):
        for folder in object_dirs(objects):
            check_pack_folder(os.path.join(folder, "pack"))


def check_refs_of(git_dir: str) -> None:
    """``unavailable`` naming the first ref file of ``git_dir``, or of a repository it borrows objects from,
    that is not a regular file of a ref's size, and a bad ``packed-refs`` there.

    A git process reads every ref of its repository and (to tell the other side what
    it has) of each repository whose objects it borrows: a pull's fetch into a
    quarantine reads all of the mount's refs, blocking and following links, so a
    FIFO planted as a ref would hang it for good. Run before a git process starts,
    with :func:`check_packs_of`.
    """
    for objects in object_dirs(os.path.join(git_dir, "objects")):
        repo = os.path.dirname(objects)
        if os.path.basename(objects) != "objects" or not os.path.isdir(os.path.join(repo, "refs")):
            continue
        check_control_file(os.path.join(repo, "packed-refs"), PACKED_REFS_LIMIT)
        check_repository_folder(repo)  # HEAD, shallow, info/grafts, info/attributes: read blocking too
        pending = [os.path.join(repo, "refs")]
        while pending:
            try:
                entries = list(os.scandir(pending.pop()))
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise MemoryStoreError("unavailable", f"cannot list the refs of {repo}: {exc}") from None
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                    continue
                try:
                    info = entry.stat(follow_symlinks=False)
                except FileNotFoundError:  # renamed or deleted since the listing: a writer's ref lock, moved in
                    continue
                if not stat.S_ISREG(info.st_mode) or info.st_size > LOOSE_REF_LIMIT:
                    raise MemoryStoreError(
                        "unavailable",
                        f"{entry.path} is not a ref (a link, FIFO or large file), which git would block or follow on: "
                        "remove it",
                    )


_MAX_ALTERNATE_DEPTH: Final = 5  # as git and libgit2


def object_dirs(objects: str) -> list[str]:
    """``objects`` and the object folders it borrows from (``info/alternates``), in git's order."""
    found: list[str] = []

    def visit(folder: str, depth: int) -> None:
        folder = os.path.normpath(folder)
        if folder in found or depth > _MAX_ALTERNATE_DEPTH:
            return
        found.append(folder)
        for line in read_alternates(folder):  # a control file: a link or FIFO there is refused, not skipped
            visit(os.path.join(folder, line), depth + 1)  # join keeps an absolute line as it is

    visit(objects, 0)
    return found

"""The one opener of files under a mount, and the one parser of the JSON they and memory files hold.

Lock records, lists, recall snapshots, derived caches, refs read by hand,
SQLite side tables, session and binding records: a mount's folder may be
shared, synced or tampered with, so none of it is trusted. Every read here
follows no symbolic link (a planted link must not make gitmem read or write
outside the mount), opens nothing but a regular file without blocking (a FIFO
planted in place of a cache must not hang a call), reads at most a stated
number of bytes (a sparse 6 GiB file is refused, not loaded), and parses JSON
with its nesting bounded at :data:`JSON_DEPTH` before the decoder runs.

Memory files (item, node and record files read through a store) are input
from whoever can push to the memory, so every kind parses their JSON with
:func:`parse_json` too: one exception type (``invalid_file``), which each kind
turns into a skip it reports or a clear error, never a ``RecursionError``.

The lenient readers (:func:`read_local`, :func:`load_local_json`) answer
*missing* for a file that breaks a rule: their callers keep disposable derived
state and rebuild it. The strict one (:func:`read_local_strict`) raises
:class:`RefusedFile` naming the file, for state that must not silently start
over. Files gitmem creates are opened by :func:`open_private`, SQLite databases
by :func:`connect_local_sqlite`.
``tests/test_one_opener.py`` fails when code anywhere else in gitmem opens,
``json.load``s or ``sqlite3.connect``s a file.
"""

from __future__ import annotations

import errno
import os
import re
import stat

from gitmem.errors import MemoryStoreError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from typing import Any, Final

MB = 1 << 20


def open_local(path: str | os.PathLike[str], *, follow: bool = False, dir_fd: int | None = None) -> int:
    """A read descriptor for the regular file at ``path``: never blocking, no link followed unless ``follow``.

    ``OSError`` otherwise (``FileNotFoundError`` when there is nothing; ``ELOOP``
    for a link; ``EINVAL`` for a FIFO, socket, device or folder), so a caller
    can tell a missing file from a planted one. ``dir_fd``: ``path`` is a name in
    that folder (:func:`open_folder`), reached without resolving any path to it.
    """
    return open_local_stat(path, follow=follow, dir_fd=dir_fd)[0]


def open_local_stat(
    path: str | os.PathLike[str], *, follow: bool = False, dir_fd: int | None = None
) -> tuple[int, os.stat_result]:
    """:func:`open_local`, with the ``fstat`` it checked: the stamp of exactly the file the descriptor reads."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW), dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, f"{os.fspath(path)} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def open_regular(path: str | os.PathLike[str]) -> int | None:
    """:func:`open_local`, or ``None`` for anything it refuses."""
    try:
        return open_local(path)
    except OSError:
        return None


def read_local(path: str | os.PathLike[str], limit: int, *, dir_fd: int | None = None) -> bytes | None:
    """The bytes of the file at ``path`` if it is a regular file of at most ``limit`` bytes; else ``None``."""
    try:
        fd, st = open_local_stat(path, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        return None if st.st_size > limit else _read_all(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_unstamped(path: str, size: int) -> bytes | None:
    """Up to ``size`` bytes of the file at ``path`` in one read: open, read, close, no ``fstat``.

    Never blocking, no link followed, like :func:`open_local`; unlike it, not
    checked to be a regular file, which takes the ``fstat`` and its result (a third
    of a small file's read on cold caches). A folder fails, and a FIFO reads nothing
    unless a writer holds it open. Only for a caller that believes nothing but one
    exact short form (a loose ref: 40 hex digits and a newline, which a planted
    regular file could hold just as well) and reads through :func:`open_local_stat`
    at least every few milliseconds, which refuses anything but a regular file
    (:meth:`gitmem.git.repo.GitRepo.head`). ``None`` when it cannot be read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        return os.read(fd, size)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_local_head(path: str | os.PathLike[str], size: int, *, offset: int = 0) -> bytes | None:
    """At most ``size`` bytes from ``offset`` of the regular file at ``path`` (a prefix, never refused for length).

    ``None`` for anything :func:`open_local` refuses or cannot read: for callers
    that look into a file (an index's header, ids in a cache) without loading all of it.
    """
    fd = open_regular(path)
    if fd is None:
        return None
    try:
        chunks: list[bytes] = []
        got = 0
        while got < size:
            chunk = os.pread(fd, min(MB, size - got), offset + got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_local_text(path: str | os.PathLike[str], limit: int, *, dir_fd: int | None = None) -> str | None:
    """:func:`read_local` decoded as UTF-8 (newlines kept as they are); ``None`` when it is not UTF-8."""
    raw = read_local(path, limit, dir_fd=dir_fd)
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def load_local_json(path: str | os.PathLike[str], limit: int, *, dir_fd: int | None = None) -> Any:
    """The JSON value in the file at ``path``; ``None`` when missing, unusable, not JSON or nested too deep."""
    text = read_local_text(path, limit, dir_fd=dir_fd)
    if text is None:
        return None
    try:
        return parse_json(text)
    except MemoryStoreError:
        return None


# -- the strict forms: a refusal is an error naming the file, not a silent *missing* -------------------


class RefusedFile(MemoryStoreError):
    """A file under a mount that the opener would not read (a link, a FIFO, a device, too large).

    Its code is ``unavailable`` (the memory is fine; a planted or damaged local
    file is in the way) and its message names the file and what is wrong, so the
    kind that met it can report it or skip it. ``path`` and ``reason`` keep both.
    """

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        super().__init__("unavailable", f"{self.path} {reason}; gitmem reads only regular files under a mount")

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.path, self.reason))


def _refusal(path: str | os.PathLike[str], exc: OSError) -> RefusedFile | None:
    if exc.errno == errno.ELOOP:
        return RefusedFile(path, "is a symbolic link")
    if exc.errno == errno.EINVAL:
        return RefusedFile(path, "is not a regular file (a FIFO, socket, device or folder)")
    return None


def read_local_strict(path: str | os.PathLike[str], limit: int) -> bytes | None:
    """The bytes of the regular file at ``path``: ``None`` when there is none, :class:`RefusedFile` otherwise.

    For the callers that must not take a planted file for a missing one (a
    binding record whose loss would let a session resume unbound, a statistics
    log that would start again from zero). Other I/O errors stay ``OSError``.
    """
    try:
        fd = open_local(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _refusal(path, exc) or exc from None
    try:
        if os.fstat(fd).st_size > limit:
            raise RefusedFile(path, f"is larger than {limit} bytes")
        data = _read_all(fd, limit)
        if data is None:
            raise RefusedFile(path, f"is larger than {limit} bytes")
        return data
    finally:
        os.close(fd)


def _read_all(fd: int, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = os.read(fd, min(MB, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return None if size > limit else b"".join(chunks)


# -- JSON with its nesting bounded ---------------------------------------------------------------

#: How deep JSON read from under a mount may nest (objects and arrays). Python's
#: decoder recurses once per level and only stops near the interpreter's
#: recursion limit (~1,000), after a lot of work and with a ``RecursionError``
#: that no kind expects; every JSON gitmem writes nests a few levels, and a
#: LangGraph item's value at most ``JSON_DEPTH - 1``.
JSON_DEPTH: Final = 100

_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_PAIRS = re.compile(r"\[\]|\{\}")
_OPENS_NESTING = re.compile(r"[ \t\r\n]*[\[{]")  # JSON nests only in an array or object at its top


def json_nesting_within(text: str, depth: int = JSON_DEPTH) -> bool:
    """Whether every bracket of ``text`` (outside strings) is closed within ``depth`` levels.

    A cheap pre-scan in C-speed regular expressions: strings are cut out, every
    character but a bracket dropped, and the innermost ``[]``/``{}`` pairs
    removed once per level; text whose brackets are all gone after ``depth``
    rounds nests at most ``depth`` deep. Unbalanced brackets never empty out, so
    they fail too (such text is not JSON anyway), and the decoder never sees a
    prefix nested deeper than ``depth``: its strings are lexed the same way.
    """
    rest = _NOT_BRACKETS.sub("", _STRINGS.sub("", text))
    if re.search(r"[\[{]{" + str(depth + 1) + "}", rest):
        return False  # the usual way to nest deep, answered without a round per level
    for _ in range(depth):
        if not rest:
            return True
        rest, removed = _PAIRS.subn("", rest)
        if not removed:
            return False
    return not rest


def parse_json(text: str | bytes, *, limit: int | None = None, depth: int = JSON_DEPTH, what: str = "the file") -> Any:
    """The JSON value in ``text`` (a file's content read through a store, or from the mount's folder).

    ``limit`` bounds its size in characters (bytes for ``bytes``), ``depth`` its
    nesting. Anything else - too large, not UTF-8, not JSON, nested too deep, a
    number too long to convert - is ``invalid_file`` naming ``what``, so every
    kind meets one exception type and can skip or report the file.
    """
    import json  # only callers that parse JSON pay for it (the quick `ls` path imports this module)

    if limit is not None and len(text) > limit:
        raise MemoryStoreError("invalid_file", f"{what} is {len(text)} long; at most {limit} is read")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise MemoryStoreError("invalid_file", f"{what} is not UTF-8 text") from None
    if _OPENS_NESTING.match(text) and not json_nesting_within(text, depth):  # else nothing can nest: no scan
        raise MemoryStoreError("invalid_file", f"{what} is not JSON nested at most {depth} levels deep")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: never past the scan, kept as a last guard
        raise MemoryStoreError("invalid_file", f"{what} is not JSON: {str(exc)[:200]}") from None


# -- files gitmem creates or appends to under a mount ---------------------------------------------

FILE_MODE: Final = 0o600


def open_private(path: str | os.PathLike[str], flags: int, mode: int = FILE_MODE, *, dir_fd: int | None = None) -> int:
    """``os.open`` creating the file ``mode`` (``0600`` unless told; the umask can only narrow it); close-on-exec.

    Files under a mount are input from whoever can write its folder, so no link
    is followed (a planted link must not make gitmem write outside the mount),
    nothing but a regular file is opened (a FIFO must not block, a device is
    refused: ``O_NONBLOCK``), and a file with a second name is refused before
    anything is written through it. Each is ``unavailable`` naming the file.
    With ``O_CREAT | O_EXCL`` the call made the file (anything already there,
    a link included, fails it), so there is nothing to check (two syscalls fewer
    for each pack a write leaves). ``O_TRUNC`` cuts the file only once it passed
    the checks: the open itself would cut another name's file first. ``dir_fd``: ``path``
    is a name in that folder (:func:`local_folder_fd`), reached without resolving any path to it.
    """
    created = flags & (os.O_CREAT | os.O_EXCL) == os.O_CREAT | os.O_EXCL
    truncate = bool(flags & os.O_TRUNC) and not created
    try:
        fd = os.open(
            path,
            flags & ~(os.O_TRUNC if truncate else 0) | os.O_CLOEXEC | os.O_NOFOLLOW | (0 if created else os.O_NONBLOCK),
            mode,
            dir_fd=dir_fd,
        )
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise MemoryStoreError(
                "unavailable", f"{os.fspath(path)} is a symbolic link; gitmem does not follow it"
            ) from None
        raise
    if created:
        return fd
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise MemoryStoreError("unavailable", f"{os.fspath(path)} is not a regular file; remove it")
        if info.st_nlink > 1 and flags & (os.O_WRONLY | os.O_RDWR):
            raise MemoryStoreError("unavailable", f"{os.fspath(path)} has another name (a hard link); remove it")
        if truncate:
            os.ftruncate(fd, 0)
        if flags & os.O_NONBLOCK == 0:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_private(path: str | os.PathLike[str], text: str) -> None:
    """Create or replace ``path`` with ``text``, created ``0600``."""
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


def replace_file(
    path: str | os.PathLike[str],
    data: str | bytes,
    *,
    fsync: bool = False,
    once: bool = False,
    keep: bool = False,
    mode: int | None = None,
    dir_fd: int | None = None,
) -> bool:
    """Put ``data`` at ``path`` at once: a reader sees the old file or the new, never half.

    ``data`` goes to a fresh ``0600`` file beside ``path`` (made by :func:`open_private`),
    synced when ``fsync`` says, then renamed over ``path`` (``rename`` replaces a link
    there itself, never its target) or, ``once``, linked in only where nothing is
    (``False`` when something was). ``keep`` gives it the owner, group and mode of the
    regular file it replaces, ``mode`` that mode. On any failure the fresh file is gone and ``path`` is as it was.
    ``dir_fd``: ``path`` is a name in that folder, and so is every file made, renamed or linked.
    """
    target = os.fspath(path)
    folder, name = os.path.split(target)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, dir_fd=dir_fd)
    moved = False
    try:
        with os.fdopen(fd, "wb") as out:
            if keep:
                _keep_owner_and_mode(fd, target, dir_fd)
            if mode is not None:
                os.fchmod(fd, mode)
            out.write(data.encode("utf-8") if isinstance(data, str) else data)
            if fsync:
                out.flush()
                os.fsync(out.fileno())
        if once:
            os.link(tmp, target, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        else:
            os.replace(tmp, target, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            moved = True
        return True
    except FileExistsError:
        if once:
            return False
        raise
    finally:
        if not moved:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass


def replace_private(path: str | os.PathLike[str], text: str) -> None:
    """:func:`replace_file` synced, keeping the replaced file's owner and mode, and its folder synced too.

    So the rename survives a crash, and root's edit of a group-readable file leaves it
    readable by the server that reads it. For a control file an admin names (a token file):
    its folder is theirs and may be reached through a link; the file itself never is one.
    """
    replace_file(path, text, fsync=True, keep=True)
    fsync_folder(os.path.dirname(os.fspath(path)) or ".", follow=True)


def fsync_folder(folder: str, *, follow: bool = False) -> None:
    """Make the names just created or renamed in ``folder`` durable (the files' own data needs its own fsync)."""
    dir_fd = open_folder(folder, follow=follow)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _keep_owner_and_mode(fd: int, target: str, dir_fd: int | None = None) -> None:
    """Give the file ``fd`` the owner, group and mode of the regular file at ``target`` (none there: as it is).

    ``fchown`` is refused to a caller who is not root (or not in the group): the
    owner, then the group alone, is tried, and what is refused is left as it is.
    """
    try:
        old = os.stat(target, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(old.st_mode):
        return
    for uid in (old.st_uid, -1):
        try:
            os.fchown(fd, uid, old.st_gid)
            break
        except PermissionError:
            continue
    os.fchmod(fd, stat.S_IMODE(old.st_mode))  # after fchown, which may clear set-id bits


def open_folder(path: str | os.PathLike[str], *, follow: bool = False, dir_fd: int | None = None) -> int:
    """A descriptor of the folder at ``path`` (for ``fsync``, ``dir_fd``, ``scandir`` or ``flock``); ``OSError`` else.

    No link is followed unless ``follow``: a folder the user named (a token file's) may be one.
    ``dir_fd``: ``path`` is a name in that folder, reached without resolving any path to it.
    """
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW), dir_fd=dir_fd)


# -- SQLite databases under a mount ---------------------------------------------------------------

_SQLITE_COMPANIONS: Final = ("", "-journal", "-wal", "-shm")


def _check_no_links(path: str, within: str | None) -> None:
    """Refuse a link or special file at ``path`` (and its SQLite companions), or a linked folder up to ``within``."""
    folder = os.path.dirname(os.path.abspath(path))
    stop = os.path.abspath(within) if within is not None else folder
    if os.path.commonpath([folder, stop]) != stop:
        raise RefusedFile(path, f"is not inside {stop}")
    while True:
        try:
            info = os.lstat(folder)
        except FileNotFoundError:
            info = None
        if info is not None and not stat.S_ISDIR(info.st_mode):
            raise RefusedFile(path, f"has {folder} on its way, which is a link or not a folder")
        if folder == stop:
            break
        folder = os.path.dirname(folder)
    for suffix in _SQLITE_COMPANIONS:
        try:
            info = os.lstat(path + suffix)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode):
            raise RefusedFile(path + suffix, "is a symbolic link")
        if not stat.S_ISREG(info.st_mode):
            raise RefusedFile(path + suffix, "is not a regular file (a FIFO, socket, device or folder)")
        if info.st_nlink > 1:
            raise RefusedFile(path + suffix, "has another name (a hard link)")


def connect_local_sqlite(
    path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None, wal: bool = False, **options: Any
) -> sqlite3.Connection:
    """``sqlite3.connect`` for a database file under a mount, refusing what SQLite would follow.

    SQLite opens its file, journal and WAL by name and follows links: a planted
    ``vectors.sqlite3`` link made a refresh write its tables into a database
    outside the mount. So the file and its ``-journal``, ``-wal`` and ``-shm``
    companions must be regular files with one name (or absent), and no folder
    from ``root`` (default: the file's own folder) down to it a link (with
    ``root``, missing folders are made as :func:`local_folder` makes them); the file
    is opened at once and checked again to be the one examined. ``options`` go
    to ``sqlite3.connect``. ``wal``: the database is switched to write-ahead
    logging (see :func:`_write_ahead`). A refusal is :class:`RefusedFile`
    (``unavailable``); SQLite's own errors stay ``sqlite3.Error``.
    """
    import sqlite3

    name = os.fspath(path)
    within = None if root is None else os.fspath(root)
    # SQLite opens the file and its companions by name: a check, then an open by path, is all there is
    # (a folder swapped for a link between the two is followed by SQLite; it offers no descriptor to open through).
    if within is not None:
        try:
            local_folder(os.path.dirname(os.path.abspath(name)), root=within)
        except OSError as exc:
            raise RefusedFile(name, f"cannot have its folder: {exc.strerror or exc}") from None
    _check_no_links(name, within)
    db: sqlite3.Connection = sqlite3.connect(name, **options)
    try:
        db.execute("PRAGMA schema_version").fetchone()  # opens (or creates) the file now
        _check_no_links(name, within)
        if wal:
            _write_ahead(db, float(options.get("timeout", 5.0)))
    except BaseException:
        db.close()
        raise
    return db


def _write_ahead(db: sqlite3.Connection, patience: float) -> None:
    """``PRAGMA journal_mode=WAL``, tried again for up to ``patience`` seconds while SQLite says busy.

    Connections switching one new database at once meet SQLite's deadlock
    avoidance, which answers one of them "database is locked" at once instead of
    calling its busy handler (threads of one agent opening a fresh ledger
    together saw it); once the file is in WAL mode the switch is a no-op.
    """
    import sqlite3
    import time

    deadline = time.monotonic() + patience
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL").fetchone()
            return
        except sqlite3.OperationalError as exc:
            if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() >= deadline:
                raise
        time.sleep(0.005)


def local_folder_fd(path: str | os.PathLike[str], *, root: str | os.PathLike[str]) -> int:
    """A descriptor of folder ``path`` below ``root``, its missing folders created ``0700``; ``OSError`` when one is a link.

    Every folder from ``root`` down must be a real folder: a link planted as
    ``gitmem/derived`` would otherwise put whatever is written "in the mount"
    somewhere else. Each is made and entered by its name in the descriptor of the one
    above (no link followed), so the descriptor is the folder that was checked: a
    writer that opens its file through it (``dir_fd=``) writes there even if the folder
    is renamed away and a link put in its place meanwhile, which a check of the path
    followed by an open of the path would follow. ``root`` itself may be reached
    through links (the user chose it). The caller closes the descriptor.
    """
    path, top = os.path.abspath(path), os.path.abspath(root)
    rel = os.path.relpath(path, top)
    if rel != os.curdir and rel.split(os.sep)[0] == os.pardir:
        raise OSError(errno.EINVAL, f"{path} is not inside {top}")
    fd = open_folder(top, follow=True)
    if rel == os.curdir:
        return fd
    here = top
    try:
        for part in rel.split(os.sep):
            here = os.path.join(here, part)
            try:
                os.mkdir(part, 0o700, dir_fd=fd)
                os.chmod(part, 0o700, dir_fd=fd)  # as make_private_dir: an odd umask must not take the owner's rights
            except FileExistsError:
                pass
            try:
                inner = open_folder(part, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise OSError(errno.ELOOP, f"{here} is a link or not a folder; gitmem does not follow it") from None
                raise
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def local_folder(path: str | os.PathLike[str], *, root: str | os.PathLike[str]) -> str:
    """Folder ``path`` below ``root``, made and checked as :func:`local_folder_fd` does; its path, for a library.

    For code that cannot open through a descriptor: SQLite and LanceDB open their files by
    name. This is a check followed by an open by path, which a folder swapped for a link
    in between defeats; there is no more to be had from outside the library. gitmem's own
    writers use :func:`local_folder_fd` and open through the descriptor instead.
    """
    os.close(local_folder_fd(path, root=root))
    return os.path.abspath(path)


def read_control(
    path: str | os.PathLike[str],
    limit: int,
    *,
    follow: bool = False,
    name: str | None = None,
    dir_fd: int | None = None,
) -> bytes | None:
    """The bytes of a control file (a token file, a config), or ``None`` when nothing is at ``path``.

    Control files say who may do what, so unlike the derived files above a bad
    one is never read as missing: it raises ``MemoryStoreError`` saying why (a
    link, a FIFO or device, more than ``limit`` bytes, unreadable), and the
    caller grants nothing until it is fixed. Opened as :func:`open_local` opens
    (no link followed unless ``follow``, never blocking), read bounded; messages
    call the file ``name`` (default: its path). ``dir_fd``: ``path`` is a name in that folder.
    """
    from gitmem.errors import MemoryStoreError

    shown = name or os.fspath(path)
    try:
        fd = open_local(path, follow=follow, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise MemoryStoreError(
                "invalid_file", f"{shown} is a symbolic link: control files are read without following links"
            ) from None
        if exc.errno == errno.EINVAL:
            raise MemoryStoreError(
                "invalid_file", f"{shown} is not a regular file ({_kind(path, follow, dir_fd)})"
            ) from None
        raise MemoryStoreError("unavailable", f"cannot read {shown}: {exc.strerror or exc}") from None
    try:
        if os.fstat(fd).st_size > limit:
            raise MemoryStoreError("too_large", f"{shown} is larger than {limit} bytes, more than a control file holds")
        data = _read_all(fd, limit)
    except OSError as exc:
        raise MemoryStoreError("unavailable", f"cannot read {shown}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if data is None:
        raise MemoryStoreError("too_large", f"{shown} grew past {limit} bytes while it was read")
    return data


def _kind(path: str | os.PathLike[str], follow: bool, dir_fd: int | None = None) -> str:
    """What stands at ``path`` instead of a regular file, in words (for a refusal)."""
    try:
        mode = os.stat(path, dir_fd=dir_fd, follow_symlinks=follow).st_mode
    except OSError:
        return "gone"
    for test, word in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a folder"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"), (stat.S_ISLNK, "a link")):  # fmt: skip
        if test(mode):
            return word
    return "not a plain file"

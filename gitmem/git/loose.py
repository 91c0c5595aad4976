"""Loose objects read by gitmem itself, so a damaged one is an error instead of a hang.

A loose object is one zlib stream (``<type> <size>\\0<body>``) in
``objects/xx/yyyy…``. libgit2 1.9's loose reader loops forever, holding the GIL
(so the whole process stops, not just one thread), when that stream ends before
its last deflate block: a file cut short by a crash or a full disk (libgit2 does
not fsync objects by default), at any length from two bytes to the last block.
``git cat-file`` fails at once on the same file. Other damage (an empty file,
garbage, a wrong header, a flipped byte) already fails cleanly.

:func:`open_repository` opens a repository whose object database asks
:class:`LooseGuard` first: it reads a loose object with Python's ``zlib``, checks
the stream and header, and hands the object to libgit2 (which still checks its
hash), or raises :class:`CorruptObject` naming the object. Objects that are not
loose (packed, or missing) are passed on to libgit2's own backends untouched
after one ``access()`` call. Each object is checked once per process; later reads
of it go straight to libgit2 (see ``_checked`` for why that is enough).
Writes go to an ordinary object database on the same folder, so libgit2 still
writes every object (and fsyncs it when durable writes are on).

Only reads through a guarded repository are protected: every pygit2 handle,
pack reader (:func:`pack_backend`) and plain object database (:func:`object_db`)
in gitmem is made here, after the pack folder is checked
(``tests/test_one_opener.py`` holds every other module to that). The git CLI (fsck, gc, index-pack) fails on such objects
by itself.
"""

from __future__ import annotations

import os
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.git.control import check_control_files, check_pack_folder, object_dirs
from gitmem.localfile import open_local

_TYPES = {b"commit": 1, b"tree": 2, b"blob": 3, b"tag": 4}
_ALTERNATES_LIMIT = 1 << 20  # an alternates file lists a few folders
_MAX_HEADER = 32  # "commit 18446744073709551615\0" fits
_MAX_CHECKED = 500_000  # ids remembered per set of object folders (~30 MB), then forgotten
_CHECKED: dict[str, set[bytes]] = {}
_WRITE_TRIES = 50  # a folder removed again between each try (a prune loop) still ends


class CorruptObject(MemoryStoreError):
    """A loose object's file is damaged; ``oid`` and ``path`` (``objects/xx/…`` for the repository's own) name it."""

    def __init__(self, oid: str, path: str, reason: str) -> None:
        self.oid = oid
        self.path = path
        self.reason = reason
        super().__init__(
            "unavailable",
            f"the repository is corrupt: object {oid} ({path}) {reason}; run `gitmem fsck` and restore it from a copy",
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.oid, self.path, self.reason))


_seen = threading.local()


def take_corruption() -> MemoryStoreError | None:
    """What the guard last refused in this thread (and forget it), if any: a damaged object, a planted pack.

    pygit2 passes the guard's exception through for plain lookups, but some calls
    (a tree lookup by path) replace it with a ``GitError`` carrying an unrelated
    libgit2 message, and a refused write (libgit2 then asks its own loose
    backend, which succeeds) comes back as a ``SystemError``. Error translation
    asks here what really went wrong.
    """
    found: MemoryStoreError | None = getattr(_seen, "error", None)
    _seen.error = None
    return found


def raise_if_corrupt() -> None:
    """Raise the damaged object the guard refused since the last call, if any (in an ``except`` that would swallow it)."""
    found = take_corruption()
    if found is not None:
        raise found


def parse_loose(raw: bytes) -> tuple[int, bytes]:
    """``(libgit2 type number, body)`` of a loose object's file content; ``ValueError`` saying what is wrong."""
    if not raw:
        raise ValueError("is empty")
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(raw)
    except zlib.error as exc:
        raise ValueError(f"is not a valid zlib stream ({exc})") from None
    if not inflater.eof:
        raise ValueError("is truncated (its zlib stream ends early)")
    if inflater.unused_data:
        raise ValueError("has bytes after its zlib stream")
    nul = data.find(b"\0", 0, _MAX_HEADER)
    if nul < 0:
        raise ValueError("has no object header")
    kind, _, size = data[:nul].partition(b" ")
    if kind not in _TYPES or not size.isdigit() or (len(size) > 1 and size.startswith(b"0")):
        raise ValueError(f"has a bad object header {data[:nul]!r}")
    body = data[nul + 1 :]
    if int(size) != len(body):
        raise ValueError(f"says it holds {int(size)} bytes but holds {len(body)}")
    return _TYPES[kind], body


class LooseGuard(pygit2.OdbBackend):
    """An object-database backend asked before libgit2's own: it serves loose objects after checking them.

    libgit2 calls the ``*_cb`` methods; raising ``KeyError`` means "not mine", and
    libgit2 asks the next backend (packs, then its loose reader, which by then
    only sees objects that are missing). pygit2 passes any other exception
    through to the caller unchanged, so :class:`CorruptObject` reaches gitmem's
    error translation as it is.
    """

    def __init__(self, objects: str, extra: Sequence[str] = ()) -> None:
        super().__init__()
        self._objects = objects
        self._dirs = [f"{d}/" for d in object_dirs(objects)] + [f"{os.path.normpath(d)}/" for d in extra]
        # Objects found sound or not loose, for every guard on the same folders in this
        # process: libgit2 reads those itself from then on. A loose file is written whole
        # (a temporary file renamed into place) and only found cut short after a crash,
        # which a new process sees; so one check per process is enough.
        self._checked = _CHECKED.setdefault("\n".join(self._dirs), set())
        self._writer: pygit2.Odb | None = None
        self._packs: dict[str, pygit2.OdbBackendPack] | None = None

    def check_packs(self) -> None:
        """:func:`check_pack_folder` for every object folder libgit2 lists with this one (its alternates too)."""
        for folder in self._dirs:
            check_pack_folder(folder + "pack")

    def _find(self, hexid: str) -> str | None:
        name = f"{hexid[:2]}/{hexid[2:]}"
        for folder in self._dirs:
            path = folder + name
            if os.access(path, os.F_OK):
                return path
        return None

    def _from_pack(self, oid: pygit2.Oid, folder: str) -> tuple[int, bytes] | None:
        """The object from a pack in ``folder`` that holds it too (git reads packs before loose files)."""
        if self._packs is None:
            self._packs = {d: pack for d in self._dirs if (pack := pack_backend(d)) is not None}
        pack = self._packs.get(folder)
        if pack is None or not pack.exists(oid):
            return None
        kind, data = pack.read(oid)
        return int(kind), bytes(data)

    def _read(self, oid: pygit2.Oid) -> tuple[int, bytes]:
        raw_id = oid.raw
        if raw_id in self._checked:
            raise KeyError(raw_id)
        hexid = str(oid)
        path = self._find(hexid)
        if path is None:
            self._remember(raw_id)
            raise KeyError(hexid)
        shown = f"objects/{hexid[:2]}/{hexid[2:]}" if path.startswith(self._dirs[0]) else path
        try:
            raw = _read_object_file(path)
        except FileNotFoundError:  # pruned or packed meanwhile
            raise KeyError(hexid) from None
        except OSError as exc:
            _seen.error = CorruptObject(hexid, shown, f"cannot be read ({exc.strerror})")
            raise _seen.error from None
        try:
            parsed = parse_loose(raw)
        except ValueError as exc:
            packed = self._from_pack(oid, path[: -len(hexid) - 1])
            if packed is not None and _drop_redundant(path):
                return packed
            _seen.error = CorruptObject(hexid, shown, str(exc))
            raise _seen.error from None
        self._remember(raw_id)
        return parsed

    def _remember(self, raw_id: bytes) -> None:
        if len(self._checked) >= _MAX_CHECKED:
            self._checked.clear()
        self._checked.add(raw_id)

    # -- the callbacks libgit2 makes through pygit2 --

    def read_cb(self, oid: pygit2.Oid) -> tuple[int, bytes]:
        return self._read(oid)

    def read_header_cb(self, oid: pygit2.Oid) -> tuple[int, int]:
        kind, body = self._read(oid)
        return kind, len(body)

    def read_prefix_cb(self, prefix: str) -> tuple[int, bytes, pygit2.Oid]:
        """Check every loose object the prefix matches, then let libgit2 resolve it (ambiguity and all).

        pygit2 looks a hex id up as a prefix even when it is whole: a whole id
        matches one name at most, so that one file is checked without listing
        its folder (a listing per read was most of a cold rebuild's cost).
        """
        if len(prefix) == 40:
            try:
                self._read(pygit2.Oid(hex=prefix))
            except (KeyError, ValueError):
                pass
            raise KeyError(prefix)
        if len(prefix) >= 2:
            for folder in self._dirs:
                try:
                    names = os.listdir(folder + prefix[:2])
                except OSError:
                    continue
                for name in names:
                    if len(name) == 38 and name.startswith(prefix[2:]):
                        try:
                            self._read(pygit2.Oid(hex=prefix[:2] + name))
                        except (KeyError, ValueError):
                            continue
        raise KeyError(prefix)

    def exists_cb(self, oid: pygit2.Oid) -> bool:
        return False  # existence never inflates anything: libgit2's backends answer it

    def exists_prefix_cb(self, prefix: str) -> pygit2.Oid:
        raise KeyError(prefix)

    def refresh_cb(self) -> None:
        """libgit2 is about to list the pack folders again (an object was in none of the packs it knew).

        Asked before libgit2's pack backend lists: a planted entry stops the listing
        (``KeyError`` ends libgit2's refresh; the read finds nothing, and the next
        handle opened names the entry, see :func:`gitmem.git.control.check_pack_folder`).
        """
        self._packs = None
        try:
            self.check_packs()
        except MemoryStoreError:
            raise KeyError("objects/pack holds an entry that is not a regular file") from None

    def write_cb(self, oid: pygit2.Oid, data: bytes, kind: int) -> None:
        """libgit2 writes to the first backend that accepts: hand the object to an ordinary one.

        libgit2 writes a temporary file, creates the ``objects/xx`` folder, then
        renames; a ``git prune-packed`` or ``gc`` running meanwhile (a repack by
        hand, outside gitmem's lock) removes that folder while it is still empty,
        and the rename fails. git itself tries again in that case; so does this.

        The writer is an object database of its own, without this guard: it
        lists the pack folder when it is made and again before every write of
        an object in none of the packs it knows (libgit2 looks for a copy to
        freshen first). So the folder is checked before each write (one
        ``stat`` while it has not changed); a planted entry answers
        ``unavailable`` instead of blocking the write. libgit2 then hands the
        object to its own loose backend (which lists nothing); pygit2 reports
        the call as a ``SystemError``, which error translation turns back into
        this refusal (:func:`take_corruption`).
        """
        try:
            self.check_packs()
        except MemoryStoreError as exc:
            _seen.error = exc
            raise
        if self._writer is None:
            self._writer = object_db(self._objects)
        for attempt in range(_WRITE_TRIES):
            try:
                self._writer.write(kind, data)
                return
            except OSError as exc:
                if attempt == _WRITE_TRIES - 1 or "rename" not in str(exc):
                    raise


def _read_object_file(path: str) -> bytes:
    """A loose object file's bytes; ``OSError`` for anything but a regular file (a planted FIFO never blocks)."""
    with os.fdopen(open_local(path), "rb") as fh:
        return fh.read()


def _drop_redundant(path: str) -> bool:
    """Delete a damaged loose copy of an object a pack holds intact, as ``git prune-packed`` would.

    It must go: libgit2 reads loose copies during prefix lookups even when a
    pack has the object, and would hang on this one. Returns whether it is gone.
    """
    try:
        os.unlink(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _made_on_use(kind: Callable[[pygit2.Repository], object]) -> property:
    def made(repo: pygit2.Repository) -> object:
        return kind(repo)

    def dropped(repo: pygit2.Repository, value: object) -> None:
        pass

    return property(made, dropped)


class Handle(pygit2.Repository):
    """pygit2's ``Repository`` without its reference cycle, so a dropped handle is freed at once.

    pygit2 gives every handle four collections (``branches``, ``references``,
    ``remotes``, ``submodules``) that each hold the handle: a cycle only Python's
    collector breaks, seconds later. Until then the handle keeps every pack it
    read open and mapped, folded and deleted ones included, so their disk space
    is not freed. Here each collection is
    made when asked for and holds the handle only as long as the caller keeps it.
    As a context manager it frees the handle (its packs closed) on the way out.
    """

    branches = _made_on_use(pygit2.branches.Branches)
    references = _made_on_use(pygit2.references.References)
    remotes = _made_on_use(pygit2.remotes.RemoteCollection)
    submodules = _made_on_use(pygit2.submodules.SubmoduleCollection)

    def __enter__(self) -> Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.free()


def pack_backend(objects: str) -> pygit2.OdbBackendPack | None:
    """libgit2's reader of the packs in object folder ``objects``; ``None`` when it has no pack folder.

    The reader lists ``objects/pack`` as it is made and opens each index it
    found on first use (never lists it again), so the folder is checked first.
    """
    if not os.path.isdir(os.path.join(objects, "pack")):
        return None
    check_pack_folder(os.path.join(objects, "pack"))
    return pygit2.OdbBackendPack(objects)


def object_db(objects: str) -> pygit2.Odb:
    """libgit2's plain object database over ``objects`` (packs, loose files, alternates), made after the check.

    Without :class:`LooseGuard`: for writing, and for listing a push's
    quarantine. It lists the pack folder again when an object is in none of
    its packs; its users check before each such call.
    """
    for folder in object_dirs(objects):  # it loads the alternates' packs too
        check_pack_folder(os.path.join(folder, "pack"))
    return pygit2.Odb(os.path.abspath(objects))


def open_repository(path: str, *, extra_objects: Sequence[str] = ()) -> Handle:
    """A pygit2 handle on the repository at ``path`` whose loose-object reads go through :class:`LooseGuard`.

    ``extra_objects`` are object folders added as alternates (a push's quarantine).
    """
    check_control_files(path)  # before libgit2 reads them, blocking and following links
    repo = Handle(path, pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
    guard = LooseGuard(os.path.join(repo.path, "objects"), extra_objects)
    guard.check_packs()  # libgit2 lists these pack folders (alternates too) as the object database loads
    odb = repo.odb
    for folder in extra_objects:
        odb.add_disk_alternate(os.path.abspath(folder))
    # Highest priority: asked before libgit2's pack (2) and loose (1) backends.
    odb.add_backend(guard, 1000)
    return repo


def damaged_loose_objects(objects: str) -> Iterator[CorruptObject]:
    """Every loose object under ``objects`` whose file cannot be read as one (for fsck)."""
    try:
        fans = sorted(os.listdir(objects))
    except OSError:
        return
    for fan in fans:
        if len(fan) != 2 or not all(c in "0123456789abcdef" for c in fan):
            continue
        folder = os.path.join(objects, fan)
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if len(name) != 38 or not all(c in "0123456789abcdef" for c in name):
                continue  # a temporary file of a writer in flight
            path = os.path.join(folder, name)
            shown = f"objects/{fan}/{name}"
            try:
                parse_loose(_read_object_file(path))
            except FileNotFoundError:
                continue
            except OSError as exc:
                yield CorruptObject(fan + name, shown, f"cannot be read ({exc.strerror})")
            except ValueError as exc:
                yield CorruptObject(fan + name, shown, str(exc))

"""A read-only look at a mount's ``main`` without libgit2: what ``gitmem ls`` and ``cat`` need.

Importing pygit2 costs a CLI call more CPU than everything else ``ls`` does
(docs/benchmarks.md, "CLI start-up"), and a read needs little of it: one ref,
a commit's tree line, tree entries and blobs. :class:`Peek` reads those with
``zlib`` and SHA-1 from the files git keeps them in:

- refs: the loose ref file (following ``ref:`` links), else ``packed-refs``;
- objects: loose files, and packs through their version-2 ``.idx``, with both
  kinds of delta (``OFS_DELTA`` and ``REF_DELTA``) applied here;
- the ``gitmem.*`` settings from the same config files libgit2 reads
  (system, XDG, global, the repository's own; the last one wins).

Every object read is checked against its id (SHA-1 of header and body), as
libgit2 does on every read, so a damaged object is never shown as content.

Anything this reader does not handle raises :class:`CannotPeek`, and the caller
opens the full store instead, which then answers exactly as it always did: a
missing or damaged object (a corrupt loose file is reported by the store's
guard, naming it), objects borrowed through alternates, a repository format
extension (sha256, reftable), an old ``.idx`` version, a config file with
includes, quoting or continuation lines, an unusual tree entry mode, a name
that is not UTF-8. Being wrong is never an option; being slow sometimes is.

Races with writers need nothing more: a ref is replaced by rename, objects never
change, and a pack removed by compaction after it was listed is a
``FileNotFoundError``, hence :class:`CannotPeek` and the full store.
"""

from __future__ import annotations

import mmap
import os
import zlib
from collections.abc import Iterator, Sequence

from gitmem.errors import MemoryStoreError
from gitmem.localfile import open_local, read_control
from gitmem.model import is_object_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hashlib import sha1 as sha1
    from typing import BinaryIO, Final
else:
    try:  # CPython's own SHA-1 (what hashlib falls back to): loading OpenSSL for hashlib costs
        from _sha1 import sha1  # a CLI call more than hashing every object an `ls` reads
    except ImportError:  # another Python
        from hashlib import sha1

_MAIN: Final = "refs/heads/main"
_TYPES: Final = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}
_NUMBERS: Final = {name: number for number, name in _TYPES.items()}
_OFS_DELTA: Final = 6
_REF_DELTA: Final = 7
_MAX_REF_DEPTH: Final = 5  # symbolic ref links followed, as libgit2
_MAX_DELTA_DEPTH: Final = 10_000
_IDX_MAGIC: Final = b"\xfftOc"
#: Objects larger than this (by their header, or as they inflate) are left to libgit2, so a
#: damaged or hostile object that claims or inflates to gigabytes cannot exhaust memory here.
_MAX_OBJECT: Final = 64 << 20
#: ``REF_DELTA`` bases looked up by id, nested; a cycle of them ends here instead of in a RecursionError.
_MAX_REF_NESTING: Final = 64
_CHUNK: Final = 1 << 20  # compressed bytes fed to zlib at a time
_BASE_CACHE: Final = 512  # delta bases kept per reader (a listing reads neighbours of one chain)
_CACHED_BASE_MAX: Final = 1 << 20  # a larger base is inflated again when needed, never kept
_TREE_CACHE: Final = 4096  # parsed trees kept per reader
#: The config sections a read needs (of ``core`` only the format version); the others are skipped unparsed.
_SECTIONS: Final = ("core", "extensions", "gitmem")
#: A config value this reader does not parse (quoted, escaped) where only a push would ask for it.
_UNREAD: Final = "\0"
#: Tree entry modes as libgit2 reports them, by their stored spelling; any other is left to libgit2.
_MODES: Final = {b"40000": "tree", b"100644": "blob", b"100755": "blob", b"120000": "other", b"160000": "other"}


class CannotPeek(Exception):
    """Something this reader leaves to libgit2 (see the module docstring); open the full store."""


class _Pack:
    """One ``.idx``/``.pack`` pair, mapped read-only."""

    def __init__(self, idx_path: str) -> None:
        self.idx = _map(idx_path)
        self.data = _map(idx_path[:-4] + ".pack")
        idx = self.idx
        if idx[:4] != _IDX_MAGIC or int.from_bytes(idx[4:8], "big") != 2:
            raise CannotPeek(f"{idx_path}: not a version-2 pack index")
        if self.data[:4] != b"PACK" or int.from_bytes(self.data[4:8], "big") not in (2, 3):
            raise CannotPeek(f"{idx_path}: not a version 2 or 3 pack")
        self.count = int.from_bytes(idx[8 + 255 * 4 : 8 + 256 * 4], "big")
        self._ids = 8 + 1024
        self._offsets = self._ids + self.count * 24
        self._large = self._offsets + self.count * 4

    def find(self, oid: bytes) -> int | None:
        """The offset of ``oid`` in the pack, or ``None``: a binary search in its fanout slot."""
        idx = self.idx
        first = oid[0]
        lo = int.from_bytes(idx[8 + (first - 1) * 4 : 8 + first * 4], "big") if first else 0
        hi = int.from_bytes(idx[8 + first * 4 : 12 + first * 4], "big")
        base = self._ids
        while lo < hi:
            mid = (lo + hi) // 2
            at = base + mid * 20
            found = idx[at : at + 20]
            if found < oid:
                lo = mid + 1
            elif found > oid:
                hi = mid
            else:
                at = self._offsets + mid * 4
                offset = int.from_bytes(idx[at : at + 4], "big")
                if offset & 0x80000000:
                    at = self._large + (offset & 0x7FFFFFFF) * 8
                    offset = int.from_bytes(idx[at : at + 8], "big")
                return offset
        return None


_MAX_CONFIG = 1 << 20
#: A larger ``packed-refs`` is not read here (a mount's holds a few refs; the store reads any).
_MAX_PACKED_REFS = 16 << 20
_NOT_IN_REFS = bytes(range(33)) + b"\x7f"  # control bytes and space: no ref name git writes holds one


def _open(path: str, *, follow: bool = False) -> BinaryIO:
    """``path`` opened for reading, as a regular file only (a FIFO never blocks); no link followed unless ``follow``.

    Everything under a mount's folder is input: a FIFO planted as a ref or an
    object must not hang a quick ``ls``, and a link must not lead outside.
    ``OSError`` otherwise, which every caller turns into :class:`CannotPeek`.
    """
    return os.fdopen(open_local(path, follow=follow), "rb")


def _map(path: str) -> mmap.mmap:
    try:
        with _open(path) as fh:
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:  # gone (compacted), unreadable, or empty
        raise CannotPeek(f"{path}: {exc}") from None


def _inflate(data: mmap.mmap, at: int, size: int) -> bytes:
    """``size`` bytes inflated from the zlib stream starting at ``at``; never more than ``size + 1`` held."""
    if size > _MAX_OBJECT:
        raise CannotPeek("a packed object is too large to peek at")
    inflater = zlib.decompressobj()
    out = b""
    chunk = min(max(size + 64, 4096), _CHUNK)
    while not inflater.eof:
        piece = inflater.unconsumed_tail
        if not piece:
            piece = data[at : at + chunk]
            if not piece:
                raise CannotPeek("a packed object's stream ends early")
            at += len(piece)
        try:
            out += inflater.decompress(piece, size + 1 - len(out))
        except zlib.error as exc:
            raise CannotPeek(f"a packed object is damaged: {exc}") from None
        if len(out) > size:
            raise CannotPeek("a packed object inflates past the size in its header")
    if len(out) != size:
        raise CannotPeek("a packed object's size does not match its header")
    return out


def _delta_size(delta: bytes, at: int) -> tuple[int, int]:
    size = shift = 0
    while True:
        byte = delta[at]
        at += 1
        size |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return size, at


def apply_delta(base: bytes, delta: bytes) -> bytes:
    """The object git's delta encoding builds from ``base`` (copy and insert instructions)."""
    try:
        source_size, at = _delta_size(delta, 0)
        target_size, at = _delta_size(delta, at)
        if source_size != len(base):
            raise CannotPeek("a delta does not fit its base")
        if target_size > _MAX_OBJECT:
            raise CannotPeek("a delta builds an object too large to peek at")
        out = bytearray()
        end = len(delta)
        while at < end:
            op = delta[at]
            at += 1
            if op & 0x80:  # copy from the base: offset and size bytes, each present when its bit is set
                offset = size = 0
                for bit in range(4):
                    if op & (1 << bit):
                        offset |= delta[at] << (8 * bit)
                        at += 1
                for bit in range(3):
                    if op & (16 << bit):
                        size |= delta[at] << (8 * bit)
                        at += 1
                size = size or 0x10000
                if offset + size > len(base):
                    raise CannotPeek("a delta copies past the end of its base")
                out += base[offset : offset + size]
            elif op:  # insert the next op bytes
                out += delta[at : at + op]
                at += op
            else:
                raise CannotPeek("a delta holds the reserved instruction 0")
            if len(out) > target_size:
                raise CannotPeek("a delta builds past its stated size")
    except IndexError:
        raise CannotPeek("a delta is cut short") from None
    if len(out) != target_size:
        raise CannotPeek("a delta builds an object of the wrong size")
    return bytes(out)


class Peek:
    """Reads refs, commits, trees and blobs of one bare repository (see the module docstring)."""

    def __init__(self, path: str, *, extra_objects: Sequence[str] = ()) -> None:
        """``extra_objects``: object folders read besides the repository's own (a pull's quarantine)."""
        self.path = os.path.abspath(path)
        self._objects = os.path.join(self.path, "objects")
        self._folders = [self._objects, *(os.path.abspath(folder) for folder in extra_objects)]
        if not os.path.isdir(self._objects):
            raise CannotPeek("no objects folder")
        self._config = _read_config(self.path)
        version = self._config.get("core.repositoryformatversion", "0").strip()
        if version not in ("0", "1") or any(key.startswith("extensions.") for key in self._config):
            raise CannotPeek("a repository format this reader does not know")
        if os.path.exists(os.path.join(self._objects, "info", "alternates")):
            raise CannotPeek("objects borrowed from another repository")
        self._packs: list[_Pack] | None = None
        self._bases: dict[tuple[int, int], tuple[int, bytes]] = {}
        self._trees: dict[str, dict[str, tuple[str, str]]] = {}
        self._last_tree: tuple[str, str] | None = None

    # -- refs and config --

    def config_get(self, key: str) -> str | None:
        """The value of a config key (any case), the last one set winning, as libgit2 answers."""
        return self._config.get(key.lower())

    def head(self) -> str:
        """The commit ``main`` points at."""
        name = _MAIN
        for _ in range(_MAX_REF_DEPTH):
            value = self._ref(name)
            if value.startswith("ref: "):
                name = value[5:].strip()
                if not name.startswith("refs/") or ".." in name or "\\" in name:
                    raise CannotPeek(f"a symbolic ref to {name!r}")
                continue
            if not is_object_id(value):
                raise CannotPeek(f"{name} holds {value!r}")
            return value
        raise CannotPeek("symbolic refs nest too deep")

    def _ref(self, name: str) -> str:
        value = self.ref(name)
        if value is None:
            raise CannotPeek(f"no {name}")
        return value

    def ref(self, name: str) -> str | None:
        """What ref ``name`` holds as stored (an id, or ``ref: NAME``), ``None`` when the mount has no such ref.

        The loose file wins over ``packed-refs``, as in git. :class:`CannotPeek` when
        either cannot be read, so ``None`` always means "absent".
        """
        try:
            with _open(os.path.join(self.path, name)) as fh:
                return fh.read(256).decode("ascii").strip()
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as exc:  # ValueError: not ASCII, or a symbolic ref's name holds a NUL
            raise CannotPeek(f"{name!r}: {exc}") from None
        try:
            packed = read_control(os.path.join(self.path, "packed-refs"), _MAX_PACKED_REFS)
        except MemoryStoreError as exc:
            raise CannotPeek(f"packed-refs: {exc.message}") from None
        found = None
        wanted = name.encode("utf-8", "surrogateescape")
        for line in (packed or b"").split(b"\n"):
            if not line or line.startswith((b"#", b"^")):
                continue  # the header, and the peeled id of the tag above
            oid, _, ref = line.partition(b" ")
            if len(oid) != 40 or not ref.startswith(b"refs/") or len(ref.translate(None, _NOT_IN_REFS)) != len(ref):
                raise CannotPeek(f"packed-refs holds a line git does not write: {line[:80]!r}")
            if ref == wanted:
                if found is not None:  # libgit2 takes the last line, git may take either: the store's to answer
                    raise CannotPeek(f"packed-refs names {name} twice")
                found = oid
        if found is None:
            return None
        try:
            return found.decode("ascii")
        except UnicodeDecodeError:
            raise CannotPeek(f"packed-refs holds {found!r} for {name}") from None

    def remote_url(self, name: str) -> str | None:
        """``remote.NAME.url`` (the remote's name as written, case and all), the last one set winning."""
        url = self._config.get(f"remote.{name}.url")
        if url == _UNREAD:
            raise CannotPeek(f"remote.{name}.url needs git's parser")
        return url

    # -- objects --

    def object(self, oid: str) -> tuple[str, bytes]:
        """``(type, body)`` of object ``oid``, checked against its id."""
        try:
            raw = bytes.fromhex(oid)
        except ValueError:
            raise CannotPeek(f"{oid!r} is not an object id") from None
        if len(raw) != 20:
            raise CannotPeek(f"{oid!r} is not an object id")
        found = self._packed(raw)
        if found is None:
            found = self._loose(oid)
        kind, body = found
        name = _TYPES.get(kind)
        if name is None:
            raise CannotPeek(f"object {oid} has type {kind}")
        check = sha1(b"%s %d\0" % (name, len(body)))
        check.update(body)
        if check.digest() != raw:
            raise CannotPeek(f"object {oid} does not match its id")
        return name.decode(), body

    def has(self, oid: bytes) -> bool:
        """Whether the repository stores object ``oid`` (raw id), packed or loose; nothing is read or checked."""
        if any(pack.find(oid) is not None for pack in self._pack_list()):
            return True
        name = oid.hex()
        return any(os.path.lexists(os.path.join(f, name[:2], name[2:])) for f in self._folders)

    def header(self, oid: str) -> tuple[str, int]:
        """``(type, size)`` of object ``oid`` (read whole and checked, as :meth:`object`)."""
        kind, body = self.object(oid)
        return kind, len(body)

    def _loose(self, oid: str) -> tuple[int, bytes]:
        name = os.path.join(oid[:2], oid[2:])
        where = next((f for f in self._folders[1:] if os.path.lexists(os.path.join(f, name))), self._objects)
        try:
            with _open(os.path.join(where, name)) as fh:
                if os.fstat(fh.fileno()).st_size > _MAX_OBJECT:
                    raise CannotPeek(f"object {oid} is too large to peek at")
                compressed = fh.read()
            inflater = zlib.decompressobj()
            data = inflater.decompress(compressed, 64)  # the header first: "<type> <size>\0"
            header, nul, _ = data.partition(b"\0")
            kind, _, size = header.partition(b" ")
            if not nul or kind not in _NUMBERS or not size.isdigit():
                raise CannotPeek(f"object {oid} has a bad header")
            if int(size) > _MAX_OBJECT:
                raise CannotPeek(f"object {oid} is too large to peek at")
            whole = len(header) + 1 + int(size)
            if len(data) <= whole:  # one byte more than the header says shows a lie
                data += inflater.decompress(inflater.unconsumed_tail, whole + 1 - len(data))
        except (OSError, zlib.error) as exc:
            raise CannotPeek(f"object {oid}: {exc}") from None
        body = data[len(header) + 1 :]
        if not inflater.eof or int(size) != len(body):
            raise CannotPeek(f"object {oid} has a bad header")
        return _NUMBERS[kind], body

    def _pack_list(self) -> list[_Pack]:
        if self._packs is None:
            self._packs = []
            for objects in self._folders:
                folder = os.path.join(objects, "pack")
                try:
                    names = sorted(n for n in os.listdir(folder) if n.endswith(".idx"))
                except FileNotFoundError:
                    names = []
                except OSError as exc:
                    raise CannotPeek(f"{folder}: {exc}") from None
                self._packs.extend(_Pack(os.path.join(folder, n)) for n in names)
        return self._packs

    def _packed(self, oid: bytes, nesting: int = 0) -> tuple[int, bytes] | None:
        for number, pack in enumerate(self._pack_list()):
            offset = pack.find(oid)
            if offset is not None:
                return self._unpack(number, offset, nesting)
        return None

    def _unpack(self, number: int, offset: int, nesting: int = 0) -> tuple[int, bytes]:
        """The object at ``offset`` in pack ``number``, deltas applied (an explicit stack: chains can be long)."""
        assert self._packs is not None
        pending: list[tuple[int, bytes]] = []  # (offset, delta) from the wanted object down its chain
        for _ in range(_MAX_DELTA_DEPTH):
            cached = self._bases.get((number, offset))
            if cached is not None:
                kind, body = cached
                break
            data = self._packs[number].data
            try:
                byte = data[offset]
                at = offset + 1
                kind, size, shift = (byte >> 4) & 7, byte & 15, 4
                while byte & 0x80:
                    byte = data[at]
                    at += 1
                    size |= (byte & 0x7F) << shift
                    shift += 7
                if kind == _OFS_DELTA:
                    byte = data[at]
                    at += 1
                    back = byte & 0x7F
                    while byte & 0x80:
                        byte = data[at]
                        at += 1
                        back = ((back + 1) << 7) | (byte & 0x7F)
                    if not 0 < back <= offset:
                        raise CannotPeek("a delta's base lies outside its pack")
                    pending.append((offset, _inflate(data, at, size)))
                    offset -= back
                    continue
                if kind == _REF_DELTA:
                    base_id = bytes(data[at : at + 20])
                    pending.append((offset, _inflate(data, at + 20, size)))
                    if nesting >= _MAX_REF_NESTING:
                        raise CannotPeek("a chain of REF_DELTA bases is too deep (or a cycle)")
                    found = self._packed(base_id, nesting + 1)
                    if found is None:
                        found = self._loose(base_id.hex())
                    kind, body = found
                    break
            except IndexError:
                raise CannotPeek("a pack is cut short") from None
            body = _inflate(data, at, size)
            if pending:  # a delta base: the next reads of its neighbours need it again
                self._keep(number, offset, kind, body)
            break
        else:
            raise CannotPeek("a delta chain is too long")
        while pending:
            at, delta = pending.pop()
            body = apply_delta(body, delta)
            if pending:  # a base inside the chain: neighbours built on it start here next time
                self._keep(number, at, kind, body)
        return kind, body

    def _keep(self, number: int, offset: int, kind: int, body: bytes) -> None:
        if len(body) > _CACHED_BASE_MAX:
            return
        if len(self._bases) >= _BASE_CACHE:
            self._bases.clear()
        self._bases[(number, offset)] = (kind, body)

    # -- what a read needs --

    def tree_of(self, commit: str) -> str:
        if self._last_tree is not None and self._last_tree[0] == commit:  # lookups path by path ask again
            return self._last_tree[1]
        kind, body = self.object(commit)
        if kind != "commit" or not body.startswith(b"tree ") or body[45:46] != b"\n":
            raise CannotPeek(f"{commit} is not a commit")
        tree = body[5:45].decode("ascii")
        self._last_tree = (commit, tree)
        return tree

    def tree_items(self, tree_id: str) -> list[tuple[str, str, str]]:
        """One folder's entries as ``(name, kind, hex id)``, in git order, kinds as :class:`GitRepo` says them."""
        return [(name, kind, oid) for name, (kind, oid) in self._entries(tree_id).items()]

    def _entries(self, tree_id: str) -> dict[str, tuple[str, str]]:
        """A tree's entries by name (in git order), parsed once per reader: a grep's candidates are
        looked up path by path, each from the root tree down, and a packed tree is often a long
        delta chain."""
        found = self._trees.get(tree_id)
        if found is None:
            if len(self._trees) >= _TREE_CACHE:
                self._trees.clear()
            found = {}
            for name, kind, oid in self._parse_tree(tree_id):
                if name in found:
                    raise CannotPeek(f"tree {tree_id} names {name!r} twice")
                found[name] = (kind, oid)
            self._trees[tree_id] = found
        return found

    def _parse_tree(self, tree_id: str) -> Iterator[tuple[str, str, str]]:
        kind, body = self.object(tree_id)
        if kind != "tree":
            raise CannotPeek(f"{tree_id} is not a tree")
        at, end = 0, len(body)
        while at < end:
            space = body.find(b" ", at)
            nul = body.find(b"\0", space)
            if space < 0 or nul < 0 or nul + 21 > end:
                raise CannotPeek(f"tree {tree_id} is malformed")
            entry = _MODES.get(body[at:space])
            if entry is None:
                raise CannotPeek(f"tree {tree_id} has an entry of mode {body[at:space]!r}")
            try:
                name = body[space + 1 : nul].decode("utf-8")
            except UnicodeDecodeError:
                raise CannotPeek(f"tree {tree_id} has a name that is not UTF-8") from None
            yield name, entry, body[nul + 1 : nul + 21].hex()
            at = nul + 21

    def blob(self, oid: str) -> bytes:
        kind, body = self.object(oid)
        if kind != "blob":
            raise CannotPeek(f"{oid} is not a blob")
        return body

    def folder_at(self, commit: str, prefix: str) -> str | None:
        """The tree id of folder ``prefix`` (``""`` or ``"dir/"``) at ``commit``; ``None`` when no
        such folder exists. Only the trees on the folder's path are read."""
        tree = self.tree_of(commit)
        for part in prefix.rstrip("/").split("/") if prefix else ():
            found = self._entries(tree).get(part)
            if found is None or found[0] != "tree":
                return None
            tree = found[1]
        return tree

    def read_at(self, commit: str, path: str) -> tuple[str, bytes] | None:
        """``(blob id, bytes)`` of the file at ``path`` in ``commit``, or ``None`` (also for a link)."""
        oid = self.file_id_at(commit, path)
        return None if oid is None else (oid, self.blob(oid))

    def file_id_at(self, commit: str, path: str) -> str | None:
        """The blob id of the regular file at ``path`` in ``commit``, or ``None``; nothing else is read."""
        tree = self.tree_of(commit)
        parts = path.split("/")
        for depth, part in enumerate(parts):
            found = self._entries(tree).get(part)
            if found is None:
                return None
            kind, oid = found
            if depth == len(parts) - 1:
                return oid if kind == "blob" else None
            if kind != "tree":
                return None
            tree = oid
        return None


def config_files(git_dir: str) -> list[str]:
    """The config files libgit2 reads for a repository, lowest priority first."""
    home = os.environ.get("HOME", "")
    xdg = os.environ.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else "")
    files = ["/etc/gitconfig"]
    if xdg:
        files.append(os.path.join(xdg, "git", "config"))
    if home:
        files.append(os.path.join(home, ".gitconfig"))
    files.append(os.path.join(git_dir, "config"))
    return files


def _read_config(git_dir: str) -> dict[str, str]:
    """``section.key`` (lowercase) -> value over every config file, for sections without a subsection."""
    values: dict[str, str] = {}
    own = os.path.join(git_dir, "config")
    for path in config_files(git_dir):
        try:
            # The mount's own config is a control file: no link followed. The user's and the
            # system's (outside every mount, which git and libgit2 read following links) may be
            # links, as dotfile managers make ~/.gitconfig; all are bounded and never block.
            raw = read_control(path, _MAX_CONFIG, follow=path != own)
            if raw is None:
                continue
            text = raw.decode("utf-8")
        except (MemoryStoreError, UnicodeDecodeError) as exc:
            raise CannotPeek(f"{path}: {exc}") from None  # the full store then refuses it, saying why
        values.update(parse_config(text))
    return values


def _remote_section(head: str) -> str | None:
    """``remote.NAME`` for a ``[remote "NAME"]`` header, ``None`` for a section a read skips.

    :class:`CannotPeek` for a remote spelled the old way (``[remote.NAME]``, whose name
    git lowercases) or with an escape in its name: git's own parser reads those.
    """
    kind, *subsection = head.split(None, 1)
    if kind.lower() != "remote":
        if kind.lower().startswith(("remote.", 'remote"')):
            raise CannotPeek(f"config section [{head}]")
        return None
    sub = subsection[0] if subsection else ""
    if len(sub) < 2 or sub[0] != '"' or sub[-1] != '"' or '"' in sub[1:-1] or "\\" in sub:
        raise CannotPeek(f"config section [{head}]")
    return f"remote.{sub[1:-1]}"


def parse_config(text: str) -> dict[str, str]:
    """The plain ``key = value`` settings of one git config file, keyed ``section.key`` in lowercase.

    Only the sections a read needs (:data:`_SECTIONS`) and the ``url`` of each
    remote (``remote.NAME.url``, NAME as written) are kept; the rest are
    skipped unparsed. :class:`CannotPeek` for what would need git's whole parser:
    includes, continuation lines, and in a kept section a quoted or escaped
    value, one with inner spaces (git folds them), or a key without a value.
    """
    values: dict[str, str] = {}
    section: str | None = None
    headed = False  # a section header was seen: a key before any is an error to git, so not read here
    if "\0" in text:
        raise CannotPeek("a NUL byte in a config file")
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.endswith("\\"):
            raise CannotPeek("a config line continues on the next")
        if line[0] == "[":
            head, close, rest = line[1:].partition("]")
            rest = rest.strip()
            if not close or (rest and rest[0] not in "#;"):
                raise CannotPeek(f"config section {line!r}")
            name = head.strip().lower()
            if name.startswith("include"):
                raise CannotPeek("a config file includes another")
            section = name if name in _SECTIONS else _remote_section(head.strip())
            headed = True
            continue
        if not headed:
            raise CannotPeek("a config line before any section")
        if section is None:
            continue
        key, eq, value = line.partition("=")
        name = f"{section}.{key.strip().lower()}"
        if section == "core" and name != "core.repositoryformatversion":
            continue  # core.editor, core.pager...: a read needs none of them
        if section.startswith("remote.") and key.strip().lower() != "url":
            continue  # a remote's fetch, pushurl...: a push gives git the url alone
        remote = section.startswith("remote.")
        if not eq and not remote:
            raise CannotPeek(f"config key {name!r} has no value")
        for stop in "#;":
            value = value.split(stop, 1)[0]
        value = value.strip()
        if not eq or '"' in value or "\\" in value or len(value.split()) > 1:
            if not remote:
                raise CannotPeek(f"config value {value!r} needs git's parser")
            value = _UNREAD  # a read needs no url: only a push asks, and then declines
        values[name] = value
    return values

"""Trees built in memory: git's tree encoding, cached folders, and path edits spliced into them.

A write changes one file or a few, and every folder on their paths gets a new
tree. The trees here are made as raw bytes (no libgit2 object per folder): a
folder read once is cached entry by entry (each entry's bytes and its sort key,
in git's order: :class:`TreeCache`), so an edit finds its entry by bisection:
an id is swapped in place, an added entry is inserted where git's order puts it
(a folder sorts as if its name ended in ``/``), a removed one is cut out, and
the new tree is one ``join`` (a Python pass over the folder's offsets cost a
create in a folder of a thousand files ~0.16 ms). A batch that changes a few
entries of one folder splices them all (:func:`_splice_many`). :func:`set_path`
and :func:`set_paths` return the new root tree's id and leave every new object
in :class:`PendingObjects`, which :mod:`gitmem.git.packwrite` then writes as one
pack. Property tests hold every result byte-equal to libgit2's tree builder.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Callable, Sequence

from gitmem.store import file_dir_conflict

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_TREE_MODE = b"40000"
_BLOB_MODE = b"100644"
FILE_MODES = (b"100644", b"100755")

Entries = dict[bytes, tuple[bytes, bytes]]
"""A tree's entries: name -> (mode, 20-byte id)."""
Encoded = tuple[list[bytes], list[bytes]]
"""A tree in git's encoding, entry by entry and in git's order: each entry's sort key
(:func:`entry_order`) and its bytes. The tree is the join of the bytes."""


def object_id(kind: bytes, raw: bytes) -> str:
    digest = hashlib.sha1(b"%s %d\x00" % (kind, len(raw)), usedforsecurity=False)
    digest.update(raw)
    return digest.hexdigest()


class PendingObjects:
    """Objects made for one commit, not yet on disk: id -> (type, raw content).

    ``ids`` holds the 20 bytes of each id :meth:`add` hashed, which the tree
    edits, the pack's index and the writer's copies need: turning the hex back
    with ``bytes.fromhex`` cost a write ~2 µs an object, three times over.
    """

    __slots__ = ("ids", "objects")

    def __init__(self) -> None:
        self.objects: dict[str, tuple[bytes, bytes]] = {}
        self.ids: dict[str, bytes] = {}

    def add(self, kind: bytes, raw: bytes) -> str:
        digest = hashlib.sha1(b"%s %d\x00" % (kind, len(raw)), usedforsecurity=False)
        digest.update(raw)
        key = digest.digest()
        oid = key.hex()
        if oid not in self.objects:
            self.objects[oid] = (kind, raw)
            self.ids[oid] = key
        return oid

    def key(self, oid: str) -> bytes:
        """The 20 bytes of ``oid`` (hashed here, or converted)."""
        key = self.ids.get(oid)
        return key if key is not None else bytes.fromhex(oid)

    def drop_after(self, kept: int) -> None:
        """Forget every object added after the first ``kept`` (a plan that failed leaves nothing behind)."""
        for oid in list(self.objects)[kept:]:
            del self.objects[oid]
            self.ids.pop(oid, None)

    def raw(self, oid: str) -> bytes | None:
        found = self.objects.get(oid)
        return None if found is None else found[1]

    def __len__(self) -> int:
        return len(self.objects)


# -- trees ---------------------------------------------------------------------------


def parse_tree(raw: bytes) -> dict[bytes, tuple[bytes, bytes]]:
    """A raw tree's entries: name -> (mode, 20-byte id)."""
    return parse_tree_at(raw)[0]


def parse_tree_at(raw: bytes) -> tuple[dict[bytes, tuple[bytes, bytes]], Encoded]:
    """A raw tree's entries (name -> (mode, 20-byte id)) and the tree entry by entry (:data:`Encoded`)."""
    entries, encoded, _ = parse_tree_checked(raw)
    return entries, encoded


def parse_tree_checked(raw: bytes) -> tuple[dict[bytes, tuple[bytes, bytes]], Encoded, bool]:
    """:func:`parse_tree_at` and whether ``raw`` is exactly :func:`tree_bytes` of its entries.

    It is when the entries come in strictly increasing git order (so no name
    repeats) and the last id ends the tree: checked while parsing, which costs
    far less than encoding the entries again to compare. The encoded entries
    come in the order they appear in ``raw``.
    """
    entries: dict[bytes, tuple[bytes, bytes]] = {}
    keys: list[bytes] = []
    chunks: list[bytes] = []
    pos, end = 0, len(raw)
    find = raw.index
    ordered, last = True, b""
    while pos < end:
        space = find(b" ", pos)
        nul = find(b"\x00", space)
        name, mode = raw[space + 1 : nul], raw[pos:space]
        start, pos = pos, nul + 21
        entries[name] = (mode, raw[nul + 1 : pos])
        key = name + b"/" if mode == _TREE_MODE else name
        if ordered and keys and key <= last:
            ordered = False
        last = key
        keys.append(key)
        chunks.append(raw[start:pos])
    return entries, (keys, chunks), ordered and pos == end and len(entries) == len(keys)


def entry_order(item: tuple[bytes, tuple[bytes, bytes]]) -> bytes:
    """The sort key of a tree entry in git's order: a folder sorts as if its name ended in ``/``."""
    name, (mode, _) = item
    return name + b"/" if mode == _TREE_MODE else name


def tree_bytes(entries: dict[bytes, tuple[bytes, bytes]]) -> bytes:
    """git's encoding of a tree: entries in git's order (a folder sorts as ``name/``)."""
    return b"".join(
        mode + b" " + name + b"\x00" + oid for name, (mode, oid) in sorted(entries.items(), key=entry_order)
    )


def tree_bytes_at(entries: dict[bytes, tuple[bytes, bytes]]) -> tuple[bytes, Encoded]:
    """:func:`tree_bytes` and the tree entry by entry (as :func:`parse_tree_at` gives)."""
    keys: list[bytes] = []
    chunks: list[bytes] = []
    for name, (mode, oid) in sorted(entries.items(), key=entry_order):
        keys.append(name + b"/" if mode == _TREE_MODE else name)
        chunks.append(mode + b" " + name + b"\x00" + oid)
    return b"".join(chunks), (keys, chunks)


class TreeCache:
    """Parsed trees by id, so consecutive writes do not re-read and re-parse the folders they share.

    A writer's next commit starts from the trees its last one made (the root and
    the folders on the path), so the entries :func:`set_path` built are kept.
    With each tree its bytes are kept too, entry by entry (:data:`Encoded`): a
    write that changes which blob or folder an entry names (a file edited in
    place), adds an entry or removes one makes each new tree on its path from
    those, instead of sorting and encoding every entry of the folder again. A tree an edit replaced is forgotten (the head no longer
    names it), so the cache holds the head's folders rather than the dead
    versions of the few just written: in a memory of a few hundred folders,
    every folder a write touches is parsed once, not once per ``limit`` trees.
    Bounded: past ``limit`` trees the older half is dropped.
    """

    def __init__(self, limit: int = 512) -> None:
        self.limit = limit
        self.trees: dict[str, dict[bytes, tuple[bytes, bytes]]] = {}
        self.encoded: dict[str, Encoded] = {}  # id -> the tree entry by entry

    def entries(self, oid: str, read_tree: Callable[[str], bytes]) -> dict[bytes, tuple[bytes, bytes]]:
        """A copy of the tree's entries (the caller edits it)."""
        return dict(self.view(oid, read_tree))

    def take(self, oid: str, read_tree: Callable[[str], bytes]) -> tuple[Entries, Encoded | None]:
        """A copy of the tree's entries, for the caller to edit, and the tree entry by entry if cached.

        Both leave the cache: an edit replaces the tree by a new one, which
        :meth:`keep` stores with the edited entries. Should the old tree be needed
        again (a refused plan, the same folder elsewhere in the tree), it is parsed
        again. The entries are copied because readers of the head in other threads
        look trees up here while a commit is planned (:meth:`view`): edited in place,
        a read in flight saw files the commit had not made yet, or that its refused
        plan never would. The encoding is not copied: no reader is handed it.
        """
        found = self.view(oid, read_tree)
        del self.trees[oid]
        return dict(found), self.encoded.pop(oid, None)

    def view(self, oid: str, read_tree: Callable[[str], bytes]) -> dict[bytes, tuple[bytes, bytes]]:
        """The tree's entries themselves, for lookups only (never edit them)."""
        found = self.trees.get(oid)
        if found is None:
            raw = read_tree(oid)
            found, encoded, canonical = parse_tree_checked(raw)
            # Only a tree in git's own encoding is edited byte-wise: one pushed out of order
            # or with a repeated name is encoded anew on its next edit, as before.
            self.keep(oid, found, encoded if canonical else None)
        return found

    def keep(self, oid: str, entries: dict[bytes, tuple[bytes, bytes]], encoded: Encoded | None = None) -> None:
        if len(self.trees) >= self.limit:
            for old in list(self.trees)[: self.limit // 2]:  # the longest kept (dicts keep insertion order)
                self.forget(old)
        self.trees[oid] = entries
        if encoded is not None:
            self.encoded[oid] = encoded

    def forget(self, oid: str) -> None:
        self.trees.pop(oid, None)
        self.encoded.pop(oid, None)


def _add_tree(
    pending: PendingObjects,
    cache: TreeCache | None,
    entries: Entries,
    edited: tuple[Encoded | None, bytes, tuple[bytes, bytes] | None] | None = None,
) -> str:
    """Encode ``entries`` as a new tree in ``pending`` (and the cache); returns its id.

    ``edited`` is ``(the old tree entry by entry, name, that name's entry there)``
    when ``entries`` differ from that tree in one entry only (the old tree was
    taken out of the cache, :meth:`TreeCache.take`, so its lists are edited in
    place). When the old tree is known, the new one is made from it instead of
    sorting and encoding every entry again: an entry whose id changed (same
    mode) has its bytes replaced, a new entry is inserted where git's order puts
    it, a removed one is cut out; every other entry stays as it was.
    """
    if cache is not None and edited is not None:
        known, name, before = edited
        after = entries.get(name)
        if known is not None and (before is None or after is None or before[0] == after[0]):
            _splice(known, name, before, after)
            oid = pending.add(b"tree", b"".join(known[1]))
            cache.keep(oid, entries, known)
            return oid
    if cache is None:
        return pending.add(b"tree", tree_bytes(entries))
    raw, encoded = tree_bytes_at(entries)
    oid = pending.add(b"tree", raw)
    cache.keep(oid, entries, encoded)
    return oid


def _splice(encoded: Encoded, name: bytes, old: tuple[bytes, bytes] | None, new: tuple[bytes, bytes] | None) -> None:
    """Change the entry ``name`` of ``encoded`` from ``old`` to ``new`` (same mode; ``None``: absent), in place.

    The entry's place is found by bisection on the sort keys; an id swapped keeps
    the place, an entry added goes where git's order puts it.
    """
    changed = new if new is not None else old
    if changed is None:
        return
    keys, chunks = encoded
    mode = changed[0]
    key = name + b"/" if mode == _TREE_MODE else name
    at = bisect_left(keys, key)
    if old is not None and (at == len(keys) or keys[at] != key):
        raise AssertionError(f"tree entry {name!r} is not where its order puts it")
    if new is None:
        del keys[at], chunks[at]
        return
    chunk = mode + b" " + name + b"\x00" + new[1]
    if old is not None:
        chunks[at] = chunk
    else:
        keys.insert(at, key)
        chunks.insert(at, chunk)


def _entries_of(
    tree: str | None, read_tree: Callable[[str], bytes], cache: TreeCache | None
) -> tuple[Entries, Encoded | None]:
    """``tree``'s entries to edit and its encoded bytes if known: none for no tree, taken from the cache
    when there is one (:meth:`TreeCache.take`), else parsed anew."""
    if tree is None:
        return {}, None
    if cache is not None:
        return cache.take(tree, read_tree)
    return parse_tree(read_tree(tree)), None


def set_path(
    read_tree: Callable[[str], bytes],
    pending: PendingObjects,
    tree: str | None,
    parts: list[str],
    oid: str | None,
    full: str,
    cache: TreeCache | None = None,
) -> str:
    """The id of ``tree`` with ``parts`` set to blob ``oid`` (removed when ``None``); new trees go to ``pending``.

    The same edit as :func:`gitmem.git.repo._set_path` (libgit2's tree builder):
    only the trees on the path change, a folder left empty disappears, a file
    where a folder is (or below a file) is ``invalid_path``.
    """
    entries, known = _entries_of(tree, read_tree, cache)
    name = parts[0].encode()
    existing = entries.get(name)
    edited = (known, name, existing)
    if len(parts) == 1:
        if existing is not None and existing[0] == _TREE_MODE and oid is not None:
            raise file_dir_conflict(full, is_file=False)
        if oid is None:
            entries.pop(name, None)
        else:
            entries[name] = (_BLOB_MODE, pending.key(oid))
    else:
        sub: str | None = None
        if existing is not None:
            if existing[0] != _TREE_MODE:
                if oid is None:
                    return _add_tree(pending, cache, entries)
                raise file_dir_conflict(full, is_file=True)
            sub = existing[1].hex()
        elif oid is None:
            return _add_tree(pending, cache, entries)
        new_sub = set_path(read_tree, pending, sub, parts[1:], oid, full, cache)
        if new_sub == EMPTY_TREE:
            entries.pop(name, None)
        else:
            entries[name] = (_TREE_MODE, pending.key(new_sub))
    return _add_tree(pending, cache, entries, edited)


def set_paths(
    read_tree: Callable[[str], bytes],
    pending: PendingObjects,
    tree: str | None,
    edits: Sequence[tuple[str, str | None]],
    cache: TreeCache | None = None,
) -> str:
    """The id of ``tree`` with every ``(path, blob or None)`` edit applied; new trees go to ``pending``.

    Each changed folder's tree is encoded once however many of its files change,
    and only the final trees reach the pack (path by path, a prune of 10k items
    would re-encode its folders 10k times and pack every intermediate tree). The
    result equals applying the edits one by one with :func:`set_path`, the rule
    (``tests/compat/test_pack_writes.py`` compares both with libgit2's tree
    builder); a batch that both replaces a file by a folder and edits inside it,
    where order matters, is applied that way.
    """
    split = [(path.split("/"), oid, path) for path, oid in edits]
    if len(split) == 1 or mixes_file_and_folder(split):
        for parts, oid, full in split:
            tree = set_path(read_tree, pending, tree, parts, oid, full, cache)
        return tree if tree is not None else _add_tree(pending, cache, {})
    return _set_group(read_tree, pending, tree, split, cache)


def mixes_file_and_folder(split: list[tuple[list[str], str | None, str]]) -> bool:
    """Whether some edited path is also a folder of another edited path."""
    paths = {"/".join(parts) for parts, _, _ in split}
    return any("/".join(parts[:i]) in paths for parts, _, _ in split for i in range(1, len(parts)))


def _set_group(
    read_tree: Callable[[str], bytes],
    pending: PendingObjects,
    tree: str | None,
    edits: list[tuple[list[str], str | None, str]],
    cache: TreeCache | None,
) -> str:
    entries, known = _entries_of(tree, read_tree, cache)
    below: dict[bytes, list[tuple[list[str], str | None, str]]] = {}
    before: dict[bytes, tuple[bytes, bytes] | None] = {}  # each changed name's entry in ``tree``
    for parts, oid, full in edits:
        name = parts[0].encode()
        if len(parts) > 1:
            below.setdefault(name, []).append((parts[1:], oid, full))
            continue
        existing = entries.get(name)
        if existing is not None and existing[0] == _TREE_MODE and oid is not None:
            raise file_dir_conflict(full, is_file=False)
        if name not in before:
            before[name] = existing
        if oid is None:
            entries.pop(name, None)
        else:
            entries[name] = (_BLOB_MODE, pending.key(oid))
    for name, group in below.items():
        existing = entries.get(name)
        if name not in before:
            before[name] = existing
        sub: str | None = None
        if existing is not None:
            if existing[0] != _TREE_MODE:
                creating = [full for _, oid, full in group if oid is not None]
                if creating:
                    raise file_dir_conflict(creating[0], is_file=True)
                continue  # deletes below a file: nothing there to delete
            sub = existing[1].hex()
        elif all(oid is None for _, oid, _ in group):
            continue
        new_sub = _set_group(read_tree, pending, sub, group, cache)
        if new_sub == EMPTY_TREE:
            entries.pop(name, None)
        else:
            entries[name] = (_TREE_MODE, pending.key(new_sub))
    made = _splice_many(pending, cache, entries, known, before) if cache is not None else None
    if made is None:
        made = _add_tree(pending, cache, entries)
    return made


def _splice_many(
    pending: PendingObjects,
    cache: TreeCache,
    entries: Entries,
    known: Encoded | None,
    before: dict[bytes, tuple[bytes, bytes] | None],
) -> str | None:
    """The new tree made from the old one (``known``, edited in place) with every entry in ``before`` changed; ``None``: encode anew.

    :func:`_add_tree` splices one changed entry; a batch often changes a few in
    one folder (a record and its namespace's marker, a rename's source and
    destination folders). An entry that changes kind (a file replaced by a
    folder) is encoded anew, as are trees that are not cached and folders that
    change more than a sixteenth of their entries (a prune, a bulk change: each
    insertion or removal moves the entries after it, so encoding the folder once is cheaper).
    """
    if known is None:
        return None
    changed = []
    for name, old in before.items():
        new = entries.get(name)
        if old == new:
            continue
        if old is not None and new is not None and old[0] != new[0]:
            return None
        changed.append((name, old, new))
    if len(changed) > 2 + len(known[0]) // 16:
        return None
    for name, old, new in changed:
        _splice(known, name, old, new)
    oid = pending.add(b"tree", b"".join(known[1]))
    cache.keep(oid, entries, known)
    return oid

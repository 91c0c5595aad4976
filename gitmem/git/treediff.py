"""Which paths differ between two trees, reading only what changed.

Raw tree objects are compared as bytes: a folder whose tree id did not change
is skipped whole, and inside a changed folder only the entries between the
bytes both versions share at either end are parsed. This is what lets
``changes()`` stay cheap on a memory of many thousand files (see
:meth:`gitmem.git.repo.GitRepo.changed_paths`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Final, NamedTuple

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import MAX_PATH_SEGMENTS

if TYPE_CHECKING:
    import pygit2

_RAW_TREE_MODE = b"40000"
MAX_CHANGES: Final = 1_000_000
"""Files and folders one list of changes walks at most (a pull, a merge, a pushed commit's rules read each)."""


class TooManyChanges(MemoryStoreError):
    """More than :data:`MAX_CHANGES` files differ between two trees (``memory_full``): none is listed."""

    def __init__(self) -> None:
        super().__init__(
            "memory_full",
            f"more than {MAX_CHANGES} files and folders differ: gitmem reads a change file by file and takes at most that "
            "many at once (a tree that names one folder at many paths holds 2 ** depth files in a few objects)",
        )


class TooDeep(TooManyChanges):
    """A folder nested past :data:`~gitmem.fileformat.MAX_PATH_SEGMENTS` (``invalid_path``): none is listed."""

    def __init__(self) -> None:
        MemoryStoreError.__init__(
            self,
            "invalid_path",
            f"a folder is nested more than {MAX_PATH_SEGMENTS - 1} deep: no path of a memory has more than "
            f"{MAX_PATH_SEGMENTS} segments, and each changed path's name holds every folder above it",
        )


def _parse_entries(raw: bytes, pos: int, stop: int, out: dict[bytes, tuple[bytes, bytes]]) -> int:
    """Parse raw tree entries from the boundary ``pos`` until one ends at or past ``stop``.

    Each entry is ``b"<mode> <name>\\0"`` and a 20-byte id; ``out`` gets
    ``{name: (mode, id)}``. Returns the boundary where parsing stopped.
    """
    while pos < stop:
        nul = raw.index(b"\0", pos)
        space = raw.index(b" ", pos, nul)
        out[raw[space + 1 : nul]] = (raw[pos:space], raw[nul + 1 : nul + 21])
        pos = nul + 21
    return pos


def _shared_bytes(a: bytes, b: bytes, limit: int, *, at_end: bool) -> int:
    """How many leading (or trailing) bytes ``a`` and ``b`` share, up to ``limit`` (binary search)."""
    lo, hi = 0, limit
    la, lb = len(a), len(b)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if (a[la - mid :] == b[lb - mid :]) if at_end else (a[:mid] == b[:mid]):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _changed_entries(a: bytes, b: bytes) -> tuple[dict[bytes, tuple[bytes, bytes]], dict[bytes, tuple[bytes, bytes]]]:
    """The entries of two raw trees outside the bytes they share at both ends.

    Entries are sorted, so one changed file leaves everything before and after its
    entry byte-identical: only the window between is parsed, which keeps a folder
    of hundreds of entries about as cheap as one of ten. Any name that differs is
    in both windows or in one of them.
    """
    short = min(len(a), len(b))
    head = _shared_bytes(a, b, short, at_end=False)
    tail = _shared_bytes(a, b, short - head, at_end=True)
    start = 0
    while start < head:  # the last entry boundary at or before the first differing byte
        end = a.index(b"\0", start) + 21
        if end > head:
            break
        start = end
    old: dict[bytes, tuple[bytes, bytes]] = {}
    new: dict[bytes, tuple[bytes, bytes]] = {}
    stop_a = _parse_entries(a, start, len(a) - tail, old)
    stop_b = _parse_entries(b, start, len(b) - tail, new)
    if len(a) - stop_a != len(b) - stop_b:  # the windows did not end on the same shared entries
        _parse_entries(a, stop_a, len(a), old)
        _parse_entries(b, stop_b, len(b), new)
    return old, new


class FileChange(NamedTuple):
    """One file that differs between two trees: its path and ``(mode, id)`` on each side (``None``: absent)."""

    path: str
    old: tuple[int, str] | None
    new: tuple[int, str] | None


def diff_trees(
    read: Callable[[pygit2.Oid], bytes], old: pygit2.Oid | None, new: pygit2.Oid | None, prefix: str, out: list[str]
) -> None:
    """Append to ``out`` every non-folder path that differs between two trees (``None``: absent).

    ``read`` gives a tree's raw bytes: the repository's own reader can serve the
    trees of a commit this process just made without libgit2 looking for its pack.
    """
    import pygit2

    def by_raw(raw: bytes) -> bytes:
        return read(pygit2.Oid(raw=raw))

    out.extend(change.path for change in _changes(by_raw, _raw(old), _raw(new), prefix))


def file_changes(repo: pygit2.Repository, old: pygit2.Oid | None, new: pygit2.Oid | None) -> list[FileChange]:
    """Every file that differs between two trees, sorted by path, like ``git diff-tree -r`` (no renames).

    A file replaced by a folder of the same name (or the reverse) is two changes:
    the file deleted or added, and each file of the folder. libgit2's tree diff
    gives the same list, but visits every entry of both trees to find it.
    """
    return changes_between(lambda raw: repo[raw.hex()].read_raw(), _raw(old), _raw(new))


def changes_between(read: Callable[[bytes], bytes], old: bytes | None, new: bytes | None) -> list[FileChange]:
    """:func:`file_changes` over any object reader: ``read`` gives the raw body of the tree
    with the given 20-byte id (the push rules run over libgit2 or :mod:`gitmem.git.peek`).

    :class:`TooManyChanges` when they are more than :data:`MAX_CHANGES`, found by
    :func:`count_changes` before any is listed (each pair of folders read and parsed once for both).
    """
    parsed: dict[_Pair, _Entries] = {}  # each pair of folders is parsed once, for the count and the list
    if count_changes(read, old, new, MAX_CHANGES, parsed) > MAX_CHANGES:
        raise TooManyChanges
    return sorted(_changes(read, old, new, "", parsed), key=lambda change: change.path)


_Pair = tuple[bytes | None, bytes | None]
_Entries = tuple[dict[bytes, tuple[bytes, bytes]], dict[bytes, tuple[bytes, bytes]]]


def _entries_of(read: Callable[[bytes], bytes], pair: _Pair, parsed: dict[_Pair, _Entries] | None) -> _Entries:
    """:func:`_changed_entries` of a pair of folders (``None``: absent), kept in ``parsed`` when given."""
    found = None if parsed is None else parsed.get(pair)
    if found is None:
        found = _changed_entries(b"" if pair[0] is None else read(pair[0]), b"" if pair[1] is None else read(pair[1]))
        if parsed is not None:
            parsed[pair] = found
    return found


def count_changes(
    read: Callable[[bytes], bytes],
    old: bytes | None,
    new: bytes | None,
    stop: int,
    parsed: dict[_Pair, _Entries] | None = None,
) -> int:
    """How many files and folders differ between two trees (the paths :func:`changes_between` walks),
    or ``stop + 1`` past ``stop``.

    Counted per pair of folders (by their ids), not per path: a tree that names the
    folder below it twice at each of 30 levels holds 2 ** 30 files in 60 objects,
    and a folder reached at many paths is counted once. A changed folder counts
    itself, not only its files: the same tree with an empty folder at the bottom
    holds no file, and its 2 ** 30 folder paths are walked all the same.
    """
    counts: dict[_Pair, int] = {}
    pending = [(old, new)]
    while pending:
        pair = pending[-1]
        if pair in counts:
            pending.pop()
            continue
        a, b = _entries_of(read, pair, parsed)
        total = 0
        missing = []
        for name in a.keys() | b.keys():
            was, now = a.get(name), b.get(name)
            if was == now:
                continue
            was_tree = was is not None and was[0] == _RAW_TREE_MODE
            now_tree = now is not None and now[0] == _RAW_TREE_MODE
            if was_tree or now_tree:
                below = (
                    was[1] if was is not None and was_tree else None,
                    now[1] if now is not None and now_tree else None,
                )
                found = counts.get(below)
                if found is None:
                    missing.append(below)
                else:
                    total += found + 1  # its files, and the folder the walk steps into
            if (was is not None and not was_tree) or (now is not None and not now_tree):
                total += 1
        if missing:
            pending.extend(missing)
            continue
        pending.pop()
        counts[pair] = min(total, stop + 1)
        if total > stop:
            return stop + 1
    return counts[(old, new)]


def _raw(oid: pygit2.Oid | None) -> bytes | None:
    return None if oid is None else oid.raw


class _Below(NamedTuple):
    """A folder on either side whose files :func:`_changes` lists before going on."""

    old: bytes | None
    new: bytes | None
    prefix: str


def _changes(
    read: Callable[[bytes], bytes],
    old: bytes | None,
    new: bytes | None,
    prefix: str,
    parsed: dict[_Pair, _Entries] | None = None,
) -> Iterator[FileChange]:
    """Every file that differs between two trees, a folder's files before the entry that holds them.

    Walked with a stack of folders, not by recursion: a tree nested deeper than
    Python's recursion limit (git's fsck lets a pushed or pulled one through) is
    read like any other, down to :data:`~gitmem.fileformat.MAX_PATH_SEGMENTS`
    levels; a deeper one is :class:`TooDeep`, before the walk holds a path per
    level (each as long as the levels above it: 20,000 levels held 800 MB).
    """
    stack = [_level(read, old, new, prefix, parsed)]
    while stack:
        for found in stack[-1]:
            if isinstance(found, _Below):
                if len(stack) >= MAX_PATH_SEGMENTS:  # its entries' paths would have more segments than any may
                    raise TooDeep
                stack.append(_level(read, *found, parsed))
                break
            yield found
        else:
            stack.pop()


def _level(
    read: Callable[[bytes], bytes],
    old: bytes | None,
    new: bytes | None,
    prefix: str,
    parsed: dict[_Pair, _Entries] | None = None,
) -> Iterator[FileChange | _Below]:
    a, b = _entries_of(read, (old, new), parsed)
    for name in a.keys() | b.keys():
        was, now = a.get(name), b.get(name)
        if was == now:
            continue
        path = prefix + name.decode("utf-8", "surrogateescape")  # as pygit2 names them in walk_files
        was_tree = was is not None and was[0] == _RAW_TREE_MODE
        now_tree = now is not None and now[0] == _RAW_TREE_MODE
        if was_tree or now_tree:
            yield _Below(
                was[1] if was is not None and was_tree else None,
                now[1] if now is not None and now_tree else None,
                f"{path}/",
            )
        before = None if was is None or was_tree else (int(was[0], 8), was[1].hex())
        after = None if now is None or now_tree else (int(now[0], 8), now[1].hex())
        if before is not None or after is not None:
            yield FileChange(path, before, after)

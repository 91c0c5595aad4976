"""What the push rules read, as one small interface two readers give: libgit2, and git's files read by hand.

The rules of :mod:`gitmem.git.pushcheck` (paths, modes, content, identity,
provenance, erasures, limits) read raw objects and walk new commits, nothing
more. They run over an :class:`ObjectReader`, so the same rule code checks a
push to ``gitmem serve``, a clone, ``gitmem check`` (all through libgit2,
:class:`gitmem.git.pygitreader.RepoReader`) and a CLI fast-forward pull
(:class:`gitmem.git.peekreader.PeekReader`, over :mod:`gitmem.git.peek`, which
loads no libgit2). Objects are named by their hex ids; types are git's numbers.

The parsing here works on raw object bodies, as git stores them, and reads file
modes as libgit2 reports them (:func:`normalized_mode`), so both readers give
the rules the very same values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Final, Protocol

COMMIT: Final = 1
TREE: Final = 2
BLOB: Final = 3
TAG: Final = 4

REGULAR: Final = 0o100644
EXECUTABLE: Final = 0o100755
LINK: Final = 0o120000
SUBMODULE: Final = 0o160000
FOLDER: Final = 0o040000
FILE_MODES: Final = (REGULAR, EXECUTABLE)


class ObjectReader(Protocol):
    """The objects and history a rule check reads; see the module docstring.

    A missing object raises ``KeyError`` from :meth:`body` (``(0, 0)`` from
    :meth:`header`); ``errors`` are the reader's own exceptions for an object it
    cannot read, which the rules report as an incomplete push. Anything else a
    reader raises (the peek's ``CannotPeek``: "ask libgit2") goes to the caller.
    """

    errors: tuple[type[Exception], ...]

    def body(self, oid: str) -> tuple[int, bytes]:
        """``(type, raw body)`` of object ``oid``."""
        ...

    def header(self, oid: str) -> tuple[int, int]:
        """``(type, size)`` of object ``oid``; ``(0, 0)`` when it is missing."""
        ...

    def new_commits(self, tip: str, hide: Sequence[str]) -> Iterator[str]:
        """Commits reachable from ``tip`` and from none of ``hide``, parents first."""
        ...

    def descendant_of(self, commit: str, ancestor: str) -> bool:
        """Whether ``ancestor`` is a strict ancestor of ``commit``."""
        ...

    def ref_commits(self) -> list[str]:
        """The commits the repository's refs point at: what it already holds (and was checked)."""
        ...

    def erased(self) -> frozenset[bytes]:
        """Raw ids of every blob the repository's erasure ledger names."""
        ...

    def valid_ref_name(self, ref: str) -> bool:
        """Whether ``ref`` is a well-formed ref name, as git has it."""
        ...

    def ledger_problem(self, old: str | None, new: str) -> str | None:
        """Why ``new`` is not a ledger gitmem wrote on top of ``old`` (``None``: it is); see
        :func:`gitmem.git.erasures.foreign_ledger`."""
        ...

    def ledger_objects(self, new: str, old: str | None) -> Iterator[bytes]:
        """Raw ids of the ledger commits from ``new`` back to ``old``, their trees and entries."""
        ...


def commit_parts(body: bytes) -> tuple[str, tuple[str, ...]]:
    """A raw commit's tree and parents (``ValueError`` when its header is not a commit's)."""
    if body[:5] != b"tree " or body[45:46] != b"\n":
        raise ValueError("not a commit: no tree line")
    tree = body[5:45].decode("ascii")
    parents = []
    at = 46
    while body[at : at + 7] == b"parent ":
        if body[at + 47 : at + 48] != b"\n":
            raise ValueError("not a commit: a malformed parent line")
        parents.append(body[at + 7 : at + 47].decode("ascii"))
        at += 48
    return tree, tuple(parents)


def tag_target(body: bytes) -> str:
    """The object a raw annotated tag points at."""
    if body[:7] != b"object " or body[47:48] != b"\n":
        raise ValueError("not a tag: no object line")
    return body[7:47].decode("ascii")


def raw_entries(data: bytes) -> Iterator[bytes]:
    """Each entry of a raw tree object as stored: ``<octal mode> <name>\\0<20-byte id>``, in order."""
    pos, end = 0, len(data)
    while pos < end:
        stop = data.index(b"\0", pos) + 21
        if stop > end:
            raise ValueError("a tree entry is cut short")
        yield data[pos:stop]
        pos = stop


def split_entry(entry: bytes) -> tuple[int, bytes, bytes]:
    """``(mode as libgit2 reports it, name, raw id)`` of one raw tree entry.

    ``ValueError`` for a mode git and libgit2 cannot read (libgit2 refuses the whole
    tree): only octal digits, at most 16 bits. ``int(x, 8)`` alone would also read
    whitespace, ``_``, a sign and any size, and call such an entry a plain file.
    """
    space = entry.index(b" ")
    digits = entry[:space]
    mode = int(digits, 8) if digits.isdigit() else -1  # isdigit: ASCII digits only; int refuses 8 and 9
    if not 0 <= mode <= 0o177777:
        raise ValueError(f"a tree entry's mode {digits[:16]!r} is malformed")
    return normalized_mode(mode), entry[space + 1 : -21], entry[-20:]


def normalized_mode(mode: int) -> int:
    """A tree entry's mode as libgit2 reports it: any mode of a kind reads as that kind's one mode."""
    kind = mode & 0o170000
    if kind == FOLDER:
        return FOLDER
    if mode & 0o100:
        return EXECUTABLE
    if kind in (SUBMODULE, LINK):
        return kind
    return REGULAR


def tree_body(reader: ObjectReader, oid: str) -> bytes:
    kind, body = reader.body(oid)
    if kind != TREE:
        raise ValueError(f"{oid} is not a tree")
    return body


def entry_at(
    names: Callable[[str], Mapping[bytes, tuple[int, str]]], tree: str | None, path: str
) -> tuple[int, str] | None:
    """``(mode, hex id)`` of the entry at ``path`` (slash-separated) in ``tree``, or ``None``.

    ``names``: a tree's entries by name (:func:`entries_by_name`, kept by the caller): a
    move's or a merge's paths are looked up one by one, and a scan of the tree per path
    made a commit of many files cost their number squared.
    """
    if tree is None:
        return None
    parts = path.encode("utf-8", "surrogateescape").split(b"/")
    current = tree
    for depth, part in enumerate(parts):
        found = names(current).get(part)
        if found is None:
            return None
        if depth == len(parts) - 1:
            return found
        if found[0] != FOLDER:
            return None
        current = found[1]
    return None


def entries_by_name(entries: Iterable[bytes]) -> dict[bytes, tuple[int, str]]:
    """A tree's raw entries as name -> ``(mode, hex id)``; a name given twice keeps its first entry."""
    found: dict[bytes, tuple[int, str]] = {}
    for entry in entries:
        mode, name, raw = split_entry(entry)
        found.setdefault(name, (mode, raw.hex()))
    return found


def footprint(
    entries: Callable[[str], Sequence[bytes]],
    tree: str,
    kept: dict[str, tuple[int, int]],
    size: Callable[[str], int] | None = None,
) -> tuple[int, int]:
    """``(files, bytes)`` under ``tree``: its files (modes 100644 and 100755) and, with ``size``, their sizes.

    Each folder is counted once by its id (``kept``, the caller's, holds the counts): a tree
    reaching one folder at many paths (each level naming the one below twice) holds
    ``2 ** depth`` files in a few objects, which a walk path by path never finishes.
    ``entries``: a tree's raw entries.
    Walked with a stack, not by recursion: a tree may nest deeper than Python's limit.
    """
    pending = [tree]
    while pending:
        oid = pending[-1]
        if oid in kept:
            pending.pop()
            continue
        files = total = 0
        missing = []
        for entry in entries(oid):
            mode, _, raw = split_entry(entry)
            if mode == FOLDER:
                below = kept.get(raw.hex())
                if below is None:
                    missing.append(raw.hex())
                else:
                    files, total = files + below[0], total + below[1]
            elif mode in FILE_MODES:
                files, total = files + 1, total + (0 if size is None else size(raw.hex()))
        if missing:
            pending.extend(missing)
            continue
        pending.pop()
        kept[oid] = (files, total)
    return kept[tree]

"""What a git store remembers between reads: file sizes and descriptions, and its listing.

Everything is keyed by object ids, which name content, so an entry can never be
stale: a store and its run views (one reading a proposal branch, one ``main``)
share one cache. After ``purge`` or ``forget`` the content is dropped anyway, so
no erased text stays in memory. The cache is derived state: deleting it costs a
re-read, never a wrong answer.
"""

from __future__ import annotations

import builtins

from gitmem.fileformat import FileFormat, decode_stored, describe_stored
from gitmem.model import FileEntry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final, Protocol

    class TreeSource(Protocol):
        """What a listing reads: a :class:`~gitmem.git.repo.GitRepo`, or the libgit2-free
        :class:`~gitmem.git.peek.Peek` of a read-only CLI call (same ids, same answers)."""

        def blob(self, oid: str) -> bytes: ...

        def tree_items(self, tree_id: str) -> builtins.list[tuple[str, str, str]]: ...


BLOB_INFO_LIMIT: Final = 200_000
"""Blobs whose size and description are kept; the table starts over beyond it."""


class _Folder:
    """A subfolder inside a cached folder listing: its tree id and path prefix."""

    __slots__ = ("prefix", "tree_id")

    def __init__(self, tree_id: str, prefix: str) -> None:
        self.tree_id = tree_id
        self.prefix = prefix


_FolderItems = tuple[_Folder | tuple[FileEntry, ...], ...]


class ReadCache:
    """Sizes and descriptions by blob id, and the listing by tree id (one per mount).

    Races between threads are harmless: each field is replaced whole, and every
    value is a pure function of the ids it is keyed by.
    """

    def __init__(self) -> None:
        self.blob_info: dict[str, tuple[int, str | None]] = {}
        self._listing: tuple[str, list[FileEntry]] | None = None
        self._folders: dict[tuple[str, str], _FolderItems] = {}

    def forget_content(self) -> None:
        """Drop everything cached about files, after history was erased."""
        self.blob_info = {}
        self._listing = None
        self._folders = {}

    def info(self, repo: TreeSource, fmt: FileFormat, oid: str) -> tuple[int, str | None]:
        """The size and description of blob ``oid``, read once."""
        cache = self.blob_info
        info = cache.get(oid)
        if info is None:
            data = repo.blob(oid)
            info = (len(data), describe_stored(decode_stored(data), fmt))
            if len(cache) >= BLOB_INFO_LIMIT:
                cache.clear()
            cache[oid] = info
        return info

    def listing(self, repo: TreeSource, fmt: FileFormat, tree_id: str, prefix: str = "") -> builtins.list[FileEntry]:
        """Every file under tree ``tree_id`` in path order; only folders not seen before are read.

        With ``prefix`` (``"dir/"``), ``tree_id`` is that folder's tree and the paths start
        with it: the files of one folder, read without the rest of the memory. Such a
        listing reuses the folders seen before but does not replace the cached listing.
        """
        if prefix:
            found: builtins.list[FileEntry] = []
            self._list_folder(repo, fmt, tree_id, prefix, self._folders, {}, found)
            return found
        cached = self._listing
        if cached is not None and cached[0] == tree_id:
            return list(cached[1])
        entries: list[FileEntry] = []
        seen: dict[tuple[str, str], _FolderItems] = {}
        self._list_folder(repo, fmt, tree_id, "", self._folders, seen, entries)
        self._folders = seen
        self._listing = (tree_id, entries)
        return list(entries)

    def _list_folder(
        self,
        repo: TreeSource,
        fmt: FileFormat,
        tree_id: str,
        prefix: str,
        known: dict[tuple[str, str], _FolderItems],
        seen: dict[tuple[str, str], _FolderItems],
        out: builtins.list[FileEntry],
    ) -> None:
        """Append the files under one folder to ``out``, reusing folders listed before.

        A tree id names a folder's whole content, so after a write only the folders
        on the written path are read again; the rest come from ``known``. ``seen``
        collects the folders of this listing and replaces the cache, which so never
        outgrows the memory. Items are runs of files and subfolders, in git order.
        """
        key = (tree_id, prefix)
        items = known.get(key)
        if items is None:
            built: list[_Folder | tuple[FileEntry, ...]] = []
            run: list[FileEntry] = []
            for name, kind, oid in repo.tree_items(tree_id):
                if kind == "tree":
                    if run:
                        built.append(tuple(run))
                        run = []
                    built.append(_Folder(oid, f"{prefix}{name}/"))
                elif kind == "blob":
                    size, description = self.info(repo, fmt, oid)
                    run.append(FileEntry(f"{prefix}{name}", oid, size, description))
            if run:
                built.append(tuple(run))
            items = tuple(built)
        seen[key] = items
        for item in items:
            if isinstance(item, _Folder):
                self._list_folder(repo, fmt, item.tree_id, item.prefix, known, seen, out)
            else:
                out.extend(item)

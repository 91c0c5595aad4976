"""``ls`` and ``cat`` of a memory's ``main`` without opening its store: the CLI's quick read path.

A CLI call is a whole process, and opening a store imports pygit2 and gitmem's
engines, which costs more than the read itself (docs/benchmarks.md, "CLI
start-up"). These two reads go through :class:`gitmem.git.peek.Peek` instead,
which reads the same refs and objects with ``zlib``, and fall back to the store
(:meth:`gitmem.root.Root.mount`) whenever the peek declines
(:class:`~gitmem.git.peek.CannotPeek`): the answers, and every error, are the
store's own. ``tests/test_quickread.py`` holds the two paths to the same output.

Only ``main`` is read here: a run's proposal (``--run``) and older revisions
(``--rev``) go to the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import decode_stored, validate_path
from gitmem.git.mountconfig import format_from_repo, kind_from_repo
from gitmem.git.peek import CannotPeek, Peek
from gitmem.gitcache import ReadCache
from gitmem.model import FileEntry, FileText, MountKind

if TYPE_CHECKING:
    from gitmem.root import Root


def require_file_memory(name: str, kind: MountKind) -> None:
    """``wrong_kind`` unless memory ``name`` is a file memory: record, session and durable
    memories keep files with rules of their own, so the file commands leave them alone."""
    if kind != "file":
        raise MemoryStoreError("wrong_kind", f"memory {name!r} is a {kind} memory; the file commands only use file memories")


def list_files(root: Root, name: str) -> list[FileEntry]:
    """Every file of file memory ``name`` at ``main``, as :meth:`SyncGitFileStore.list` lists them."""
    path = root.existing_folder(name)
    try:
        peek = Peek(path)
        require_file_memory(name, kind_from_repo(peek))
        head = peek.head()
        fmt = format_from_repo(peek)
        return ReadCache().listing(peek, fmt, peek.tree_of(head))
    except CannotPeek:
        store = root.mount(name).sync
        require_file_memory(name, store.kind)
        return store.list()


def read_file(root: Root, name: str, file: str) -> FileText:
    """File ``file`` of file memory ``name`` at ``main``, as :meth:`SyncGitFileStore.read` reads it."""
    path = root.existing_folder(name)
    try:
        peek = Peek(path)
        require_file_memory(name, kind_from_repo(peek))
        head = peek.head()
        fmt = format_from_repo(peek)
        file = validate_path(file, fmt)
        found = peek.read_at(head, file)
    except CannotPeek:
        store = root.mount(name).sync
        require_file_memory(name, store.kind)
        return store.read(file)
    if found is None:
        raise MemoryStoreError("not_found", f"{file} does not exist")
    return FileText(file, decode_stored(found[1]), found[0])

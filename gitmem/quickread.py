"""``ls`` and ``cat`` of a memory's ``main`` without opening its store: the CLI's quick read path.

A CLI call is a whole process, and opening a store imports pygit2 and gitmem's
engines, which costs more than the read itself (docs/benchmarks.md, "CLI
start-up"). These two reads go through :class:`gitmem.git.peek.Peek` instead,
which reads the same refs and objects with ``zlib``, and fall back to the store
(:meth:`gitmem.root.Root.mount`) whenever the peek declines
(:class:`~gitmem.git.peek.CannotPeek`): the answers, and every error, are the
store's own. ``tests/test_quickread.py`` holds the two paths to the same output.

A listing needs every file's size and description, so every blob of the memory
would be inflated and parsed on each ``ls``. Instead the last listing is kept in
``<repo>/gitmem/derived/listing`` (see :func:`list_files`), keyed by what makes it:
the tree id of ``main``, the memory's limits and the code that describes files.

Only ``main`` is read here: a run's proposal (``--run``) and older revisions
(``--rev``) go to the store.

``grep`` is answered here too (:func:`search`) by ``git grep`` over the peek while
the mount's index is small (:data:`GREP_INDEX_BYTES`) or absent: a new process that
asked the index would pay for importing pygit2 and Whoosh and decoding every
segment's signatures before the index saved it one blob, which ``git grep`` reads
faster up to a few tens of thousands of files; the index pays in processes that keep
it open (the MCP server, the Python API). A grep never starts an indexer: ``find``,
which ranks with the index, builds it (see :func:`find`).
"""

from __future__ import annotations

import os

from gitmem import derived
from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat, decode_stored, validate_path
from gitmem.git.mountconfig import format_from_repo, kind_from_repo
from gitmem.git.peek import CannotPeek, Peek, sha1
from gitmem.gitcache import ReadCache
from gitmem.localfile import MB, read_local_text, replace_file
from gitmem.model import FileEntry, FileText

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Final, TypeVar

    from gitmem.gitstore import SyncGitFileStore
    from gitmem.index import FindHit
    from gitmem.model import MountKind, SearchResult
    from gitmem.root import Root

    _A = TypeVar("_A")

#: The mount's folder of derived content caches (``gitstore.DERIVED_DIR``, which purge and
#: forget delete); spelled out here because importing the store would import pygit2.
DERIVED_DIR: Final = "gitmem/derived"
LISTING_FILE: Final = "listing"
#: The mount's index folder (:func:`gitmem.index.source.index_folder`, a test holds them equal):
#: spelled out so that a grep with an index does not import the index's module to learn it.
INDEX_DIR: Final = "gitmem/index"
#: Bytes of index files from which a grep of ``main`` in a new process asks the index
#: (through the store) rather than ``git grep``: below it, reading every blob of
#: ``main`` costs less than importing pygit2 and Whoosh and decoding the signatures of
#: every segment, which grows with the files too (about 1.7 kB of index a 500-byte
#: note; the two cost the same near 50k such files, 85 MB: docs/benchmarks.md,
#: "Cold starts and growth"). Either way the answer is the same.
GREP_INDEX_BYTES: Final = 64 * MB
_GENERATION: Final = "gitmem/generation"
_LISTING_TAG: Final = "gitmem-listing/1"


def require_file_memory(name: str, kind: MountKind) -> None:
    """``wrong_kind`` unless memory ``name`` is a file memory: record, session and durable
    memories keep files with rules of their own, so the file commands leave them alone."""
    if kind != "file":
        raise MemoryStoreError("wrong_kind", f"memory {name!r} is a {kind} memory; the file commands only use file memories")


def list_files(root: Root, name: str, prefix: str = "") -> list[FileEntry]:
    """Every file of file memory ``name`` at ``main`` (under folder ``prefix``, ``""`` or ``"dir/"``),
    as :meth:`SyncGitFileStore.list` lists them (those whose path starts with ``prefix``).

    One folder costs what the folder holds: only the trees on its path and its own
    files are read (:func:`_list_folder`), never the listing file, which describes
    the whole memory and takes longer to load than a folder of a large memory takes
    to read (docs/benchmarks.md, "Cold starts and growth").

    The whole memory's answer is read from the listing file when that was made for this very tree
    (a tree id names its whole content, so a new head can never be answered from an
    old listing), else built from the objects and saved for the next call; a listing
    of an earlier head still gives the size and description of every blob it holds
    (a blob id names its content), so after a write only the new blobs are read. The
    file is derived state: deleting it costs one slower ``ls``, never a wrong answer.
    """
    path = root.existing_folder(name)
    try:
        peek = Peek(path)
        require_file_memory(name, kind_from_repo(peek))
        if prefix:
            return _list_folder(peek, prefix)
        seen = derived.Generation.read(os.path.join(peek.path, _GENERATION))  # before the head: see _save
        fmt = format_from_repo(peek)
        tree = peek.tree_of(peek.head())
        made = _made_under(fmt)
        saved = None if made is None else _load(peek.path, made)
        if saved is not None and saved[0] == tree:
            return saved[1]
        cache = ReadCache()
        if saved is not None:
            cache.blob_info = {e.version: (e.size, e.description) for e in saved[1]}
        entries = cache.listing(peek, fmt, tree)
        if made is not None:
            _save(peek.path, made, tree, entries, seen)
        return entries
    except CannotPeek:
        store = root.mount(name).sync
        require_file_memory(name, store.kind)
        return [e for e in store.list() if e.path.startswith(prefix)]


def _list_folder(peek: Peek, prefix: str) -> list[FileEntry]:
    """The files under folder ``prefix`` at ``main``: none when there is no such folder."""
    fmt = format_from_repo(peek)
    tree = peek.folder_at(peek.head(), prefix)
    if tree is None:
        return []
    return ReadCache().listing(peek, fmt, tree, prefix)


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


def search(
    root: Root, name: str, pattern: str, *, regex: bool, case_sensitive: bool, path: str, limit: int
) -> SearchResult:
    """grep of file memory ``name`` at ``main``, as :meth:`SyncGitFileStore.search` answers it.

    Without the store (:func:`_search_over_peek`) when the mount's index is absent or
    smaller than :data:`GREP_INDEX_BYTES` and ``git grep`` can print the lines: the
    store's answer does not depend on the index, only its cost does. A larger index,
    no ``git`` to ask, or anything the peek declines goes to the store.
    """
    return _peek_or_store(
        root,
        name,
        lambda peek: _search_over_peek(peek, pattern, regex=regex, case_sensitive=case_sensitive, path=path, limit=limit),
        lambda store: store.search(pattern, regex=regex, case_sensitive=case_sensitive, path=path, limit=limit),
    )


def _peek_or_store(
    root: Root, name: str, over_peek: Callable[[Peek], _A | None], in_store: Callable[[SyncGitFileStore], _A]
) -> _A:
    """``over_peek``'s answer for file memory ``name``; when it (or the peek) declines, ``in_store``'s.

    The store's call runs with the detached indexer allowed: a missing or lagging index
    is built or caught up by a process that outlives this one.
    """
    folder = root.existing_folder(name)
    try:
        peek = Peek(folder)
        require_file_memory(name, kind_from_repo(peek))
        answer = over_peek(peek)
    except CannotPeek:
        answer = None
    if answer is not None:
        return answer
    store = root.mount(name).sync
    require_file_memory(name, store.kind)
    from gitmem.index import background

    with background.detached():
        return in_store(store)


def _index_bytes(repo: str) -> int | None:
    """Bytes of the mount's index files; ``None`` when it has no index folder."""
    try:
        with os.scandir(os.path.join(repo, INDEX_DIR)) as entries:
            return sum(e.stat().st_size for e in entries if e.is_file(follow_symlinks=False))
    except FileNotFoundError:
        return None
    except OSError:  # unreadable: the store says what that means
        return GREP_INDEX_BYTES


def _search_over_peek(
    peek: Peek, pattern: str, *, regex: bool, case_sensitive: bool, path: str, limit: int
) -> SearchResult | None:
    """:meth:`SyncGitFileStore.search` over the peek, as :func:`search` says when; ``None``: ask the store.

    ``git grep`` prints the lines that may match (every line, for a pattern the index
    cannot narrow) and the store's own matcher decides each
    (:class:`gitmem.index.fallback.GitLines`), so no blob is read in Python. No git,
    git failing part way, or a literal that is not plain ASCII: the store answers.
    """
    from gitmem.fileformat import validate_directory
    from gitmem.grep import check_limit, compile_pattern
    from gitmem.index.needles import Lit, literal_need, regex_need

    fmt = format_from_repo(peek)
    matcher = compile_pattern(pattern, regex=regex, case_sensitive=case_sensitive)  # the store's order of refusals
    prefix = validate_directory(path, fmt)
    limit = check_limit(limit)
    indexed = _index_bytes(peek.path)
    if indexed is not None and indexed >= GREP_INDEX_BYTES:
        return None
    need = (regex_need(pattern, case_sensitive) if regex else literal_need(pattern)) or Lit("")
    from gitmem.index.fallback import GitLines

    lines = GitLines.start(peek.path, peek.head(), need, prefix)
    return None if lines is None else lines.answer(matcher, limit)


def find(root: Root, name: str, query: str, *, path: str, limit: int) -> list[FindHit]:
    """Ranked search of file memory ``name`` at ``main``, as :meth:`SyncGitFileStore.find` answers it.

    Without the store when the mount's index is current (stamped with the head):
    the store would then only read the committed index (:meth:`MountIndex.find`,
    whose catch-up finds nothing to do) and the ranked blobs, which the peek reads
    too, so pygit2 and the store's imports are left out. Any other case (no index,
    one that lags, is being built or cannot be read, a refusal, anything the peek
    declines) goes to the store, which catches up or ranks without the index.
    """
    return _peek_or_store(
        root,
        name,
        lambda peek: _find_current(peek, query, path, limit),
        lambda store: store.find(query, path=path, limit=limit),
    )


def _find_current(peek: Peek, query: str, path: str, limit: int) -> list[FindHit] | None:
    """:meth:`MountIndex.find` of a current index over the peek; ``None``: ask the store
    (which also makes every refusal: anything unusual is left to it)."""
    from gitmem.fileformat import validate_directory

    if not query.strip() or not 1 <= limit <= 1000 or not os.path.isdir(os.path.join(peek.path, INDEX_DIR)):
        return None
    try:
        prefix = validate_directory(path, format_from_repo(peek))
    except MemoryStoreError:
        return None
    from gitmem.index import engine
    from gitmem.index.results import FindHit, snippet

    terms = engine.words(query)
    if not terms:
        return None
    head = peek.head()
    try:
        ix = engine.open_index(os.path.join(peek.path, INDEX_DIR))
        if ix is None:
            return None
        with engine.searching(ix) as searcher:
            meta = engine.read_meta(searcher, {})
            if meta is None or meta.format != engine.FORMAT or meta.commit != head:
                return None
            ranked = engine.ranked(searcher, terms, prefix, limit)
    except Exception:  # unreadable, or replaced under us: the store says what it means
        return None
    return [FindHit(p, score, snippet(decode_stored(peek.blob(version)), terms), version) for p, version, score in ranked]


# -- the listing file --


def _made_under(fmt: FileFormat) -> str | None:
    """What a listing depends on besides the tree: the limits (descriptions are cut to them)
    and the code that builds it (an upgraded gitmem may describe files differently), by its
    files' stats, with the Unicode version its whitespace rules follow; ``None`` (keep no
    listing) when that code is not in files."""
    import unicodedata

    from gitmem import fileformat, gitcache

    code = []
    for module in (fileformat, gitcache):
        try:
            st = os.stat(module.__file__ or "")
        except OSError:
            return None
        code.append(f"{st.st_size}.{st.st_mtime_ns}")
    return f"{_LISTING_TAG} {'/'.join(code)} unicode-{unicodedata.unidata_version} {fmt!r}"


def _load(repo: str, made: str) -> tuple[str, list[FileEntry]] | None:
    """The saved listing and its tree id if it was made under ``made`` and is whole (its
    checksum matches), else ``None``."""
    try:
        text = read_local_text(os.path.join(repo, DERIVED_DIR, LISTING_FILE), 512 * MB)
        if text is None:
            return None
        saved, tree, checksum, body = text.split("\n", 3)
        if saved != made or sha1(f"{tree}\n{body}".encode()).hexdigest() != checksum:
            return None
        fields = body.split("\0")
        if len(fields) % 4 != 1 or fields[-1]:
            return None
        return tree, [
            FileEntry(fields[at], fields[at + 1], int(fields[at + 2]), fields[at + 3][1:] if fields[at + 3] else None)
            for at in range(0, len(fields) - 1, 4)
        ]
    except (OSError, ValueError):  # absent, unreadable, cut short or not ours: build it again
        return None


def _save(repo: str, made: str, tree: str, entries: list[FileEntry], seen: derived.Generation) -> None:
    """Replace the listing file (atomically; a failure only means no file).

    It holds descriptions, which ``purge`` and ``forget`` must erase: they move the refs,
    prune, bump the generation stamp and then delete :data:`DERIVED_DIR`. A listing
    built from the old head may be saved after that deletion; the stamp, read before
    the head and again after the save (:func:`gitmem.derived.publish`, the rule every
    derived file follows), then differs and the file is removed here. The
    file is only written by the mount's owner, so the owner's purge can always delete it.
    """
    # Four fields a file, each ended by NUL (which no tree entry name holds); a description
    # is marked "+" (``None`` is empty). A description with a NUL is rare enough not to keep.
    if any(e.description is not None and "\0" in e.description for e in entries):
        return
    body = "".join(f"{e.path}\0{e.version}\0{e.size}\0{'' if e.description is None else '+' + e.description}\0" for e in entries)
    try:
        checksum = sha1(f"{tree}\n{body}".encode()).hexdigest()
    except UnicodeEncodeError:
        return
    text = f"{made}\n{tree}\n{checksum}\n{body}"
    folder = os.path.join(repo, DERIVED_DIR)
    target = os.path.join(folder, LISTING_FILE)
    try:
        if os.stat(os.path.join(repo, "gitmem")).st_uid != os.geteuid():
            return
        derived.publish(seen, target, lambda folder, name: _replace_or_remove(folder, name, text))
    except OSError:
        pass  # no listing saved: a failed write removed the old one in the folder it checked


def _replace_or_remove(folder: int, name: str, text: str) -> None:
    """Replace the listing ``name`` in ``folder`` (a descriptor); when that fails, remove the old one there.

    Removed through the descriptor, as it was written: by its path, a folder swapped for a
    link after the check would have the file of that name wherever the link led removed.
    """
    try:
        replace_file(name, text, dir_fd=folder)
    except OSError:
        try:
            os.unlink(name, dir_fd=folder)
        except OSError:
            pass
        raise

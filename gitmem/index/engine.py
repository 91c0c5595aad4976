"""The Whoosh side of a mount's index: the only module that imports whoosh.

One Whoosh index per mount. Each file is one document:

- ``key``  (ID, unique): a hash of the path, so any path (even one plain git
  wrote with bytes that are not UTF-8) can be replaced or deleted by term;
- ``path`` (ID): the path as text, for prefix filters in ranked search;
- ``file`` (column): the blob id and the path, read back for every candidate;
- ``sig``  (column): the trigram signature (:mod:`gitmem.index.grams`);
- ``body``, ``name`` (TEXT): words of the content and of the path, for BM25.

One more document (``key == "meta"``) holds, in its ``file`` column, the commit
the index reflects and the index format. It is written in the same Whoosh commit
as the files, so a reader always sees a file set and the commit it belongs to
together.

Signatures are loaded once per Whoosh segment and process (segments never
change after they are written; only their deletion sets do), so a search costs
a pass over in-memory signatures, not a pass over the index files.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
import threading
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass
from typing import Any

from whoosh import columns, fields
from whoosh.analysis import Filter, LowercaseFilter, RegexTokenizer, StopFilter
from whoosh.filedb.filestore import FileStorage, RamStorage
from whoosh.filedb.structfile import StructFile
from whoosh.index import EmptyIndexError, FileIndex
from whoosh.index import LockError as WhooshLockError
from whoosh.query import Or, Prefix, Query, Term
from whoosh.searching import Searcher
from whoosh.util.filelock import FcntlLock

from gitmem.git.perms import make_private_dir
from gitmem.index.grams import grams_of, probe, signature, text_grams
from gitmem.index.needles import All, AnyOf, Lit, Need
from gitmem.index.source import Broken, Busy
from gitmem.localfile import open_local, open_private

__all__ = ["Broken", "Busy"]  # defined without whoosh (gitmem.index.source), raised here

FORMAT = 3  # bump when the schema or the signature changes: old indexes are rebuilt
META_KEY = "meta"

# Words for ranked search: runs of word characters; runs of CJK characters
# (scripts that do not separate words with spaces) become overlapping bigrams.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK}]+")


class CJKBigrams(Filter):  # type: ignore[misc]
    def __call__(self, tokens: Iterator[Any]) -> Iterator[Any]:
        for token in tokens:
            text = token.text
            # The tokenizer yields pure CJK runs or runs without CJK: the first character tells.
            if len(text) > 2 and _CJK_RUN.match(text[0]):
                for i in range(len(text) - 1):
                    token.text = text[i : i + 2]
                    yield token
            else:
                yield token


WORDS = RegexTokenizer(rf"[{_CJK}]+|[^\W{_CJK}]+") | LowercaseFilter() | StopFilter(minsize=1) | CJKBigrams()


SCHEMA = fields.Schema(
    key=fields.ID(unique=True),
    path=fields.ID(),
    file=fields.COLUMN(columns.VarBytesColumn()),
    sig=fields.COLUMN(columns.VarBytesColumn()),
    body=fields.TEXT(analyzer=WORDS, phrase=False),
    name=fields.TEXT(analyzer=WORDS, phrase=False, field_boost=2.0),
)


@dataclass(frozen=True, slots=True)
class Meta:
    commit: str
    format: int


@dataclass(frozen=True, slots=True)
class Stats:
    documents: int
    deleted: int
    segments: int


@dataclass(slots=True)
class SizeClass:
    """The signatures of one length in a segment, back to back, for column-wise tests."""

    nbytes: int
    docnums: list[int]
    packed: bytes
    everyone: int  # a 0x01 byte per document, as an int: the start of every test


@dataclass(slots=True)
class SegmentData:
    """What a search needs from one segment, decoded once."""

    files: list[tuple[str, str] | None]  # docnum -> (path, blob id)
    classes: list[SizeClass]
    metas: dict[int, Meta]  # docnum -> the commit stamp stored in that document


SegmentCache = dict[str, SegmentData]


def path_key(path: str) -> str:
    return hashlib.sha1(path.encode("utf-8", "surrogatepass"), usedforsecurity=False).hexdigest()


def path_text(path: str) -> str:
    """The path as Whoosh can store it (odd bytes from plain git become U+FFFD)."""
    return path.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _file_value(path: str, version: str) -> bytes:
    return (version + path).encode("utf-8", "surrogatepass")


def _meta_value(commit: str) -> bytes:
    return f"\0{commit} {FORMAT}".encode()


def _read_meta_value(value: bytes) -> Meta | None:
    commit, _, fmt = value[1:].decode("ascii", "replace").partition(" ")
    return Meta(commit, int(fmt)) if fmt.isdigit() else None


def _read_file_value(value: bytes) -> tuple[str, str]:
    text = value.decode("utf-8", "surrogatepass")
    return text[40:], text[:40]


def file_document(path: str, version: str, text: str) -> dict[str, Any]:
    grams = text_grams(text)
    shown = path_text(path)
    return {
        "key": path_key(path),
        "path": shown,
        "file": _file_value(path, version),
        "sig": signature(grams, len(grams)),
        "body": text,
        "name": _name_words(shown),
    }


def _name_words(shown: str) -> str:
    return shown.replace("/", " ").replace(".", " ").replace("-", " ")


# -- opening --


class _Storage(FileStorage):  # type: ignore[misc]
    """A FileStorage that reads segments in place and closes what a failed Whoosh call left open.

    Without mmap: Whoosh maps a segment's compound file, then wraps each part it
    opens (posting and term tables, columns) in a ``BytesIO`` of the mapped bytes,
    a copy of the whole part, so every process that opened the index held a copy
    of all of it (~80 MB at 100k files). Read from the open file, each part costs
    what a search reads of it (columns in blocks: :func:`_values`).

    Whoosh does not close a file when reading it fails (a damaged TOC or
    segment), and the leaked file would surface later as a ResourceWarning.
    Calls made inside :meth:`guard` record the files they open; when the call
    fails, those are closed before the error travels on.
    """

    def __init__(self, path: str) -> None:
        super().__init__(path, supports_mmap=False)
        self._opened = threading.local()

    def open_file(self, name: str, **kwargs: Any) -> Any:
        # Through the one opener: a link or FIFO planted among the segments is refused (OSError),
        # the index reads as broken and is rebuilt, instead of a read outside the mount or a hang.
        handle = StructFile(os.fdopen(open_local(self._fpath(name)), "rb"), name=name, **kwargs)
        opened: list[Any] | None = getattr(self._opened, "files", None)
        if opened is not None:
            opened.append(handle)
        return handle

    def create_file(self, name: str, excl: bool = False, mode: str = "wb", **kwargs: Any) -> Any:
        flags = os.O_RDWR | os.O_CREAT | (os.O_EXCL if excl else os.O_TRUNC)
        return StructFile(os.fdopen(open_private(self._fpath(name), flags), mode), name=name, **kwargs)

    def lock(self, name: str) -> Any:
        return _IndexFileLock(self._fpath(name))

    @contextmanager
    def guard(self) -> Iterator[None]:
        outer: list[Any] | None = getattr(self._opened, "files", None)
        mine: list[Any] = []
        self._opened.files = mine
        try:
            yield
        except BaseException:
            for handle in mine:
                if not handle.is_closed:
                    with suppress(Exception):
                        handle.close()
            raise
        finally:
            self._opened.files = outer


class _IndexFileLock(FcntlLock):  # type: ignore[misc]
    """Whoosh's write lock, its file opened without following a link or blocking on a FIFO."""

    def acquire(self, blocking: bool = False) -> bool:
        import fcntl

        fd = open_private(self.filename, os.O_CREAT | os.O_WRONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            return False
        self.fd, self.locked = fd, True
        return True


def _guard(ix: FileIndex) -> AbstractContextManager[None]:
    storage = ix.storage
    return storage.guard() if isinstance(storage, _Storage) else nullcontext()


def open_index(directory: str) -> FileIndex | None:
    """The index in ``directory``; ``None`` when there is none, :class:`Broken` when unreadable.

    A link in place of the folder is :class:`Broken` too: segments written through it would
    land wherever it points (the rebuild, :func:`create_index`, puts a real folder there).
    """
    if os.path.islink(directory):
        raise Broken(f"{directory} is a link, not the index's folder")
    if not os.path.isdir(directory):
        return None
    storage = _Storage(directory)
    try:
        with storage.guard():
            return FileIndex(storage, schema=SCHEMA)
    except EmptyIndexError:
        if os.listdir(directory):
            raise Broken(f"{directory} holds files but no index") from None
        return None
    except Exception as exc:
        raise Broken(f"cannot open the index in {directory}: {exc!r}") from exc


def create_index(directory: str) -> FileIndex:
    """An empty index in ``directory``, after removing whatever was there.

    Removing the folder (not just Whoosh's files) clears garbage and leaves
    nothing of erased content behind in old segment files.
    """
    if os.path.lexists(directory):
        if os.path.isdir(directory) and not os.path.islink(directory):
            shutil.rmtree(directory)
        else:
            os.unlink(directory)
    make_private_dir(directory, parents=True)
    storage = _Storage(directory)
    return FileIndex.create(storage, SCHEMA)


def _searcher(ix: FileIndex) -> Searcher:
    """A searcher of the last commit of ``ix``, opening each segment once.

    Read without mmap, each segment reader holds its segment's file open. Whoosh's
    own ``ix.searcher()`` retries when a segment vanishes under it (a rebuild or
    merge elsewhere) and drops the readers it had opened without closing them:
    here a failure closes them, and the caller answers without the index.
    """
    from whoosh.reading import MultiReader, SegmentReader

    toc = ix._read_toc()
    if not toc.segments:
        return ix.searcher()  # Whoosh's empty reader: no file to hold
    readers: list[Any] = []
    try:
        for segment in toc.segments:
            readers.append(SegmentReader(ix.storage, toc.schema, segment, generation=toc.generation))
    except BaseException:
        for reader in readers:
            reader.close()
        raise
    if len(readers) == 1:
        return Searcher(readers[0], fromindex=ix)
    return Searcher(MultiReader(readers, generation=toc.generation), fromindex=ix)


@contextmanager
def searching(ix: FileIndex) -> Iterator[Searcher]:
    try:
        with _guard(ix):
            searcher = _searcher(ix)
    except Exception as exc:
        raise Broken(f"cannot read the index: {exc!r}") from exc
    try:
        yield searcher
    finally:
        searcher.close()


def read_meta(searcher: Searcher, cache: SegmentCache) -> Meta | None:
    """The commit stamp of what ``searcher`` sees (``None`` for an index without one)."""
    docnum = searcher.document_number(key=META_KEY)
    if docnum is None:
        return None
    for reader, base in searcher.reader().leaf_readers():
        if base <= docnum < base + reader.doc_count_all():
            data = cache.get(reader.segment().segment_id())
            if data is not None:
                return data.metas.get(docnum - base)
            # One value, not the segment: a find (or a new process) may never need its signatures.
            value = reader.column_reader("file", translate=False)[docnum - base]
            return _read_meta_value(value) if value[:1] == b"\0" else None
    return None


def written(ix: FileIndex) -> Stats:
    """The counts of a rebuild's index from its table of contents, without opening a segment.

    Opening a Whoosh segment reads its postings and term table into memory (the
    compound file's parts are copied out of its map), so the status a rebuild
    reports must not open them all just to count: it would be the rebuild's peak.
    The stamp document is counted out, as in :func:`stats`.
    """
    with _guard(ix):
        segments = ix._segments()
    total = sum(segment.doc_count_all() for segment in segments)
    deleted = sum(segment.deleted_count() for segment in segments)
    return Stats(max(0, total - deleted - 1), deleted, len(segments))


def stats(searcher: Searcher) -> Stats:
    reader = searcher.reader()
    total = reader.doc_count_all()
    live = reader.doc_count()
    segments = sum(1 for _ in reader.leaf_readers())
    has_meta = searcher.document_number(key=META_KEY) is not None
    return Stats(max(0, live - int(has_meta)), total - live, segments)


# -- writing --


@contextmanager
def writing(ix: FileIndex) -> Iterator[Any]:
    """Whoosh's writer for the block; cancelled unless the block committed it.

    :class:`Busy` when Whoosh's own lock is held (only possible from outside
    gitmem, since gitmem writers hold the index flock first).
    """
    try:
        with _guard(ix):
            writer = ix.writer()
    except WhooshLockError:
        raise Busy("the Whoosh write lock is held") from None
    try:
        yield writer
    finally:
        if not writer.is_closed:
            writer.cancel()


def stamp(ix: FileIndex, writer: Any, cache: SegmentCache) -> tuple[Meta | None, int]:
    """The commit stamp and live document count of what ``writer`` starts from."""
    try:
        with _guard(ix):
            searcher = writer.searcher()  # kept by the writer, reused by its updates
    except Exception as exc:
        raise Broken(f"cannot read the index: {exc!r}") from exc
    return read_meta(searcher, cache), searcher.doc_count()


def apply(
    writer: Any,
    documents: Iterable[dict[str, Any] | str],
    commit: str | None,
    *,
    fresh: bool = False,
    merge: bool = True,
) -> None:
    """Apply documents (a dict to add or replace, a path to delete), stamp ``commit``, commit.

    Everything lands in one Whoosh commit. ``fresh`` marks a rebuild into an
    empty index (plain adds are enough). When deletions pile up in old segments
    the commit merges everything, so queries do not slow down over time.
    ``commit=None`` writes no stamp (a rebuild's batches before the last);
    ``merge=False`` leaves the segments as they are (each rebuild batch is one).
    """
    for doc in documents:
        if isinstance(doc, str):
            writer.delete_by_term("key", path_key(doc))
        elif fresh:
            writer.add_document(**doc)
        else:
            writer.update_document(**doc)
    if commit is not None:
        # A fresh index has no stamp to replace: an update would look the key up in every
        # segment a rebuild has written so far, opening (and copying into memory) each one.
        stamp_doc = writer.add_document if fresh else writer.update_document
        stamp_doc(key=META_KEY, file=_meta_value(commit))
    if not merge:
        writer.commit(merge=False)
        return
    deleted = sum(segment.deleted_count() for segment in writer.segments)
    total = sum(segment.doc_count_all() for segment in writer.segments)
    writer.commit(optimize=deleted > 64 and deleted * 4 > total)


# -- grep candidates --


def _segment(reader: Any, cache: SegmentCache) -> SegmentData:
    segid = reader.segment().segment_id()
    data = cache.get(segid)
    if data is None:
        data = cache[segid] = _segment_data(reader)
    return data


_READ_DOCS = 4096  # column values read from the segment file at once


def _values(column: Any) -> Iterator[bytes]:
    """The values of a Whoosh bytes column in document order, read a few thousand at a time.

    Whoosh's reader reads each value on its own (a seek and a read through
    three file layers: ~2 us, 0.4 s for the two columns of 100k files). Its
    values lie back to back from ``_basepos``, with their lengths in
    ``_lengths``; a reader without those (an empty column) is iterated as Whoosh does.
    """
    lengths = getattr(column, "_lengths", None)
    source = getattr(column, "_dbfile", None)
    pos = getattr(column, "_basepos", None)
    if lengths is None or source is None or not isinstance(pos, int):
        yield from column
        return
    for start in range(0, len(lengths), _READ_DOCS):
        sizes = lengths[start : start + _READ_DOCS]
        block = source.get(pos, sum(sizes))
        at = 0
        for size in sizes:
            yield block[at : at + size]
            at += size
        pos += at


def _segment_data(reader: Any) -> SegmentData:
    files: list[tuple[str, str] | None] = []
    metas: dict[int, Meta] = {}
    by_size: dict[int, tuple[list[int], list[bytes]]] = {}
    file_col = _values(reader.column_reader("file", translate=False))
    sig_col = _values(reader.column_reader("sig", translate=False))
    for docnum, (value, sig) in enumerate(zip(file_col, sig_col, strict=True)):
        entry = None
        if value[:1] == b"\0":
            meta = _read_meta_value(value)
            if meta is not None:
                metas[docnum] = meta
        elif len(value) >= 40:
            entry = _read_file_value(value)
        files.append(entry)
        if sig and entry is not None:
            docnums, sigs = by_size.setdefault(len(sig), ([], []))
            docnums.append(docnum)
            sigs.append(sig)
    classes = [
        SizeClass(nbytes, docnums, b"".join(sigs), int.from_bytes(b"\1" * len(docnums), "little"))
        for nbytes, (docnums, sigs) in by_size.items()
    ]
    return SegmentData(files, classes, metas)


_TABLES: dict[int, bytes] = {}


def _table(bits: int) -> bytes:
    """A ``bytes.translate`` table: a byte with all of ``bits`` set becomes 1, any other 0."""
    table = _TABLES.get(bits)
    if table is None:
        table = _TABLES[bits] = bytes(1 if (b & bits) == bits else 0 for b in range(256))
    return table


def _allows(need: Need, group: SizeClass) -> int:
    """Which documents of ``group`` may satisfy ``need``: byte ``i`` of the result is 1 for the ``i``-th.

    Each probed signature byte is read for all documents at once (a strided
    slice), mapped to 0/1 by ``translate`` and combined as one big integer, so
    the cost is a few passes at C speed rather than a Python loop per file.
    """
    if isinstance(need, Lit):
        found = group.everyone
        packed, step = group.packed, group.nbytes
        for index, bits in probe(grams_of(need.text), step):
            found &= int.from_bytes(packed[index::step].translate(_table(bits)), "little")
            if not found:
                break
        return found
    if isinstance(need, All):
        found = group.everyone
        for part in need.parts:
            found &= _allows(part, group)
        return found
    assert isinstance(need, AnyOf)
    found = 0
    for part in need.parts:
        found |= _allows(part, group)
    return found


def candidates(searcher: Searcher, need: Need, prefix: str, cache: SegmentCache) -> list[tuple[str, str]]:
    """Files under ``prefix`` whose signature allows ``need``, as ``(path, blob id)``.

    ``cache`` keeps decoded segments between calls; ids of segments that are
    gone are dropped from it.
    """
    found: list[tuple[str, str]] = []
    live: set[str] = set()
    for reader, _base in searcher.reader().leaf_readers():
        live.add(reader.segment().segment_id())
        data = _segment(reader, cache)
        deletions = reader.has_deletions()
        for group in data.classes:
            flags = _allows(need, group).to_bytes(len(group.docnums), "little")
            at = flags.find(1)
            while at >= 0:
                docnum = group.docnums[at]
                entry = data.files[docnum]
                if entry is not None and entry[0].startswith(prefix) and not (deletions and reader.is_deleted(docnum)):
                    found.append(entry)
                at = flags.find(1, at + 1)
    for stale in [k for k in list(cache) if k not in live]:  # list(): other threads share the cache
        cache.pop(stale, None)
    return found


# -- ranked search --


def words(query: str) -> list[str]:
    """The distinct search words of ``query``, as the index stores them."""
    seen: dict[str, None] = {}
    for token in WORDS(query):
        seen.setdefault(token.text, None)
    return list(seen)


def ranked(searcher: Searcher, terms: list[str], prefix: str, limit: int) -> list[tuple[str, str, float]]:
    """The best ``limit`` files for ``terms`` by BM25F, as ``(path, indexed blob id, score)``."""
    query: Query = Or([Term(field, t) for t in terms for field in ("body", "name")])
    restrict = Prefix("path", path_text(prefix)) if prefix else None
    results = searcher.search(query, limit=limit, filter=restrict)
    file_col = searcher.reader().column_reader("file", translate=False)
    out: list[tuple[str, str, float]] = []
    for hit in results:
        value = file_col[hit.docnum]
        if len(value) >= 40:
            path, version = _read_file_value(value)
            out.append((path, version, float(hit.score or 0.0)))
    return out


class _InMemory(RamStorage):  # type: ignore[misc]
    """A :class:`RamStorage` whose writer's temporary files stay in memory too.

    Whoosh's own puts them in ``<tmp>/MAIN.tmp`` (named after the index, so the
    same folder for every process on the machine) and deletes that folder when a
    writer ends: two processes ranking at once (two ``find`` calls on a mount
    without its index) failed with ``FileNotFoundError`` in whichever ended second.
    """

    def temp_storage(self, name: str | None = None) -> RamStorage:
        return RamStorage()


def rank_files(
    files: Iterable[tuple[str, str, str]], terms: list[str], prefix: str, limit: int
) -> list[tuple[str, str, float]]:
    """:func:`ranked` over ``(path, blob id, text)`` files that no mount index holds (a proposal's).

    They go into a throwaway in-memory index with the mount index's schema, so
    the scores are the same BM25F over the same words; no trigram signatures are
    made, as nothing greps this index.
    """
    files = list(files)
    if not files:  # an empty Whoosh index has no columns to read
        return []
    ix = _InMemory().create_index(SCHEMA)
    writer = ix.writer()
    for path, version, text in files:
        shown = path_text(path)
        writer.add_document(
            key=path_key(path), path=shown, file=_file_value(path, version), body=text, name=_name_words(shown)
        )
    writer.commit()
    with ix.searcher() as searcher:
        return ranked(searcher, terms, prefix, limit)

"""GitFileStore: the store contract on one bare git repository.

A file's version is its blob id, a cursor is a commit id, and every change is one
commit on ``refs/heads/main`` made by :meth:`gitmem.git.repo.GitRepo.transact`.
The sync core (:class:`SyncGitFileStore`) does the work and can be used directly;
:class:`GitFileStore` runs it off the event loop for the async seam.
"""

from __future__ import annotations

import asyncio
import builtins
import os
import re
import threading
from datetime import datetime
from typing import NamedTuple

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import (
    DEFAULT_FORMAT,
    FileFormat,
    decode_stored,
    describe_stored,
    encode_text,
    validate_directory,
    validate_path,
)
from gitmem.git import history as git_history
from gitmem.git import review as git_review
from gitmem.git import rewrite as git_rewrite
from gitmem.git.repo import MAIN, GitRepo, Plan, Snapshot, set_durable, translate_errors
from gitmem.grep import check_limit, compile_pattern, scan
from gitmem.history import BlameLine, FileDiff, ForgetReport, FsckReport, GcReport, LogEntry
from gitmem.index import FindHit, IndexStatus, MountIndex
from gitmem.model import Changes, FileEntry, FileText, FullResync, Origin, SearchResult, blob_version
from gitmem.provenance import commit_message
from gitmem.store import check_capacity, check_destination, check_existing, check_expected, file_dir_conflict

_HEX40 = re.compile(r"^[0-9a-f]{40}$")
_CACHE_LIMIT = 200_000

# Mount settings live in the repo's own config, so the CLI, hooks and server agree.
_CONFIG_KEYS: dict[str, str] = {
    "max_file_bytes": "gitmem.maxFileBytes",
    "max_description_chars": "gitmem.maxDescriptionChars",
    "max_frontmatter_bytes": "gitmem.maxFrontmatterBytes",
    "max_path_bytes": "gitmem.maxPathBytes",
    "check_secrets": "gitmem.checkSecrets",
    "max_files": "gitmem.maxFiles",
    "max_memory_bytes": "gitmem.maxMemoryBytes",
}


def format_to_config(fmt: FileFormat) -> dict[str, str]:
    out: dict[str, str] = {}
    for field, key in _CONFIG_KEYS.items():
        value = getattr(fmt, field)
        if value is None or value == getattr(DEFAULT_FORMAT, field):
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def format_from_repo(repo: GitRepo) -> FileFormat:
    values: dict[str, object] = {}
    for field, key in _CONFIG_KEYS.items():
        raw = repo.config_get(key)
        if raw is None:
            continue
        if field == "check_secrets":
            values[field] = raw.strip().lower() not in ("false", "no", "off", "0")
        else:
            values[field] = int(raw)
    return FileFormat(**values)  # type: ignore[arg-type]


def _check_shape(snap: Snapshot, path: str) -> None:
    """Refuse a new file where a folder is, or below a file."""
    entry = snap.get(path)
    if entry is not None and entry.kind == "tree":
        raise file_dir_conflict(path, is_file=False)
    parts = path.split("/")
    for i in range(1, len(parts)):
        above = snap.get("/".join(parts[:i]))
        if above is not None and above.kind != "tree":
            raise file_dir_conflict(path, is_file=True)


class _Folder(NamedTuple):
    """A subfolder inside a cached folder listing: its tree id and path prefix."""

    tree_id: str
    prefix: str


class SyncGitFileStore:
    """The synchronous store core over one bare repo; safe across threads and processes.

    ``run`` binds the store to one agent run (see :meth:`for_run`): it reads that
    run's proposal branch while the review gate holds one, and attributes every
    change to the run.
    """

    def __init__(self, repo: GitRepo, fmt: FileFormat, run: str | None = None) -> None:
        self.repo = repo
        self.format = fmt
        self.run = run
        self._blob_info: dict[str, tuple[int, str | None]] = {}
        self._listing: tuple[str, list[FileEntry]] | None = None
        self._folders: dict[tuple[str, str], tuple[_Folder | tuple[FileEntry, ...], ...]] = {}
        self._listing_lock = threading.Lock()

    @property
    def path(self) -> str:
        return self.repo.path

    # -- reads --

    def head(self) -> str:
        with translate_errors(self.path):
            return self._read_head()

    # -- the review gate (see gitmem.git.review) --

    def for_run(self, run_id: str) -> SyncGitFileStore:
        """This memory as run ``run_id`` sees it: its own proposal while one is under review.

        Everyone else keeps reading ``main``. Writes through the returned store carry
        the run id; with the review gate on they go to ``refs/heads/proposals/<run>``
        (a run id that cannot name a branch is then refused with ``forbidden``).
        """
        return SyncGitFileStore(self.repo, self.format, run_id)

    def _read_head(self) -> str:
        if self.run is not None and git_review.names_a_proposal(self.run):
            proposal = self.repo.ref_target(git_review.PROPOSALS + self.run)
            if proposal is not None:
                return proposal
        return self.repo.head()

    def _reading_proposal(self, head: str) -> bool:
        return self.run is not None and head != self.repo.head()

    def _origin(self, origin: Origin | None) -> Origin:
        origin = origin or Origin()
        if self.run is not None and origin.run_id != self.run:
            origin = Origin(self.run, origin.principal_id, origin.tool_call_id)
        return origin

    def _target(self, origin: Origin) -> str:
        """The ref a change lands on: ``main``, or the run's proposal when the gate is on."""
        if origin.run_id is not None and git_review.gate_enabled(self.repo):
            return git_review.proposal_ref(origin.run_id)
        return MAIN

    def _info(self, oid: str) -> tuple[int, str | None]:
        info = self._blob_info.get(oid)
        if info is None:
            data = self.repo.blob(oid)
            info = (len(data), describe_stored(decode_stored(data), self.format))
            if len(self._blob_info) >= _CACHE_LIMIT:
                self._blob_info.clear()
            self._blob_info[oid] = info
        return info

    def list(self) -> list[FileEntry]:
        with translate_errors(self.path):
            head = self._read_head()
            tree_id = str(self.repo.tree_of(head).id)
            cached = self._listing
            if cached is not None and cached[0] == tree_id:
                return list(cached[1])
            entries: list[FileEntry] = []
            seen: dict[tuple[str, str], tuple[_Folder | tuple[FileEntry, ...], ...]] = {}
            self._list_folder(tree_id, "", self._folders, seen, entries)
            self._folders = seen
            self._listing = (tree_id, entries)
            return list(entries)

    def _list_folder(
        self,
        tree_id: str,
        prefix: str,
        known: dict[tuple[str, str], tuple[_Folder | tuple[FileEntry, ...], ...]],
        seen: dict[tuple[str, str], tuple[_Folder | tuple[FileEntry, ...], ...]],
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
            for name, kind, oid in self.repo.tree_items(tree_id):
                if kind == "tree":
                    if run:
                        built.append(tuple(run))
                        run = []
                    built.append(_Folder(oid, f"{prefix}{name}/"))
                elif kind == "blob":
                    size, description = self._info(oid)
                    run.append(FileEntry(f"{prefix}{name}", oid, size, description))
            if run:
                built.append(tuple(run))
            items = tuple(built)
        seen[key] = items
        for item in items:
            if isinstance(item, _Folder):
                self._list_folder(item.tree_id, item.prefix, known, seen, out)
            else:
                out.extend(item)

    def read(self, path: str, rev: str | None = None) -> FileText:
        path = validate_path(path, self.format)
        with translate_errors(self.path):
            commit = self._read_head() if rev is None else self._resolve(rev)
            found = self.repo.read_at(commit, path)
        if found is None:
            where = "" if rev is None else f" at {rev}"
            raise MemoryStoreError("not_found", f"{path} does not exist{where}")
        return FileText(path, decode_stored(found[1]), found[0])

    def _resolve(self, rev: str) -> str:
        with translate_errors(self.path):
            commit = self.repo.resolve(rev) if isinstance(rev, str) else None
        if commit is None:
            raise MemoryStoreError("not_found", f"no commit {rev!r} in this memory")
        return commit

    def search(
        self,
        pattern: str,
        *,
        regex: bool = False,
        case_sensitive: bool = False,
        path: str = "",
        limit: int = 100,
    ) -> SearchResult:
        matcher = compile_pattern(pattern, regex=regex, case_sensitive=case_sensitive)
        prefix = validate_directory(path, self.format)
        limit = check_limit(limit)
        with translate_errors(self.path):
            head = self._read_head()
            if self._reading_proposal(head):  # the index follows main; a proposal is scanned
                files = list(self.repo.files_at(head, prefix))
            else:
                # The index only narrows which files are read; scan decides every line.
                files = self.index.files_for(
                    pattern, regex=regex, case_sensitive=case_sensitive, prefix=prefix, head=head
                )
            return scan(((p, decode_stored(self.repo.blob(oid))) for p, oid in files), matcher, limit)

    def changes(self, since: str | None) -> Changes | FullResync:
        with translate_errors(self.path):
            head = self._read_head()
            if not isinstance(since, str) or not _HEX40.match(since):
                return FullResync(head)
            if since == head:
                return Changes(head, ())
            if not self.repo.is_commit(since) or not self.repo.descendant_of(head, since):
                return FullResync(head)
            return Changes(head, self.repo.changed_paths(since, head))

    # -- writes --

    def _current(self, snap: Snapshot, path: str) -> FileText | None:
        entry = snap.get(path)
        if entry is None or entry.kind != "blob":
            return None
        return FileText(path, decode_stored(snap.data(entry.oid)), entry.oid)

    def _capacity(self, snap: Snapshot, path: str, creating: bool, new_size: int, old_size: int) -> None:
        fmt = self.format
        if fmt.max_files is None and fmt.max_memory_bytes is None:
            return
        if creating:
            # A file/folder collision is the answer even when the memory is full (as in the twin).
            _check_shape(snap, path)
        files = list(self.repo.files_at(snap.head))
        total = sum(self._info(oid)[0] for _, oid in files) if fmt.max_memory_bytes is not None else 0
        check_capacity(
            path,
            creating=creating,
            files=len(files),
            total_bytes=total,
            new_size=new_size,
            old_size=old_size,
            max_files=fmt.max_files,
            max_bytes=fmt.max_memory_bytes,
        )

    def write(self, path: str, text: str, *, expected: str | None, origin: Origin | None = None) -> str:
        path = validate_path(path, self.format)
        data = encode_text(text, self.format)
        origin = self._origin(origin)

        def plan(snap: Snapshot) -> Plan | None:
            current = self._current(snap, path)
            check_expected(path, current, expected)
            oid = snap.write_blob(data)
            if current is not None and current.version == oid:
                return None
            old_size = current.size if current is not None else 0
            self._capacity(snap, path, current is None, len(data), old_size)
            op = "create" if current is None else "edit"
            return Plan(((path, oid),), op, (path,), origin, result=oid)

        _, used = self.repo.transact(plan, ref=self._target(origin))
        if used is None:
            return blob_version(data)
        assert used.result is not None
        return used.result

    def move(self, source: str, destination: str, *, expected: str, origin: Origin | None = None) -> str:
        source = validate_path(source, self.format)
        destination = validate_path(destination, self.format)
        origin = self._origin(origin)

        def plan(snap: Snapshot) -> Plan:
            current = check_existing(source, self._current(snap, source), expected)
            check_destination(destination, self._current(snap, destination))
            edits = ((source, None), (destination, current.version))
            return Plan(edits, "move", (source, destination), origin, result=current.version)

        _, used = self.repo.transact(plan, ref=self._target(origin))
        assert used is not None and used.result is not None
        return used.result

    def delete(self, path: str, *, expected: str, origin: Origin | None = None) -> None:
        path = validate_path(path, self.format)
        origin = self._origin(origin)

        def plan(snap: Snapshot) -> Plan:
            check_existing(path, self._current(snap, path), expected)
            return Plan(((path, None),), "delete", (path,), origin)

        self.repo.transact(plan, ref=self._target(origin))

    def purge(self, origin: Origin | None = None) -> None:
        git_rewrite.purge(self.repo, commit_message("purge", (), origin or Origin()))
        self._listing = None

    # -- history and admin: see gitmem.git.history and gitmem.git.rewrite --

    def log(
        self,
        path: str | None = None,
        *,
        run: str | None = None,
        principal: str | None = None,
        tool_call: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        limit: int = 100,
    ) -> builtins.list[LogEntry]:
        return git_history.log(
            self.repo, self.format, path, run=run, principal=principal, tool_call=tool_call, since=since, until=until, limit=limit
        )

    def show(self, rev: str, path: str) -> FileText:
        return git_history.show(self.repo, self.format, rev, path)

    def diff(self, a: str, b: str | None = None, path: str | None = None) -> builtins.list[FileDiff]:
        return git_history.diff(self.repo, self.format, a, b, path)

    def blame(self, path: str, rev: str | None = None) -> builtins.list[BlameLine]:
        return git_history.blame(self.repo, self.format, path, rev)

    def restore(self, path: str, rev: str, *, expected: str | None, origin: Origin | None = None) -> str | None:
        return git_history.restore(self.repo, self.format, path, rev, expected=expected, origin=origin)

    def revert(self, commit: str, *, origin: Origin | None = None) -> str | None:
        return git_history.revert(self.repo, self.format, commit, origin=origin)

    def forget(self, path: str, *, origin: Origin | None = None) -> ForgetReport:
        return git_rewrite.forget(self.repo, self.format, path, origin=origin)

    def fsck(self) -> FsckReport:
        return git_rewrite.fsck(self.repo)

    def gc(self) -> GcReport:
        return git_rewrite.gc(self.repo)

    # -- the search index (a projection of git, see gitmem.index) --

    _index: MountIndex | None = None
    _index_guard = threading.Lock()

    @property
    def index(self) -> MountIndex:
        if self._index is None:
            with self._index_guard:
                if self._index is None:
                    self._index = MountIndex(self.repo)
        return self._index

    def find(self, query: str, *, path: str = "", limit: int = 10) -> builtins.list[FindHit]:
        """Files ranked by BM25F over the words of ``query``, with a snippet each."""
        prefix = validate_directory(path, self.format)
        with translate_errors(self.path):
            return self.index.find(query, prefix=prefix, limit=limit)

    def index_status(self) -> IndexStatus:
        with translate_errors(self.path):
            return self.index.status()

    def rebuild_index(self) -> IndexStatus:
        with translate_errors(self.path):
            return self.index.rebuild()


class GitFileStore:
    """The async store over a bare git repository (see :class:`SyncGitFileStore`).

    >>> store = GitFileStore.init("memories/user.git")   # doctest: +SKIP
    >>> await store.write("prefs/language.md", "Reply in Chinese.\\n", expected=None)  # doctest: +SKIP
    """

    def __init__(self, sync: SyncGitFileStore) -> None:
        self.sync = sync

    @classmethod
    def init(
        cls, path: str | os.PathLike[str], fmt: FileFormat | None = None, *, durable: bool = False
    ) -> GitFileStore:
        """Create a new memory at ``path`` (a bare repo with an empty root commit).

        ``durable=True`` makes every commit fsync its objects and ref before the
        write returns. libgit2 has one switch for the whole process, so this turns
        it on for every store in the process, and no store turns it off again.
        """
        if durable:
            set_durable(True)
        fmt = fmt or DEFAULT_FORMAT
        repo = GitRepo.init(os.fspath(path), config=format_to_config(fmt))
        return cls(SyncGitFileStore(repo, fmt))

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], fmt: FileFormat | None = None, *, durable: bool = False
    ) -> GitFileStore:
        """Open an existing memory; ``memory_deleted`` when it is gone.

        Without ``fmt`` the limits saved in the repo's config apply; ``durable`` is
        as for :meth:`init` (process-wide fsync of objects and refs).
        """
        if durable:
            set_durable(True)
        repo = GitRepo.open(os.fspath(path))
        return cls(SyncGitFileStore(repo, fmt or format_from_repo(repo)))

    @property
    def path(self) -> str:
        return self.sync.path

    @property
    def format(self) -> FileFormat:
        return self.sync.format

    def for_run(self, run_id: str) -> GitFileStore:
        """This memory as run ``run_id`` sees it (see :meth:`SyncGitFileStore.for_run`)."""
        return GitFileStore(self.sync.for_run(run_id))

    def __repr__(self) -> str:
        return f"GitFileStore({self.path!r})"

    async def list(self) -> list[FileEntry]:
        return await asyncio.to_thread(self.sync.list)

    async def read(self, path: str) -> FileText:
        return await asyncio.to_thread(self.sync.read, path)

    async def write(self, path: str, text: str, *, expected: str | None, origin: Origin | None = None) -> str:
        return await asyncio.to_thread(lambda: self.sync.write(path, text, expected=expected, origin=origin))

    async def move(self, source: str, destination: str, *, expected: str, origin: Origin | None = None) -> str:
        return await asyncio.to_thread(lambda: self.sync.move(source, destination, expected=expected, origin=origin))

    async def delete(self, path: str, *, expected: str, origin: Origin | None = None) -> None:
        await asyncio.to_thread(lambda: self.sync.delete(path, expected=expected, origin=origin))

    async def changes(self, since: str | None) -> Changes | FullResync:
        return await asyncio.to_thread(self.sync.changes, since)

    async def purge(self) -> None:
        await asyncio.to_thread(self.sync.purge)

    async def search(
        self,
        pattern: str,
        *,
        regex: bool = False,
        case_sensitive: bool = False,
        path: str = "",
        limit: int = 100,
    ) -> SearchResult:
        return await asyncio.to_thread(
            lambda: self.sync.search(pattern, regex=regex, case_sensitive=case_sensitive, path=path, limit=limit)
        )

    # -- history and admin (the sync core does the work) --

    async def log(
        self,
        path: str | None = None,
        *,
        run: str | None = None,
        principal: str | None = None,
        tool_call: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        limit: int = 100,
    ) -> builtins.list[LogEntry]:
        return await asyncio.to_thread(
            lambda: self.sync.log(
                path, run=run, principal=principal, tool_call=tool_call, since=since, until=until, limit=limit
            )
        )

    async def show(self, rev: str, path: str) -> FileText:
        return await asyncio.to_thread(self.sync.show, rev, path)

    async def diff(self, a: str, b: str | None = None, path: str | None = None) -> builtins.list[FileDiff]:
        return await asyncio.to_thread(self.sync.diff, a, b, path)

    async def blame(self, path: str, rev: str | None = None) -> builtins.list[BlameLine]:
        return await asyncio.to_thread(self.sync.blame, path, rev)

    async def restore(self, path: str, rev: str, *, expected: str | None, origin: Origin | None = None) -> str | None:
        return await asyncio.to_thread(lambda: self.sync.restore(path, rev, expected=expected, origin=origin))

    async def revert(self, commit: str, *, origin: Origin | None = None) -> str | None:
        return await asyncio.to_thread(lambda: self.sync.revert(commit, origin=origin))

    async def forget(self, path: str, *, origin: Origin | None = None) -> ForgetReport:
        return await asyncio.to_thread(lambda: self.sync.forget(path, origin=origin))

    async def fsck(self) -> FsckReport:
        return await asyncio.to_thread(self.sync.fsck)

    async def gc(self) -> GcReport:
        return await asyncio.to_thread(self.sync.gc)

    async def find(self, query: str, *, path: str = "", limit: int = 10) -> builtins.list[FindHit]:
        return await asyncio.to_thread(lambda: self.sync.find(query, path=path, limit=limit))

    async def index_status(self) -> IndexStatus:
        return await asyncio.to_thread(self.sync.index_status)

    async def rebuild_index(self) -> IndexStatus:
        return await asyncio.to_thread(self.sync.rebuild_index)

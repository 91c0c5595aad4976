"""The store contract on one bare git repository: :class:`SyncGitFileStore` and its async face.

A file's version is its blob id, a cursor is a commit id, and every change is one
commit on ``refs/heads/main`` (or a run's proposal branch under the review gate):
each write becomes a checked batch (:mod:`gitmem.store`) that
:func:`gitmem.git.engine.commit_batch` turns into one commit (lock, snapshot,
plan, trees, pack, ref compare-and-swap, fold: all in that module). :class:`SyncGitFileStore` is the store
(it implements the sync seam's protocols); :class:`GitFileStore` is the same
store awaited, every call run in a worker thread by :mod:`gitmem.aio`. The read
cache lives in :mod:`gitmem.gitcache`, the run views in :mod:`gitmem.runviews`,
the mount config codec in :mod:`gitmem.git.mountconfig`.
"""

from __future__ import annotations

import builtins
import os
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from gitmem.git.erasureaudit import Audit
    from gitmem.git.erasures import Entry
    from gitmem.index import FindHit, IndexStatus, MountIndex
    from gitmem.model import SearchResult  # a grep's (gitmem.grep): reads that do not search never load it

from gitmem.aio import AsyncFace, threaded
from gitmem.errors import MemoryStoreError
from gitmem.fileformat import (
    DEFAULT_FORMAT,
    FileFormat,
    decode_stored,
    validate_directory,
    validate_path,
)
from gitmem.git import history as git_history
from gitmem.git.mountconfig import format_from_repo, kind_from_repo, new_mount_config
from gitmem.git.perms import make_private_dir
from gitmem.git.refs import MAIN
from gitmem.git.repo import GitRepo, lookup, translate_errors
from gitmem.git.snapshot import Done
from gitmem.gitcache import ReadCache
from gitmem.history import BlameLine, FileDiff, ForgetReport, FsckReport, GcReport, LogEntry
from gitmem.model import (
    Applied,
    Changes,
    Edit,
    FileEntry,
    FileText,
    FullResync,
    MountKind,
    Origin,
    blob_version,
    is_object_id,
)
from gitmem.provenance import check_identity_extras, commit_message
from gitmem.runviews import RunViews
from gitmem.store import (
    Batch,
    BatchFileStore,
    Decision,
    HistoryStore,
    RunScopedStore,
    SearchableFileStore,
    applied,
    apply_batch,
    delete_batch,
    move_batch,
    moved,
    write_only_batch,
    written_version,
)

#: Local caches of content kept beside the repository by layers above the store (e.g.
#: session memory's catalogue): derived, never committed, deleted by purge and forget.
DERIVED_DIR = "gitmem/derived"
_NAMED_DERIVED = ("session-stats", "durable-ledger.sqlite3", "durable-ledger.sqlite3-wal", "durable-ledger.sqlite3-shm")


def make_private_parents(path: str) -> None:
    """Create the missing folders above ``path`` owner-only (``0700``), outermost first.

    A memory's own folder is ``0700`` (:mod:`gitmem.git.perms`); folders made on the
    way to it are gitmem's too, and a permissive umask must not leave them
    group- or world-writable (the SDK's local-filesystem memory tool makes every
    folder it creates owner-only as well). Folders that exist are left as they are.
    """
    missing: builtins.list[str] = []
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.isdir(folder):
        missing.append(folder)
        above = os.path.dirname(folder)
        if above == folder:
            break
        folder = above
    try:
        for folder in reversed(missing):
            make_private_dir(folder)
    except OSError as exc:
        raise MemoryStoreError("unavailable", f"cannot create the folders for {path}: {exc}") from exc


_T = TypeVar("_T")
_HEAD_ATTEMPTS = 3
"""Times a read is made on a head that a purge or forget moved while it read (:meth:`SyncGitFileStore._at_head`)."""

# The write engine, the review gate, history rewrites and the bulk reader are imported
# by the calls that use them: a read command of the CLI (grep, log, blame, changes...)
# opens a store in a new process each time, and need not load the code of writes.


class _Shared:
    """What a store and its run views share: the read cache, the index and the views.

    The index describes ``main`` only (a proposal's search scans), so one serves them all.
    """

    def __init__(self) -> None:
        self.cache = ReadCache()
        self.runs: RunViews[SyncGitFileStore] = RunViews()
        self.index_guard = threading.Lock()
        self.index: MountIndex | None = None


class SyncGitFileStore:
    """The synchronous store core over one bare repo; safe across threads and processes.

    ``run`` binds the store to one agent run (see :meth:`for_run`): it reads that
    run's proposal branch while the review gate holds one, and attributes every
    change to the run.
    """

    def __init__(
        self,
        repo: GitRepo,
        fmt: FileFormat,
        run: str | None = None,
        *,
        shared: _Shared | None = None,
        propose: bool = False,
    ) -> None:
        self.repo = repo
        self.format = fmt
        self.run = run
        self.propose = propose and run is not None
        self._shared = shared or _Shared()

    @classmethod
    def init(
        cls,
        path: str | os.PathLike[str],
        fmt: FileFormat | None = None,
        *,
        durable: bool = False,
        kind: MountKind = "file",
    ) -> SyncGitFileStore:
        """Create a new memory at ``path`` (a bare repo with an empty root commit).

        ``kind`` says what the mount holds (files, records, session items or
        durable nodes); it is saved in the config and never changes.

        ``durable=True`` makes the mount durable (``gitmem.durable`` in its config):
        every commit, by any process, fsyncs its objects and ref before the write
        returns (:meth:`gitmem.git.repo.GitRepo.set_durable`).
        """
        fmt = fmt or DEFAULT_FORMAT
        config = new_mount_config(fmt, kind)
        make_private_parents(os.fspath(path))
        repo = GitRepo.init(os.fspath(path), config=config)
        if durable:
            repo.set_durable(True)
        return cls(repo, fmt)

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], fmt: FileFormat | None = None, *, durable: bool = False
    ) -> SyncGitFileStore:
        """Open an existing memory; ``memory_deleted`` when it is gone.

        Without ``fmt`` the limits saved in the repo's config apply. ``durable=True``
        makes the mount durable, as for :meth:`init`, if it is not already;
        ``False`` (the default) leaves the mount's setting as it is.
        """
        repo = GitRepo.open(os.fspath(path))
        if durable and not repo.durable():
            repo.set_durable(True)
        return cls(repo, fmt or format_from_repo(repo))

    @property
    def durable(self) -> bool:
        """Whether this mount is durable: every write fsyncs before it returns (``gitmem.durable``)."""
        return self.repo.durable()

    def set_durable(self, enabled: bool = True) -> None:
        """Make the mount durable, for every process that writes it (``gitmem config NAME gitmem.durable true``)."""
        self.repo.set_durable(enabled)

    def __repr__(self) -> str:
        return f"SyncGitFileStore({self.path!r})"

    @property
    def path(self) -> str:
        return self.repo.path

    @property
    def generation_file(self) -> str:
        """The stamp purge and forget rewrite: writers of derived files check it (:mod:`gitmem.derived`)."""
        return os.path.join(self.repo.path, "gitmem", "generation")

    @property
    def kind(self) -> MountKind:
        """What this mount holds (``gitmem.kind`` in its config; fixed at init)."""
        return kind_from_repo(self.repo)

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

        Agents ask for this on every tool call, so the view is kept (a few dozen
        runs per store) and shares this store's caches and index: only the head
        it reads and the origin it writes with differ.
        """
        if run_id == self.run:
            return self
        return self._shared.runs.get(
            run_id,
            fits=lambda view: view.format is self.format,
            make=lambda: SyncGitFileStore(self.repo, self.format, run_id, shared=self._shared),
        )

    def proposing(self, run_id: str) -> SyncGitFileStore:
        """Run ``run_id``'s view whose writes always go to ``refs/heads/proposals/<run>``, gate or no gate.

        For a writer that may only propose (a ``propose`` token of ``gitmem serve``):
        nothing it writes reaches ``main`` until a reviewer approves it.
        """
        from gitmem.git import review as git_review

        git_review.check_run_id(run_id)
        return SyncGitFileStore(self.repo, self.format, run_id, shared=self._shared, propose=True)

    def _read_head(self) -> str:
        return self._proposal_head() or self.repo.head()

    def _proposal_head(self) -> str | None:
        """The head of this run's proposal when it has one; ``None``: this view reads ``main``."""
        if self.run is None:
            return None
        from gitmem.git import review as git_review

        if git_review.names_a_proposal(self.run):
            return git_review.proposal_head(self.repo, self.run)
        return None

    def _origin(self, origin: Origin | None) -> Origin:
        origin = origin or Origin()
        if self.run is not None and origin.run_id != self.run:
            origin = Origin(self.run, origin.principal_id, origin.tool_call_id)
        return origin

    def _target(self, origin: Origin) -> str:
        """The ref a change lands on: ``main``, or the run's proposal when the gate is on."""
        if origin.run_id is None:
            return MAIN
        from gitmem.git import review as git_review

        if self.propose or git_review.gate_enabled(self.repo):
            return git_review.proposal_ref(origin.run_id)
        return MAIN

    def _size(self, oid: str) -> int:
        return self._shared.cache.info(self.repo, self.format, oid)[0]

    def _at_head(
        self, rev: str | None, work: Callable[[str], _T], failed: tuple[str, MemoryStoreError] | None = None
    ) -> _T:
        """``work`` on the commit ``rev`` names (default: the head), read again when an object went missing.

        A read takes the head, then reads objects of that commit without the
        writer lock, so two things can take objects from under it. A purge or
        forget deletes them and moves the head: the read is made again on the
        new head (a few times at most). A pack rewrite in another process (a
        fold, ``git gc`` or ``git repack -ad``) deletes the packs this handle
        knows after writing one it does not, and libgit2's rescan of the pack
        folder can miss the new one while the old names vanish: the head did
        not move, so the read is made once more on a reopened handle before
        ``unavailable`` stands (what a damaged repository still gets).
        ``failed``: the caller's own first try, on that commit, and its ``unavailable``.
        """
        reopened = False
        attempt = 0
        while True:
            if failed is None:
                with translate_errors(self.path):
                    commit = self._read_head() if rev is None else self._resolve(rev)
                try:
                    with translate_errors(self.path):
                        return work(commit)
                except MemoryStoreError as exc:
                    if exc.code != "unavailable":
                        raise
                    error = exc
            else:
                (commit, error), failed = failed, None
            with translate_errors(self.path):
                moved = rev is None and self._read_head() != commit
            attempt += 1
            if moved and attempt < _HEAD_ATTEMPTS:
                continue
            if reopened or moved:
                raise error
            self.repo.reopen()
            reopened = True

    def list(self) -> builtins.list[FileEntry]:
        return self._at_head(
            None, lambda head: self._shared.cache.listing(self.repo, self.format, self.repo.tree_id_of(head))
        )

    def read(self, path: str, rev: str | None = None) -> FileText:
        path = validate_path(path, self.format)
        at_head = rev is None and self.run is None  # the commit comes from GitRepo.head just before
        if at_head:  # the agent's read of main, in one step (an object gone missing: _at_head goes on)
            try:
                found = self.repo.read_main(path)
            except MemoryStoreError as exc:
                if exc.code != "unavailable":
                    raise
                commit = self.repo.last_head()  # the head it read on, if it got that far
                failed = None if commit is None else (commit, exc)
                found = self._at_head(None, lambda head: self.repo.read_at(head, path, at_head=True), failed)
        else:
            found = self._at_head(rev, lambda commit: self.repo.read_at(commit, path))
        if found is None:
            where = "" if rev is None else f" at {rev}"
            raise MemoryStoreError("not_found", f"{path} does not exist{where}")
        return FileText(path, decode_stored(found[1]), found[0])

    def read_under(self, prefix: str = "", rev: str | None = None) -> builtins.list[FileText]:
        """Every file under folder ``prefix`` at ``rev`` (default: the head), as :meth:`read` would return it.

        One walk of the tree instead of a lookup per path: what rebuilding a
        derived index (recall) over thousands of files needs. A path that
        :meth:`read` would refuse (pushed by another git client) is left out.
        """
        from gitmem.git import bulk as git_bulk

        folder = validate_directory(prefix, self.format)

        def under(commit: str) -> builtins.list[FileText]:
            out: builtins.list[FileText] = []
            for path, oid, data in git_bulk.files_under(self.repo, commit, folder):
                try:
                    valid = validate_path(path, self.format) == path
                except MemoryStoreError:
                    valid = False
                if valid:
                    out.append(FileText(path, decode_stored(data), oid))
            return out

        return self._at_head(rev, under)

    def link_at(self, path: str) -> str | None:
        """The symbolic link or submodule (pushed with plain git) at ``path`` or at a folder above it.

        No read or write goes through such an entry (reads answer ``not_found``,
        writes ``invalid_path``); adapters ask this only to tell the user why.
        """
        parts = validate_path(path, self.format).split("/")
        with translate_errors(self.path):
            tree = self.repo.tree_of(self._read_head())
            for end in range(1, len(parts) + 1):
                at = "/".join(parts[:end])
                entry = lookup(tree, at)
                if entry is None or entry.kind == "blob":
                    return None
                if entry.kind == "other":
                    return at
        return None

    def snapshot(self, rev: str | None = None) -> tuple[str, builtins.list[tuple[str, str]]]:
        """The commit ``rev`` names (default: the head this view reads) and its files as ``(path, version)``.

        Paths are in sorted order. With :meth:`raw` this copies a memory out byte for
        byte (``gitmem export``): a file pushed with plain git may hold bytes that a
        text read (:meth:`read`) shows replaced. ``not_found`` when ``rev`` names no commit.
        """
        commit = self.head() if rev is None else self._resolve(rev)
        with translate_errors(self.path):
            return commit, sorted(self.repo.files_at(commit))

    def raw(self, version: str) -> bytes:
        """The exact bytes of file version ``version`` (a blob id from :meth:`list` or :meth:`snapshot`)."""
        with translate_errors(self.path):
            return self.repo.blob(version)

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
        from gitmem.grep import check_limit, compile_pattern, scan  # a search's: other reads never load it

        matcher = compile_pattern(pattern, regex=regex, case_sensitive=case_sensitive)
        prefix = validate_directory(path, self.format)
        limit = check_limit(limit)
        with translate_errors(self.path):
            head = self._read_head()
            if self.run is not None and head != self.repo.head():  # the index follows main; a proposal is scanned
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
            if not isinstance(since, str) or not is_object_id(since):
                return FullResync(head)
            if since == head:
                return Changes(head, ())
            paths = self.repo.changes_since(since, head)
            return FullResync(head) if paths is None else Changes(head, paths)

    # -- writes: every one is a checked batch committed by gitmem.git.engine --

    def _commit(self, batch: Batch, origin: Origin | None) -> Done[Decision | None]:
        from gitmem.git import engine

        origin = self._origin(origin)
        return engine.commit_batch(
            self.repo, self.format, batch, origin=origin, ref=self._target(origin), size_of=self._size
        )

    def write(self, path: str, text: str, *, expected: str | None, origin: Origin | None = None) -> str:
        batch = write_only_batch(path, text, expected, self.format)
        return written_version(batch, self._commit(batch, origin).result)

    def move(self, source: str, destination: str, *, expected: str, origin: Origin | None = None) -> str:
        return self.move_many([(source, destination, expected)], origin=origin)[0]

    def delete(self, path: str, *, expected: str, origin: Origin | None = None) -> None:
        self.delete_many([(path, expected)], origin=origin)

    def move_many(self, pairs: Sequence[tuple[str, str, str]], *, origin: Origin | None = None) -> builtins.list[str]:
        """Move each ``(source, destination, expected)`` in ONE commit, all or nothing.

        For a folder rename: any stale source (``version_mismatch``), taken
        destination (``already_exists``) or folder/file collision
        (``invalid_path``) refuses the whole batch and nothing moves. Returns
        the files' versions, in order. An empty batch changes nothing.
        """
        return moved(self._commit(move_batch(pairs, self.format), origin).result)

    def delete_many(self, items: Sequence[tuple[str, str]], *, origin: Origin | None = None) -> None:
        """Delete each ``(path, expected)`` in ONE commit, or nothing if any file is not at its version."""
        self._commit(delete_batch(items, self.format), origin)

    def apply(
        self,
        edits: Sequence[Edit],
        *,
        origin: Origin | None = None,
        op: str = "apply",
        summary: str | None = None,
        trailers: Sequence[tuple[str, str]] = (),
    ) -> Applied:
        """Write and delete many files in ONE commit, each under its own expectation, or change nothing.

        Each :class:`~gitmem.model.Edit` sets ``text`` (``None``: delete) if the
        file is at ``expected`` (``ANY``: whatever it holds; ``None``: absent).
        Paths and texts pass the mount's rules first; a failed expectation is
        ``version_mismatch`` carrying the file. The commit's summary is
        ``summary`` (default ``op`` and the paths), its trailers ``Gitmem-Op: op``,
        a ``Gitmem-Path`` per changed file, the origin, then ``trailers``.
        """
        batch = apply_batch(edits, self.format, op=op, summary=summary, trailers=trailers)
        check_identity_extras(batch.trailers, origin or Origin())  # before any I/O; commit_message checks again
        done = self._commit(batch, origin)
        return applied(done.commit, done.result, batch, blob_version)

    def purge(self, origin: Origin | None = None) -> None:
        from gitmem.git import rewrite as git_rewrite

        with self._erasing():
            who = self._origin(origin)
            git_rewrite.purge(self.repo, commit_message("purge", (), who), by=who.principal_id)

    @contextmanager
    def _erasing(self) -> Iterator[None]:
        """Around purge or forget: the index lock first, then delete the index and cached content.

        The index holds the erased words. Its lock is taken before history
        changes (busy for too long: ``unavailable``, nothing changed) and the
        index is deleted before the call returns, however it ends, so no file of
        the mount keeps erased text; the next search rebuilds it from what is left.
        Caches that layers above keep beside the repository live in
        :data:`DERIVED_DIR` and go too.
        """
        with translate_errors(self.path), self.index.erasing():
            try:
                yield
            finally:
                self._shared.cache.forget_content()
                shutil.rmtree(os.path.join(self.path, DERIVED_DIR), ignore_errors=True)
                # Recall snapshots (record memory's, gitmem/recall/) hold texts too; they are rebuilt on demand.
                shutil.rmtree(os.path.join(self.path, "gitmem", "recall"), ignore_errors=True)
                # Names kept beside the repository: session access statistics and the durable ledger
                # of admissions (item and node ids). Their writers follow gitmem.derived.
                for name in _NAMED_DERIVED:
                    with suppress(FileNotFoundError):
                        os.unlink(os.path.join(self.path, "gitmem", name))

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
        """Changes newest first; a run with a proposal sees its own commits on top of the ``main`` it forked from."""
        return git_history.log(
            self.repo,
            self.format,
            path,
            run=run,
            principal=principal,
            tool_call=tool_call,
            since=since,
            until=until,
            limit=limit,
            head=self._proposal_head(),
        )

    def show(self, rev: str, path: str) -> FileText:
        return git_history.show(self.repo, self.format, rev, path)

    def diff(self, a: str, b: str | None = None, path: str | None = None) -> builtins.list[FileDiff]:
        """From ``a`` to ``b``; without ``b``, to the head this store reads (a run's proposal, else ``main``)."""
        return git_history.diff(
            self.repo, self.format, a, b, path, head=None if b is not None else self._proposal_head()
        )

    def blame(self, path: str, rev: str | None = None) -> builtins.list[BlameLine]:
        """Blame at ``rev``, else at the head this store reads (a run's proposal, else ``main``)."""
        return git_history.blame(
            self.repo, self.format, path, rev, head=None if rev is not None else self._proposal_head()
        )

    def restore(
        self, path: str, rev: str, *, expected: str | None, origin: Origin | None = None, delete: bool = False
    ) -> str | None:
        """``path`` back as it was at ``rev``; where it did not exist there, deleted only with ``delete=True``."""
        origin = self._origin(origin)
        ref = self._target(origin)
        return git_history.restore(
            self.repo,
            self.format,
            path,
            rev,
            expected=expected,
            origin=origin,
            ref=ref,
            size_of=self._size,
            delete=delete,
        )

    def revert(self, commit: str, *, origin: Origin | None = None) -> str | None:
        origin = self._origin(origin)
        return git_history.revert(self.repo, self.format, commit, origin=origin, ref=self._target(origin))

    def forget(self, path: str, *, origin: Origin | None = None) -> ForgetReport:
        from gitmem.git import rewrite as git_rewrite

        with self._erasing():
            return git_rewrite.forget(self.repo, self.format, path, origin=origin)

    def fsck(self) -> FsckReport:
        from gitmem.git import rewrite as git_rewrite

        return git_rewrite.fsck(self.repo)

    def forget_erased(self, *, origin: Origin | None = None) -> builtins.list[ForgetReport]:
        """Apply the ledger here: forget every path whose history holds a version it names.

        For a copy that received an erasure made elsewhere (a pull, or a push of
        the ledger to ``gitmem serve``): the names are not readable from the ledger,
        so the paths are found by the erased blob ids. Each path is forgotten whole.
        """
        from gitmem.git import erasureaudit, erasures

        with translate_errors(self.path):
            wanted = erasures.erased_blobs(self.repo.fresh(), self.path)
            paths = erasureaudit.paths_holding(self.path, wanted)
        return [self.forget(path, origin=origin) for path in paths]

    def was_forgotten(self, path: str) -> bool:
        """Whether the erasure ledger records a forget of ``path`` here (by its keyed fingerprint).

        ``forget --remotes`` run after the local forget: the path is no longer in
        history, but the ledger knows it was erased, so only the remotes are left.
        """
        from gitmem.git import erasures

        with translate_errors(self.path):
            mark = erasures.known_fingerprint(self.path, path)
            return mark is not None and mark in erasures.erased_names(self.repo.fresh())

    def check_erasures(self) -> Audit:
        """Proof that what the erasure ledger names is gone from the mount (``gitmem fsck NAME --erasures``)."""
        from gitmem.git import erasureaudit

        with translate_errors(self.path):
            return erasureaudit.audit(self.repo.fresh(), self.path)

    def erasure_ledger(self) -> tuple[Entry, ...]:
        """The erasure ledger, oldest first: what each forget and purge erased (ids and keyed prints only)."""
        from gitmem.git import erasures

        with translate_errors(self.path):
            return erasures.entries(self.repo.fresh())

    def gc(self) -> GcReport:
        from gitmem.git import rewrite as git_rewrite

        return git_rewrite.gc(self.repo)

    # -- the search index (a projection of git, see gitmem.index) --

    @property
    def index(self) -> MountIndex:
        """The mount's index, one for a store and its run-bound views (it describes ``main``)."""
        shared = self._shared
        if shared.index is None:
            from gitmem.index import MountIndex  # searches only: other read commands never load it

            with shared.index_guard:
                if shared.index is None:
                    shared.index = MountIndex(self.repo)
        return shared.index

    def find(self, query: str, *, path: str = "", limit: int = 10) -> builtins.list[FindHit]:
        """Files ranked by BM25F over the words of ``query``, with a snippet each.

        A run reading its proposal gets the proposal's files ranked: the index
        follows ``main``, so they are read and ranked in memory (as its search scans).
        """
        prefix = validate_directory(path, self.format)
        with translate_errors(self.path):
            return self.index.find(query, prefix=prefix, limit=limit, at=self._proposal_head())

    def index_status(self) -> IndexStatus:
        with translate_errors(self.path):
            return self.index.status()

    def rebuild_index(self) -> IndexStatus:
        with translate_errors(self.path):
            return self.index.rebuild()


class GitFileStore(AsyncFace[SyncGitFileStore]):
    """The async face of a git store: each call runs :class:`SyncGitFileStore` in a worker thread.

    Every public method of the sync store is here under the same name and
    signature (a test keeps it so); ``sync`` is the store itself.

    >>> store = GitFileStore.init("memories/user.git")   # doctest: +SKIP
    >>> await store.write("prefs/language.md", "Reply in Chinese.\\n", expected=None)  # doctest: +SKIP
    """

    __slots__ = ()

    @classmethod
    def init(
        cls,
        path: str | os.PathLike[str],
        fmt: FileFormat | None = None,
        *,
        durable: bool = False,
        kind: MountKind = "file",
    ) -> GitFileStore:
        """Create a new memory at ``path`` (see :meth:`SyncGitFileStore.init`)."""
        return cls(SyncGitFileStore.init(path, fmt, durable=durable, kind=kind))

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], fmt: FileFormat | None = None, *, durable: bool = False
    ) -> GitFileStore:
        """Open an existing memory (see :meth:`SyncGitFileStore.open`)."""
        return cls(SyncGitFileStore.open(path, fmt, durable=durable))

    @property
    def path(self) -> str:
        return self.sync.path

    @property
    def format(self) -> FileFormat:
        return self.sync.format

    @property
    def kind(self) -> MountKind:
        return self.sync.kind

    def for_run(self, run_id: str) -> GitFileStore:
        """This memory as run ``run_id`` sees it (see :meth:`SyncGitFileStore.for_run`)."""
        return GitFileStore(self.sync.for_run(run_id))

    def proposing(self, run_id: str) -> GitFileStore:
        """Run ``run_id``'s view that always writes to its proposal (see :meth:`SyncGitFileStore.proposing`)."""
        return GitFileStore(self.sync.proposing(run_id))

    def __repr__(self) -> str:
        return f"GitFileStore({self.path!r})"

    list = threaded(SyncGitFileStore.list)
    read = threaded(SyncGitFileStore.read)
    read_under = threaded(SyncGitFileStore.read_under)
    snapshot = threaded(SyncGitFileStore.snapshot)
    raw = threaded(SyncGitFileStore.raw)
    link_at = threaded(SyncGitFileStore.link_at)
    write = threaded(SyncGitFileStore.write)
    move = threaded(SyncGitFileStore.move)
    delete = threaded(SyncGitFileStore.delete)
    move_many = threaded(SyncGitFileStore.move_many)
    delete_many = threaded(SyncGitFileStore.delete_many)
    apply = threaded(SyncGitFileStore.apply)
    changes = threaded(SyncGitFileStore.changes)
    head = threaded(SyncGitFileStore.head)
    purge = threaded(SyncGitFileStore.purge)
    search = threaded(SyncGitFileStore.search)
    find = threaded(SyncGitFileStore.find)
    was_forgotten = threaded(SyncGitFileStore.was_forgotten)
    index_status = threaded(SyncGitFileStore.index_status)
    rebuild_index = threaded(SyncGitFileStore.rebuild_index)
    log = threaded(SyncGitFileStore.log)
    show = threaded(SyncGitFileStore.show)
    diff = threaded(SyncGitFileStore.diff)
    blame = threaded(SyncGitFileStore.blame)
    restore = threaded(SyncGitFileStore.restore)
    revert = threaded(SyncGitFileStore.revert)
    forget = threaded(SyncGitFileStore.forget)
    fsck = threaded(SyncGitFileStore.fsck)
    check_erasures = threaded(SyncGitFileStore.check_erasures)
    erasure_ledger = threaded(SyncGitFileStore.erasure_ledger)
    forget_erased = threaded(SyncGitFileStore.forget_erased)
    gc = threaded(SyncGitFileStore.gc)
    set_durable = threaded(SyncGitFileStore.set_durable)


def as_sync(store: GitFileStore | SyncGitFileStore) -> SyncGitFileStore:
    """The sync core behind either face of a git store (the facades accept both)."""
    return store.sync if isinstance(store, GitFileStore) else store


if TYPE_CHECKING:  # mypy checks that the git store keeps every promise of the seam

    def _conforms(store: SyncGitFileStore) -> tuple[SearchableFileStore, BatchFileStore, RunScopedStore, HistoryStore]:
        return store, store, store, store

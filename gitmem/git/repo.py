"""One bare repository seen as a memory: opening, creating, reading at a head, folding packs.

Writes are not here: every change to a mount's files becomes a commit in
:mod:`gitmem.git.engine`, which takes this handle's writer lock, plans on its
snapshot and moves the ref. The other writers in ``git/`` are history rewrites
(:mod:`gitmem.git.rewrite`), merges (:mod:`gitmem.git.merge`) and the review
gate (:mod:`gitmem.git.review`), and they move refs through the same CAS.
Everything is expressed in hex ids, bytes and str, so the layers above never see pygit2.

**Process-wide pygit2 settings.** libgit2's settings belong to the process,
not to a repository, and importing this module changes three of them for
whatever program embeds gitmem (:data:`PYGIT2_SETTINGS` lists them):
strict object creation is turned off (libgit2 otherwise looks up every object
a new tree or commit names; gitmem only names objects it has just written or
read from the head under the writer lock), the object cache keeps trees up to
8 MiB, and at most 256 pack files stay open. A host that wants libgit2's
defaults sets ``GITMEM_PYGIT2_DEFAULTS=1`` in the environment before importing
gitmem; gitmem then works as before, a little slower on big folders.

**Durability** is the mount's: ``gitmem.durable`` in its config
(:meth:`GitRepo.set_durable`, ``gitmem config NAME gitmem.durable true``), read
by every process at every write, and by the write engine's own pack and ref
writes. The same switch sets ``core.fsync`` for the git CLI, and a process that
finds a durable mount turns libgit2's fsync on (a process-wide switch, so
libgit2's own writes to other mounts of that process, rare merges and ref
updates, fsync too: safer, never less safe).
"""

from __future__ import annotations

import functools
import os
import stat
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Final

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.git import cli
from gitmem.git.control import CONFIG_LIMIT, check_config_text, check_control_file, check_packs_of
from gitmem.git.locks import Holder, WriterLock, remove_crashed_locks
from gitmem.git.loose import open_repository, raise_if_corrupt
from gitmem.git.perms import make_private_dir, write_private
from gitmem.git.refs import MAIN, read_ref, read_ref_file, read_ref_file_stat, read_ref_file_unstamped
from gitmem.git.snapshot import FILE_MODES as _FILE_MODES
from gitmem.git.snapshot import TREE_MODE as _TREE_MODE
from gitmem.git.snapshot import Entry, lookup, translate_errors, walk_files
from gitmem.git.treediff import diff_trees
from gitmem.git.written import COMMIT_TREES, Written, object_digest, withdraw
from gitmem.model import CommitId, Origin
from gitmem.provenance import COMMITTER_EMAIL, COMMITTER_NAME, commit_message

if TYPE_CHECKING:
    from gitmem.git.treeedit import TreeCache

__all__ = [  # names callers, tests and benchmarks reach for here (cli: tests patch cli.run_git through it)
    "DURABLE_KEY",
    "EMPTY_TREE",
    "PYGIT2_SETTINGS",
    "Entry",
    "GitRepo",
    "cli",
    "lookup",
    "translate_errors",
    "walk_files",
]

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_OBJECT_NAMES = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}


# libgit2 keeps parsed trees in its object cache only up to 4 KiB each by default, so a
# folder of more than ~100 files was parsed again on every read by path (~1 ms per 1000
# entries: a read in a 10k-file folder took ~10 ms, 0.25 ms with this); the cache's total
# stays bounded (256 MiB). Each commit is a pack until a fold, and libgit2 keeps a
# descriptor open per pack it has read: at most 256 (the least recently used is closed
# and reopened on demand). Strict object creation: see the module's docstring.
TREE_CACHE_LIMIT = 8 * 1024 * 1024
MWINDOW_FILE_LIMIT = 256
PYGIT2_SETTINGS: Final = {
    "enable_strict_object_creation": False,
    "cache_object_limit(TREE)": TREE_CACHE_LIMIT,
    "mwindow_file_limit": MWINDOW_FILE_LIMIT,
}
"""What importing gitmem sets in libgit2 for the whole process, unless ``GITMEM_PYGIT2_DEFAULTS=1``."""

if os.environ.get("GITMEM_PYGIT2_DEFAULTS", "").strip() not in ("1", "true", "yes"):
    pygit2.settings.cache_object_limit(pygit2.enums.ObjectType.TREE, TREE_CACHE_LIMIT)
    pygit2.settings.mwindow_file_limit = MWINDOW_FILE_LIMIT
    pygit2.settings.enable_strict_object_creation(False)

_NO_IDS: Mapping[str, bytes] = {}
_pid = [os.getpid()]  # this process's id, kept current across fork: os.getpid() is a system call


def _forked() -> None:
    _pid[0] = os.getpid()


os.register_at_fork(after_in_child=_forked)

DURABLE_KEY: Final = "gitmem.durable"
"""The mount's durability switch: every commit fsyncs its pack, its ref and their folders first."""
_GIT_FSYNC: Final = ("core.fsync", "committed")  # what the git CLI (2.36+) honours for this repository
_libgit2_fsync = [False]  # whether this process turned libgit2's fsync on (it never turns it off)

_ANCESTRY_WALK = 512  # commits descendant_of visits itself before asking libgit2


class GitRepo:
    """A bare repository holding one memory on ``refs/heads/main``.

    pygit2 repositories are not safe to share between threads, so each thread
    (and each process after ``fork``) opens its own handle.
    """

    def __init__(self, path: str, *, stale_lock_seconds: float = 30.0, lock_timeout: float = 30.0) -> None:
        self.path = os.path.abspath(path)
        self.stale_lock_seconds = stale_lock_seconds
        """How long a foreign git's ref lock must stay unchanged before it is taken for a crash's."""
        self._local = threading.local()
        self._gen_path = os.path.join(self.path, "gitmem", "generation")
        self._packs_path = os.path.join(self.path, "gitmem", "packs-folded")
        self._main_path = os.path.join(self.path, *MAIN.split("/"))
        self.pending_path = os.path.join(self.path, "gitmem", "forget-pending")
        """Exists while a forget or purge may have moved refs without pruning the old objects yet."""
        self.lock = WriterLock(
            os.path.join(self.path, "gitmem", "write.lock"),
            timeout=lock_timeout,
            on_crash=functools.partial(_after_crash, self.path, self._gen_path, self.pending_path),
        )
        self._config_path = os.path.join(self.path, "config")
        self._durable: tuple[tuple[int, int, int], bool] | None = None  # (config's stat, its gitmem.durable)
        self._commit_trees: dict[str, str] = {}  # commit -> tree id, for this process's latest commits
        self._made = ""  # the latest commit this process made: its write checked the config and the marks
        self.written = Written()
        self.writers: object = None
        """What the write engine keeps for this mount in this process (its queue of writers), while this store lives."""
        """The objects of this process's latest commits: a read of its own head needs no pack rescan."""
        self.fold_lock = WriterLock(os.path.join(self.path, "gitmem", "fold.lock"), timeout=lock_timeout)
        """Held by a pack fold, and after the writer lock by what deletes objects (see :meth:`maintenance`)."""

    @property
    def lock_timeout(self) -> float:
        """Seconds a writer waits for the writer lock (or a ref lock) before ``unavailable``."""
        return self.lock.timeout

    @lock_timeout.setter
    def lock_timeout(self, seconds: float) -> None:
        self.lock.timeout = seconds
        self.fold_lock.timeout = seconds

    # -- lifecycle --

    @classmethod
    def init(cls, path: str, *, config: dict[str, str] | None = None) -> GitRepo:
        """Create a bare repo whose ``main`` holds a root commit with an empty tree."""
        path = os.path.abspath(path)
        if os.path.exists(os.path.join(path, "HEAD")):
            raise MemoryStoreError("already_exists", f"a repository already exists at {path}")
        try:
            make_private_dir(path, parents=True)
            repo = pygit2.init_repository(path, bare=True, initial_head="main")
            check_packs_of(path)  # its first write lists the pack folder: one planted in a folder made beforehand
            for key, value in (config or {}).items():
                repo.config[key] = value
            make_private_dir(os.path.join(path, "gitmem"))
            tree = repo.TreeBuilder().write()
            sig = pygit2.Signature(COMMITTER_NAME, COMMITTER_EMAIL)
            message = commit_message("init", (), Origin())
            repo.create_commit(MAIN, sig, sig, message, tree, [])
        except (pygit2.GitError, OSError) as exc:
            raise MemoryStoreError("unavailable", f"cannot create a repository at {path}: {exc}") from exc
        return cls(path)

    @classmethod
    def open(cls, path: str) -> GitRepo:
        path = os.path.abspath(path)
        if not os.path.isdir(os.path.join(path, "objects")):
            raise MemoryStoreError("memory_deleted", f"no memory repository at {path}")
        opened = cls(path)
        with translate_errors(path):
            make_private_dir(os.path.join(path, "gitmem"))
            opened.head()
        return opened

    @property
    def repo(self) -> pygit2.Repository:
        local = self._local
        pid = _pid[0]
        repo: pygit2.Repository | None = getattr(local, "repo", None)
        if repo is None or local.pid != pid:
            if not os.path.isdir(os.path.join(self.path, "objects")):
                raise MemoryStoreError("memory_deleted", f"the memory at {self.path} no longer exists")
            if not _libgit2_fsync[0]:
                self.durable()  # a durable mount turns libgit2's fsync on before the handle opens
            repo = open_repository(self.path)
            marks = self._marks()
            if getattr(local, "pid", None) != pid or getattr(local, "gen", (None,))[0] != marks[0]:
                # Parsed trees of the old handle: a purge may have erased their names. A reopen
                # only because packs were folded (every few dozen commits) keeps them: a fold
                # moves objects into another pack and deletes none.
                local.trees = None
            local.repo = repo
            local.pid = pid
            local.packs = local.packs_of = None  # the old handle's pack backend (it keeps deleted packs open)
            local.gen = marks
        return repo

    def history_mark(self) -> tuple[int, int]:
        """Changes whenever a purge or forget deletes objects (compare two marks).

        Most memories never had either, so the file is usually missing: asked with
        ``access`` first, which answers that without the exception a failed ``stat``
        raises (its cost is most of the check's, and every write makes it).
        """
        if not os.access(self._gen_path, os.F_OK):
            return _NO_HISTORY
        try:
            st = os.stat(self._gen_path)
        except FileNotFoundError:
            return (0, 0)
        return (st.st_ino, st.st_mtime_ns)

    def _marks(self, history: tuple[int, int] | None = None) -> tuple[tuple[int, int], tuple[int, int]]:
        """The history mark (``history`` when the caller just read it) and the packs-folded mark.

        A handle older than either is reopened.
        """
        try:
            st = os.stat(self._packs_path)
            folded = (st.st_ino, st.st_mtime_ns)
        except FileNotFoundError:
            folded = (0, 0)
        return self.history_mark() if history is None else history, folded

    def bump_generation(self) -> None:
        """Tell other handles that objects were deleted, so they drop their caches (and the last commit's copy).

        The copy goes first: a reader that sees the new mark must find no copy of erased objects.
        """
        withdraw(self.path)
        _bump(self._gen_path)
        self._local.repo = None

    def reopen(self) -> None:
        """Drop this thread's handle: the next call opens a new one, which lists the packs afresh."""
        self._local.repo = None

    def fresh(self, *, config_checked: bool = False) -> pygit2.Repository:
        """The thread's handle, reopened if a purge or forget deleted objects since.

        Every operation starts here, so the config's stamp is compared here too (one
        ``lstat``): libgit2 re-reads a changed config with a blocking read that follows
        links, so a FIFO or link planted there is refused (``unavailable``) before it can.
        ``config_checked``: the caller has just asked :meth:`durable`, which compared it.
        The pack folder is checked where it is listed, not here (see
        :func:`gitmem.git.control.check_pack_folder`).
        """
        if not config_checked:
            self.durable()
        return self._refreshed()

    def _refreshed(self, history: tuple[int, int] | None = None) -> pygit2.Repository:
        """:meth:`fresh` after the config's stamp was compared (``history``: the mark the caller just read)."""
        repo = self.repo
        if self._local.gen != self._marks(history):
            self._local.repo = None
            repo = self.repo
        return repo

    def config_get(self, key: str) -> str | None:
        self.durable()  # libgit2 re-reads a changed config, blocking: a FIFO or link there is refused first
        with translate_errors(self.path):
            try:
                return self.repo.config[key]  # one lookup: `key in config` first asked libgit2 the same again
            except KeyError:
                return None

    def config_set(self, key: str, value: str) -> None:
        self.durable()
        with translate_errors(self.path):
            self.repo.config[key] = value
        self._durable = None

    def durable(self) -> bool:
        """Whether the mount is durable (``gitmem.durable``): read at every write, from a cached parse.

        The config is parsed again only when its size, mtime or inode changed, so
        a ``gitmem config`` made by another process applies to the next write here.
        """
        try:
            st = os.lstat(self._config_path)
        except OSError:
            return False
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        known = self._durable
        if known is not None and known[0] == stamp:
            return known[1]
        check_control_file(self._config_path, CONFIG_LIMIT)  # a FIFO or link there: unavailable, not a hang
        check_config_text(self._config_path)
        try:  # the file alone, not through a handle: opening one asks this first
            raw = pygit2.Config(self._config_path)[DURABLE_KEY]
        except (KeyError, pygit2.GitError, OSError, ValueError):
            raw = None
        value = raw is not None and str(raw).strip().lower() in ("true", "yes", "on", "1")
        self._durable = (stamp, value)
        if value and not _libgit2_fsync[0]:
            # libgit2 reads its switch when a handle opens its ref database: reopen this one.
            pygit2.settings.enable_fsync_gitdir(True)
            _libgit2_fsync[0] = True
            self._local.repo = None
        return value

    def set_durable(self, enabled: bool = True) -> None:
        """Make every write to this mount fsync before it is acknowledged, in every process (or stop).

        Saved in the mount's config, with ``core.fsync`` for the git CLI (see
        the module's docstring for libgit2's own writes).
        """
        with translate_errors(self.path):
            config = self.repo.config
            config[DURABLE_KEY] = "true" if enabled else "false"
            if enabled:
                config[_GIT_FSYNC[0]] = _GIT_FSYNC[1]
            elif _GIT_FSYNC[0] in config:
                del config[_GIT_FSYNC[0]]
        self._durable = None
        self.durable()

    # -- reads (no lock: refs and objects are read consistently from one head) --

    def head(self) -> CommitId:
        """The commit ``main`` holds. Every read starts here: a handle must not serve objects a purge deleted.

        What a read checks is cut to what can have changed. The history mark (one
        ``access``) every time: a purge or forget moves it, and what this handle
        keeps must go. The ref file then: when the stamp (inode, size, mtime,
        ctime) of the file last read is *settled*, one ``lstat`` that finds it
        unchanged means the head did not move; otherwise the file is read again.
        Only when the head moved (or the handle is new) is the packs-folded mark
        asked, at most every 0.1 s (:data:`_FOLDS_ASKED_NS`); not when it moved
        to the commit this process just made, whose write asked it (the
        writer's next read is what an agent's edit loop makes). The config's
        stamp is not asked here (:meth:`fresh` asks it for every operation that
        lets libgit2 read the config). A fold deletes no object a handle needs
        (libgit2 finds the new pack when one is missing, and
        :meth:`gitmem.gitstore.GitFileStore._at_head` reopens once), so its
        mark can wait.

        A stamp is settled when its mtime and ctime lie clearly before the time
        the file was read (git's "racy" rule): a rewrite after that read gets a
        later mtime, even with the same size and a reused inode, so an unchanged
        stamp cannot hide one. A stamp written in the same clock tick as the read
        is not trusted, and the file is read (see :func:`_settled`). The stamp is
        taken (an ``fstat`` of the file read) at most every :data:`_RACY_NS`: reads
        that follow one closer than that are right after a write (a new head each
        time, or an unsettled stamp), where a stamp serves no later read; they read
        the file without it (:func:`~gitmem.git.looseref.read_ref_file_unstamped`).
        """
        # Not the config: libgit2 reads it when a handle opens (open_repository checks it first)
        # and when a config value is asked (writes, config_get: through fresh()), never for the
        # object reads and walks of a read (strace of a reader under a writer: no config access).
        local = self._local
        last: tuple[tuple[int, int, int, int], CommitId, bool] | None = getattr(local, "last", None)
        history = self.history_mark() if os.access(self._gen_path, os.F_OK) else _NO_HISTORY  # most never had one
        # A handle's pid, marks and repo are set with it, before any head is noted (last).
        known = last is not None and local.pid == _pid[0] and history == local.gen[0] and local.repo is not None
        if known and last is not None and last[2]:
            try:
                st = os.lstat(self._main_path)
            except OSError:
                st = None
            if st is not None and (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) == last[0]:
                return last[1]
        local.last = None
        before = time.time_ns()
        # The stamp at most every _RACY_NS: one taken sooner after the last is as racy as that one was
        # (a read right after a write), and serves no later read.
        stamp_due = not 0 <= before - getattr(local, "stamped", 0) < _RACY_NS
        head = None if stamp_due else read_ref_file_unstamped(self._main_path)
        st = None
        if head is None:
            head, st = read_ref_file_stat(self._main_path)
            if head is None or st is None:
                return self.head_in(self.fresh())  # not a plain loose ref: libgit2's to read, through the full check
            local.stamped = before
        if not known or (
            last is not None
            and head != last[1]
            and head != self._made
            and not 0 <= before - getattr(local, "folds_asked", 0) < _FOLDS_ASKED_NS
        ):
            self._refreshed(history)  # the head moved: the packs-folded mark (a new handle if either moved)
            local.folds_asked = before
        local.last = (
            _UNSTAMPED if st is None else (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns),
            head,
            st is not None and _settled(st, before),
        )
        return head

    def last_head(self) -> CommitId | None:
        """The head this thread's last :meth:`head` read from the ref file, ``None`` if it read none (or failed)."""
        last: tuple[tuple[int, int, int, int], CommitId, bool] | None = getattr(self._local, "last", None)
        return None if last is None else last[1]

    def head_in(self, repo: pygit2.Repository) -> CommitId:
        """:meth:`head` with the handle the caller just got from :meth:`fresh`."""
        head = read_ref_file(self._main_path)
        if head is None:
            # Not a plain loose ref: packed, symbolic or a link are libgit2's to read, but a
            # FIFO or device planted there would block libgit2's open for good.
            with suppress(FileNotFoundError):
                if not stat.S_ISREG(os.lstat(self._main_path).st_mode) and not os.path.islink(self._main_path):
                    raise MemoryStoreError("unavailable", f"{self._main_path} is not a regular file; remove it")
            head = read_ref(repo, MAIN)
        if head is None:
            # A handle opened before Root.remove keeps its pygit2 object; the ref vanishing
            # with the whole repo is a deleted memory, not a broken one.
            if not os.path.isdir(os.path.join(self.path, "objects")):
                raise MemoryStoreError("memory_deleted", f"the memory at {self.path} no longer exists")
            raise MemoryStoreError("unavailable", f"{self.path} has no {MAIN}")
        return head

    def ref_target(self, name: str) -> CommitId | None:
        """The commit another ref (a proposal branch) points at, or ``None`` when it does not exist."""
        with translate_errors(self.path):
            return read_ref(self.fresh(), name)

    def tree_of(self, commit: str) -> pygit2.Tree:
        known = self._commit_trees.get(commit)
        if known is not None:
            return self.repo[known].peel(pygit2.Tree)
        tree = self.repo[commit].peel(pygit2.Tree)
        self.remember_tree(commit, str(tree.id))
        return tree

    def remember_commit(
        self,
        commit: str,
        tree: str,
        objects: dict[str, tuple[bytes, bytes]],
        *,
        mark: tuple[int, int] | None = None,
        ids: Mapping[str, bytes] = _NO_IDS,
    ) -> None:
        """Note a commit this process just made: its tree id, and its objects (kept by :attr:`written`).

        ``mark``: the history mark they were written under, when another thread (or
        store) made the commit (default: this thread's handle's, see :meth:`handle_mark`).
        ``ids``: the 20 bytes of the objects' ids, where the caller has them.
        """
        trees = self._commit_trees
        if len(trees) >= COMMIT_TREES:
            trees.clear()
        trees[commit] = tree
        self.written.add(objects, self._local.gen[0] if mark is None else mark, ids)
        self._made = commit

    def handle_mark(self) -> tuple[int, int]:
        """The history mark of this thread's handle (the one :meth:`fresh` checked)."""
        mark: tuple[int, int] = self._local.gen[0]
        return mark

    def remember_tree(self, commit: str, tree: str) -> None:
        """Note ``commit``'s tree id (the engine does for each commit it makes): a write needs no commit read."""
        trees = self._commit_trees
        if len(trees) >= COMMIT_TREES:
            trees.clear()
        trees[commit] = tree

    def tree_id_of(self, commit: str) -> str:
        """The id of ``commit``'s tree (for a commit this process just made, without reading it)."""
        known = self._commit_trees.get(commit)
        return known if known is not None else str(self.tree_of(commit).id)

    def read_main(self, path: str) -> tuple[str, bytes] | None:
        """``(blob id, bytes)`` of the file at ``path`` at the head of ``main``, or ``None``: the store's read of it.

        :meth:`head`, then what :meth:`read_at` does for the commit it answered, in
        this frame (one walk, :meth:`Written.walk <gitmem.git.written.Written.walk>`,
        whose file comes back as it is), under one error translation: the agent's
        read of ``main``, kept to the fewest steps since every step of it costs
        several times its warm cost right after a write (the writer's work has
        evicted the reader's caches).
        """
        with translate_errors(self.path):
            head = self.head()
            written = self.written
            if written.enabled:  # read_at's walk, in this frame (the mark is the one head() just read)
                mark = self._local.gen[0]
                cache = self._parsed_trees(mark)
                known = None if cache is None else cache.trees
                found = written.walk(self.path, head, path, mark, self._commit_trees, known, self._packed)
                if found is not None:
                    kind, oid, data = found
                    return (oid, data) if kind == "blob" and isinstance(data, bytes) else self._found(found)
            return self._read_tree(head, path)

    def read_at(self, commit: str, path: str, *, at_head: bool = False) -> tuple[str, bytes] | None:
        """``(blob id, bytes)`` of the file at ``path`` in ``commit``, or ``None``.

        A commit this process just made is walked through the objects it wrote
        (:mod:`gitmem.git.written`) as far as they go: libgit2 would list the pack
        folder again to find its new pack. ``at_head``: ``commit`` is what
        :meth:`head` answered just now, whose history mark this handle holds
        (the mark is not read again; any other commit's read asks it).
        """
        written = self.written
        if written.enabled:
            mark = self._local.gen[0] if at_head else self.history_mark()  # a purge since: nothing kept is served
            cache = self._parsed_trees(mark)
            known = None if cache is None else cache.trees
            found = written.walk(self.path, commit, path, mark, self._commit_trees, known, self._packed)
            if found is not None:
                return self._found(found)
        return self._read_tree(commit, path)

    def _found(self, found: tuple[str, str, bytes | str | None]) -> tuple[str, bytes] | None:
        """The answer of a walk of :attr:`written` that ended where it says (see ``Written.walk``)."""
        kind, oid, rest = found
        if kind == "blob" and isinstance(rest, bytes):
            return oid, rest
        if kind == "file":
            return oid, self.blob(oid)
        if kind != "tree" or not isinstance(rest, str):
            return None
        entry = lookup(self.repo[oid].peel(pygit2.Tree), rest)
        return None if entry is None or entry.kind != "blob" else (entry.oid, self.blob(entry.oid))

    def _read_tree(self, commit: str, path: str) -> tuple[str, bytes] | None:
        """The file at ``path`` in ``commit`` as libgit2 finds it."""
        entry = lookup(self.tree_of(commit), path)
        if entry is None or entry.kind != "blob":
            return None
        return entry.oid, self.blob(entry.oid)

    def file_id_at(self, commit: str, path: str) -> str | None:
        """The blob id of the regular file at ``path`` in ``commit``, or ``None``; the blob is not read."""
        entry = lookup(self.tree_of(commit), path)
        return entry.oid if entry is not None and entry.kind == "blob" else None

    def blob(self, oid: str) -> bytes:
        """An object's bytes, read once, from the packs first.

        ``repo[oid].read_raw()`` looks the object up (reading it whole) and then
        reads it again, each time asking the loose-object guard (a Python call)
        first: ~10 µs of a ~100 µs read. Here a packed object is read from the
        handle's own pack backend (~7 µs against ~19 µs through the object
        database) and its id checked against its bytes, as libgit2's object
        database would; anything else (loose, in a pack this handle has not
        seen yet, damaged) is read through the object database as before,
        guard, rescan and errors included.
        """
        if len(oid) != 40:  # an abbreviated id: libgit2 resolves the prefix
            return bytes(self.repo[oid].read_raw())
        key = pygit2.Oid(hex=oid)
        packs = self._pack_backend()
        if packs is not None:
            try:
                kind, data = packs.read(key)
            except (KeyError, ValueError, pygit2.GitError):
                pass
            else:
                name = _OBJECT_NAMES.get(int(kind))
                if name is not None and object_digest(name, data) == key.raw:
                    return bytes(data)
        return self.repo.odb.read(key)[1]

    def _packed(self, key: bytes, code: int) -> bytes | None:
        """Object ``key`` (its 20-byte id) of type ``code`` from this handle's open packs, its id checked; ``None``: libgit2's.

        What a walk of :attr:`written` reads for a folder or file it does not
        keep: one lookup in the pack backend (as :meth:`blob`), not libgit2's
        object lookup, which asks the loose-object guard first (a Python call and
        an ``access``) and parses the whole tree for one name. A loose object, one
        in a pack this handle has not listed, or anything odd is left to libgit2.
        """
        local = self._local
        packs = local.packs if getattr(local, "packs_of", None) is local.repo else self._pack_backend()
        if packs is None:
            return None
        try:
            kind, data = packs.read(pygit2.Oid(raw=key))
        except (KeyError, ValueError, pygit2.GitError):
            return None
        if kind != code:
            return None
        return data if object_digest(_OBJECT_NAMES[code], data) == key else None

    def _pack_backend(self) -> Any:
        """The pack backend of this thread's handle (the object database asks it right after the guard)."""
        repo = self.repo
        local = self._local
        if getattr(local, "packs_of", None) is not repo:
            # open_repository adds the guard at priority 1000 to libgit2's pack (2) and loose (1)
            # backends of the repository's own objects; alternates come after those.
            backends = list(repo.odb.backends)
            local.packs = backends[1] if len(backends) >= 3 else None
            local.packs_of = repo
        return local.packs

    def files_at(self, commit: str, prefix: str = "") -> Iterator[tuple[str, str]]:
        tree = self.tree_of(commit)
        if prefix:
            sub = lookup(tree, prefix.rstrip("/"))
            if sub is None or sub.kind != "tree":
                return iter(())
            return walk_files(self.repo[sub.oid].peel(pygit2.Tree), prefix)
        return walk_files(tree)

    def tree_items(self, tree_id: str) -> list[tuple[str, str, str]]:
        """One folder's entries as ``(name, kind, hex id)`` in git order, ``kind`` as in :class:`Entry`.

        Lets callers cache per folder by tree id (a tree id names its whole content).
        """
        items: list[tuple[str, str, str]] = []
        for obj in self.repo[tree_id].peel(pygit2.Tree):
            mode = obj.filemode
            kind = "tree" if mode == _TREE_MODE else "blob" if mode in _FILE_MODES else "other"
            items.append((obj.name or "", kind, str(obj.id)))
        return items

    def resolve(self, rev: str) -> str | None:
        """The commit id a revision names (hex id, prefix, ``main``, ``main~2``), or ``None``.

        Through :meth:`fresh`: a handle older than a purge or forget still has the deleted
        packs open and would find an erased commit by its id.
        """
        try:
            obj = self.fresh().revparse_single(rev)
            commit = obj.peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            raise_if_corrupt()
            return None
        return str(commit.id)

    def changes_since(self, since: str, head: str) -> tuple[str, ...] | None:
        """Paths that differ from ``since`` to ``head``; ``None`` when ``since`` is no commit ``head`` descends from.

        The history mark is read once for the whole answer (each step would
        otherwise ask it again: three ``access`` calls of a ``changes``): bytes
        this process wrote are served only if no purge or forget came since.
        """
        mark = self.history_mark()
        if not self.is_commit(since, mark=mark) or not self.descendant_of(head, since, mark=mark):
            return None
        return self.changed_paths(since, head, mark=mark)

    def is_commit(self, rev: str, *, mark: tuple[int, int] | None = None) -> bool:
        held = self.written.object_under(rev, mark or self.history_mark())
        if held is not None:
            return held[0] == b"commit"  # one this process made: libgit2 would list the pack folder to find it
        try:
            obj = self.repo.get(rev)
        except (ValueError, pygit2.GitError):
            raise_if_corrupt()
            return False
        return obj is not None and obj.type == pygit2.enums.ObjectType.COMMIT

    def descendant_of(self, commit: str, ancestor: str, *, mark: tuple[int, int] | None = None) -> bool:
        """Whether ``ancestor`` is reachable from ``commit`` through parents (a commit is not its own).

        Walks parents breadth-first from ``commit``, so a cursor a few changes old
        costs a few commit reads. libgit2's check walks the whole history even for
        the parent (~1 ms per 300 commits written in the same second), so it is
        only the fallback for an ancestor further back than the walk goes.
        """
        if commit == ancestor:
            return False
        try:
            repo = self.repo
            mark = mark or self.history_mark()
            frontier = deque([commit])
            seen: set[str] = set()
            for _ in range(_ANCESTRY_WALK):
                if not frontier:
                    return False  # the whole history was walked
                for parent in self._parents(repo, frontier.popleft(), mark):
                    if parent == ancestor:
                        return True
                    if parent not in seen:
                        seen.add(parent)
                        frontier.append(parent)
            return bool(repo.descendant_of(commit, ancestor))
        except (pygit2.GitError, KeyError):  # its objects were deleted (a purge or forget meanwhile)
            raise_if_corrupt()
            return False

    def _parents(self, repo: pygit2.Repository, commit: str, mark: tuple[int, int]) -> list[str]:
        """The parent ids of ``commit``: from the bytes this process wrote when it made it, else libgit2's."""
        raw = self.written.raw_under(commit, mark)
        if raw is None:
            return [str(p) for p in repo[commit].peel(pygit2.Commit).parent_ids]
        header = raw.split(b"\n\n", 1)[0].split(b"\n")
        return [line[7:47].decode("ascii") for line in header if line.startswith(b"parent ")]

    def changed_paths(self, old: str, new: str, *, mark: tuple[int, int] | None = None) -> tuple[str, ...]:
        """Paths that differ between two commits' trees; cost follows the changed subtrees.

        The same paths libgit2's tree diff reports (no rename detection), but folders
        whose tree id is unchanged are skipped instead of walked: libgit2 visits every
        entry, ~9 ms for one changed file in a 100k-file memory, against ~0.3 ms here.
        The trees of a commit this process just made are read from the bytes it wrote
        (:attr:`written`): libgit2 would first list the pack folder to find its pack.
        """
        repo, written = self.repo, self.written
        mark = mark or self.history_mark()

        def read(oid: pygit2.Oid) -> bytes:
            raw = written.raw_under(str(oid), mark)
            return raw if raw is not None else bytes(repo[oid].read_raw())

        paths: list[str] = []
        diff_trees(read, pygit2.Oid(hex=self.tree_id_of(old)), pygit2.Oid(hex=self.tree_id_of(new)), "", paths)
        return tuple(sorted(set(paths)))

    # -- what the write engine (gitmem.git.engine) uses --

    def _parsed_trees(self, mark: tuple[int, int]) -> TreeCache | None:
        """The folders this process's writes parsed and made, kept under history mark ``mark``.

        The write engine's, which every committer of the mount in this process shares
        (:attr:`writers`), else this thread's own (a write made while it held the lock).
        """
        shared = getattr(self.writers, "trees", None)
        if shared is not None and shared[0] == mark:
            trees: TreeCache = shared[1]
            return trees
        return getattr(self._local, "trees", None)

    def tree_cache(self) -> TreeCache:
        """This thread's parsed trees, shared by its snapshots (a folder is parsed once, not per write)."""
        from gitmem.git.treeedit import TreeCache  # a write's: reads never load the tree editor

        cache: TreeCache | None = getattr(self._local, "trees", None)
        if cache is None:
            cache = self._local.trees = TreeCache()
        return cache

    def compact(self) -> None:
        """Fold the small per-commit packs together by git's geometric rule, under the fold lock.

        Each pack left holds at least twice the objects of all smaller ones
        together, so ``n`` objects live in about ``log2(n)`` packs, and a run
        copies only the small packs (amortised: each object is copied about
        ``log2(n)`` times over its life). The packs a run folded are deleted by
        a later run, at least a quarter second later (:func:`gitmem.git.packwrite.compact`).

        A fold reads only packs (which never change) and adds one, so it needs
        no writer lock and writers go on meanwhile. It holds the *fold lock*,
        which every operation that deletes objects or repacks (purge, forget,
        gc: :meth:`maintenance`) takes after the writer lock, so a fold can
        never put back objects a purge is deleting; the git child holds the
        fold lock too until it exits. When another process is folding (or a
        purge holds the lock) this fold waits and runs after it, so packs
        written since the other fold listed them are folded too.
        """
        self.fold_once(True)

    def fold_once(self, wait: bool) -> bool:
        """:meth:`compact`, or without ``wait`` nothing when the fold lock is taken; whether it folded.

        The thread's descriptor of the fold lock is closed after: a writer thread
        folds once in ``MAX_PACKS`` writes, and a descriptor kept open per
        thread and handle for that would outlive the call for nothing.
        """
        try:
            with translate_errors(self.path):
                if wait:
                    with self.fold_lock.hold("fold"):
                        self._fold()
                        return True
                with self.fold_lock.try_hold("fold") as held:
                    if held:
                        self._fold()
                    return held
        finally:
            self.fold_lock.close()

    def _fold(self) -> None:
        def run(args: list[str], stdin: bytes) -> tuple[int, str]:
            done = cli.run_git(args, git_dir=self.path, stdin=stdin, pass_fds=(self.fold_lock.held_fd(),))
            return done.returncode, done.stdout

        from gitmem.git import packwrite

        if packwrite.compact(self.path, run):
            # libgit2 never forgets a pack it opened, even once deleted: every handle
            # reopens at its next call, so deleted packs' descriptors and disk space go.
            _bump(self._packs_path)
            self._local.repo = None

    @contextmanager
    def maintenance(self, op: str) -> Iterator[None]:
        """The writer lock and then the fold lock, for ``op`` (gc, purge, forget): nothing writes or folds meanwhile."""
        with self.lock.hold(op), self.fold_lock.hold(op):
            yield


_FOLDS_ASKED_NS: Final = 100_000_000
"""How often at most a handle asks the packs-folded mark when other processes move the head (0.1 s).

A fold deletes no object a reader needs: the handle reads the packs it keeps
open, deleted or not, and libgit2 finds a new pack on a miss. The mark only
lets a handle give up deleted packs' descriptors and space, which can wait
that long (a fold deletes packs a quarter second after it folded them at the
earliest); an agent's edit loop moves the head every few milliseconds.
"""
_RACY_NS: Final = 20_000_000
"""How far before a read a stamp's times must lie to be trusted: over a clock tick (file times use the coarse clock)."""
_NO_HISTORY: Final = (0, 0)
"""The history mark of a memory no purge or forget ever touched (no mark file)."""
_UNSTAMPED: Final = (-1, -1, -1, -1)
"""The stamp of a ref read without one: matches no file's, and is never trusted (not settled)."""
_RACY_SECONDS_NS: Final = 2_000_000_000
"""The same for a file system that keeps whole seconds (ext4 with small inodes, or FAT's two)."""


def _settled(st: os.stat_result, before_ns: int) -> bool:
    """Whether a rewrite after ``before_ns`` (when the file was read) must change ``st``'s stamp.

    Any later rewrite gets an mtime at or after the coarse clock's time of that
    rewrite, which lags the precise clock by at most a tick. A stamp whose times
    lie a margin before the read cannot be met again by a rewrite (an inode can
    be reused, and a ref always holds 41 bytes); one closer is *racy*, and the
    file is read again until its stamp settles (a few milliseconds after a write).
    """
    whole = st.st_mtime_ns % 1_000_000_000 == 0 and st.st_ctime_ns % 1_000_000_000 == 0
    margin = _RACY_SECONDS_NS if whole else _RACY_NS
    return max(st.st_mtime_ns, st.st_ctime_ns) + margin < before_ns


def _bump(gen_path: str) -> None:
    tmp = f"{gen_path}.{os.getpid()}.tmp"
    write_private(tmp, f"{time.time_ns()}\n")
    os.replace(tmp, gen_path)


def _after_crash(path: str, gen_path: str, pending_path: str, holder: Holder) -> None:
    """The previous writer-lock holder died holding it: clear what it left behind.

    A plain function, not a method: the lock keeps it, and a bound method would
    make a cycle that keeps every store's lock descriptors open until a GC pass.
    """
    remove_crashed_locks(path, holder.written_ns)
    from gitmem.git.quarantine import sweep  # only after a crash: reads never load it

    sweep(path)  # what it was bringing in (a pull, an import, a push) never enters: its quarantine goes
    if os.path.exists(pending_path):
        withdraw(path)  # it may have pruned without telling other handles: make them reopen
        _bump(gen_path)

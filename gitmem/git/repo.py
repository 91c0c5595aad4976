"""One bare repository seen as a memory: the only module that talks to pygit2 for writes.

What lives here, and nowhere else: opening and creating repos, reading trees and
blobs at the head of ``refs/heads/main``, rebuilding only the trees on a changed
path, creating commits, and the compare-and-swap of the ref. Everything is
expressed in hex ids, bytes and str, so the layers above never see pygit2.

How a change becomes a commit (:meth:`GitRepo.transact`)::

    take the writer flock ──► read head ──► plan(snapshot) ──► write blob/trees/commit
          ▲                                                      │
          └────────── ref moved by a foreign writer ◄── CAS main ┘
"""

from __future__ import annotations

import os
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.git.locks import WriterLock, remove_if_stale
from gitmem.git.refs import read_ref, swap_ref
from gitmem.model import Origin
from gitmem.provenance import COMMITTER_EMAIL, COMMITTER_NAME, commit_message
from gitmem.store import file_dir_conflict

MAIN = "refs/heads/main"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_FILE_MODES = (pygit2.GIT_FILEMODE_BLOB, pygit2.GIT_FILEMODE_BLOB_EXECUTABLE)
_TREE_MODE = pygit2.GIT_FILEMODE_TREE

T = TypeVar("T")

# libgit2 re-checks that every object a new tree or commit names exists (an odb lookup
# per entry), which costs about a third of a write's CPU. gitmem only names objects it
# has just written or read from the head under the writer lock, so the check adds no
# safety here. The switch is process-wide.
pygit2.settings.enable_strict_object_creation(False)


@contextmanager
def translate_errors(repo_path: str) -> Iterator[None]:
    """Turn pygit2 and OS failures into store errors where they enter gitmem."""
    try:
        yield
    except MemoryStoreError:
        raise
    except (pygit2.GitError, OSError, KeyError, ValueError, IndexError) as exc:
        if not os.path.isdir(os.path.join(repo_path, "objects")):
            raise MemoryStoreError("memory_deleted", f"the memory at {repo_path} no longer exists") from None
        raise MemoryStoreError("unavailable", f"git error: {exc}") from exc


@dataclass(frozen=True, slots=True)
class Entry:
    """A tree entry found at a path: a file (``blob``) or a folder (``tree``)."""

    kind: str
    oid: str


class Snapshot:
    """The head of ``main`` as a writer sees it under the lock."""

    def __init__(self, repo: pygit2.Repository, head: str) -> None:
        self._repo = repo
        self.head = head
        self.tree: pygit2.Tree = repo[head].peel(pygit2.Tree)

    def get(self, path: str) -> Entry | None:
        return lookup(self.tree, path)

    def data(self, oid: str) -> bytes:
        return bytes(self._repo[oid].read_raw())

    def write_blob(self, data: bytes) -> str:
        return str(self._repo.create_blob(data))

    @property
    def tree_id(self) -> str:
        return str(self.tree.id)


@dataclass(frozen=True, slots=True)
class Plan:
    """What a transaction commits: path edits (blob id, or ``None`` to delete) and a message."""

    edits: tuple[tuple[str, str | None], ...]
    op: str
    paths: tuple[str, ...]
    origin: Origin
    detail: str | None = None
    extra: tuple[tuple[str, str], ...] = ()
    result: str | None = None


def lookup(tree: pygit2.Tree, path: str) -> Entry | None:
    try:
        obj = tree[path]
    except KeyError:
        return None
    mode = obj.filemode
    if mode in _FILE_MODES:
        return Entry("blob", str(obj.id))
    if mode == _TREE_MODE:
        return Entry("tree", str(obj.id))
    return Entry("other", str(obj.id))


def walk_files(tree: pygit2.Tree, prefix: str = "") -> Iterator[tuple[str, str]]:
    """Every regular file under ``tree`` as ``(path, blob id)``, in git's (path) order."""
    for obj in tree:
        mode = obj.filemode
        if mode == _TREE_MODE:
            assert isinstance(obj, pygit2.Tree)
            yield from walk_files(obj, f"{prefix}{obj.name}/")
        elif mode in _FILE_MODES:
            yield f"{prefix}{obj.name}", str(obj.id)


def set_durable(enabled: bool = True) -> None:
    """Make libgit2 fsync every object and ref file it writes, and their folders.

    The switch belongs to libgit2 and so is process-wide: it covers every
    repository this process writes. A commit then waits for about a dozen fsyncs
    (two per new object, two for the ref) against two for a plain file store;
    ``docs/benchmarks.md`` has the measured cost.
    """
    pygit2.settings.enable_fsync_gitdir(enabled)


_RAW_TREE_MODE = b"40000"
_ANCESTRY_WALK = 512  # commits descendant_of visits itself before asking libgit2


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


def _diff_trees(
    repo: pygit2.Repository, old: pygit2.Oid | None, new: pygit2.Oid | None, prefix: str, out: list[str]
) -> None:
    """Append to ``out`` every non-folder path that differs between two trees (``None``: absent)."""
    a, b = _changed_entries(b"" if old is None else repo[old].read_raw(), b"" if new is None else repo[new].read_raw())
    for name in a.keys() | b.keys():
        was, now = a.get(name), b.get(name)
        if was == now:
            continue
        path = prefix + name.decode("utf-8", "surrogateescape")  # as pygit2 names them in walk_files
        was_tree = was is not None and was[0] == _RAW_TREE_MODE
        now_tree = now is not None and now[0] == _RAW_TREE_MODE
        if was_tree or now_tree:
            _diff_trees(
                repo,
                pygit2.Oid(raw=was[1]) if was is not None and was_tree else None,
                pygit2.Oid(raw=now[1]) if now is not None and now_tree else None,
                f"{path}/",
                out,
            )
        if (was is not None and not was_tree) or (now is not None and not now_tree):
            out.append(path)


class GitRepo:
    """A bare repository holding one memory on ``refs/heads/main``.

    pygit2 repositories are not safe to share between threads, so each thread
    (and each process after ``fork``) opens its own handle.
    """

    def __init__(self, path: str, *, stale_lock_seconds: float = 2.0, lock_timeout: float = 30.0) -> None:
        self.path = os.path.abspath(path)
        self.stale_lock_seconds = stale_lock_seconds
        self.lock_timeout = lock_timeout
        self._local = threading.local()
        self._gen_path = os.path.join(self.path, "gitmem", "generation")
        self.lock = WriterLock(os.path.join(self.path, "gitmem", "write.lock"))

    # -- lifecycle --

    @classmethod
    def init(cls, path: str, *, config: dict[str, str] | None = None) -> GitRepo:
        """Create a bare repo whose ``main`` holds a root commit with an empty tree."""
        path = os.path.abspath(path)
        if os.path.exists(os.path.join(path, "HEAD")):
            raise MemoryStoreError("already_exists", f"a repository already exists at {path}")
        try:
            repo = pygit2.init_repository(path, bare=True, initial_head="main")
            for key, value in (config or {}).items():
                repo.config[key] = value
            os.makedirs(os.path.join(path, "gitmem"), exist_ok=True)
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
            os.makedirs(os.path.join(path, "gitmem"), exist_ok=True)
            opened.head()
        return opened

    @property
    def repo(self) -> pygit2.Repository:
        local = self._local
        pid = os.getpid()
        repo: pygit2.Repository | None = getattr(local, "repo", None)
        if repo is None or local.pid != pid:
            if not os.path.isdir(os.path.join(self.path, "objects")):
                raise MemoryStoreError("memory_deleted", f"the memory at {self.path} no longer exists")
            repo = pygit2.Repository(self.path, pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
            local.repo = repo
            local.pid = pid
            local.gen = self._generation()
        return repo

    def _generation(self) -> tuple[int, int]:
        try:
            st = os.stat(self._gen_path)
        except FileNotFoundError:
            return (0, 0)
        return (st.st_ino, st.st_mtime_ns)

    def bump_generation(self) -> None:
        """Tell other handles that objects were deleted, so they drop their caches."""
        tmp = f"{self._gen_path}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(f"{time.time_ns()}\n")
        os.replace(tmp, self._gen_path)
        self._local.repo = None

    def _fresh_repo(self) -> pygit2.Repository:
        """The thread's handle, reopened if a purge or forget deleted objects since."""
        repo = self.repo
        if self._local.gen != self._generation():
            self._local.repo = None
            repo = self.repo
        return repo

    def config_get(self, key: str) -> str | None:
        with translate_errors(self.path):
            cfg = self.repo.config
            return cfg[key] if key in cfg else None

    def config_set(self, key: str, value: str) -> None:
        with translate_errors(self.path):
            self.repo.config[key] = value

    # -- reads (no lock: refs and objects are read consistently from one head) --

    def head(self) -> str:
        # Every read starts here: a handle must not serve objects a purge deleted.
        ref = self._fresh_repo().references.get(MAIN)
        if ref is None:
            # A handle opened before Root.remove keeps its pygit2 object; the ref vanishing
            # with the whole repo is a deleted memory, not a broken one.
            if not os.path.isdir(os.path.join(self.path, "objects")):
                raise MemoryStoreError("memory_deleted", f"the memory at {self.path} no longer exists")
            raise MemoryStoreError("unavailable", f"{self.path} has no {MAIN}")
        return str(ref.target)

    def ref_target(self, name: str) -> str | None:
        """The commit another ref (a proposal branch) points at, or ``None`` when it does not exist."""
        with translate_errors(self.path):
            return read_ref(self._fresh_repo(), name)

    def tree_of(self, commit: str) -> pygit2.Tree:
        return self.repo[commit].peel(pygit2.Tree)

    def read_at(self, commit: str, path: str) -> tuple[str, bytes] | None:
        """``(blob id, bytes)`` of the file at ``path`` in ``commit``, or ``None``."""
        entry = lookup(self.tree_of(commit), path)
        if entry is None or entry.kind != "blob":
            return None
        return entry.oid, bytes(self.repo[entry.oid].read_raw())

    def blob(self, oid: str) -> bytes:
        return bytes(self.repo[oid].read_raw())

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
        """The commit id a revision names (hex id, prefix, ``main``, ``main~2``), or ``None``."""
        try:
            obj = self.repo.revparse_single(rev)
            commit = obj.peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            return None
        return str(commit.id)

    def is_commit(self, rev: str) -> bool:
        try:
            obj = self.repo.get(rev)
        except (ValueError, pygit2.GitError):
            return False
        return obj is not None and obj.type == pygit2.enums.ObjectType.COMMIT

    def descendant_of(self, commit: str, ancestor: str) -> bool:
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
            target = pygit2.Oid(hex=ancestor)
            frontier = deque([pygit2.Oid(hex=commit)])
            seen: set[pygit2.Oid] = set()
            for _ in range(_ANCESTRY_WALK):
                if not frontier:
                    return False  # the whole history was walked
                for parent in repo[frontier.popleft()].peel(pygit2.Commit).parent_ids:
                    if parent == target:
                        return True
                    if parent not in seen:
                        seen.add(parent)
                        frontier.append(parent)
            return bool(repo.descendant_of(commit, ancestor))
        except (pygit2.GitError, KeyError):  # its objects were deleted (a purge or forget meanwhile)
            return False

    def changed_paths(self, old: str, new: str) -> tuple[str, ...]:
        """Paths that differ between two commits' trees; cost follows the changed subtrees.

        The same paths libgit2's tree diff reports (no rename detection), but folders
        whose tree id is unchanged are skipped instead of walked: libgit2 visits every
        entry, ~9 ms for one changed file in a 100k-file memory, against ~0.3 ms here.
        """
        paths: list[str] = []
        _diff_trees(self.repo, self.tree_of(old).id, self.tree_of(new).id, "", paths)
        return tuple(sorted(set(paths)))

    # -- writes --

    def transact(self, plan: Callable[[Snapshot], Plan | None], *, ref: str = MAIN) -> tuple[str | None, Plan | None]:
        """Run ``plan`` on the head and commit its edits with a CAS on ``ref`` (``main``).

        ``plan`` runs under the writer lock and may raise a store error to refuse
        the change, or return ``None`` for a no-op. When a writer outside gitmem
        (a push, plain git) moved the ref in between, the plan is re-run on the
        new head: its checks decide again, so nothing is merged blindly.
        Another ``ref`` (a proposal branch) that does not exist yet is forked
        from ``main``: the plan sees main's head and the ref is created atomically.
        Returns the new commit id (``None`` for a no-op) and the plan used.
        """
        with translate_errors(self.path), self.lock.hold():
            while True:
                repo = self._fresh_repo()
                branch = None if ref == MAIN else read_ref(repo, ref)
                head = self.head() if branch is None else branch
                snap = Snapshot(repo, head)
                chosen = plan(snap)
                if chosen is None:
                    return None, None
                tree = snap.tree
                tree_id = tree.id
                for path, oid in chosen.edits:
                    tree_id = _set_path(repo, repo[tree_id].peel(pygit2.Tree), path.split("/"), oid, path)
                author = _author(chosen.origin)
                committer = pygit2.Signature(COMMITTER_NAME, COMMITTER_EMAIL)
                message = commit_message(
                    chosen.op, chosen.paths, chosen.origin, detail=chosen.detail, extra=chosen.extra
                )
                commit = repo.create_commit(None, author, committer, message, tree_id, [pygit2.Oid(hex=head)])
                if ref == MAIN:
                    moved = self._cas(repo, head, str(commit))
                else:
                    message = f"gitmem {chosen.op}"
                    moved = swap_ref(
                        repo,
                        self.path,
                        ref,
                        branch,
                        str(commit),
                        message=message,
                        stale_after=self.stale_lock_seconds,
                        timeout=self.lock_timeout,
                    )
                if moved:
                    return str(commit), chosen

    def _cas(self, repo: pygit2.Repository, old: str, new: str) -> bool:
        """Move ``main`` from ``old`` to ``new``; ``False`` when someone else moved it first."""
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.0005
        lock_file = os.path.join(self.path, "refs", "heads", "main.lock")
        while True:
            ref = repo.lookup_reference(MAIN)
            if str(ref.target) != old:
                return False
            try:
                ref.set_target(pygit2.Oid(hex=new))
                return True
            except pygit2.GitError as exc:
                # Normally libgit2 re-read the ref under its lock and found another value;
                # if the ref still holds ``old`` the failure has another cause, and
                # retrying would spin forever.
                if str(repo.lookup_reference(MAIN).target) == old:
                    raise MemoryStoreError("unavailable", f"cannot update {MAIN}: {exc}") from exc
                return False
            except OSError as exc:
                if "lock" not in str(exc):
                    raise
                if remove_if_stale(lock_file, self.stale_lock_seconds):
                    continue
                if time.monotonic() > deadline:
                    raise MemoryStoreError("unavailable", f"{lock_file} is held by another git process") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)

    def reset_history(self, message: str) -> str:
        """Replace all history with one empty root commit and delete every object.

        Runs under the writer lock, so no gitmem writer has objects in flight;
        every other ref and all reflogs go too, so nothing purged stays reachable.
        """
        with translate_errors(self.path), self.lock.hold():
            repo = self._fresh_repo()
            tree = repo.TreeBuilder().write()
            sig = pygit2.Signature(COMMITTER_NAME, COMMITTER_EMAIL)
            commit = repo.create_commit(None, sig, sig, message, tree, [])
            while True:
                head = self.head()
                if self._cas(repo, head, str(commit)):
                    break
            for name in list(repo.references):
                if name != MAIN:
                    repo.references.delete(name)
            # The new root commit and empty tree may already sit in a pack (libgit2 then
            # writes nothing), and every pack is about to go: keep them as loose objects.
            kept = {str(oid): (repo[oid].type_str, bytes(repo[oid].read_raw())) for oid in (commit, tree)}
            self._prune_all_but(set(kept))
            for oid, (kind, raw) in kept.items():
                _write_loose(os.path.join(self.path, "objects"), oid, kind, raw)
            self.bump_generation()
            return str(commit)

    def _prune_all_but(self, keep: set[str]) -> None:
        objects = os.path.join(self.path, "objects")
        for entry in os.listdir(objects):
            folder = os.path.join(objects, entry)
            if len(entry) == 2 and os.path.isdir(folder):
                for name in os.listdir(folder):
                    if entry + name not in keep:
                        os.unlink(os.path.join(folder, name))
                if not os.listdir(folder):
                    os.rmdir(folder)
        pack_dir = os.path.join(objects, "pack")
        if os.path.isdir(pack_dir):
            for name in os.listdir(pack_dir):
                os.unlink(os.path.join(pack_dir, name))
        for stale in ("info/packs", "info/commit-graph", "info/commit-graphs"):
            target = os.path.join(objects, stale)
            if os.path.isfile(target):
                os.unlink(target)
        logs = os.path.join(self.path, "logs")
        if os.path.isdir(logs):
            import shutil

            shutil.rmtree(logs)


def _write_loose(objects: str, oid: str, kind: str, raw: bytes) -> None:
    """Store one object as a loose file unless it already is one."""
    folder = os.path.join(objects, oid[:2])
    target = os.path.join(folder, oid[2:])
    if os.path.exists(target):
        return
    os.makedirs(folder, exist_ok=True)
    tmp = f"{target}.{os.getpid()}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(zlib.compress(b"%s %d\x00" % (kind.encode(), len(raw)) + raw))
    os.replace(tmp, target)


def _author(origin: Origin) -> pygit2.Signature:
    return pygit2.Signature(origin.principal_id or COMMITTER_NAME, COMMITTER_EMAIL)


def _set_path(
    repo: pygit2.Repository, tree: pygit2.Tree | None, parts: list[str], oid: str | None, full: str
) -> pygit2.Oid:
    """Return the id of ``tree`` with ``parts`` set to blob ``oid`` (or removed when ``None``).

    Only the trees on the path are rebuilt; a folder left empty disappears.
    """
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    name = parts[0]
    existing = builder.get(name)
    if len(parts) == 1:
        if existing is not None and existing.filemode == _TREE_MODE and oid is not None:
            raise file_dir_conflict(full, is_file=False)
        if oid is None:
            if existing is not None:
                builder.remove(name)
        else:
            builder.insert(name, pygit2.Oid(hex=oid), pygit2.GIT_FILEMODE_BLOB)
    else:
        sub: pygit2.Tree | None = None
        if existing is not None:
            if existing.filemode != _TREE_MODE:
                if oid is None:
                    return builder.write()
                raise file_dir_conflict(full, is_file=True)
            sub = repo[existing.id].peel(pygit2.Tree)
        elif oid is None:
            return builder.write()
        new_sub = _set_path(repo, sub, parts[1:], oid, full)
        if str(new_sub) == EMPTY_TREE:
            builder.remove(name)
        else:
            builder.insert(name, new_sub, _TREE_MODE)
    return builder.write()

"""Decide whether a pushed ref update may land on a mount.

Commits can reach a mount without going through the store: ``git push`` over
HTTP (``gitmem serve``), over ssh or a file path (the ``pre-receive`` hook).
Every one of those paths calls :func:`check_updates`, so a push is held to the
same rules as a store write:

- only branches and tags can be pushed, and ``main`` can neither be deleted nor
  rewound: an update to it must be a fast-forward;
- every object the push brings in passes git's own strict rules (``strict_objects``:
  what ``receive.fsckObjects`` checks, see :mod:`gitmem.git.packs`);
- every entry of every tree the push brings in (not only the files it adds) is a
  plain file (mode 100644, pointing at a blob) or a non-empty folder (040000,
  pointing at a tree), and its name and path pass
  :func:`gitmem.fileformat.validate_path`: no ``.git``, ``..``, ``.gitmodules`` or
  other reserved name can hide in a folder name or an empty subtree;
- every commit the push brings in is checked against its parent(s): each file it
  adds or changes must be a plain file (mode 100644) whose path passes
  :func:`gitmem.fileformat.validate_path` unchanged (NFC) and whose content passes
  :func:`gitmem.fileformat.encode_text` (UTF-8, size, NUL, frontmatter, secrets);
  a file that is introduced and removed again inside the push is still refused,
  because git would keep it in history;
- a commit whose message carries ``Gitmem-*`` trailers must name in them every
  path its tree diff changes (``provenance``): history reads trust those trailers
  to skip commits, so a pushed commit cannot hide a change behind them;
- every identity trailer a commit carries (who made it, who approved it: the
  list is :data:`gitmem.provenance.IDENTITY_TRAILERS`) is read as git reads it,
  appears once, written as gitmem writes it, and no other line of the message
  starts with one of those keys (``identity``, :mod:`gitmem.git.claims`), so
  ``gitmem log`` and ``git log`` name the same person; that the names are the
  pusher's is checked where the pusher is known (:mod:`gitmem.adapters.pushaccess`);
- on ``main``, the memory's file and byte limits hold for the new head (unless it
  shrinks the memory);
- no tree the push brings in holds a blob the mount's erasure ledger names
  (``erased``, :mod:`gitmem.git.erasures`): a stale clone cannot push back what
  ``forget`` or ``purge`` erased, and neither can a pull or an approval, which
  run this same check;
- the ledger ref itself (``refs/gitmem/erasures``) can be pushed, only forward
  and only as gitmem writes it (:func:`gitmem.git.erasures.foreign_ledger`): a
  new ledger keeps every entry of the old one, so it can be sent, never undone,
  and carries nothing but its entries. Every other ref under ``refs/gitmem/``
  is gitmem's own and refused.

The check only reads objects. The objects of a push in flight sit in a
quarantine directory until the push is accepted; pass it as ``object_dirs``.
Each :class:`Refusal` names the ref, the commit, the file and the rule.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat, encode_text, validate_path
from gitmem.git import erasures
from gitmem.git.claims import RULE_IDENTITY, identity_problems
from gitmem.git.loose import open_repository
from gitmem.git.quarantine import strict_check
from gitmem.git.refs import MAIN
from gitmem.git.snapshot import walk_file_ids
from gitmem.git.treediff import file_changes
from gitmem.git.walk import contradicted_moves, unnamed_changes
from gitmem.secrets import find_secret

ZERO = "0" * 40
MAX_REFUSALS = 20
"""Problems listed per ref; a push with more gets a final "and more" line."""

_REGULAR = pygit2.GIT_FILEMODE_BLOB
_MODE_NAMES = {
    pygit2.GIT_FILEMODE_BLOB_EXECUTABLE: "an executable file (mode 100755)",
    pygit2.GIT_FILEMODE_LINK: "a symbolic link (mode 120000)",
    pygit2.GIT_FILEMODE_COMMIT: "a submodule (mode 160000)",
}
_FOLDER = pygit2.GIT_FILEMODE_TREE
_BLOB_TYPE = int(pygit2.enums.ObjectType.BLOB)
_TREE_TYPE = int(pygit2.enums.ObjectType.TREE)
_TYPE_NAMES = {
    int(pygit2.enums.ObjectType.COMMIT): "commit",
    _TREE_TYPE: "folder (tree)",
    _BLOB_TYPE: "file (blob)",
    int(pygit2.enums.ObjectType.TAG): "tag",
}

# Rules that are not store error codes (those are invalid_path, invalid_file,
# too_large and memory_full; secrets are reported as "secret:<rule name>").
RULE_REF_NAME = "ref_name"
RULE_DELETE_MAIN = "delete_main"
RULE_FAST_FORWARD = "non_fast_forward"
RULE_NOT_A_COMMIT = "not_a_commit"
RULE_MISSING_OBJECT = "missing_object"
RULE_FILE_MODE = "file_mode"
RULE_OBJECT = "invalid_object"
RULE_PROVENANCE = "provenance"
RULE_TOO_MANY = "too_many_problems"
RULE_ERASED = erasures.RULE_ERASED
RULE_LEDGER = "erasure_ledger"


@dataclass(frozen=True, slots=True)
class RefUpdate:
    """One ``old new ref`` line of a push; ``ZERO`` stands for "absent"."""

    ref: str
    old: str
    new: str

    @property
    def deleting(self) -> bool:
        return self.new == ZERO


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why one ref update may not land: the rule broken, and where."""

    ref: str
    rule: str
    message: str
    commit: str | None = None
    path: str | None = None

    def short(self) -> str:
        """One line for git's ``ng <ref> <reason>`` status: ``<path> in <commit>: <rule>``, either place when known."""
        places = [p for p in (self.path, None if self.commit is None else self.commit[:12]) if p is not None]
        return f"{' in '.join(places)}: {self.rule}" if places else self.rule

    def __str__(self) -> str:
        parts = [self.ref]
        if self.commit is not None:
            parts.append(f"commit {self.commit[:12]}")
        if self.path is not None:
            parts.append(self.path)
        return f"{': '.join(parts)}: {self.rule}: {self.message}"


def reason(refusals: Sequence[Refusal]) -> str:
    """The text after ``ng <ref>``: the first problem, and how many more there are."""
    first = refusals[0].short()
    more = sum(1 for r in refusals[1:] if r.rule != RULE_TOO_MANY)
    return first if not more else f"{first} (and {more} more; see the remote messages)"


def check_updates(
    repo_path: str,
    updates: Sequence[RefUpdate],
    fmt: FileFormat,
    *,
    object_dirs: Sequence[str] = (),
    strict_objects: bool = False,
    reached: dict[str, set[bytes]] | None = None,
) -> dict[str, list[Refusal]]:
    """Refusals per ref (an empty list: the update may land).

    ``object_dirs`` are extra object directories to read from (a push's
    quarantine). ``strict_objects`` also runs git's strict object checks on what
    the push brings (:func:`gitmem.git.quarantine.strict_check`); ``gitmem serve``
    leaves it off because ``git index-pack --strict`` already read every object.
    ``reached``, when given, is filled with the raw ids of objects the check
    saw reachable from each ref's new value (its new commits, the trees that
    changed and their entries, a pushed tag): enough for ``gitmem serve`` to tell
    that a received pack holds nothing else, without walking it again.
    Raises ``unavailable`` only when the repository itself cannot be read;
    anything wrong with the pushed objects is a refusal.
    """
    with _checking(repo_path, fmt, object_dirs) as checker:
        if strict_objects:
            tips = [u.new for u in updates if not u.deleting]
            problem = strict_check(os.path.abspath(repo_path), object_dirs, tips, [str(c) for c in checker.known])
            if problem is not None:
                message = f"git's object checks refuse the pushed objects: {problem}"
                return {u.ref: [] if u.deleting else [Refusal(u.ref, RULE_OBJECT, message, u.new)] for u in updates}
        out = {}
        for update in updates:
            checker.reached = set()
            out[update.ref] = checker.check(update)
            if reached is not None:
                reached[update.ref] = checker.reached
        return out


@contextmanager
def _checking(repo_path: str, fmt: FileFormat, object_dirs: Sequence[str] = ()) -> Iterator[_Checker]:
    """A checker on the repository at ``repo_path`` (``unavailable`` when it cannot be read), freed afterwards."""
    try:
        repo = open_repository(os.path.abspath(repo_path), extra_objects=object_dirs)
        checker = _Checker(repo, fmt)
    except (pygit2.GitError, OSError) as exc:
        raise MemoryStoreError("unavailable", f"cannot read the repository at {repo_path}: {exc}") from exc
    with repo:
        yield checker


@dataclass(frozen=True, slots=True)
class CommitVerdict:
    """One commit of a line of history held to the push rules: its id, its parents, what it breaks."""

    commit: str
    parents: tuple[str, ...]
    refusals: tuple[Refusal, ...]


def check_commits(
    repo_path: str, tip: str, fmt: FileFormat, *, hide: Sequence[str] = (), ref: str = MAIN
) -> list[CommitVerdict]:
    """Every commit reachable from ``tip`` and not from ``hide``, parents first, each with its refusals.

    :func:`check_updates` answers for a whole ref update (and stops at
    :data:`MAX_REFUSALS`); bringing in a history (``gitmem import --history``) needs
    the verdict of each commit, so it can keep the ones that pass and list the rest.
    ``unavailable`` when the repository or an object cannot be read.
    """
    with _checking(repo_path, fmt) as checker:
        checker.known = [pygit2.Oid(hex=h) for h in hide]
        out: list[CommitVerdict] = []
        try:
            for commit in checker._new_commits(pygit2.Oid(hex=tip)):
                refusals = tuple(
                    Refusal(ref, problem[0], problem[1], str(commit.id), where)
                    for where, problem in checker._commit_problems(commit)
                )
                out.append(CommitVerdict(str(commit.id), tuple(str(p) for p in commit.parent_ids), refusals))
        except (KeyError, ValueError, pygit2.GitError) as exc:
            raise MemoryStoreError("unavailable", f"cannot read the history at {tip[:12]}: {exc}") from exc
        return out


def tip_limits(repo_path: str, tip: str, base: str | None, fmt: FileFormat, *, ref: str = MAIN) -> list[Refusal]:
    """The memory's file and byte limits for ``tip`` as a new ``main`` (``base``: the one it replaces).

    The last rule :func:`check_updates` applies to ``main``, for a history checked
    commit by commit (``gitmem check``): empty when the limits hold.
    """
    with _checking(repo_path, fmt) as checker:
        try:
            return checker._capacity(ref, base or ZERO, checker.repo[tip].peel(pygit2.Commit))
        except (KeyError, ValueError, pygit2.GitError) as exc:
            raise MemoryStoreError("unavailable", f"cannot read the tree of {tip[:12]}: {exc}") from exc


class EntryRules:
    """The push rules for one tree entry, for a caller that drops what they refuse (``import --rewrite``).

    The very checks a pushed tree entry and a pushed file meet (path, mode, type,
    erased content, UTF-8, size, frontmatter, secrets), cached by path and blob,
    so a rewrite keeps exactly what a push would have let in.
    """

    def __init__(self, repo: pygit2.Repository, fmt: FileFormat) -> None:
        self._checker = _Checker(repo, fmt)

    def problem(self, raw: bytes, mode: int, oid: pygit2.Oid) -> tuple[str, str] | None:
        """``(rule, message)`` when the entry at path ``raw`` may not be in a memory, else ``None``."""
        found = self._checker._entry_problem(raw, mode, oid)
        if found is None and mode != _FOLDER:
            found = self._checker._content_problem(oid, mode)
        return found


class _Checker:
    """Checks updates against one repository, caching verdicts by path and blob."""

    def __init__(self, repo: pygit2.Repository, fmt: FileFormat) -> None:
        self.repo = repo
        self.fmt = fmt
        self.known = _ref_commits(repo)
        self._paths: dict[bytes, tuple[str, str] | None] = {}
        self._blobs: dict[pygit2.Oid, tuple[str, str] | None] = {}
        self._headers: dict[pygit2.Oid, tuple[int, int]] = {}
        self._trees: set[tuple[pygit2.Oid, bytes]] = set()
        self._stored: dict[pygit2.Oid, list[bytes]] = {}  # raw entries of recent trees (a parent's, mostly)
        self.reached: set[bytes] = set()
        self._erased = frozenset(bytes.fromhex(b) for b in erasures.erased_blobs(repo, repo.path))

    def check(self, update: RefUpdate) -> list[Refusal]:
        ref = update.ref
        if ref == erasures.LEDGER_REF:
            return self._check_ledger(update)
        if not (ref.startswith(("refs/heads/", "refs/tags/")) and pygit2.reference_is_valid_name(ref)):
            return [Refusal(ref, RULE_REF_NAME, "only branches (refs/heads/*) and tags (refs/tags/*) can be pushed")]
        if update.deleting:
            if ref == MAIN:
                return [Refusal(ref, RULE_DELETE_MAIN, "main holds the live memory and cannot be deleted")]
            return []
        try:
            return self._check_new(update)
        except (KeyError, ValueError, pygit2.GitError) as exc:
            return [Refusal(ref, RULE_MISSING_OBJECT, f"the push is incomplete or unreadable ({exc})", update.new)]

    def _check_ledger(self, update: RefUpdate) -> list[Refusal]:
        """The erasure ledger moves forward only, and only by commits exactly as gitmem writes them.

        It is a ref gitmem owns: a file beside ``entries.jsonl``, an extra header
        or a merge would make it carry anything (an erased version, say) into
        every clone that fetches it (:func:`gitmem.git.erasures.foreign_ledger`).
        """
        ref = update.ref
        if update.deleting:
            return [Refusal(ref, RULE_LEDGER, "the erasure ledger cannot be deleted: it keeps erased content out")]
        try:
            problem = erasures.foreign_ledger(self.repo, None if update.old == ZERO else update.old, update.new)
        except MemoryStoreError as exc:
            return [Refusal(ref, RULE_LEDGER, exc.message, update.new)]
        except (KeyError, ValueError, pygit2.GitError) as exc:
            return [Refusal(ref, RULE_MISSING_OBJECT, f"the push is incomplete or unreadable ({exc})", update.new)]
        if problem is not None:
            return [Refusal(ref, RULE_LEDGER, problem, update.new)]
        for c in self.repo.walk(pygit2.Oid(hex=update.new), pygit2.enums.SortMode.TOPOLOGICAL):
            self.reached.update((c.id.raw, c.tree_id.raw, *(e.id.raw for e in c.tree)))
            if update.old != ZERO and str(c.id) == update.old:
                break
        return []

    def _check_new(self, update: RefUpdate) -> list[Refusal]:
        ref, repo = update.ref, self.repo
        pushed = repo[update.new]
        target = (
            pushed.peel(pygit2.Commit) if isinstance(pushed, pygit2.Tag) and ref.startswith("refs/tags/") else pushed
        )
        if not isinstance(target, pygit2.Commit):
            return [Refusal(ref, RULE_NOT_A_COMMIT, "a pushed branch or tag must point at a commit", update.new)]
        new = target.id
        if ref == MAIN and update.old != ZERO and str(new) != update.old and not repo.descendant_of(new, update.old):
            return [
                Refusal(
                    ref,
                    RULE_FAST_FORWARD,
                    f"main is at {update.old[:12]} and {str(new)[:12]} does not build on it; "
                    "fetch, rebase or merge onto main, and push again (history is never rewritten)",
                    str(new),
                )
            ]
        refusals: list[Refusal] = []
        self.reached.add(pushed.id.raw)
        for commit in self._new_commits(new):
            self.reached.add(commit.id.raw)
            for path, problem in self._commit_problems(commit):
                if len(refusals) == MAX_REFUSALS:
                    refusals.append(Refusal(ref, RULE_TOO_MANY, f"more than {MAX_REFUSALS} problems; fix these first"))
                    return refusals
                refusals.append(Refusal(ref, problem[0], problem[1], str(commit.id), path))
        if ref == MAIN and not refusals:
            refusals.extend(self._capacity(ref, update.old, target))
        return refusals

    def _new_commits(self, new: pygit2.Oid) -> Iterator[pygit2.Commit]:
        """Commits reachable from ``new`` and from no existing ref, parents first."""
        walker = self.repo.walk(new, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
        for known in self.known:
            walker.hide(known)
        yield from walker

    def _commit_problems(self, commit: pygit2.Commit) -> Iterator[tuple[str | None, tuple[str, str]]]:
        """``(path, (rule, message))`` for every entry and file the commit brings in that breaks a rule
        (``path`` ``None``: the commit's message)."""
        data = bytes(self.repo.odb.read(commit.id)[1])
        for message in identity_problems(data):
            yield None, (RULE_IDENTITY, message)
        parents = commit.parents
        tree = commit.tree
        bad: set[bytes] = set()
        for raw, problem in self._tree_problems(tree, [p.tree for p in parents], b""):
            bad.add(raw)
            yield _printable(raw.decode("utf-8", errors="replace")), problem
        changed: list[str] = []
        for change in file_changes(self.repo, parents[0].tree_id if parents else None, tree.id):
            raw = change.path.encode("utf-8", "surrogateescape")
            path = raw.decode("utf-8", errors="replace")
            changed.append(path)
            if change.new is None:
                continue
            mode, oid = change.new[0], pygit2.Oid(hex=change.new[1])
            if raw in bad:
                continue
            if len(parents) > 1 and any(_has_entry(p.tree, path, oid, mode) for p in parents[1:]):
                continue  # taken unchanged from another parent: not new in this commit
            found = self._path_problem(raw) or self._content_problem(oid, mode)
            if found is not None:
                yield _printable(path), found
        unnamed = unnamed_changes(data, changed)
        if unnamed:
            yield (
                _printable(unnamed[0]),
                (
                    RULE_PROVENANCE,
                    f"the commit's Gitmem trailers do not name {len(unnamed)} path(s) its tree changes; "
                    "history would hide those changes. Remove the Gitmem-* trailers from commits gitmem did not make",
                ),
            )

        for source, destination in contradicted_moves(commit):
            yield (
                _printable(destination),
                (
                    RULE_PROVENANCE,
                    f"the commit's trailers say {_printable(source)} moved here, but its trees do not show that move",
                ),
            )

    def _tree_problems(
        self, tree: pygit2.Tree, olds: list[pygit2.Tree | None], prefix: bytes
    ) -> Iterator[tuple[bytes, tuple[str, str]]]:
        """Name, mode and type of every entry of ``tree`` and its subtrees that no parent has as is.

        A subtree with the same id at the same path in a parent was checked when
        that parent came in (or is the mount's own), so only what changed is read:
        an entry whose raw bytes (mode, name, id) a parent's tree holds is passed
        over without building its Python object, which is most of a tree.
        """
        if any(old is not None and old.id == tree.id for old in olds) or (tree.id, prefix) in self._trees:
            return
        self._trees.add((tree.id, prefix))
        self.reached.add(tree.id.raw)
        if not len(tree) and prefix:
            yield prefix[:-1], ("invalid_path", "an empty folder; a memory holds files and the folders they need")
            return
        known: set[bytes] = set()
        for old in olds:
            if old is not None:
                known.update(self._entries(old))
        for entry, stored in zip(tree, self._entries(tree), strict=True):
            if stored in known:
                continue
            name = entry.raw_name
            assert name is not None
            raw = prefix + name
            mode = entry.filemode
            self.reached.add(entry.id.raw)
            problem = self._entry_problem(raw, mode, entry.id)
            if problem is not None:
                yield raw, problem
            elif mode == _FOLDER:
                subtree = self.repo[entry.id]
                assert isinstance(subtree, pygit2.Tree)
                below = [_subtree(old, raw[len(prefix) :].decode("utf-8")) for old in olds]
                yield from self._tree_problems(subtree, below, raw + b"/")

    def _entries(self, tree: pygit2.Tree) -> list[bytes]:
        """The raw entries of ``tree``, kept a while: a commit's trees are its child's parent trees."""
        found = self._stored.get(tree.id)
        if found is None:
            if len(self._stored) >= 4096:
                self._stored.clear()
            found = self._stored[tree.id] = list(_raw_entries(tree.read_raw()))
        return found

    def _entry_problem(self, raw: bytes, mode: int, oid: pygit2.Oid) -> tuple[str, str] | None:
        problem = self._path_problem(raw)
        if problem is not None:
            return problem
        if oid.raw in self._erased:
            return (
                RULE_ERASED,
                f"this content ({str(oid)[:12]}) was erased from the memory by forget or purge and may not come "
                "back; a clone made before the erasure must be cloned again",
            )
        if mode not in (_REGULAR, _FOLDER):
            kind = _MODE_NAMES.get(mode, f"an entry with mode {mode:o}")
            return (RULE_FILE_MODE, f"this is {kind}; a memory holds plain text files (mode 100644)")
        want = _TREE_TYPE if mode == _FOLDER else _BLOB_TYPE
        found = self._header(oid)[0]
        if found != want:
            said = "folder" if want == _TREE_TYPE else "file"
            return (
                RULE_FILE_MODE,
                f"the entry's mode says {said} but it points at a {_TYPE_NAMES.get(found, 'missing object')}",
            )
        return None

    def _header(self, oid: pygit2.Oid) -> tuple[int, int]:
        """``(type, size)`` of an object, read once (``(0, 0)``: missing)."""
        found = self._headers.get(oid)
        if found is None:
            try:
                kind, size = self.repo.odb.read_header(oid)
                found = (int(kind), size)
            except KeyError:
                found = (0, 0)
            self._headers[oid] = found
        return found

    def _path_problem(self, raw: bytes) -> tuple[str, str] | None:
        if raw in self._paths:
            return self._paths[raw]
        problem: tuple[str, str] | None = None
        try:
            path = raw.decode("utf-8")
        except UnicodeDecodeError:
            problem = ("invalid_path", "the path is not valid UTF-8")
        else:
            try:
                if validate_path(path, self.fmt) != path:
                    problem = ("invalid_path", "the path is not in Unicode NFC form, so the store could not address it")
            except MemoryStoreError as exc:
                problem = (exc.code, exc.message)
        self._paths[raw] = problem
        return problem

    def _content_problem(self, oid: pygit2.Oid, mode: int) -> tuple[str, str] | None:
        if mode != _REGULAR:
            kind = _MODE_NAMES.get(mode, f"an entry with mode {mode:o}")
            return (RULE_FILE_MODE, f"this is {kind}; a memory holds plain text files (mode 100644)")
        if oid in self._blobs:
            return self._blobs[oid]
        problem = self._blob_problem(oid)
        self._blobs[oid] = problem
        return problem

    def _blob_problem(self, oid: pygit2.Oid) -> tuple[str, str] | None:
        fmt = self.fmt
        kind, size = self._header(oid)
        if kind == 0:
            raise KeyError(str(oid))
        if size > fmt.max_file_bytes:
            return ("too_large", f"content is {size} bytes; the limit is {fmt.max_file_bytes}")
        data = bytes(self.repo[oid].read_raw())
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            hint = "it holds a NUL byte; memory files are text" if b"\x00" in data else f"at byte {exc.start}"
            return ("invalid_file", f"content is not valid UTF-8 ({hint})")
        try:
            encode_text(text, fmt, check_secrets=False)
        except MemoryStoreError as exc:
            return (exc.code, exc.message)
        if fmt.check_secrets:
            rule = find_secret(text)
            if rule is not None:
                return (
                    f"secret:{rule.name}",
                    f"content looks like it holds {rule.explanation}; git keeps every version, so remove it "
                    "from the commits that add it (rewrite them) before pushing",
                )
        return None

    def _capacity(self, ref: str, old: str, target: pygit2.Commit) -> list[Refusal]:
        fmt = self.fmt
        if fmt.max_files is None and fmt.max_memory_bytes is None:
            return []
        new_files, new_bytes = self._footprint(target.tree)
        old_files, old_bytes = self._footprint(self.repo[old].peel(pygit2.Tree)) if old != ZERO else (0, 0)
        problems = []
        if fmt.max_files is not None and new_files > fmt.max_files and new_files > old_files:
            problems.append(f"{new_files} files; the limit is {fmt.max_files}")
        if fmt.max_memory_bytes is not None and new_bytes > fmt.max_memory_bytes and new_bytes > old_bytes:
            problems.append(f"{new_bytes} bytes; the limit is {fmt.max_memory_bytes}")
        if problems:
            message = f"the memory would hold {' and '.join(problems)}"
            return [Refusal(ref, "memory_full", message, str(target.id))]
        return []

    def _footprint(self, tree: pygit2.Tree) -> tuple[int, int]:
        files = total = 0
        for _, oid in walk_file_ids(tree):
            files += 1
            total += self.repo.odb.read_header(oid)[1]
        return files, total


def _raw_entries(data: bytes) -> Iterator[bytes]:
    """Each entry of a raw tree object as stored: ``<octal mode> <name>\\0<20-byte id>``, in order."""
    pos, end = 0, len(data)
    while pos < end:
        stop = data.index(b"\0", pos) + 21
        yield data[pos:stop]
        pos = stop


def _subtree(tree: pygit2.Tree | None, name: str) -> pygit2.Tree | None:
    if tree is None:
        return None
    try:
        entry = tree[name]
    except KeyError:
        return None
    return entry if isinstance(entry, pygit2.Tree) else None


def _printable(path: str) -> str:
    """The path with control characters escaped: it is shown in one-line git status reports."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}" for c in path)


def _has_entry(tree: pygit2.Tree, path: str, oid: pygit2.Oid, mode: int) -> bool:
    try:
        entry = tree[path]
    except KeyError:
        return False
    return bool(entry.id == oid and entry.filemode == mode)


def _ref_commits(repo: pygit2.Repository) -> list[pygit2.Oid]:
    """The commits every existing ref points at: what the mount already holds."""
    found: list[pygit2.Oid] = []
    for name in repo.references:
        try:
            found.append(repo.references[name].peel(pygit2.Commit).id)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            continue
    return found

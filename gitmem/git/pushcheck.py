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

The check only reads objects, through an object reader (:mod:`gitmem.git.objectread`):
libgit2's by default (:mod:`gitmem.git.pygitreader`), the peek's for a CLI fast-forward
pull (:mod:`gitmem.git.peekreader`); the rules are this one code either way. The objects
of a push in flight sit in a quarantine directory until the push is accepted; pass it as
``object_dirs``.
Each :class:`Refusal` names the ref, the commit, the file and the rule.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat, encode_text, validate_path
from gitmem.git.claims import RULE_IDENTITY, commit_message, identity_problems, unnamed_changes
from gitmem.git.looseref import MAIN
from gitmem.git.objectread import (
    BLOB,
    COMMIT,
    EXECUTABLE,
    FOLDER,
    LINK,
    REGULAR,
    SUBMODULE,
    TAG,
    TREE,
    ObjectReader,
    commit_parts,
    entries_by_name,
    entry_at,
    footprint,
    raw_entries,
    split_entry,
    tag_target,
    tree_body,
)
from gitmem.git.transport import LEDGER_REF
from gitmem.git.treediff import FileChange, TooManyChanges, changes_between
from gitmem.provenance import parse_message
from gitmem.secrets import find_secret

ZERO = "0" * 40
MAX_REFUSALS = 20
"""Problems listed per ref; a push with more gets a final "and more" line."""

_REGULAR = REGULAR
_MODE_NAMES = {
    EXECUTABLE: "an executable file (mode 100755)",
    LINK: "a symbolic link (mode 120000)",
    SUBMODULE: "a submodule (mode 160000)",
}
_FOLDER = FOLDER
_BLOB_TYPE = BLOB
_TREE_TYPE = TREE
_TYPE_NAMES = {COMMIT: "commit", TREE: "folder (tree)", BLOB: "file (blob)", TAG: "tag"}
_SLASH = (
    "invalid_path",
    "a tree entry's name holds '/': git's fsck calls the tree malformed (fullPathname), and its path reads as a folder's",
)

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
RULE_ERASED = "erased"  # gitmem.git.erasures.RULE_ERASED
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
    reader: ObjectReader | None = None,
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
    ``reader``: the objects of ``repo_path`` (and ``object_dirs``) as another
    reader gives them (:mod:`gitmem.git.objectread`); libgit2's by default.
    Raises ``unavailable`` only when the repository itself cannot be read;
    anything wrong with the pushed objects is a refusal.
    """
    with _checking(repo_path, fmt, object_dirs, reader) as checker:
        if strict_objects:
            from gitmem.git.quarantine import strict_check

            tips = [u.new for u in updates if not u.deleting]
            problem = strict_check(os.path.abspath(repo_path), object_dirs, tips, list(checker.known))
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
def _checking(
    repo_path: str, fmt: FileFormat, object_dirs: Sequence[str] = (), reader: ObjectReader | None = None
) -> Iterator[_Checker]:
    """A checker on the repository at ``repo_path`` (``unavailable`` when it cannot be read), freed afterwards."""
    if reader is not None:
        yield _Checker(reader, fmt)
        return
    from gitmem.git.pygitreader import open_reader

    with open_reader(repo_path, object_dirs) as opened:
        unreadable: tuple[type[Exception], ...] = (*opened.errors, OSError)
        try:
            checker = _Checker(opened, fmt)
        except unreadable as exc:
            raise MemoryStoreError("unavailable", f"cannot read the repository at {repo_path}: {exc}") from exc
        yield checker


class _Folder(NamedTuple):
    """A changed folder :meth:`_Checker._tree_problems` checks next: its tree, its parents' trees there, its path."""

    tree: str
    olds: list[str | None]
    prefix: bytes


@dataclass(frozen=True, slots=True)
class CommitVerdict:
    """One commit of a line of history held to the push rules: its id, its parents, what it breaks."""

    commit: str
    parents: tuple[str, ...]
    refusals: tuple[Refusal, ...]


def check_commits(
    repo_path: str, tip: str, fmt: FileFormat, *, hide: Sequence[str] = ()
) -> list[CommitVerdict]:
    """Every commit reachable from ``tip`` and not from ``hide``, parents first, each with its refusals.

    :func:`check_updates` answers for a whole ref update (and stops at
    :data:`MAX_REFUSALS`); bringing in a history (``gitmem import --history``) needs
    the verdict of each commit, so it can keep the ones that pass and list the rest.
    ``unavailable`` when the repository or an object cannot be read.
    """
    with _checking(repo_path, fmt) as checker:
        checker.known = list(hide)
        out: list[CommitVerdict] = []
        try:
            for commit in checker.new_commits(tip):
                refusals = tuple(
                    Refusal(MAIN, problem[0], problem[1], commit, where)
                    for where, problem in checker.commit_problems(commit)
                )
                out.append(CommitVerdict(commit, checker.parents(commit), refusals))
        except checker.unreadable as exc:
            raise MemoryStoreError("unavailable", f"cannot read the history at {tip[:12]}: {exc}") from exc
        return out


def tip_limits(repo_path: str, tip: str, base: str | None, fmt: FileFormat) -> list[Refusal]:
    """The memory's file and byte limits for ``tip`` as a new ``main`` (``base``: the one it replaces).

    The last rule :func:`check_updates` applies to ``main``, for a history checked
    commit by commit (``gitmem check``): empty when the limits hold.
    """
    with _checking(repo_path, fmt) as checker:
        try:
            return checker.capacity(MAIN, base or ZERO, checker.peel_commit(tip))
        except checker.unreadable as exc:
            raise MemoryStoreError("unavailable", f"cannot read the tree of {tip[:12]}: {exc}") from exc


class EntryRules:
    """The push rules for one tree entry, for a caller that drops what they refuse (``import --rewrite``).

    The very checks a pushed tree entry and a pushed file meet (path, mode, type,
    erased content, UTF-8, size, frontmatter, secrets), cached by path and blob,
    so a rewrite keeps exactly what a push would have let in.
    """

    def __init__(self, reader: ObjectReader, fmt: FileFormat) -> None:
        self._checker = _Checker(reader, fmt)

    def problem(self, raw: bytes, mode: int, oid: str) -> tuple[str, str] | None:
        """``(rule, message)`` when the entry at path ``raw`` (hex id ``oid``) may not be in a memory, else ``None``."""
        found = self._checker.entry_problem(raw, mode, oid)
        if found is None and mode != _FOLDER:
            found = self._checker.content_problem(oid, mode)
        return found


class _Checker:
    """Checks updates against one repository's objects (an :class:`ObjectReader`), caching verdicts by path and blob."""

    def __init__(self, reader: ObjectReader, fmt: FileFormat) -> None:
        self.reader = reader
        self.fmt = fmt
        self.known = reader.ref_commits()
        self._paths: dict[bytes, tuple[str, str] | None] = {}
        self._blobs: dict[str, tuple[str, str] | None] = {}
        self._headers: dict[str, tuple[int, int]] = {}
        self._trees: set[tuple[str, bytes]] = set()
        self._stored: dict[str, list[bytes]] = {}  # raw entries of recent trees (a parent's, mostly)
        self._by_name: dict[str, dict[bytes, tuple[int, str]]] = {}  # the same by name, for path lookups
        self._commits: dict[str, tuple[bytes, str, tuple[str, ...]]] = {}
        self._weighed: dict[str, tuple[int, int]] = {}  # files and their bytes under a folder, by its id
        self.reached: set[bytes] = set()
        self._erased = reader.erased()
        self.unreadable: tuple[type[Exception], ...] = (KeyError, ValueError, *reader.errors)

    def check(self, update: RefUpdate) -> list[Refusal]:
        ref = update.ref
        if ref == LEDGER_REF:
            return self._check_ledger(update)
        if not (ref.startswith(("refs/heads/", "refs/tags/")) and self.reader.valid_ref_name(ref)):
            return [Refusal(ref, RULE_REF_NAME, "only branches (refs/heads/*) and tags (refs/tags/*) can be pushed")]
        if update.deleting:
            if ref == MAIN:
                return [Refusal(ref, RULE_DELETE_MAIN, "main holds the live memory and cannot be deleted")]
            return []
        try:
            return self._check_new(update)
        except self.unreadable as exc:
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
        old = None if update.old == ZERO else update.old
        try:
            problem = self.reader.ledger_problem(old, update.new)
        except MemoryStoreError as exc:
            return [Refusal(ref, RULE_LEDGER, exc.message, update.new)]
        except self.unreadable as exc:
            return [Refusal(ref, RULE_MISSING_OBJECT, f"the push is incomplete or unreadable ({exc})", update.new)]
        if problem is not None:
            return [Refusal(ref, RULE_LEDGER, problem, update.new)]
        self.reached.update(self.reader.ledger_objects(update.new, old))
        return []

    def peel_commit(self, oid: str, *, tags: bool = True) -> str:
        """The commit ``oid`` is, or an annotated tag (with ``tags``) points at; ``ValueError`` otherwise."""
        kind, body = self.reader.body(oid)
        while kind == TAG and tags:
            oid = tag_target(body)
            kind, body = self.reader.body(oid)
        if kind != COMMIT:
            raise ValueError(f"{oid} is not a commit")
        return oid

    def _check_new(self, update: RefUpdate) -> list[Refusal]:
        ref, reader = update.ref, self.reader
        kind = reader.header(update.new)[0]
        if kind == 0:
            raise KeyError(update.new)
        if kind == TAG and ref.startswith("refs/tags/"):
            new = self.peel_commit(update.new)
        elif kind != COMMIT:
            return [Refusal(ref, RULE_NOT_A_COMMIT, "a pushed branch or tag must point at a commit", update.new)]
        else:
            new = update.new
        if ref == MAIN and update.old != ZERO and new != update.old and not reader.descendant_of(new, update.old):
            return [
                Refusal(
                    ref,
                    RULE_FAST_FORWARD,
                    f"main is at {update.old[:12]} and {new[:12]} does not build on it; "
                    "fetch, rebase or merge onto main, and push again (history is never rewritten)",
                    new,
                )
            ]
        refusals: list[Refusal] = []
        self.reached.add(bytes.fromhex(update.new))
        for commit in self.new_commits(new):
            self.reached.add(bytes.fromhex(commit))
            for path, problem in self.commit_problems(commit):
                if len(refusals) == MAX_REFUSALS:
                    refusals.append(Refusal(ref, RULE_TOO_MANY, f"more than {MAX_REFUSALS} problems; fix these first"))
                    return refusals
                refusals.append(Refusal(ref, problem[0], problem[1], commit, path))
        if ref == MAIN and not refusals:
            refusals.extend(self.capacity(ref, update.old, new))
        return refusals

    def new_commits(self, new: str) -> Iterator[str]:
        """Commits reachable from ``new`` and from no existing ref, parents first."""
        return self.reader.new_commits(new, self.known)

    def _commit(self, oid: str) -> tuple[bytes, str, tuple[str, ...]]:
        """A commit's raw body, tree and parents, kept a while: a commit's parents are read again as its child's."""
        found = self._commits.get(oid)
        if found is None:
            kind, body = self.reader.body(oid)
            if kind != COMMIT:
                raise ValueError(f"{oid} is not a commit")
            if len(self._commits) >= 4096:
                self._commits.clear()
            found = self._commits[oid] = (body, *commit_parts(body))
        return found

    def parents(self, commit: str) -> tuple[str, ...]:
        return self._commit(commit)[2]

    def commit_problems(self, commit: str) -> Iterator[tuple[str | None, tuple[str, str]]]:
        """``(path, (rule, message))`` for every entry and file the commit brings in that breaks a rule
        (``path`` ``None``: the commit's message)."""
        data, tree, parents = self._commit(commit)
        for message in identity_problems(data):
            yield None, (RULE_IDENTITY, message)
        parent_trees = [self._commit(p)[1] for p in parents]
        first = bytes.fromhex(parent_trees[0]) if parent_trees else None
        try:  # first: the walk below reads every changed path too, and they may be too many to read
            changes: list[FileChange] | None = changes_between(self._tree_bytes, first, bytes.fromhex(tree))
        except TooManyChanges as exc:
            yield None, (exc.code, exc.message)
            return
        except self.unreadable:
            changes = None  # the walk names what is wrong first; the listing then fails as it did
        bad: set[bytes] = set()
        for raw, problem in self._tree_problems(tree, list(parent_trees), b""):
            bad.add(raw)
            yield _printable(raw.decode("utf-8", errors="replace")), problem
        changed: list[str] = []
        if changes is None:
            changes = changes_between(self._tree_bytes, first, bytes.fromhex(tree))
        for change in changes:
            raw = change.path.encode("utf-8", "surrogateescape")
            path = raw.decode("utf-8", errors="replace")
            changed.append(path)
            if change.new is None:
                continue
            mode, oid = change.new
            if raw in bad:
                continue
            if len(parent_trees) > 1 and any(self._has_entry(t, path, oid, mode) for t in parent_trees[1:]):
                continue  # taken unchanged from another parent: not new in this commit
            found = self._path_problem(raw) or self.content_problem(oid, mode)
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

        for source, destination in self._contradicted_moves(data, tree, parent_trees[0] if parent_trees else None):
            yield (
                _printable(destination),
                (
                    RULE_PROVENANCE,
                    f"the commit's trailers say {_printable(source)} moved here, but its trees do not show that move",
                ),
            )

    def _contradicted_moves(self, data: bytes, tree: str, old_tree: str | None) -> list[tuple[str, str]]:
        """The ``(source, destination)`` pairs of a move commit's trailers that its trees contradict.

        A pair is contradicted when the destination exists but the source is still
        there, or held another blob. A source that is simply absent is not (``forget``
        may have erased it since; :func:`gitmem.git.walk.moved_from` does not follow
        such a pair either).
        """
        pairs = parse_message(commit_message(data)).moves()
        bad = []
        for source, destination in pairs:
            moved = self._entry_id(tree, destination)
            if moved is None:
                continue
            before = self._entry_id(old_tree, source)
            if self._entry_id(tree, source) is not None or (before is not None and before != moved):
                bad.append((source, destination))
        return bad

    def _entry_id(self, tree: str | None, path: str) -> str | None:
        try:
            found = entry_at(self._names, tree, path)
        except (KeyError, ValueError):
            return None
        return None if found is None else found[1]

    def _has_entry(self, tree: str, path: str, oid: str, mode: int) -> bool:
        found = entry_at(self._names, tree, path)
        return found is not None and found[1] == oid and found[0] == mode

    def _names(self, tree: str) -> dict[bytes, tuple[int, str]]:
        """A tree's entries by name, kept a while (see :func:`entry_at`)."""
        found = self._by_name.get(tree)
        if found is None:
            if len(self._by_name) >= 4096:
                self._by_name.clear()
            found = self._by_name[tree] = entries_by_name(self._entries(tree))
        return found

    def _tree_bytes(self, raw: bytes) -> bytes:
        return tree_body(self.reader, raw.hex())

    def _tree_problems(
        self, tree: str, olds: list[str | None], prefix: bytes
    ) -> Iterator[tuple[bytes, tuple[str, str]]]:
        """Name, mode and type of every entry of ``tree`` and its subtrees that no parent has as is.

        A subtree with the same id at the same path in a parent was checked when
        that parent came in (or is the mount's own), so only what changed is read:
        an entry whose raw bytes (mode, name, id) a parent's tree holds is passed
        over without being parsed, which is most of a tree. Folders are walked with
        a stack, not by recursion: a pushed tree may nest deeper than Python's limit.
        """
        stack = [self._folder_problems(tree, olds, prefix)]
        while stack:
            for found in stack[-1]:
                if isinstance(found, _Folder):
                    stack.append(self._folder_problems(*found))
                    break
                yield found
            else:
                stack.pop()

    def _folder_problems(
        self, tree: str, olds: list[str | None], prefix: bytes
    ) -> Iterator[tuple[bytes, tuple[str, str]] | _Folder]:
        """:meth:`_tree_problems` of one folder; each subfolder to check is handed back as a :class:`_Folder`."""
        if any(old == tree for old in olds) or (tree, prefix) in self._trees:
            return
        self._trees.add((tree, prefix))
        self.reached.add(bytes.fromhex(tree))
        entries = self._entries(tree)
        if not entries and prefix:
            yield prefix[:-1], ("invalid_path", "an empty folder; a memory holds files and the folders they need")
            return
        known: set[bytes] = set()
        for old in olds:
            if old is not None:
                known.update(self._entries(old))
        for stored in entries:
            if stored in known:
                continue
            mode, name, oid = split_entry(stored)
            raw = prefix + name
            self.reached.add(oid)
            problem = _SLASH if b"/" in name else self.entry_problem(raw, mode, oid.hex())
            if problem is not None:
                yield raw, problem
            elif mode == _FOLDER:
                yield _Folder(oid.hex(), [self._subtree(old, name) for old in olds], raw + b"/")

    def _subtree(self, tree: str | None, name: bytes) -> str | None:
        found = None if tree is None else self._names(tree).get(name)
        if found is None or found[0] != _FOLDER:
            return None
        return found[1] if self._header(found[1])[0] == _TREE_TYPE else None

    def _entries(self, tree: str) -> list[bytes]:
        """The raw entries of ``tree``, kept a while: a commit's trees are its child's parent trees."""
        found = self._stored.get(tree)
        if found is None:
            if len(self._stored) >= 4096:
                self._stored.clear()
            found = self._stored[tree] = list(raw_entries(tree_body(self.reader, tree)))
        return found

    def entry_problem(self, raw: bytes, mode: int, oid: str) -> tuple[str, str] | None:
        problem = self._path_problem(raw)
        if problem is not None:
            return problem
        if bytes.fromhex(oid) in self._erased:
            return (
                RULE_ERASED,
                f"this content ({oid[:12]}) was erased from the memory by forget or purge and may not come "
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

    def _header(self, oid: str) -> tuple[int, int]:
        """``(type, size)`` of an object, read once (``(0, 0)``: missing)."""
        found = self._headers.get(oid)
        if found is None:
            found = self._headers[oid] = self.reader.header(oid)
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

    def content_problem(self, oid: str, mode: int) -> tuple[str, str] | None:
        if mode != _REGULAR:
            kind = _MODE_NAMES.get(mode, f"an entry with mode {mode:o}")
            return (RULE_FILE_MODE, f"this is {kind}; a memory holds plain text files (mode 100644)")
        if oid in self._blobs:
            return self._blobs[oid]
        problem = self._blob_problem(oid)
        self._blobs[oid] = problem
        return problem

    def _blob_problem(self, oid: str) -> tuple[str, str] | None:
        fmt = self.fmt
        kind, size = self._header(oid)
        if kind == 0:
            raise KeyError(oid)
        if size > fmt.max_file_bytes:
            return ("too_large", f"content is {size} bytes; the limit is {fmt.max_file_bytes}")
        data = self.reader.body(oid)[1]
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

    def capacity(self, ref: str, old: str, target: str) -> list[Refusal]:
        fmt = self.fmt
        if fmt.max_files is None and fmt.max_memory_bytes is None:
            return []
        new_files, new_bytes = self._footprint(self._commit(target)[1])
        old_files, old_bytes = self._footprint(self._commit(self.peel_commit(old))[1]) if old != ZERO else (0, 0)
        problems = []
        if fmt.max_files is not None and new_files > fmt.max_files and new_files > old_files:
            problems.append(f"{new_files} files; the limit is {fmt.max_files}")
        if fmt.max_memory_bytes is not None and new_bytes > fmt.max_memory_bytes and new_bytes > old_bytes:
            problems.append(f"{new_bytes} bytes; the limit is {fmt.max_memory_bytes}")
        if problems:
            message = f"the memory would hold {' and '.join(problems)}"
            return [Refusal(ref, "memory_full", message, target)]
        return []

    def _footprint(self, tree: str) -> tuple[int, int]:
        return footprint(self._entries, tree, self._weighed, lambda oid: self.reader.header(oid)[1])


def _printable(path: str) -> str:
    """The path with control characters escaped: it is shown in one-line git status reports."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}" for c in path)

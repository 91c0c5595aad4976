"""Rewrite a fetched history without what a memory may not hold (``gitmem import --history --rewrite``).

A real notes repository holds things a memory refuses: a PNG, a password line, a
link, an editor's ``.obsidian/`` folder. Brought in as it is, the first such
commit stops the import and every later plain edit is lost with it. Rewritten,
each commit keeps its author, committer, dates and message and every entry the
push rules accept; the entries they refuse, and those ``--exclude`` globs or the
tree's own ``.gitignore`` files leave out, are dropped from its tree.

- The verdict on each entry is the push rules' own
  (:class:`gitmem.git.pushcheck.EntryRules`): no second rule set. An executable
  text file is kept as a plain file (mode 100644); a folder left empty goes.
- A commit whose tree and parents come out unchanged keeps its id, so the history
  before the first refused entry stays shared with the source (a forge's ``main``
  and every root that pulled it before). Every other commit gets a new id and an
  ``Imported-From: <original id>`` trailer (not a ``Gitmem-*`` one: those claim a
  commit is gitmem's and must name each path it changes). A signature is dropped,
  since it signed the original.
- A memory that took an earlier rewrite of the same source keeps it: commits named
  by the ``Imported-From`` trailers of its ``main`` are not rewritten again.

Everything is written into the import's quarantine (:mod:`gitmem.git.quarantine`),
and only what the landing commit reaches moves into the mount: a dropped entry's
blob is never part of the memory's object store.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import pygit2

from gitmem import ignorerules
from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat
from gitmem.git.loose import open_repository
from gitmem.git.pushcheck import EntryRules
from gitmem.git.pygitreader import RepoReader
from gitmem.git.rewritepack import commit_header
from gitmem.git.treediff import MAX_CHANGES, TooManyChanges, count_changes

TRAILER = "Imported-From"
RULE_EXCLUDED = "excluded"
_GITIGNORE_LIMIT = 256 * 1024
_REGULAR = pygit2.GIT_FILEMODE_BLOB
_EXECUTABLE = pygit2.GIT_FILEMODE_BLOB_EXECUTABLE
_FOLDER = pygit2.GIT_FILEMODE_TREE
_COMMIT = pygit2.enums.ObjectType.COMMIT
_TRAILER_LINE = re.compile(rb"^[A-Za-z0-9][A-Za-z0-9-]*: ")
_IMPORTED = re.compile(rb"(?m)^" + TRAILER.encode() + rb": ([0-9a-f]{40})$")


@dataclass(frozen=True, slots=True)
class Dropped:
    """One entry left out of the rewritten history: the original commit that brought it, its path, why."""

    commit: str
    path: str
    rule: str
    message: str


@dataclass
class Rewrite:
    """The rewritten tip, each original id's rewritten one (changed commits only), what was left out."""

    tip: str
    rewritten: dict[str, str] = field(default_factory=dict)
    dropped: list[Dropped] = field(default_factory=list)


def imported_ids(repo: pygit2.Repository, head: str) -> dict[str, str]:
    """``original -> rewritten`` for every commit of ``head``'s history that names its original."""
    found: dict[str, str] = {}
    for commit in repo.walk(pygit2.Oid(hex=head), pygit2.enums.SortMode.NONE):
        data = bytes(repo.odb.read(commit.id)[1])
        for match in _IMPORTED.finditer(data):
            found.setdefault(match.group(1).decode(), str(commit.id))
    return found


def rewrite_history(
    scratch: str,
    tip: str,
    fmt: FileFormat,
    *,
    exclude: Sequence[str] = (),
    gitignore: bool = False,
    done: dict[str, str] | None = None,
) -> Rewrite:
    """Rewrite every commit of ``tip`` in the repository at ``scratch`` (see the module docstring).

    ``done`` maps originals already rewritten (by an earlier import) to their
    rewritten commits; those and what they reach are taken as they are.
    """
    with open_repository(scratch) as repo:
        try:
            return _Rewriter(repo, fmt, exclude, gitignore).run(tip, done or {})
        except (KeyError, ValueError, pygit2.GitError) as exc:
            raise MemoryStoreError("unavailable", f"cannot rewrite the history at {tip[:12]}: {exc}") from exc


class _Rewriter:
    def __init__(self, repo: pygit2.Repository, fmt: FileFormat, exclude: Sequence[str], gitignore: bool) -> None:
        self.repo = repo
        self.rules = EntryRules(RepoReader(repo), fmt)
        self.top = ignorerules.parse(exclude, source="--exclude")
        self.gitignore = gitignore
        self.trees: dict[
            tuple[pygit2.Oid, bytes, tuple[str, ...]], tuple[pygit2.Oid | None, list[tuple[str, str, str, str]]]
        ] = {}
        self.reported: set[tuple[str, str]] = set()

    def run(self, tip: str, done: dict[str, str]) -> Rewrite:
        mapping: dict[str, str] = dict(done)
        walker = self.repo.walk(pygit2.Oid(hex=tip), pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
        for original in done:
            try:
                walker.hide(pygit2.Oid(hex=original))
            except (KeyError, ValueError, pygit2.GitError):
                continue  # the source no longer has it
        out = Rewrite(tip)
        for commit in walker:
            cid = str(commit.id)
            # Its folders are walked path by path (each kept by path): more changed files than a
            # change may hold (a tree naming one folder at many paths) is refused before that walk.
            first = self.repo[commit.parent_ids[0]].peel(pygit2.Commit).tree_id.raw if commit.parent_ids else None
            if count_changes(self._read, first, commit.tree_id.raw, MAX_CHANGES) > MAX_CHANGES:
                raise TooManyChanges
            tree, drops = self._tree(commit.tree, b"", self.top, ())
            for path, rule, message, oid in drops:
                seen = (path, rule if rule == RULE_EXCLUDED else oid)
                if seen not in self.reported:
                    self.reported.add(seen)
                    out.dropped.append(Dropped(cid, path, rule, message))
            parents = [mapping.get(str(p), str(p)) for p in commit.parent_ids]
            if tree == commit.tree_id and parents == [str(p) for p in commit.parent_ids]:
                mapping[cid] = cid
                continue
            new = self._commit(commit, tree or self.repo.TreeBuilder().write(), parents)
            mapping[cid] = new
            out.rewritten[cid] = new
        out.tip = mapping.get(tip, tip)
        return out

    def _read(self, raw: bytes) -> bytes:
        return bytes(self.repo[pygit2.Oid(raw=raw)].read_raw())

    def _commit(self, commit: pygit2.Commit, tree: pygit2.Oid, parents: list[str]) -> str:
        """The commit's raw object with a new tree and parents, no signature, and the trailer."""
        data = bytes(self.repo.odb.read(commit.id)[1])
        head, _, message = data.partition(b"\n\n")
        body = message.rstrip(b"\n")
        last = body.rsplit(b"\n\n", 1)[-1] if body else b""
        trailer = f"{TRAILER}: {commit.id}".encode()
        is_block = bool(last) and b"\n\n" in body and all(_TRAILER_LINE.match(x) for x in last.split(b"\n"))
        body = body + (b"\n" if is_block else b"\n\n" if body else b"") + trailer + b"\n"
        return str(self.repo.odb.write(_COMMIT, commit_header(head, str(tree), parents) + b"\n\n" + body))

    def _tree(
        self, tree: pygit2.Tree, prefix: bytes, rules: list[ignorerules.Rule], chain: tuple[str, ...]
    ) -> tuple[pygit2.Oid | None, list[tuple[str, str, str, str]]]:
        """The tree without what is refused or left out (``None``: nothing left), and ``(path, rule, why)`` of each drop."""
        key = (tree.id, prefix, chain)
        cached = self.trees.get(key)
        if cached is not None:
            return cached
        drops: list[tuple[str, str, str, str]] = []
        here = prefix.decode("utf-8", "replace")
        if self.gitignore:
            found = self._gitignore(tree, here)
            if isinstance(found, str):
                drops.append(
                    (
                        f"{here}.gitignore",
                        "invalid_file",
                        f"{found}; nothing under {here or './'} is imported",
                        str(tree.id),
                    )
                )
                self.trees[key] = (None, drops)
                return None, drops
            if found is not None:
                oid, more = found
                rules, chain = [*rules, *more], (*chain, str(oid))
        builder = self.repo.TreeBuilder()
        changed = False
        kept = 0
        for entry in tree:
            name = entry.raw_name
            assert name is not None
            raw = prefix + name
            shown = raw.decode("utf-8", "replace")
            mode: int = int(entry.filemode)
            oid = entry.id
            rule = ignorerules.ignored_by(rules, raw.decode("utf-8", "surrogateescape"), mode == _FOLDER)
            if rule is not None:
                folder = "/" if mode == _FOLDER else ""
                drops.append((shown + folder, RULE_EXCLUDED, f"left out by {rule.source} ({rule.text})", str(oid)))
                changed = True
                continue
            problem = self.rules.problem(raw, _REGULAR if mode == _EXECUTABLE else mode, str(oid))
            if problem is not None:
                drops.append((shown, problem[0], problem[1], str(oid)))
                changed = True
                continue
            if mode == _FOLDER:
                sub = self.repo[oid]
                assert isinstance(sub, pygit2.Tree)
                new, below = self._tree(sub, raw + b"/", rules, chain)
                drops.extend(below)
                if new is None:
                    changed = True
                    continue
                changed = changed or new != oid
                oid = new
            elif mode == _EXECUTABLE:
                mode, changed = _REGULAR, True
            builder.insert(name.decode("utf-8"), oid, mode)
            kept += 1
        result: pygit2.Oid | None
        if not kept and prefix:
            result = None  # a folder left empty goes (a memory holds no empty folder)
        else:
            result = builder.write() if changed else tree.id
        self.trees[key] = (result, drops)
        return result, drops

    def _gitignore(self, tree: pygit2.Tree, here: str) -> tuple[pygit2.Oid, list[ignorerules.Rule]] | str | None:
        """The rules of the folder's ``.gitignore`` (``None``: there is none; a string: why it cannot be read)."""
        try:
            entry = tree[".gitignore"]
        except KeyError:
            return None
        if entry.filemode not in (_REGULAR, _EXECUTABLE):
            return None
        _kind, size = self.repo.odb.read_header(entry.id)
        if size > _GITIGNORE_LIMIT:
            return f"{here}.gitignore is larger than {_GITIGNORE_LIMIT} bytes"
        try:
            text = bytes(self.repo[entry.id].read_raw()).decode("utf-8")
        except UnicodeDecodeError as exc:
            return f"{here}.gitignore is not UTF-8 text (byte {exc.start})"
        return entry.id, ignorerules.parse(ignorerules.lines_of(text), base=here, source=f"{here}.gitignore")

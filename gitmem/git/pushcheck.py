"""Decide whether a pushed ref update may land on a mount.

Commits can reach a mount without going through the store: ``git push`` over
HTTP (``gitmem serve``), over ssh or a file path (the ``pre-receive`` hook).
Every one of those paths calls :func:`check_updates`, so a push is held to the
same rules as a store write:

- only branches and tags can be pushed, and ``main`` can neither be deleted nor
  rewound: an update to it must be a fast-forward;
- every commit the push brings in is checked against its parent(s): each file it
  adds or changes must be a plain file (mode 100644) whose path passes
  :func:`gitmem.fileformat.validate_path` unchanged (NFC) and whose content passes
  :func:`gitmem.fileformat.encode_text` (UTF-8, size, NUL, frontmatter, secrets);
  a file that is introduced and removed again inside the push is still refused,
  because git would keep it in history;
- on ``main``, the memory's file and byte limits hold for the new head (unless it
  shrinks the memory).

The check only reads objects. The objects of a push in flight sit in a
quarantine directory until the push is accepted; pass it as ``object_dirs``.
Each :class:`Refusal` names the ref, the commit, the file and the rule.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat, encode_text, validate_path
from gitmem.git.loose import open_repository
from gitmem.git.refs import MAIN as MAIN
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
_DELETED = pygit2.enums.DeltaStatus.DELETED

# Rules that are not store error codes (those are invalid_path, invalid_file,
# too_large and memory_full; secrets are reported as "secret:<rule name>").
RULE_REF_NAME = "ref_name"
RULE_DELETE_MAIN = "delete_main"
RULE_FAST_FORWARD = "non_fast_forward"
RULE_NOT_A_COMMIT = "not_a_commit"
RULE_MISSING_OBJECT = "missing_object"
RULE_FILE_MODE = "file_mode"
RULE_TOO_MANY = "too_many_problems"


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
        """One line for git's ``ng <ref> <reason>`` status."""
        where = ""
        if self.path is not None:
            where = f"{self.path}"
            if self.commit is not None:
                where += f" in {self.commit[:12]}"
            where += ": "
        elif self.commit is not None:
            where = f"{self.commit[:12]}: "
        return f"{where}{self.rule}"

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
) -> dict[str, list[Refusal]]:
    """Refusals per ref (an empty list: the update may land).

    ``object_dirs`` are extra object directories to read from (a push's
    quarantine). Raises ``unavailable`` only when the repository itself cannot
    be read; anything wrong with the pushed objects is a refusal.
    """
    try:
        repo = open_repository(os.path.abspath(repo_path), extra_objects=object_dirs)
        checker = _Checker(repo, fmt)
    except (pygit2.GitError, OSError) as exc:
        raise MemoryStoreError("unavailable", f"cannot read the repository at {repo_path}: {exc}") from exc
    try:
        return {u.ref: checker.check(u) for u in updates}
    finally:
        repo.free()


class _Checker:
    """Checks updates against one repository, caching verdicts by path and blob."""

    def __init__(self, repo: pygit2.Repository, fmt: FileFormat) -> None:
        self.repo = repo
        self.fmt = fmt
        self.known = _ref_commits(repo)
        self._paths: dict[bytes, tuple[str, str] | None] = {}
        self._blobs: dict[pygit2.Oid, tuple[str, str] | None] = {}

    def check(self, update: RefUpdate) -> list[Refusal]:
        ref = update.ref
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
        for commit in self._new_commits(new):
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

    def _commit_problems(self, commit: pygit2.Commit) -> Iterator[tuple[str, tuple[str, str]]]:
        """``(path, (rule, message))`` for every file the commit brings in that breaks a rule."""
        parents = commit.parents
        tree = commit.tree
        if parents:
            diff = parents[0].tree.diff_to_tree(tree)
        else:
            diff = tree.diff_to_tree(swap=True)
        for delta in diff.deltas:
            if delta.status == _DELETED:
                continue
            new_file = delta.new_file
            raw, oid, mode = new_file.raw_path, new_file.id, new_file.mode
            path = raw.decode("utf-8", errors="replace")
            if len(parents) > 1 and any(_has_entry(p.tree, path, oid, mode) for p in parents[1:]):
                continue  # taken unchanged from another parent: not new in this commit
            problem = self._path_problem(raw) or self._content_problem(oid, mode)
            if problem is not None:
                yield _printable(path), problem

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
        _, size = self.repo.odb.read_header(oid)
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
        for oid in _blob_ids(tree):
            files += 1
            total += self.repo.odb.read_header(oid)[1]
        return files, total


def _blob_ids(tree: pygit2.Tree) -> Iterator[pygit2.Oid]:
    for entry in tree:
        if entry.filemode == pygit2.GIT_FILEMODE_TREE:
            assert isinstance(entry, pygit2.Tree)
            yield from _blob_ids(entry)
        elif entry.filemode in (_REGULAR, pygit2.GIT_FILEMODE_BLOB_EXECUTABLE):
            yield entry.id


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

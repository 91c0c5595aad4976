"""Conflict proposals: finish a pull whose two sides changed the same file, with gitmem alone.

A pull (:func:`gitmem.git.pull.pull`) whose remote ``main`` and this memory's
``main`` both changed a file cannot merge on its own, and ``main`` does not
move. ``gitmem pull --propose`` then opens a *conflict proposal* instead of
leaving the user to plain git::

    pull --propose ──► remote commits checked (push rules, git's strict object checks)
                       and admitted from the quarantine
                   ──► draft: a merge commit (parents: main, the remote's main) on
                       refs/heads/proposals/merge-<remote>, every cleanly merged file in
                       its tree, each conflicting file still as main has it and named in
                       a ``Gitmem-Conflict`` trailer
    review resolve ──► one file at a time: ``--ours``, ``--theirs`` or the merged text
                       (held to a store write's rules); the draft is rewritten, same parents
    review approve ──► refused while a file is unresolved; else the draft becomes the
                       approved merge commit (Gitmem-Approved-By) and lands on main through
                       :func:`gitmem.git.merge.integrate` (push rules, quarantine, CAS)
    push           ──► a fast-forward of the remote's main

Both versions of each conflicting file stay readable in the draft's two parents
(``review show`` prints them). The draft itself is never pushed (``push
--proposals`` leaves ``merge-*`` branches out) and never lands as is: what lands
is a new commit with the draft's parents and tree and the approver's trailers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat, encode_text, validate_path
from gitmem.git.erasures import LEDGER_REF, lend_ledger
from gitmem.git.loose import open_repository
from gitmem.git.merge import MergeRefused, conflicts, refused_by_rules, store_objects
from gitmem.git.pushcheck import ZERO, RefUpdate, check_updates
from gitmem.git.quarantine import Quarantine, open_quarantine
from gitmem.git.refs import CONFLICT_PROPOSALS, MAIN, PROPOSALS, read_ref, swap_ref
from gitmem.git.repo import GitRepo, translate_errors
from gitmem.git.treediff import file_changes
from gitmem.model import Origin
from gitmem.provenance import COMMITTER_EMAIL, COMMITTER_NAME, T_APPROVED_BY, commit_message

PREFIX = CONFLICT_PROPOSALS.removeprefix(PROPOSALS)
"""Run ids of conflict proposals: ``merge-<remote>``."""
BRANCHES = CONFLICT_PROPOSALS
T_CONFLICT = "Gitmem-Conflict"
T_REMOTE = "Gitmem-Remote"


def proposal_id(remote: str) -> str:
    return PREFIX + remote


@dataclass(frozen=True, slots=True)
class Draft:
    """A conflict proposal's head: the two sides, the remote, the files still unresolved."""

    commit: str
    ours: str
    theirs: str
    remote: str
    unresolved: tuple[str, ...]


def read_draft(r: pygit2.Repository, head: str) -> Draft | None:
    """The draft at ``head``, or ``None`` when ``head`` is an ordinary proposal's commit."""
    commit = r[head].peel(pygit2.Commit)
    if len(commit.parent_ids) != 2 or commit.committer.email != COMMITTER_EMAIL:
        return None
    remote, unresolved = None, []
    for line in commit.message.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key == T_REMOTE:
            remote = value.strip()
        elif sep and key == T_CONFLICT:
            unresolved.append(value.strip())
    if remote is None:
        return None
    ours, theirs = (str(p) for p in commit.parent_ids)
    return Draft(str(commit.id), ours, theirs, remote, tuple(unresolved))


def _message(remote: str, theirs: str, unresolved: list[str] | tuple[str, ...]) -> str:
    lines = [f"{T_REMOTE}: {remote}", *(f"{T_CONFLICT}: {p}" for p in unresolved)]
    return f"conflict proposal: merge {remote}/main ({theirs[:12]}) into main\n\n" + "\n".join(lines) + "\n"


def open_draft(
    git: GitRepo,
    fmt: FileFormat,
    held: Quarantine,
    ours: str,
    theirs: str,
    remote: str,
    origin: Origin,
    *,
    ledger: Callable[[], str | None] | None = None,
    opened: Callable[[], None] | None = None,
) -> tuple[str, tuple[str, ...]]:
    """Open (or keep) the conflict proposal of a pull; returns its run id and the conflicting files.

    ``held`` is the pull's quarantine, holding the remote's commits. They are
    checked by the push rules (and git's strict object checks) before anything
    moves into the mount; a refusal raises :class:`MergeRefused` and nothing changes.
    A draft for the same two sides is kept as it is (its resolutions with it).
    ``ledger``, asked under the lock, is the erasure ledger commit in ``held`` the check reads
    instead of the mount's (a pull's, see :func:`gitmem.git.merge.integrate`); ``opened`` runs
    under the same hold once the proposal is there (opened or kept): the pull adopts that ledger then.
    """
    run = proposal_id(remote)
    ref = BRANCHES + remote
    with translate_errors(git.path), git.lock.hold():
        current = read_ref(git.repo, ref)
        if current is not None:
            existing = read_draft(git.repo, current)
            if existing is not None and (existing.ours, existing.theirs) == (ours, theirs):
                if opened is not None:
                    opened()
                return run, existing.unresolved
            if existing is not None:
                _refuse_to_drop(git.repo, existing, run)
        with open_repository(held.path) as r:
            for name in list(r.references):
                r.references.delete(name)
            r.references.create(MAIN, pygit2.Oid(hex=ours), force=True)
            tip = None if ledger is None else ledger()
            if tip is None:
                lend_ledger(git.repo, r)  # what this memory erased is refused here too
            else:  # ... and what the remote erased, adopted only once the proposal is there
                r.references.create(LEDGER_REF, pygit2.Oid(hex=tip), force=True)
            verdict = check_updates(held.path, [RefUpdate(ref, ZERO, theirs)], fmt, strict_objects=True)
            if verdict[ref]:
                raise refused_by_rules(f"{remote}/main", verdict[ref])
            base = r.merge_base(pygit2.Oid(hex=ours), pygit2.Oid(hex=theirs))
            if base is None:
                raise MergeRefused("version_mismatch", f"{remote}/main shares no history with main")
            index = r.merge_trees(r[base].peel(pygit2.Tree), r[ours].peel(pygit2.Tree), r[theirs].peel(pygit2.Tree))
            found = conflicts(index)
            ours_tree = r[ours].peel(pygit2.Tree)
            for path in found:
                del index.conflicts[path]
                _set(index, ours_tree, path)
            tree = index.write_tree(r)
            who = pygit2.Signature(origin.principal_id or COMMITTER_NAME, COMMITTER_EMAIL)
            me = pygit2.Signature(COMMITTER_NAME, COMMITTER_EMAIL)
            parents = [pygit2.Oid(hex=ours), pygit2.Oid(hex=theirs)]
            draft = str(r.create_commit(None, who, me, _message(remote, theirs, found), tree, parents))
        store_objects(git, held, draft, "the conflict proposal")
        if not swap_ref(git.repo, git.path, ref, current, draft, message=f"gitmem pull: conflict with {remote}"):
            raise MemoryStoreError("unavailable", f"proposal {run} moved while it was opened; pull again")
        if opened is not None:
            opened()
        return run, tuple(found)


def _refuse_to_drop(r: pygit2.Repository, draft: Draft, run: str) -> None:
    """``version_mismatch`` when ``draft`` (of other sides than a new pull's) holds files someone settled.

    A new draft replaces the old one whole, and a merged text typed into it lives
    nowhere else: a pull after the remote (or ``main``) moved silently dropped it.
    """
    base = r.merge_base(pygit2.Oid(hex=draft.ours), pygit2.Oid(hex=draft.theirs))
    if base is None:
        return
    index = r.merge_trees(r[base].peel(pygit2.Tree), r[draft.ours].peel(pygit2.Tree), r[draft.theirs].peel(pygit2.Tree))
    settled = [p for p in conflicts(index) if p not in draft.unresolved]
    if settled:
        # Approval is refused while a file is unresolved: the advice names what is left first.
        left = f"settle {', '.join(draft.unresolved)} (`review resolve`), then " if draft.unresolved else ""
        raise MemoryStoreError(
            "version_mismatch",
            f"conflict proposal {run} holds what was settled for {', '.join(settled)} (against {draft.remote}/main at "
            f"{draft.theirs[:12]}); {left}approve it and pull again, or reject it to start over; nothing was changed",
        )


def _set(index: pygit2.Index, tree: pygit2.Tree, path: str) -> None:
    """Make ``path`` in ``index`` what it is in ``tree`` (removed when ``tree`` lacks it)."""
    try:
        entry = tree[path]
    except KeyError:
        if path in index:
            index.remove(path)
        return
    index.add(pygit2.IndexEntry(path, entry.id, entry.filemode))


def resolve(
    git: GitRepo, fmt: FileFormat, run: str, path: str, *, side: str | None = None, text: str | None = None
) -> Draft:
    """Settle one conflicting ``path`` of conflict proposal ``run``: ``side`` ``"ours"``/``"theirs"``, or ``text``.

    ``text`` is held to a store write's rules (path, UTF-8, size, frontmatter,
    secrets) before anything is written. Returns the rewritten draft.
    """
    if (side is None) == (text is None) or side not in (None, "ours", "theirs"):
        raise MemoryStoreError("invalid_file", "resolve a file with exactly one of: ours, theirs, or the merged text")
    path = validate_path(path, fmt)
    data = encode_text(text, fmt) if text is not None else None
    ref = "refs/heads/proposals/" + run
    with translate_errors(git.path), git.lock.hold():
        head = read_ref(git.repo, ref)
        draft = read_draft(git.repo, head) if head is not None else None
        if head is None or draft is None:
            raise MemoryStoreError("not_found", f"{run!r} is not an open conflict proposal (see the review list)")
        if path not in draft.unresolved:
            listed = ", ".join(draft.unresolved) or "none"
            raise MemoryStoreError("not_found", f"{path} is not an unresolved file of {run} (unresolved: {listed})")
        with open_quarantine(git.path) as held:
            with open_repository(held.path) as r:
                index = pygit2.Index()
                index.read_tree(r[head].peel(pygit2.Tree))
                if data is not None:
                    index.add(pygit2.IndexEntry(path, r.create_blob(data), pygit2.enums.FileMode.BLOB))
                else:
                    _set(index, r[draft.ours if side == "ours" else draft.theirs].peel(pygit2.Tree), path)
                tree = index.write_tree(r)
                old = r[head].peel(pygit2.Commit)
                left = [p for p in draft.unresolved if p != path]
                parents = [pygit2.Oid(hex=draft.ours), pygit2.Oid(hex=draft.theirs)]
                message = _message(draft.remote, draft.theirs, left)
                new = str(r.create_commit(None, old.author, old.committer, message, tree, parents))
            store_objects(git, held, new, "the conflict proposal")
        if not swap_ref(git.repo, git.path, ref, head, new, message=f"gitmem review resolve {path}"):
            raise MemoryStoreError("unavailable", f"proposal {run} moved meanwhile; try again")
        return Draft(new, draft.ours, draft.theirs, draft.remote, tuple(left))


def approved_commit(r: pygit2.Repository, draft: Draft, who: Origin, run: str) -> str:
    """The commit an approval lands: the draft's parents and tree, the approver's message and trailers.

    Refused (``version_mismatch``, naming them) while a file is unresolved.
    """
    if draft.unresolved:
        raise MergeRefused(
            "version_mismatch",
            f"conflict proposal {run} still has unresolved files: {', '.join(draft.unresolved)}",
            draft.unresolved,
            tuple(f"unresolved: {p}" for p in draft.unresolved),
        )
    commit = r[draft.commit].peel(pygit2.Commit)
    paths = tuple(c.path for c in file_changes(r, r[draft.ours].peel(pygit2.Tree).id, commit.tree_id))
    assert who.principal_id is not None
    message = commit_message(
        "merge",
        paths,
        who,
        detail=f"pull {draft.remote}, conflict resolved in proposal {run}",
        extra=((T_APPROVED_BY, who.principal_id),),
    )
    author = pygit2.Signature(who.principal_id, COMMITTER_EMAIL)
    committer = pygit2.Signature(COMMITTER_NAME, COMMITTER_EMAIL)
    parents = [pygit2.Oid(hex=draft.ours), pygit2.Oid(hex=draft.theirs)]
    return str(r.create_commit(None, author, committer, message, commit.tree_id, parents))

"""Bring another line of history into ``main``: a pulled remote, an approved proposal.

Both cases end the same way, under the mount's writer lock (so agents' writes
wait, and a foreign push is caught by the compare-and-swap)::

    read main ──► up to date? ──► fast-forward? ──► 3-way tree merge (pygit2 merge_trees)
                                                       │ conflict: refuse, list the paths
                  pushcheck(main: old ─► new) ◄────────┘ clean: merge commit, two parents
                         │ refused: nothing moves
                  admit what main reaches (quarantine ─► mount) ──► CAS main (retry on a foreign move)

The new commits are held to the rules of a push (:mod:`gitmem.git.pushcheck`):
every file they bring in must be one a store write would accept, and the memory's
limits must hold. Objects made here (merged trees, the merge commit) and a pull's
fetched objects are written to a quarantine (:mod:`gitmem.git.quarantine`) that
borrows the mount's objects; only the objects the new ``main`` reaches move into
the mount, so a refused integration leaves nothing there, and an accepted one
nothing it does not use.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat
from gitmem.git.erasures import LEDGER_REF, lend_ledger
from gitmem.git.loose import open_repository
from gitmem.git.mergeresult import MergeRefused as MergeRefused
from gitmem.git.mergeresult import MergeResult as MergeResult
from gitmem.git.packs import PackError
from gitmem.git.pushcheck import ZERO, RefUpdate, Refusal, check_updates
from gitmem.git.quarantine import Quarantine, open_quarantine
from gitmem.git.refs import MAIN, swap_ref
from gitmem.git.repo import GitRepo, translate_errors
from gitmem.git.treediff import TooManyChanges, file_changes
from gitmem.model import Origin
from gitmem.provenance import COMMITTER_EMAIL, COMMITTER_NAME, commit_message

if TYPE_CHECKING:
    from gitmem.errors import ErrorCode

MAX_ATTEMPTS = 8
"""Foreign pushes that may move ``main`` under one integration before it gives up."""

MAX_LISTED = 50
_VETTED = "refs/heads/vetted"
"""In an integration's quarantine: the other side once the rules passed it, before a merge reads it."""


def _listing(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:MAX_LISTED])
    return shown if len(paths) <= MAX_LISTED else f"{shown} (and {len(paths) - MAX_LISTED} more)"


def _refusal_code(rule: str) -> ErrorCode:
    if rule in ("invalid_path", "invalid_file", "too_large", "memory_full"):
        return rule  # type: ignore[return-value]
    if rule == "missing_object":
        return "unavailable"
    if rule in ("erased", "identity"):
        return "forbidden"  # content the erasure ledger names; who a commit names, ambiguous
    return "invalid_file"  # secrets, file modes, anything else about content


def refused_by_rules(what: str, refusals: Sequence[Refusal]) -> MergeRefused:
    """The error for history whose files break the memory's rules."""
    paths = tuple(dict.fromkeys(r.path for r in refusals if r.path is not None))
    reasons = tuple(str(r) for r in refusals)
    first = refusals[0]
    more = f" (and {len(refusals) - 1} more problems)" if len(refusals) > 1 else ""
    return MergeRefused(
        _refusal_code(first.rule),
        f"{what} breaks the memory's rules, so main was not changed: {first}{more}",
        paths,
        reasons,
        tuple(dict.fromkeys(r.rule for r in refusals)),
    )


def _changed(r: pygit2.Repository, old: str | pygit2.Oid, new: str | pygit2.Oid) -> tuple[str, ...]:
    """Files that differ between two commits' or trees' trees: what the integration changes on main."""
    return tuple(c.path for c in file_changes(r, r[old].peel(pygit2.Tree).id, r[new].peel(pygit2.Tree).id))


def fresh_memory(r: pygit2.Repository, head: str) -> bool:
    """Whether ``head`` is only a new memory's "init memory" commit: no parent, no file."""
    commit = r[head].peel(pygit2.Commit)
    return not commit.parent_ids and len(commit.tree) == 0


def conflicts(index: pygit2.Index) -> list[str]:
    found: set[str] = set()
    held = index.conflicts
    if held is None:
        return []
    for ancestor, ours, theirs in held:
        for entry in (ours, theirs, ancestor):
            if entry is not None:
                found.add(entry.path)
                break
    return sorted(found)


def integrate(
    git: GitRepo,
    fmt: FileFormat,
    theirs: str,
    *,
    what: str,
    origin: Origin,
    detail: str,
    extra: tuple[tuple[str, str], ...] = (),
    fast_forward: bool = True,
    scratch: Quarantine | None = None,
    precheck: Callable[[], None] | None = None,
    after_swap: Callable[[MergeResult], None] | None = None,
    strict_objects: bool = False,
    join: bool = False,
    ledger: Callable[[], str | None] | None = None,
) -> MergeResult:
    """Land commit ``theirs`` on ``main``; see the module docstring.

    ``what`` names the other side in messages (``"origin/main"``, ``"proposal run-1"``).
    ``fast_forward=False`` always records a merge commit (with ``extra`` trailers),
    even when ``main`` could simply move: an approval must be written down.
    ``scratch`` (a :class:`~gitmem.git.quarantine.Quarantine`) holds ``theirs``
    when the mount does not (a pull, a push); one is made otherwise. Only what
    the landed ``main`` reaches moves from it into the mount. ``precheck`` runs under the lock
    before each attempt (raise to abort); ``after_swap`` runs under the lock
    once ``main`` moved (or was already up to date). ``strict_objects`` also holds
    every object ``theirs`` brings to git's strict object rules, as a push is held
    (:func:`gitmem.git.quarantine.strict_check`): a pull brings objects from outside.
    ``ledger``: asked under the lock before each attempt, the erasure ledger commit (in
    ``scratch``) the checks read instead of the mount's (``None``: the mount's): a pull's,
    the mount's as it is now with the remote's erasures added, which the mount adopts
    only once the pull lands (``after_swap``).

    Every commit that ``main`` does not hold yet is checked, including ones other
    refs of the mount already point at: the check runs in the quarantine,
    whose only ref is ``main``.

    ``join`` (a pull) lets a new memory take an unrelated history: when ``main``
    is only the "init memory" commit (no parent, no file) and ``theirs`` shares no
    history with it, ``main`` is set to ``theirs`` (kind ``joined``), every commit
    of it held to the same rules, as if pushed to an empty repository.
    """
    with ExitStack() as own:
        scratch = scratch or own.enter_context(open_quarantine(git.path))
        own.enter_context(translate_errors(git.path))
        own.enter_context(git.lock.hold())
        for _ in range(MAX_ATTEMPTS):
            if precheck is not None:
                precheck()
            with open_repository(scratch.path) as r:
                ours = git.head()
                for name in list(r.references):
                    r.references.delete(name)
                r.references.create(MAIN, pygit2.Oid(hex=ours), force=True)
                tip = None if ledger is None else ledger()
                if tip is None:
                    lend_ledger(git.repo, r)  # the check refuses what the mount's erasure ledger names
                else:  # ... and what the remote's erased, which the mount does not hold yet
                    r.references.create(LEDGER_REF, pygit2.Oid(hex=tip), force=True)
                try:
                    result = _plan(
                        r,
                        ours,
                        theirs,
                        what=what,
                        origin=origin,
                        detail=detail,
                        extra=extra,
                        ff=fast_forward,
                        join=join,
                        vet=functools.partial(_vet, r, scratch.path, theirs, fmt, strict_objects, what),
                    )
                except TooManyChanges as exc:
                    raise MergeRefused(
                        _refusal_code(exc.code), f"{what} cannot land, so main was not changed: {exc.message}"
                    ) from None
                if result.kind != "up_to_date":
                    old = ZERO if result.kind == "joined" else ours  # joined: as a push to an empty repository
                    seen: dict[str, set[bytes]] = {}
                    verdict = check_updates(
                        scratch.path,
                        [RefUpdate(MAIN, old, result.after)],
                        fmt,
                        strict_objects=strict_objects,
                        reached=seen,
                    )
                    if verdict[MAIN]:
                        raise refused_by_rules(what, verdict[MAIN])
            if result.kind != "up_to_date":
                # Nothing was written here but what came in (no merge commit): a fetched pack the
                # checks saw whole moves in as it is.
                reached = seen[MAIN] if result.kind in ("fast_forward", "joined") else None
                store_objects(git, scratch, result.after, f"the objects of {what}", reached=reached)
                message = f"gitmem {result.kind.replace('_', '-')} from {what}"
                if not swap_ref(
                    git.repo,
                    git.path,
                    MAIN,
                    ours,
                    result.after,
                    message=message,
                    stale_after=git.stale_lock_seconds,
                    timeout=git.lock_timeout,
                ):
                    continue
            if after_swap is not None:
                after_swap(result)
            return result
        raise MemoryStoreError("unavailable", f"main kept moving while {what} was merged; try again")


def _vet(r: pygit2.Repository, path: str, theirs: str, fmt: FileFormat, strict: bool, what: str) -> None:
    """Hold what ``theirs`` brings to the rules before a merge reads its trees (the quarantine ``r`` at ``path``);
    once passed, a ref there hides it from the check of the merge commit."""
    verdict = check_updates(path, [RefUpdate(_VETTED, ZERO, theirs)], fmt, strict_objects=strict)
    if verdict[_VETTED]:
        raise refused_by_rules(what, [dataclasses.replace(r, ref=MAIN) for r in verdict[_VETTED]])  # what it was for
    r.references.create(_VETTED, pygit2.Oid(hex=theirs), force=True)


def store_objects(git: GitRepo, held: Quarantine, tip: str, what: str, *, reached: set[bytes] | None = None) -> None:
    """Move what ``tip`` reaches from quarantine ``held`` into the mount; ``unavailable`` naming ``what`` if it fails.

    ``reached``: every object the checks saw ``tip`` reach (see :meth:`Quarantine.admit`)."""
    try:
        held.admit([tip], reached=reached, durable=git.durable())
    except (PackError, OSError) as exc:
        raise MemoryStoreError("unavailable", f"cannot store {what}: {exc}") from exc


def _plan(
    r: pygit2.Repository,
    ours: str,
    theirs: str,
    *,
    what: str,
    origin: Origin,
    detail: str,
    extra: tuple[tuple[str, str], ...],
    ff: bool,
    join: bool = False,
    vet: Callable[[], None] | None = None,
) -> MergeResult:
    """Decide how ``theirs`` lands on ``ours``; writes the merged trees and commit (not the ref).

    ``vet`` runs before the three-way merge reads the trees of ``theirs``: libgit2's merge
    fails on entries the rules refuse (a ``.git``), which then read as a broken mount.
    """
    ours_id, theirs_id = pygit2.Oid(hex=ours), pygit2.Oid(hex=theirs)
    if ours == theirs or r.descendant_of(ours_id, theirs_id):
        return MergeResult("up_to_date", ours, ours, ())
    if r.descendant_of(theirs_id, ours_id):
        if ff:
            return MergeResult("fast_forward", ours, theirs, _changed(r, ours, theirs))
        tree = r[theirs].peel(pygit2.Tree).id
    else:
        base = r.merge_base(ours_id, theirs_id)
        if base is None and join and fresh_memory(r, ours):
            return MergeResult("joined", ours, theirs, _changed(r, ours, theirs))
        if base is None:
            raise MergeRefused(
                "version_mismatch",
                f"{what} shares no history with main, so it cannot be merged; main was not changed "
                "(clone it into a new memory with `gitmem clone`, or push this memory to an empty repository)",
            )
        if vet is not None:
            vet()
        index = r.merge_trees(r[base].peel(pygit2.Tree), r[ours].peel(pygit2.Tree), r[theirs].peel(pygit2.Tree))
        found = conflicts(index)
        if found:
            raise MergeRefused(
                "version_mismatch",
                f"{what} and main both changed {_listing(found)}, so main was not changed",
                found,
                tuple(f"conflict: {p}" for p in found),
            )
        tree = index.write_tree(r)
    paths = _changed(r, ours, tree)
    author = pygit2.Signature(origin.principal_id or COMMITTER_NAME, COMMITTER_EMAIL)
    committer = pygit2.Signature(COMMITTER_NAME, COMMITTER_EMAIL)
    message = commit_message("merge", paths, origin, detail=detail, extra=extra)
    commit = r.create_commit(None, author, committer, message, tree, [ours_id, theirs_id])
    return MergeResult("merged", ours, str(commit), paths)

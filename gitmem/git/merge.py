"""Bring another line of history into ``main``: a pulled remote, an approved proposal.

Both cases end the same way, under the mount's writer lock (so agents' writes
wait, and a foreign push is caught by the compare-and-swap)::

    read main ──► up to date? ──► fast-forward? ──► 3-way tree merge (pygit2 merge_trees)
                                                       │ conflict: refuse, list the paths
                  pushcheck(main: old ─► new) ◄────────┘ clean: merge commit, two parents
                         │ refused: nothing moves
                  objects in (scratch ─► mount) ──► CAS main (retry on a foreign move)

The new commits are held to the rules of a push (:mod:`gitmem.git.pushcheck`):
every file they bring in must be one a store write would accept, and the memory's
limits must hold. Objects made here (merged trees, the merge commit) and a pull's
fetched objects are written to a *scratch* repository that borrows the mount's
objects, so a refused integration leaves nothing in the mount.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import pygit2

from gitmem.errors import ErrorCode, MemoryStoreError
from gitmem.fileformat import FileFormat
from gitmem.git.erasures import lend_ledger
from gitmem.git.loose import open_repository
from gitmem.git.pushcheck import RefUpdate, Refusal, check_updates
from gitmem.git.refs import MAIN, swap_ref
from gitmem.git.repo import GitRepo, translate_errors
from gitmem.git.treediff import file_changes
from gitmem.localfile import write_private
from gitmem.model import Origin
from gitmem.provenance import COMMITTER_EMAIL, COMMITTER_NAME, commit_message

MAX_ATTEMPTS = 8
"""Foreign pushes that may move ``main`` under one integration before it gives up."""

MAX_LISTED = 50
SCRATCH_PREFIX = "scratch-"
SCRATCH_STALE_SECONDS = 3600.0
"""A scratch repository older than this belongs to a process that died (git transfers stop after 600 s)."""


@dataclass(frozen=True, slots=True)
class MergeResult:
    """How ``main`` moved: ``up_to_date``, ``fast_forward`` or ``merged`` (a new merge commit)."""

    kind: str
    before: str
    after: str
    paths: tuple[str, ...]
    closed: tuple[str, ...] = ()  # review proposals main now holds, deleted (runs' ids)


class MergeRefused(MemoryStoreError):
    """The other history cannot land on ``main``; ``main`` was not touched.

    ``paths`` are the conflicting files (code ``version_mismatch``) or the files
    that break a rule (the rule's store code); ``reasons`` one line per problem.
    """

    paths: tuple[str, ...]
    reasons: tuple[str, ...]

    def __init__(self, code: ErrorCode, message: str, paths: Sequence[str] = (), reasons: Sequence[str] = ()) -> None:
        super().__init__(code, message)
        self.paths = tuple(paths)
        self.reasons = tuple(reasons)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.code, self.message, self.paths, self.reasons))


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
    )


def _changed(r: pygit2.Repository, old: str | pygit2.Oid, new: str | pygit2.Oid) -> tuple[str, ...]:
    """Files that differ between two commits' or trees' trees: what the integration changes on main."""
    return tuple(c.path for c in file_changes(r, r[old].peel(pygit2.Tree).id, r[new].peel(pygit2.Tree).id))


def _conflicts(index: pygit2.Index) -> list[str]:
    found: set[str] = set()
    conflicts = index.conflicts
    if conflicts is None:
        return []
    for ancestor, ours, theirs in conflicts:
        for entry in (ours, theirs, ancestor):
            if entry is not None:
                found.add(entry.path)
                break
    return sorted(found)


@contextmanager
def scratch_repository(git: GitRepo) -> Iterator[str]:
    """A bare repository inside the mount's ``gitmem/`` folder that borrows the mount's objects.

    Objects that may or may not land (a pull's fetched commits, merged trees, a
    merge commit) are written here, outside the mount, and move in by rename
    (same filesystem) only once accepted. The folder is deleted afterwards
    whatever happened; ones left by a killed process are swept on the next use.
    """
    state = os.path.join(git.path, "gitmem")
    _sweep(state)
    path = tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=state)
    try:
        try:
            pygit2.init_repository(path, bare=True)
            info = os.path.join(path, "objects", "info")
            os.makedirs(info, exist_ok=True)
            write_private(os.path.join(info, "alternates"), os.path.join(git.path, "objects") + "\n")
        except (pygit2.GitError, OSError) as exc:
            raise MemoryStoreError("unavailable", f"cannot prepare a scratch repository in {path}: {exc}") from exc
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _sweep(state: str) -> None:
    """Delete scratch repositories that no live process can still be using."""
    try:
        names = [n for n in os.listdir(state) if n.startswith(SCRATCH_PREFIX)]
    except OSError:
        return
    for name in names:
        folder = os.path.join(state, name)
        try:
            if time.time() - os.stat(folder).st_mtime > SCRATCH_STALE_SECONDS:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            continue


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
    scratch: str | None = None,
    precheck: Callable[[], None] | None = None,
    after_swap: Callable[[MergeResult], None] | None = None,
    strict_objects: bool = False,
) -> MergeResult:
    """Land commit ``theirs`` on ``main``; see the module docstring.

    ``what`` names the other side in messages (``"origin/main"``, ``"proposal run-1"``).
    ``fast_forward=False`` always records a merge commit (with ``extra`` trailers),
    even when ``main`` could simply move: an approval must be written down.
    ``scratch`` (see :func:`scratch_repository`) holds ``theirs`` when the mount
    does not (a pull); one is made otherwise. ``precheck`` runs under the lock
    before each attempt (raise to abort); ``after_swap`` runs under the lock
    once ``main`` moved (or was already up to date). ``strict_objects`` also holds
    every object ``theirs`` brings to git's strict object rules, as a push is held
    (:func:`gitmem.git.packs.strict_check`): a pull brings objects from outside.

    Every commit that ``main`` does not hold yet is checked, including ones other
    refs of the mount already point at: the check runs in the scratch repository,
    whose only ref is ``main``.
    """
    if scratch is None:
        with scratch_repository(git) as own:
            return integrate(
                git,
                fmt,
                theirs,
                what=what,
                origin=origin,
                detail=detail,
                extra=extra,
                fast_forward=fast_forward,
                scratch=own,
                precheck=precheck,
                after_swap=after_swap,
                strict_objects=strict_objects,
            )
    with translate_errors(git.path), git.lock.hold():
        for _ in range(MAX_ATTEMPTS):
            if precheck is not None:
                precheck()
            r = open_repository(scratch)
            try:
                ours = git.head()
                for name in list(r.references):
                    r.references.delete(name)
                r.references.create(MAIN, pygit2.Oid(hex=ours), force=True)
                lend_ledger(git.repo, r)  # the check refuses what the mount's erasure ledger names
                result = _plan(r, ours, theirs, what=what, origin=origin, detail=detail, extra=extra, ff=fast_forward)
                if result.kind == "up_to_date":
                    if after_swap is not None:
                        after_swap(result)
                    return result
                verdict = check_updates(
                    scratch, [RefUpdate(MAIN, ours, result.after)], fmt, strict_objects=strict_objects
                )
                if verdict[MAIN]:
                    raise refused_by_rules(what, verdict[MAIN])
            finally:
                r.free()
            migrate_objects(os.path.join(scratch, "objects"), os.path.join(git.path, "objects"))
            message = f"gitmem {result.kind.replace('_', '-')} from {what}"
            if swap_ref(
                git.repo,
                git.path,
                MAIN,
                ours,
                result.after,
                message=message,
                stale_after=git.stale_lock_seconds,
                timeout=git.lock_timeout,
            ):
                if after_swap is not None:
                    after_swap(result)
                return result
        raise MemoryStoreError("unavailable", f"main kept moving while {what} was merged; try again")


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
) -> MergeResult:
    """Decide how ``theirs`` lands on ``ours``; writes the merged trees and commit (not the ref)."""
    ours_id, theirs_id = pygit2.Oid(hex=ours), pygit2.Oid(hex=theirs)
    if ours == theirs or r.descendant_of(ours_id, theirs_id):
        return MergeResult("up_to_date", ours, ours, ())
    if r.descendant_of(theirs_id, ours_id):
        if ff:
            return MergeResult("fast_forward", ours, theirs, _changed(r, ours, theirs))
        tree = r[theirs].peel(pygit2.Tree).id
    else:
        base = r.merge_base(ours_id, theirs_id)
        if base is None:
            raise MergeRefused(
                "version_mismatch",
                f"{what} shares no history with main, so it cannot be merged; main was not changed "
                "(push this memory to an empty repository instead)",
            )
        index = r.merge_trees(r[base].peel(pygit2.Tree), r[ours].peel(pygit2.Tree), r[theirs].peel(pygit2.Tree))
        conflicts = _conflicts(index)
        if conflicts:
            raise MergeRefused(
                "version_mismatch",
                f"{what} and main both changed {_listing(conflicts)}, so main was not changed; "
                "resolve the conflict where the other side lives and try again",
                conflicts,
                tuple(f"conflict: {p}" for p in conflicts),
            )
        tree = index.write_tree(r)
    paths = _changed(r, ours, tree)
    author = pygit2.Signature(origin.principal_id or COMMITTER_NAME, COMMITTER_EMAIL)
    committer = pygit2.Signature(COMMITTER_NAME, COMMITTER_EMAIL)
    message = commit_message("merge", paths, origin, detail=detail, extra=extra)
    commit = r.create_commit(None, author, committer, message, tree, [ours_id, theirs_id])
    return MergeResult("merged", ours, str(commit), paths)


def migrate_objects(source: str, target: str) -> None:
    """Move every object under ``source`` into the object directory ``target``.

    Packs go in before their indexes (as git does), so a reader never finds an
    index whose pack is missing; loose objects are renamed into place.
    """
    pack_src = os.path.join(source, "pack")
    if os.path.isdir(pack_src):
        pack_dst = os.path.join(target, "pack")
        os.makedirs(pack_dst, exist_ok=True)
        order = {".pack": 0, ".rev": 1, ".idx": 2}
        names = [n for n in os.listdir(pack_src) if os.path.splitext(n)[1] in order]
        for name in sorted(names, key=lambda n: (order[os.path.splitext(n)[1]], n)):
            dest = os.path.join(pack_dst, name)
            if not os.path.exists(dest):
                os.replace(os.path.join(pack_src, name), dest)
    for entry in os.listdir(source):
        folder = os.path.join(source, entry)
        if len(entry) != 2 or not os.path.isdir(folder):
            continue
        dest_folder = os.path.join(target, entry)
        os.makedirs(dest_folder, exist_ok=True)
        for name in os.listdir(folder):
            dest = os.path.join(dest_folder, name)
            if not os.path.exists(dest):
                os.replace(os.path.join(folder, name), dest)

"""Pulling merged work from a remote into ``main``, and checking what remotes still hold after an erasure.

What gitmem adds to ``git fetch`` is on the receiving side:

1. the remote's ``main`` is fetched into a quarantine, a bare repository inside
   the mount's ``gitmem/`` folder (:mod:`gitmem.git.quarantine`), which borrows
   the mount's objects through ``objects/info/alternates``; nothing reaches the
   mount yet;
2. :func:`gitmem.git.merge.integrate` lands it on ``main`` (fast-forward, or a
   clean three-way merge commit when agents wrote meanwhile, or a refusal naming
   the conflicting files), after every commit brought in passed the push rules
   (:mod:`gitmem.git.pushcheck`): paths, text, size, frontmatter, secrets, limits,
   and every object git's strict checks (``index-pack --strict``, as for a push;
   run by gitmem, so a user's ``fetch.fsck.*`` settings cannot weaken them);
3. only then do objects move into the mount, exactly those the new ``main``
   reaches (not anything else the fetch brought), and ``main`` moves by
   compare-and-swap under the writer lock; the remote's erasure ledger entries
   this memory lacks, which the checks read (built in the quarantine), are
   adopted under the same hold, never by a refused pull.

Every pulled commit that ``main`` does not already hold is checked, whatever
other refs of the mount point at. Kept apart from :mod:`gitmem.git.remote` so a
push loads none of the checking and merging modules.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat
from gitmem.git import conflict, erasures
from gitmem.git.cli import FETCH, run_git
from gitmem.git.erasures import LEDGER_REF
from gitmem.git.loose import open_repository
from gitmem.git.merge import MergeRefused, MergeResult, integrate, store_objects
from gitmem.git.quarantine import Quarantine, open_quarantine
from gitmem.git.refs import PROPOSALS, read_ref, swap_ref
from gitmem.git.remote import (
    DEFAULT_REMOTE,
    PUSHED_KEY,
    PushedRef,
    Remote,
    get_remote,
    push,
    pushed_runs,
    remotes,
)
from gitmem.git.repo import GitRepo, translate_errors
from gitmem.git.review import drop_merged
from gitmem.git.transport import INCOMING, INCOMING_LEDGER, tail
from gitmem.git.transport import fetch_main as fetch_into
from gitmem.model import Origin


def _forget_pushed(git: GitRepo, target: Remote, runs: list[str]) -> None:
    key = f"remote.{target.name}.{PUSHED_KEY}"
    for run in runs:
        try:
            git.repo.config.delete_multivar(key, "^" + re.escape(run) + "$")
        except (KeyError, pygit2.GitError):
            continue


def _abandoned(git: GitRepo, target: Remote) -> tuple[str, ...]:
    """Proposals pushed to ``target`` and still open here whose branch is gone there (closed unmerged).

    Run after merged ones were closed (a pull request merged on the forge and its
    branch deleted is closed, not reported). Records of proposals no longer open
    here are dropped.
    """
    recorded = pushed_runs(git, target)
    if not recorded:
        return ()
    with translate_errors(git.path), git.lock.hold():
        open_here = {run for run in recorded if git.ref_target(PROPOSALS + run) is not None}
        _forget_pushed(git, target, [run for run in recorded if run not in open_here])
    if not open_here:
        return ()
    what = f"git ls-remote {target.name}"
    listed = run_git(["ls-remote", "--heads", "--", target.url, f"{PROPOSALS}*"], cwd=git.path, what=what)
    if listed.returncode != 0:
        return ()  # the pull itself reached the remote; a failed listing reports nothing rather than guess
    there = {line.partition("\t")[2][len(PROPOSALS) :] for line in listed.stdout.splitlines()}
    return tuple(sorted(run for run in open_here if run not in there))


# --- pull ---------------------------------------------------------------------------


def fetch_main(git: GitRepo, scratch: str, remote: Remote) -> str:
    """Fetch the remote's ``main`` and erasure ledger into the quarantine at ``scratch``
    (:func:`gitmem.git.transport.fetch_main`); returns ``main``'s commit id.

    :func:`_ledger_brought` reads what it brought.
    """
    fetch_into(scratch, remote)
    try:
        r = open_repository(scratch)
        try:
            incoming = str(r.references[INCOMING].peel(pygit2.Commit).id)
            r.references.delete(INCOMING)  # a ref here would exempt it from the check
            return incoming
        finally:
            r.free()
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError) as exc:
        raise MemoryStoreError("unavailable", f"git fetch from {remote.name} brought no usable main: {exc}") from exc


@dataclass(frozen=True, slots=True)
class _Ledger:
    """The erasure ledger a pull would adopt: ``tip`` (in its quarantine) on this memory's ``ours``."""

    ours: str | None
    tip: str
    added: int


def _ledger_brought(git: GitRepo, held: Quarantine) -> _Ledger | None:
    """The remote's erasure ledger entries this memory lacks, as the ledger commit that adds them, built in the
    quarantine and adopted by nothing yet (``None``: the remote has none this memory lacks).

    A remote ledger that is this one's plus commits exactly as gitmem writes them
    (another copy's ``gitmem push``) is taken as it is (:func:`erasures.take_chain`);
    any other has its new entries chained on this one's (:func:`erasures.chain_entries`,
    bounded before anything is written). The pull's checks read it, so what the remote
    erased is refused in the very pull that brings its ledger, and the mount adopts it
    only once the pull lands (:func:`_adopt_ledger`): a refused pull adopts nothing.
    """
    with translate_errors(git.path):  # a damaged ledger ref, here or brought: unavailable, naming it
        ours = read_ref(git.repo, LEDGER_REF)
        r = open_repository(held.path)
        try:
            brought = [name for name in r.references if name.startswith(INCOMING_LEDGER)]
            tip = str(r.references[INCOMING_LEDGER].target) if INCOMING_LEDGER in brought else None
            for name in brought:  # a ref in the quarantine would exempt what it reaches from the check
                r.references.delete(name)
            if tip is None or tip == ours:
                return None
            if ours is not None and r.descendant_of(pygit2.Oid(hex=ours), pygit2.Oid(hex=tip)):
                return None  # the remote's is behind this one: nothing this memory lacks
            taken = erasures.take_chain(r, ours, tip)
            if taken is not None:
                return _Ledger(ours, tip, taken)
            built, added = erasures.chain_entries(r, ours, erasures.entries_at(r, tip))
            return None if built is None else _Ledger(ours, built, added)
        finally:
            r.free()


def _ledger_now(git: GitRepo, held: Quarantine, ledger: _Ledger) -> _Ledger | None:
    """``ledger`` on this memory's erasure ledger as it is now (read under the writer lock, before the checks).

    ``ledger`` was built on the one read before the lock was taken; an erasure this memory
    took since (another pull adopting its remote's ledger, a push bringing one) is not in
    it, and checks reading it would let through what that erasure names. The remote's
    entries are then chained on the current ledger instead (``None``: it holds them all).
    """
    with translate_errors(git.path):
        current = read_ref(git.repo, LEDGER_REF)
        if current == ledger.ours:
            return ledger
        r = open_repository(held.path)
        try:
            built, added = erasures.chain_entries(r, current, erasures.entries_at(r, ledger.tip))
        finally:
            r.free()
    return None if built is None else _Ledger(current, built, added)


def _adopt_ledger(git: GitRepo, held: Quarantine, ledger: _Ledger) -> int:
    """Make ``ledger`` this memory's erasure ledger, under the writer lock; returns how many entries it added.

    Its objects move in from the quarantine and the ref moves by compare-and-swap; when a
    forget here moved the ledger meanwhile, the entries are chained on that one instead.
    """
    with translate_errors(git.path), git.lock.hold():
        store_objects(git, held, ledger.tip, "the erasure ledger")
        if swap_ref(
            git.repo, git.path, LEDGER_REF, ledger.ours, ledger.tip, message="gitmem erasure",
            stale_after=git.stale_lock_seconds, timeout=git.lock_timeout,
        ):  # fmt: skip
            return ledger.added
        theirs = erasures.entries_at(git.fresh(), ledger.tip)  # a forget here meanwhile: its entries adopted one by one
        return erasures.merge_entries(
            git.fresh(), git.path, theirs, stale_after=git.stale_lock_seconds, timeout=git.lock_timeout
        )


def pull(
    git: GitRepo, fmt: FileFormat, remote: str = DEFAULT_REMOTE, *, origin: Origin | None = None, propose: bool = False
) -> MergeResult:
    """Fetch ``remote``'s ``main`` and integrate it into this memory's ``main``.

    Fast-forward when ``main`` has not moved since; a merge commit when agents
    wrote other files meanwhile; :class:`gitmem.git.merge.MergeRefused` listing
    the files when both sides changed the same file, or when what the remote
    brings breaks the memory's rules. ``main`` is untouched by a refusal.
    Review proposals whose work ``main`` now holds (pull requests merged upstream
    by a merge commit, a squash or a rebase) are deleted and named in ``closed``;
    proposals pushed to ``remote`` whose branch is gone there unmerged are named
    in ``abandoned``.

    A new memory (``main`` only its "init memory" commit) takes the remote's
    ``main`` whole (kind ``joined``): that is how ``gitmem clone`` and ``init``
    + ``remote add`` + ``pull`` join a memory kept on a forge. With ``propose``,
    a conflict opens a conflict proposal (:mod:`gitmem.git.conflict`) and the
    result's kind is ``conflict``: ``main`` still does not move.
    """
    who = origin or Origin()
    target = get_remote(git, remote)
    mark = git.history_mark()
    with open_quarantine(git.path) as held:
        incoming = fetch_main(git, held.path, target)
        ledger = _ledger_brought(git, held)  # checked against below, adopted only once main lands

        def history_unchanged() -> None:
            if git.history_mark() != mark:
                raise MemoryStoreError(
                    "unavailable",
                    "this memory's history was rewritten (purge or forget) during the pull; pull again",
                )

        closed: list[str] = []

        def checked_ledger() -> str | None:  # under the writer lock, before each attempt's checks
            nonlocal ledger
            if ledger is not None:
                ledger = _ledger_now(git, held, ledger)
            return None if ledger is None else ledger.tip

        def landed(result: MergeResult) -> None:  # under the writer lock, main moved or up to date
            if ledger is not None:
                try:
                    _adopt_ledger(git, held, ledger)
                except MemoryStoreError as exc:  # main holds nothing it erased (checked against it): say what moved
                    raise MemoryStoreError(
                        "unavailable",
                        f"main now holds {remote}/main ({result.after[:12]}), but the remote's erasure ledger "
                        f"was not adopted: {exc.message}; pull again to adopt it",
                    ) from exc
            closed.extend(drop_merged(git, result.after))

        try:
            result = integrate(
                git,
                fmt,
                incoming,
                what=f"{remote}/main",
                origin=who,
                detail=f"pull {remote}",
                scratch=held,
                precheck=history_unchanged,
                after_swap=landed,
                strict_objects=True,  # gitmem's own strict check: a user's fetch.fsck.* settings do not weaken it
                join=True,
                ledger=checked_ledger,
            )
        except MergeRefused as exc:
            if not (propose and exc.code == "version_mismatch" and exc.paths):
                raise
            ours = git.head()

            def proposed() -> None:  # under the writer lock, the conflict proposal opened or kept
                if ledger is None:
                    return
                try:  # the remote's work is taken in, as a proposal checked against its erasures
                    _adopt_ledger(git, held, ledger)
                except MemoryStoreError as exc:
                    raise MemoryStoreError(
                        "unavailable",
                        f"conflict proposal {conflict.proposal_id(target.name)} holds {remote}/main, but the "
                        f"remote's erasure ledger was not adopted: {exc.message}; pull again to adopt it",
                    ) from exc

            run, paths = conflict.open_draft(
                git, fmt, held, ours, incoming, target.name, who, ledger=checked_ledger, opened=proposed
            )
            return MergeResult("conflict", ours, ours, paths, proposal=run)
        abandoned = _abandoned(git, target)
        return dataclasses.replace(result, closed=tuple(closed), abandoned=abandoned)


# --- erasure on remotes ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RemoteErasure:
    """One remote after ``forget --remotes``: whether the push landed, and what there still reaches erased objects.

    ``holding`` names each remote ref from which an object the ledger names is
    still reachable (empty: no ref there reaches erased content); ``error`` is
    why the push or the check failed (then ``holding`` is what the check saw).
    """

    remote: str
    pushed: tuple[PushedRef, ...]
    holding: tuple[str, ...]
    error: str | None = None

    @property
    def clean(self) -> bool:
        return self.error is None and not self.holding


def erase_on_remotes(git: GitRepo, names: list[str] | None = None) -> list[RemoteErasure]:
    """Push the rewritten history and the ledger to every remote (or ``names``), then check each one."""
    chosen = [get_remote(git, n) for n in names] if names else remotes(git)
    out = []
    for target in chosen:
        pushed: list[PushedRef] = []
        error = None
        try:
            pushed = push(git, target.name, proposals=True)
        except MemoryStoreError as exc:
            error = exc.message
        try:
            holding = remote_holdings(git, target)
        except MemoryStoreError as exc:
            holding, error = (), error or exc.message
        out.append(RemoteErasure(target.name, tuple(pushed), holding, error))
    return out


def remote_holdings(git: GitRepo, target: Remote) -> tuple[str, ...]:
    """The refs of ``target`` from which a blob the ledger names is reachable.

    Every ref of the remote is fetched into a quarantine (deleted after, with
    whatever erased objects it brought; nothing of it is admitted) and walked with
    ``git rev-list --objects``.
    """
    with translate_errors(git.path):
        erased = erasures.erased_blobs(git.fresh(), git.path)
    if not erased:
        return ()
    what = f"git fetch from {target.name}"
    with open_quarantine(git.path) as held:
        scratch = held.path
        done = run_git(
            [*FETCH, "--", target.url, "+refs/*:refs/check/*"],
            cwd=scratch,
            what=what,
        )
        if done.returncode != 0:
            raise MemoryStoreError("unavailable", f"{what} failed: {tail(done.stderr)}")
        listed = run_git(["for-each-ref", "--format=%(objectname) %(refname)", "refs/check/"], cwd=scratch, what=what)
        holding = []
        for line in listed.stdout.splitlines():
            value, _, ref = line.partition(" ")
            objects = run_git(["rev-list", "--objects", value], cwd=scratch, what=what)
            if any(row[:40] in erased for row in objects.stdout.splitlines()):
                holding.append("refs/" + ref.removeprefix("refs/check/"))
        return tuple(sorted(holding))

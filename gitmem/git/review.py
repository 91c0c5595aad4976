"""The review gate's git side: proposal branches, and landing or dropping them.

With ``gitmem.review = true`` in a mount's config, a write that carries a run id
goes to ``refs/heads/proposals/<run>`` instead of ``main`` (the store picks the
ref; :meth:`gitmem.git.repo.GitRepo.transact` forks the branch from ``main``
and creates it atomically). A proposal is an ordinary branch: people can push it
to a hosting service and open a pull request from it, or decide here:

- :func:`approve` merges it into ``main`` with a merge commit carrying a
  ``Gitmem-Approved-By`` trailer (always a commit, so the approval is on record;
  its tree is the proposal's when ``main`` did not move, else a clean three-way
  merge), then deletes the branch; a conflict refuses and changes nothing;
- :func:`reject` deletes the branch (its commits become unreachable) and, in the
  same ref transaction, records who rejected which head and when as a commit on
  ``refs/gitmem/reviews`` (:func:`rejections` reads them back). The record's tree
  is empty and it names the rejected head only as text, so the rejected content
  stays unreachable and ``git gc`` prunes it; ``main`` is not touched.

**Whose proposal is whose.** A proposal is named by a run id: one ref component
(``proposals/<run>``, an agent run's), or a principal's folder and a topic
(``proposals/<principal>/<topic>``, what a ``gitmem serve`` token of that
principal pushes or writes). A principal owns exactly the branches under its own
folder (:func:`principal_owns`): ``/`` cannot occur in a principal's name, so
``alice``'s folder never holds a branch of ``alice-x`` (or of anyone else),
whatever other characters names hold. Branches named before this rule
(``proposals/alice-topic``) stay readable, and are listed, shown, approved and
rejected as before; no token owns them.
"""

from __future__ import annotations

import os
import re
import threading
from contextlib import ExitStack
from dataclasses import dataclass

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat
from gitmem.git.merge import MergeResult, integrate
from gitmem.git.refs import PROPOSALS as PROPOSALS
from gitmem.git.refs import read_ref, read_ref_file, swap_ref, swap_refs
from gitmem.git.repo import GitRepo, translate_errors
from gitmem.git.treediff import FileChange, file_changes
from gitmem.model import Origin
from gitmem.provenance import (
    COMMITTER_EMAIL,
    COMMITTER_NAME,
    T_APPROVED_BY,
    T_REJECTED_BY,
    T_RUN,
    parse_message,
)

REVIEW_KEY = "gitmem.review"
T_REJECTED_HEAD = "Gitmem-Rejected-Head"
REVIEWS = "refs/gitmem/reviews"
"""The chain of review records (one commit per rejection, empty tree)."""
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+=-]{0,127}$")
_FALSE = ("false", "no", "off", "0", "")


@dataclass(frozen=True, slots=True)
class Proposal:
    """One proposal branch as a reviewer sees it."""

    run: str
    ref: str
    head: str
    base: str | None  # where it forked from main (the merge base), None if unrelated
    commits: int  # commits on the branch that main does not have
    paths: tuple[str, ...]  # files it changes relative to its base
    principals: tuple[str, ...]
    updated: int  # committer time of its head, seconds since the epoch
    # Each commit main does not have, newest first, as (commit id, who, summary line): who is the
    # commit's Gitmem-Principal, else its git author (a person who pushed a fix with plain git
    # is credited for it, not the agent whose run the branch is).
    log: tuple[tuple[str, str, str], ...] = ()

    @property
    def authors(self) -> tuple[tuple[str, int], ...]:
        """Who made the branch's commits and how many each, in order of first appearance (newest first)."""
        counts: dict[str, int] = {}
        for _commit, who, _summary in self.log:
            counts[who] = counts.get(who, 0) + 1
        return tuple(counts.items())


def gate_enabled(git: GitRepo) -> bool:
    """Whether writes carrying a run id go to proposals (``gitmem.review`` in the repo config)."""
    value = git.config_get(REVIEW_KEY)
    return value is not None and value.strip().lower() not in _FALSE


_GUARD = threading.Lock()
_NO_PROPOSAL: dict[tuple[str, str], object] = {}  # (repository path, ref) -> packed-refs' stat when absent


def _stamp(path: str) -> object:
    """What changes when the file at ``path`` is written, replaced, created or deleted."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError:  # unreadable: a value equal to nothing, so nothing is kept
        return object()
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def set_gate(git: GitRepo, enabled: bool) -> None:
    git.config_set(REVIEW_KEY, "true" if enabled else "false")


def _component(name: str) -> bool:
    return (
        _RUN_ID.fullmatch(name) is not None
        and ".." not in name
        and not name.endswith((".", ".lock"))
        and pygit2.reference_is_valid_name(PROPOSALS + name)
    )


def names_a_proposal(run: object) -> bool:
    """Whether ``run`` can name a branch of its own: ``<run>``, or ``<principal>/<topic>``."""
    if not isinstance(run, str) or len(run) > 128:
        return False
    return all(_component(part) for part in run.split("/")) and run.count("/") <= 1


def principal_run(principal: str, topic: str) -> str:
    """The run id of ``principal``'s proposal ``topic``: ``<principal>/<topic>``, in the principal's folder.

    Not checked here (a run that never proposes needs no branch name);
    :func:`check_run_id` refuses it where a branch is made.
    """
    return f"{principal}/{topic}"


def principal_owns(principal: str, ref: str) -> bool:
    """Whether ``ref`` is one of ``principal``'s proposal branches (``refs/heads/proposals/<principal>/<topic>``).

    A principal's name holds no ``/``, so no two principals' folders overlap:
    ``alice`` owns nothing of ``alice-x`` (nor of ``alice.x``, ``alice@x``, ...).
    """
    if "/" in principal or not ref.startswith(f"{PROPOSALS}{principal}/"):
        return False
    return names_a_proposal(ref[len(PROPOSALS) :])


def check_run_id(run: object) -> str:
    """``run`` if it can name a proposal branch, else ``forbidden``."""
    if not names_a_proposal(run):
        raise MemoryStoreError(
            "forbidden",
            f"run id {run!r} cannot name a proposal branch, and this memory sends agent writes to review: "
            "use letters, digits and . _ @ + = - (at most 128, no '..'), or <principal>/<topic>",
        )
    assert isinstance(run, str)
    return run


def proposal_ref(run: str) -> str:
    return PROPOSALS + check_run_id(run)


def proposal_head(git: GitRepo, run: str) -> str | None:
    """The head of ``run``'s proposal, or ``None`` when it has none.

    Asked before every read of a run's view. A proposal is a loose ref file
    (read directly) or, once packed, a line of ``packed-refs``; that it is in
    neither is looked up with libgit2 once and kept with the ``stat`` of
    ``packed-refs``, so the next read needs a failed ``open`` and two
    ``stat`` calls (~40 µs against ~80 µs through libgit2, thread CPU in a
    process that writes between its reads). Creating the branch
    writes the loose file, and packing or deleting refs rewrites
    ``packed-refs``: either is seen by the next call.
    """
    ref = proposal_ref(run)
    loose = os.path.join(git.path, *ref.split("/"))
    head = read_ref_file(loose)
    if head is not None:
        return head
    if os.path.lexists(loose):  # a symbolic or damaged ref file: libgit2 decides
        return git.ref_target(ref)
    key = (git.path, ref)
    packed = _stamp(os.path.join(git.path, "packed-refs"))
    with _GUARD:
        absent = key in _NO_PROPOSAL and _NO_PROPOSAL[key] == packed
    if absent:
        return None
    head = git.ref_target(ref)
    if head is None:
        with _GUARD:
            if len(_NO_PROPOSAL) > 4096:
                _NO_PROPOSAL.clear()
            _NO_PROPOSAL[key] = packed
    return head


def _require(git: GitRepo, run: str) -> tuple[str, str]:
    ref = proposal_ref(run)
    head = git.ref_target(ref)
    if head is None:
        raise MemoryStoreError("not_found", f"no proposal {run!r} (see the review list)")
    return ref, head


def describe(git: GitRepo, run: str) -> Proposal:
    """The proposal of ``run``; ``not_found`` when there is none."""
    ref, head = _require(git, run)
    with translate_errors(git.path):
        return _describe(git, run, ref, head)


def _describe(git: GitRepo, run: str, ref: str, head: str) -> Proposal:
    r = git.repo
    main = git.head()
    base_oid = r.merge_base(pygit2.Oid(hex=main), pygit2.Oid(hex=head))
    base = str(base_oid) if base_oid is not None else None
    principals: dict[str, None] = {}
    log: list[tuple[str, str, str]] = []
    walker = r.walk(pygit2.Oid(hex=head), pygit2.enums.SortMode.TOPOLOGICAL)
    walker.hide(pygit2.Oid(hex=main))
    for commit in walker:
        parsed = parse_message(commit.message)
        who = parsed.origin.principal_id
        if who:
            principals[who] = None
        author = who or commit.author.name or commit.author.email or "-"
        log.append((str(commit.id), author, parsed.summary))
    paths: tuple[str, ...] = ()
    if base is not None and base != head:
        paths = git.changed_paths(base, head)
    updated = r[head].peel(pygit2.Commit).commit_time
    return Proposal(run, ref, head, base, len(log), paths, tuple(principals), updated, tuple(log))


def proposals(git: GitRepo) -> list[Proposal]:
    """Every proposal branch, oldest update first."""
    with translate_errors(git.path):
        r = git.repo
        found = []
        for name in r.references:
            if not name.startswith(PROPOSALS):
                continue
            run = name[len(PROPOSALS) :]
            head = git.ref_target(name)
            if head is None or not names_a_proposal(run):
                continue
            found.append(_describe(git, run, name, head))
    return sorted(found, key=lambda p: (p.updated, p.run))


def approve(git: GitRepo, fmt: FileFormat, run: str, *, approver: str, origin: Origin | None = None) -> MergeResult:
    """Merge the proposal of ``run`` into ``main`` and delete it; see the module docstring.

    ``approver`` goes into the ``Gitmem-Approved-By`` trailer and is the merge
    commit's principal and author (``origin`` gives its run and tool call): a
    commit names one person, so an approval is on record only as given by the
    one who made it. Commits the run added after this call read the branch stay
    on it, as a new proposal.
    """
    if not isinstance(approver, str) or not approver.strip() or "\n" in approver:
        raise MemoryStoreError("forbidden", "an approval must name who approves it")
    ref, head = _require(git, run)
    who = Origin(origin.run_id if origin else None, approver.strip(), origin.tool_call_id if origin else None)
    if who.principal_id != approver.strip():
        raise MemoryStoreError("forbidden", f"{approver!r} cannot name an approver: one line, without < or >")

    def still_there() -> None:
        if git.ref_target(ref) is None:
            raise MemoryStoreError("not_found", f"proposal {run!r} was removed meanwhile")

    def drop_branch(result: MergeResult) -> None:
        # Deleted only if the run did not write to it again since it was read.
        swap_ref(git.repo, git.path, ref, head, None, message="gitmem approve", stale_after=git.stale_lock_seconds)

    from gitmem.git import conflict  # approvals only: reads need none of the write machinery
    from gitmem.git.loose import open_repository
    from gitmem.git.quarantine import open_quarantine

    with translate_errors(git.path):
        draft = conflict.read_draft(git.repo, head)
    with ExitStack() as stack:
        landing, held = head, None
        if draft is not None:
            # A conflict proposal: its resolved merge lands as the approver's merge commit (main: its first parent).
            held = stack.enter_context(open_quarantine(git.path))
            with open_repository(held.path) as r:
                landing = conflict.approved_commit(r, draft, who, run)
        return integrate(
            git,
            fmt,
            landing,
            what=f"{'conflict ' if draft is not None else ''}proposal {run}",
            origin=who,
            detail=f"approve proposal {run}",
            extra=((T_APPROVED_BY, who.principal_id),),
            fast_forward=draft is not None,  # an ordinary proposal always lands as a merge commit, on record
            scratch=held,
            precheck=still_there,
            after_swap=drop_branch,
        )


def drop_merged(git: GitRepo, main: str) -> tuple[str, ...]:
    """Delete the proposals whose work ``main`` now holds; returns their run ids.

    After a pull brings back a pull request that was opened from a proposal and
    merged on the hosting service, the proposal is done, whichever way the forge
    merged it: a merge commit or a fast-forward (``main`` holds the proposal's
    head), a squash or a rebase (new commits: every file the proposal changes
    since it forked is, on ``main``, exactly as the proposal has it). Call under
    the writer lock; a proposal the run wrote to meanwhile is kept (its CAS fails).
    """
    r = git.repo
    closed: list[str] = []
    main_id = pygit2.Oid(hex=main)
    main_tree = r[main_id].peel(pygit2.Tree)
    for name in sorted(r.references):
        if not name.startswith(PROPOSALS):
            continue
        head = read_ref(r, name)
        if head is None:
            continue
        if head == main or r.descendant_of(main_id, pygit2.Oid(hex=head)) or _landed(r, main_id, main_tree, head):
            if swap_ref(r, git.path, name, head, None, message="gitmem pull: merged upstream"):
                closed.append(name[len(PROPOSALS) :])
    return tuple(closed)


LANDED_WALK = 2000
"""Commits of ``main`` since a proposal forked that a pull reads to find where its changes landed."""


def _landed(r: pygit2.Repository, main: pygit2.Oid, main_tree: pygit2.Tree, head: str) -> bool:
    """Whether the changes of the proposal at ``head`` (since it forked) landed on ``main``.

    A squash or rebase merge makes new commits, so the proposal's own commits
    never appear on ``main``; its changes do: some commit of ``main`` since the
    fork (``main`` itself first, then back to at most :data:`LANDED_WALK` commits,
    so a later edit of the same files does not hide the merge) has every file the
    proposal changed exactly as the proposal has it. A proposal that changes
    nothing is never closed this way.
    """
    tip = r[head].peel(pygit2.Commit)
    base = r.merge_base(main, tip.id)
    if base is None:
        return False
    changes = file_changes(r, r[base].peel(pygit2.Tree).id, tip.tree_id)
    if not changes:
        return False
    if _holds(main_tree, changes):
        return True
    walker = r.walk(main, pygit2.enums.SortMode.TOPOLOGICAL)
    walker.hide(base)
    for seen, commit in enumerate(walker):
        if seen >= LANDED_WALK:
            return False
        if _holds(commit.tree, changes):
            return True
    return False


def _holds(tree: pygit2.Tree, changes: list[FileChange]) -> bool:
    """Whether ``tree`` has every change's new side (an entry with its id and mode, or no entry)."""
    for change in changes:
        try:
            entry = tree[change.path]
        except KeyError:
            entry = None
        if change.new is None:
            if entry is not None:
                return False
        elif entry is None or str(entry.id) != change.new[1] or entry.filemode != change.new[0]:
            return False
    return True


@dataclass(frozen=True, slots=True)
class Rejection:
    """One rejected proposal: whose run, the head it had, who rejected it and when."""

    run: str
    head: str
    rejected_by: str
    time: int  # seconds since the epoch
    reason: str | None = None


def reject(git: GitRepo, run: str, *, rejecter: str, reason: str | None = None) -> str:
    """Delete the proposal of ``run`` and record the rejection; returns the commit it pointed at."""
    if not isinstance(rejecter, str) or not rejecter.strip() or "\n" in rejecter:
        raise MemoryStoreError("forbidden", "a rejection must name who rejects it")
    # The name is the record's author and its Gitmem-Rejected-By trailer: the one rule of identity
    # trailers (Origin's), as for an approver, so nothing git refuses or a trailer reader splits gets in.
    if Origin(None, rejecter.strip(), None).principal_id != rejecter.strip():
        raise MemoryStoreError("forbidden", f"{rejecter!r} cannot name a rejecter: one line, without < or >")
    if reason is not None and (not isinstance(reason, str) or "\n" in reason.strip()):
        raise MemoryStoreError("invalid_file", "a rejection reason is one line of text")
    ref, _ = _require(git, run)
    with translate_errors(git.path), git.lock.hold():
        r = git.repo
        current = git.ref_target(ref)
        if current is None:
            raise MemoryStoreError("not_found", f"proposal {run!r} was removed meanwhile")
        previous = read_ref(r, REVIEWS)
        lines = [f"{T_RUN}: {run}", f"{T_REJECTED_HEAD}: {current}", f"{T_REJECTED_BY}: {rejecter.strip()}"]
        summary = f"reject proposal {run}" + (f": {reason.strip()}" if reason and reason.strip() else "")
        message = summary[:200] + "\n\n" + "\n".join(lines) + "\n"
        empty = r.TreeBuilder().write()
        record = r.create_commit(
            None,
            pygit2.Signature(rejecter.strip(), COMMITTER_EMAIL),
            pygit2.Signature(COMMITTER_NAME, COMMITTER_EMAIL),
            message,
            empty,
            [pygit2.Oid(hex=previous)] if previous else [],
        )
        moves = {ref: (current, None), REVIEWS: (previous, str(record))}
        if not swap_refs(r, git.path, moves, message="gitmem reject", stale_after=git.stale_lock_seconds):
            raise MemoryStoreError("unavailable", f"proposal {run!r} moved while it was being removed; try again")
        return current


def rejections(git: GitRepo) -> list[Rejection]:
    """Every recorded rejection, newest first."""
    with translate_errors(git.path):
        r = git.repo
        tip: str | None = read_ref(r, REVIEWS)
        out: list[Rejection] = []
        while tip is not None:
            commit = r[tip].peel(pygit2.Commit)
            info = parse_message(commit.message)
            run, head, who = (info.trailer(k) for k in (T_RUN, T_REJECTED_HEAD, T_REJECTED_BY))
            if run and head and who:
                summary = info.summary
                _, _, said = summary.partition(": ")
                out.append(Rejection(run, head, who, commit.commit_time, said or None))
            tip = str(commit.parents[0].id) if commit.parents else None
        return out

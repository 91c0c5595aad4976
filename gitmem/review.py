"""The review gate: agent runs write to proposal branches, people approve or reject them.

Turn it on for a mount with :func:`enable` (``gitmem.review = true`` in the
repository's config, read on every write, so running servers follow it). Then:

- a write whose origin carries a run id lands on ``refs/heads/proposals/<run>``,
  forked from ``main`` on the run's first write, instead of on ``main``;
- that run reads its own proposal through ``store.for_run(run_id)`` (list, read,
  changes and search see the proposal; log walks from its head, diff and blame
  default to it, find ranks its files); every other reader keeps reading ``main``;
- :func:`proposals` lists them, :func:`diff` shows what one changes (from where
  it forked, as a pull request does), :func:`approve` merges it into ``main``
  with a ``Gitmem-Approved-By`` trailer and :func:`reject` deletes it.

Proposal branches are ordinary git branches: ``gitmem push NAME REMOTE
--proposals`` sends them to a hosting service to review there as pull requests.
Writes without a run id (people, the CLI without ``--run``) still go to ``main``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitmem.git import history as git_history
from gitmem.git import review as engine
from gitmem.git.merge import MergeRefused, MergeResult
from gitmem.git.review import PROPOSALS, REVIEWS, Proposal, Rejection
from gitmem.gitstore import GitFileStore, SyncGitFileStore, as_sync
from gitmem.history import FileDiff
from gitmem.model import Origin
from gitmem.provenance import T_APPROVED_BY, T_REJECTED_BY

if TYPE_CHECKING:
    from gitmem.git.conflict import Draft

__all__ = [
    "PROPOSALS",
    "REVIEWS",
    "T_APPROVED_BY",
    "T_REJECTED_BY",
    "MergeRefused",
    "MergeResult",
    "Proposal",
    "Rejection",
    "approve",
    "conflict",
    "diff",
    "enable",
    "enabled",
    "proposal",
    "proposals",
    "reject",
    "rejections",
    "resolve",
]

Store = GitFileStore | SyncGitFileStore


def enable(store: Store, on: bool = True) -> None:
    """Turn the review gate of ``store``'s mount on (or off: runs write to ``main`` again)."""
    engine.set_gate(as_sync(store).repo, on)


def enabled(store: Store) -> bool:
    return engine.gate_enabled(as_sync(store).repo)


def proposals(store: Store) -> list[Proposal]:
    """Every open proposal of the mount, least recently updated first."""
    return engine.proposals(as_sync(store).repo)


def proposal(store: Store, run: str) -> Proposal:
    """The proposal of ``run``; ``not_found`` when it has none."""
    return engine.describe(as_sync(store).repo, run)


def diff(store: Store, run: str, path: str | None = None) -> list[FileDiff]:
    """What the proposal of ``run`` changes, from the commit of ``main`` it forked from."""
    sync = as_sync(store)
    found = engine.describe(sync.repo, run)
    base = found.base if found.base is not None else sync.repo.head()
    return git_history.diff(sync.repo, sync.format, base, found.head, path)


def approve(store: Store, run: str, *, approver: str, origin: Origin | None = None) -> MergeResult:
    """Merge the proposal of ``run`` into ``main`` and delete it.

    Always one merge commit on ``main`` whose trailers include
    ``Gitmem-Approved-By: <approver>``. When ``main`` and the proposal changed
    the same file, :class:`MergeRefused` (``version_mismatch``) lists the files
    and nothing changes.
    """
    sync = as_sync(store)
    return engine.approve(sync.repo, sync.format, run, approver=approver, origin=origin)


def reject(store: Store, run: str, *, rejecter: str, reason: str | None = None) -> str:
    """Delete the proposal of ``run``; returns the commit it pointed at.

    Who rejected it (and why, if given) is recorded on ``refs/gitmem/reviews``;
    :func:`rejections` lists the records. ``main`` is not touched.
    """
    return engine.reject(as_sync(store).repo, run, rejecter=rejecter, reason=reason)


def rejections(store: Store) -> list[Rejection]:
    """Every rejected proposal on record, newest first."""
    return engine.rejections(as_sync(store).repo)


def conflict(store: Store, run: str) -> Draft | None:
    """The conflict proposal ``run`` (both sides, files unresolved), or ``None`` for an ordinary proposal."""
    from gitmem.git.conflict import read_draft

    sync = as_sync(store)
    found = engine.describe(sync.repo, run)
    return read_draft(sync.repo.repo, found.head)


def resolve(store: Store, run: str, path: str, *, side: str | None = None, text: str | None = None) -> Draft:
    """Settle ``path`` of conflict proposal ``run`` (opened by ``pull --propose``).

    ``side`` ``"ours"`` keeps this memory's version, ``"theirs"`` the remote's;
    or ``text`` is the merged content (held to a store write's rules). When no
    file is left unresolved, :func:`approve` lands the merge on ``main``.
    """
    from gitmem.git.conflict import resolve as settle

    sync = as_sync(store)
    return settle(sync.repo, sync.format, run, path, side=side, text=text)

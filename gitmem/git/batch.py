"""The one write path of the git store: a checked batch becomes one commit.

Every change a store makes to files (``write``, ``delete``, ``move``,
``move_many``, ``delete_many``, ``apply``) is a :class:`~gitmem.store.Batch`,
checked before any I/O by the rules in :mod:`gitmem.store`, then decided here
against the head under the writer lock by the same :func:`~gitmem.store.decide`
the in-memory twin uses, and committed by :meth:`~gitmem.git.repo.GitRepo.transact`.
Either every path changes in one commit or nothing does, so renaming a folder of
ten files is one commit, and a conflict on the seventh moves none of them.

The commit names every changed path in its trailers (a delete: one
``Gitmem-Path`` each; a move: ``Gitmem-Path`` for each destination followed by
``Gitmem-From`` for its source), which is what ``log`` relies on to skip
gitmem's commits that do not mention a path, and to follow a file across the move.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gitmem.fileformat import FileFormat
from gitmem.git import spoolcodec
from gitmem.git.history import stored_file
from gitmem.git.refs import MAIN
from gitmem.git.repo import Done, GitRepo, Plan, Snapshot
from gitmem.model import Origin
from gitmem.store import Batch, Decision, check_batch_room, decide, file_dir_conflict


def commit_batch(
    repo: GitRepo,
    fmt: FileFormat,
    batch: Batch,
    *,
    origin: Origin,
    ref: str,
    size_of: Callable[[str], int],
) -> Done[Decision | None]:
    """Commit ``batch`` on ``ref``: the new commit and what was decided (both ``None``: no change).

    Runs again on a new head when a writer outside gitmem moved the ref, so its
    checks decide again (see :meth:`GitRepo.transact`). With a file-count or
    byte limit, a new file colliding with a folder is ``invalid_path`` before
    the memory is found full (as in the twin).
    """

    spec = BatchSpec(fmt, batch, origin) if ref == MAIN else None
    return repo.transact(_planner(fmt, batch, origin, size_of), ref=ref, spec=spec)


@dataclass(frozen=True, slots=True)
class BatchSpec:
    """A batch as another process's writer can commit it (:mod:`gitmem.git.spool`): plain values, sent in the
    spool's own encoding (:mod:`gitmem.git.spoolcodec`), which decodes requests back into this class."""

    fmt: FileFormat
    batch: Batch
    origin: Origin

    def __call__(self, repo: GitRepo) -> Callable[[Snapshot], Plan[Decision | None]]:
        return _planner(self.fmt, self.batch, self.origin, lambda oid: len(repo.blob(oid)))


spoolcodec.use_spec(BatchSpec)


def _planner(
    fmt: FileFormat, batch: Batch, origin: Origin, size_of: Callable[[str], int]
) -> Callable[[Snapshot], Plan[Decision | None]]:
    def plan(snap: Snapshot) -> Plan[Decision | None]:
        decision = decide(batch, lambda path: stored_file(snap, path), snap.write_blob)
        if decision is None:
            return Plan.nothing(None)
        writes = any(e.data is not None for e in decision.effects)
        if writes and (fmt.max_files is not None or fmt.max_memory_bytes is not None):
            for effect in decision.creates:
                _check_shape(snap, effect.path)
            files = list(snap.files())
            total = sum(size_of(oid) for _, oid in files) if fmt.max_memory_bytes is not None else 0
            check_batch_room(
                decision, files=len(files), total_bytes=total, max_files=fmt.max_files, max_bytes=fmt.max_memory_bytes
            )
        edits = tuple((e.path, e.version) for e in decision.effects)
        return Plan(edits, decision.op, decision.paths, origin, decision, summary=batch.summary, extra=batch.trailers)

    return plan


def _check_shape(snap: Snapshot, path: str) -> None:
    """Refuse a new file where a folder is, or below a file."""
    entry = snap.get(path)
    if entry is not None and entry.kind == "tree":
        raise file_dir_conflict(path, is_file=False)
    parts = path.split("/")
    for i in range(1, len(parts)):
        above = snap.get("/".join(parts[:i]))
        if above is not None and above.kind != "tree":
            raise file_dir_conflict(path, is_file=True)

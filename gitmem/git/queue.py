"""Pushes that land while agents write: ``git push origin HEAD:refs/for/main``.

A push straight to ``main`` is a compare-and-swap from the value the pusher
fetched; while agents write a few commits a second, a person's fetch-rebase-push
loses that race again and again. A push to :data:`QUEUE_MAIN` instead asks the
server to integrate the pushed commit into ``main`` as it is *now*, with the same
rules as ``gitmem pull`` (:func:`gitmem.git.merge.integrate`): a fast-forward when
it builds on ``main``, else a three-way tree merge committed by the pusher's
principal, refused only for a real conflict (both sides changed a file; the
files are named) or a rule a store write would break. It is done under the
mount's writer lock, so it cannot lose a race: it waits its turn.

The pushed objects come from the push's quarantine into a scratch repository
(:func:`gitmem.git.merge.scratch_repository`), and move into the mount only with
the merge that needs them: a refused push leaves nothing behind.
"""

from __future__ import annotations

import os

from gitmem.fileformat import FileFormat
from gitmem.git.merge import MergeResult, integrate, scratch_repository
from gitmem.git.packs import install_pack, pack_reachable, ref_tips
from gitmem.git.repo import GitRepo
from gitmem.model import Origin

QUEUE_MAIN = "refs/for/main"
"""The ref a client pushes to so the server merges its commit into ``main``; the ref itself is never created."""


def land_queued(git: GitRepo, fmt: FileFormat, quarantine: str, pushed: str, *, origin: Origin) -> MergeResult:
    """Integrate commit ``pushed`` (its objects in the ``quarantine`` object folder) into ``main``.

    Raises :class:`gitmem.git.merge.MergeRefused` (conflict or rule; ``main``
    untouched) or ``unavailable``.
    """
    with scratch_repository(git) as scratch:
        files = pack_reachable(git.path, [quarantine], os.path.join(scratch, "incoming"), [pushed], ref_tips(git.path))
        if files:
            install_pack(files, os.path.join(scratch, "objects"))
        who = origin.principal_id or "a push"
        return integrate(
            git,
            fmt,
            pushed,
            what=f"the push of {who}",
            origin=origin,
            detail=f"merged into main by gitmem serve for {who}",
            scratch=scratch,
        )

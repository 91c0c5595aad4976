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

The merge runs in the push's own quarantine (:mod:`gitmem.git.quarantine`): the
merged trees and the merge commit are written there beside the pushed objects,
and only what the landed ``main`` reaches moves into the mount. A refused push
leaves nothing behind, and neither does a killed one (the next push sweeps it).
"""

from __future__ import annotations

from gitmem.fileformat import FileFormat
from gitmem.git.merge import MergeResult, integrate
from gitmem.git.quarantine import Quarantine
from gitmem.git.repo import GitRepo
from gitmem.model import Origin

QUEUE_MAIN = "refs/for/main"
"""The ref a client pushes to so the server merges its commit into ``main``; the ref itself is never created."""


def land_queued(git: GitRepo, fmt: FileFormat, quarantine: Quarantine, pushed: str, *, origin: Origin) -> MergeResult:
    """Integrate commit ``pushed`` (its objects in the push's ``quarantine``) into ``main``.

    Raises :class:`gitmem.git.merge.MergeRefused` (conflict or rule; ``main``
    untouched) or ``unavailable``.
    """
    who = origin.principal_id or "a push"
    return integrate(
        git,
        fmt,
        pushed,
        what=f"the push of {who}",
        origin=origin,
        detail=f"merged into main by gitmem serve for {who}",
        scratch=quarantine,
    )

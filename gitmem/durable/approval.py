"""The human path to activation: approving a run's proposal of candidates.

With the review gate on (``gitmem review enable NAME``), an agent run that
writes durable candidates (``DurableRepository.for_run(run)``) writes them to
``refs/heads/proposals/<run>``. A person reviews that branch like a pull
request, and :func:`approve_candidates`:

1. merges it into ``main`` through the review gate (one merge commit carrying
   ``Gitmem-Approved-By: <approver>``);
2. activates every candidate the proposal brought, one change set per
   namespace (one commit each), with ``manual`` evidence that points at the
   approval commit (``gitmem:commit/<id>``) and again ``Gitmem-Approved-By``,
   authored by the approver.

So ``git log`` shows both the reviewed change and the activation it
authorised. Nodes of the proposal that are no longer candidates on ``main``
(already activated, tombstoned) are left alone.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from gitmem.durable.changes import Activate, ChangeSet
from gitmem.durable.namespace import Namespace
from gitmem.durable.node import Evidence
from gitmem.durable.nodefile import NODES, decode_node
from gitmem.durable.repository import ChangeResult, DurableRepository
from gitmem.errors import if_found
from gitmem.model import Origin


@dataclass(frozen=True, slots=True)
class Approval:
    """The approval's merge commit and the activations it authorised."""

    approval: str
    activations: tuple[ChangeResult, ...]


def approve_candidates(
    repository: DurableRepository, run: str, *, approver: str, origin: Origin | None = None
) -> Approval:
    """Merge run ``run``'s proposal and activate its candidates (see the module docstring)."""
    from gitmem import review  # the merge machinery: only approving needs it, not recall or writes

    store = repository.store
    proposal = review.proposal(store, run)  # type: ignore[arg-type]
    merged = review.approve(store, run, approver=approver, origin=origin)  # type: ignore[arg-type]
    commit = merged.after
    # No run: the activations land on main, where the approval just merged the candidates.
    who = Origin(None, approver, origin.tool_call_id if origin else None)
    by_namespace: dict[Namespace, list[Activate]] = defaultdict(list)
    evidence = Evidence(f"gitmem:commit/{commit}", f"git-commit:{commit}", "manual", repository.clock())
    for path in proposal.paths:
        if path.count("/") != 3 or path.split("/")[1] + "/" != NODES or not path.endswith(".md"):
            continue  # not a node file
        file = if_found(store.read, path)
        if file is None:
            continue
        node = decode_node(file.text, path)
        if node.status == "candidate":
            by_namespace[node.namespace].append(Activate(node.id, node.revision, (evidence,)))
    results = []
    for namespace, ops in sorted(by_namespace.items()):
        change = ChangeSet(namespace, f"approve/{run}/{commit}", tuple(ops))
        # The approver as the activation's principal names it (the same cleaned name), one person per commit.
        results.append(repository.apply(change, origin=who, trailers=((review.T_APPROVED_BY, who.principal_id or ""),)))
    return Approval(commit, tuple(results))

"""What an agent may do with durable memory: recall active nodes, propose candidates.

The tools themselves are registry tools (:mod:`gitmem.tools.durable`, offered by
the MCP server); this module holds their rules, which know nothing of tool
shapes. An agent gets exactly these powers, and none can activate anything:

- recall: the active nodes of its namespace that match a query;
- propose: new **candidate** nodes, checked like extraction output
  (semantic or procedural, a matching source, workspace or user scope, 20-1200
  characters of content, a 12-320 character reason saying why it matters later,
  at most 8 tags, importance >= 0.70, confidence >= 0.75; secrets are refused
  by the store). A person activates them later (``gitmem durable activate``, or
  by approving the run's proposal);
- a node's log: its revisions, each with its evidence and who made it.

A host may also give a reviewer (``gitmem serve``'s ``admin`` tokens) the
person's two powers, never an agent's by default: activate one candidate
revision (:func:`activate`, ``manual`` evidence naming the reviewer; a
colleague's too, in the same tenant and scope), and approve
a run's proposal (:func:`approve`, as ``gitmem durable approve``). Both record
who did it, so a caller that names nobody may not.

The namespace is fixed when the binding is built (the host's choice, as A3S
binds a session to one namespace), so an agent cannot read or write another one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Final

from gitmem.durable.binding import DurableBinding, candidate_id
from gitmem.durable.node import Evidence, bad, fields
from gitmem.errors import MemoryStoreError
from gitmem.model import Origin
from gitmem.session.binding import ExtractedItem

SOURCES: Final[dict[str, frozenset[str]]] = {
    "semantic": frozenset({"project_fact", "preference", "decision"}),
    "procedural": frozenset({"workflow", "failure"}),
}
SCOPES: Final = frozenset({"workspace", "user"})
MAX_PROPOSALS: Final = 8
PROPOSAL_FIELDS: Final = frozenset(
    {"content", "memory_type", "source", "scope", "reason", "tags", "importance", "confidence"}
)


def _number(value: object, what: str, floor: float) -> float:
    # Compared as it is (exact, NaN fails): float() of an int past 1e308 (a JSON 10**400) raises OverflowError.
    if isinstance(value, bool) or not isinstance(value, int | float) or not floor <= value <= 1.0:
        raise bad(f"{what} must be a number from {floor} to 1")
    return float(value)


def check_proposal(raw: object, index: int) -> ExtractedItem:
    """One proposed item, checked like extraction output (see the module docstring)."""
    where = f"items[{index}]"
    raw = fields(raw, where, set(), PROPOSAL_FIELDS)
    content, reason = raw.get("content"), raw.get("reason")
    if not isinstance(content, str) or not 20 <= len(content.strip()) <= 1200:
        raise bad(f"{where}.content must be 20-1200 characters")
    if not isinstance(reason, str) or not 12 <= len(reason.strip()) <= 320:
        raise bad(f"{where}.reason must say in 12-320 characters why this matters later")
    # Each a string before it is looked up: a caller's {} or [] is unhashable (a TypeError, not a refusal).
    kind = raw.get("memory_type")
    if not isinstance(kind, str) or kind not in SOURCES:
        raise bad(f"{where}.memory_type must be semantic or procedural")
    source = raw.get("source")
    if not isinstance(source, str) or source not in SOURCES[kind]:
        raise bad(f"{where}.source must be one of {', '.join(sorted(SOURCES[kind]))} for {kind} memories")
    scope = raw.get("scope")
    if not isinstance(scope, str) or scope not in SCOPES:
        raise bad(f"{where}.scope must be workspace or user")
    tags = raw.get("tags", [])
    if not isinstance(tags, list) or len(tags) > 8 or not all(isinstance(t, str) and t.strip() for t in tags):
        raise bad(f"{where}.tags must be at most 8 non-empty strings")
    return ExtractedItem(
        content=content.strip(),
        memory_type="semantic" if kind == "semantic" else "procedural",
        source=source,
        scope=scope,
        reason=reason.strip(),
        tags=tuple(t.strip() for t in tags),
        importance=_number(raw.get("importance"), f"{where}.importance", 0.7),
        confidence=_number(raw.get("confidence"), f"{where}.confidence", 0.75),
    )


def recall(binding: DurableBinding, query: str, limit: int) -> dict[str, Any]:
    """The active nodes of the binding's namespace that match ``query``, best first.

    ``limit`` is the agent's; the host's policy caps it (:meth:`DurableBinding.recall_policy`).
    """
    answer = binding.repository.recall(binding.namespace, query, binding.recall_policy(limit))
    return {
        "memories": [
            {
                "id": h.node.id,
                "revision": h.node.revision,
                "kind": h.node.kind,
                "content": h.node.content,
                "score": round(h.score, 4),
            }
            for h in answer.hits
        ]
    }


def propose(binding: DurableBinding, items: Sequence[object], origin: Origin | None) -> dict[str, Any]:
    """``items`` checked one by one, then stored as candidates in one change (or none when all exist)."""
    if not 1 <= len(items) <= MAX_PROPOSALS:
        raise bad(f"pass items: a list of 1 to {MAX_PROPOSALS} proposed memories")
    checked = [check_proposal(raw, i) for i, raw in enumerate(items)]
    result = binding.propose(checked, origin=origin)
    ids = list(dict.fromkeys(candidate_id(binding.namespace, item.content) for item in checked))
    new = [] if result is None else [ref.rsplit("@", 1)[0] for ref in result.refs]
    return {"candidates": ids, "new": new, "status": "candidate", "commit": None if result is None else result.commit}


def node_log(binding: DurableBinding, node_id: str, limit: int) -> dict[str, Any]:
    """A node's revisions, newest first: status, content, evidence, and who made each (an activation too)."""
    revisions = binding.repository.history(binding.namespace, node_id, limit=limit)
    return {
        "id": node_id,
        "revisions": [
            {
                "commit": r.commit,
                "time": r.time.isoformat(),
                "principal": r.principal,
                "revision": r.node.revision,
                "change": r.node.revision_kind,
                "status": r.node.status,
                "content": r.node.content,
                "evidence": [{"kind": e.kind, "uri": e.uri} for e in r.node.evidence],
            }
            for r in revisions
        ],
    }


def _reviewer(origin: Origin | None, what: str) -> tuple[str, Origin]:
    """The reviewer's name, and the origin its decision is committed with: its own, without a run.

    A reviewer's decision lands on ``main``, as ``gitmem durable approve``'s does: with
    the caller's run (a served token's ``<principal>/<topic>``) a review-gated memory
    would put it on that run's proposal, where it activates nothing.
    """
    who = origin.principal_id if origin is not None else None
    if origin is None or not who:
        raise MemoryStoreError("forbidden", f"{what} records who decided it: this caller names no principal")
    return who, origin.replace(run_id=None)


def activate(
    binding: DurableBinding, node_id: str, revision: int, origin: Origin | None, principal: str | None = None
) -> dict[str, Any]:
    """Activate candidate ``node_id`` at ``revision`` on ``manual`` evidence naming the reviewer (``origin``'s
    principal) and the time: in the binding's namespace, or ``principal``'s of the same tenant and scope."""
    who, on_main = _reviewer(origin, "an activation")
    namespace = binding.namespace if principal is None else replace(binding.namespace, principal=principal)
    repository = binding.repository
    now = repository.clock()
    uri = f"gitmem-mcp:activate/{who}/{now.isoformat()}"
    digest = "sha256:" + hashlib.sha256(f"{node_id}@{revision} {uri}".encode()).hexdigest()
    result = repository.activate(namespace, node_id, revision, [Evidence(uri, digest, "manual", now)], origin=on_main)
    return {
        "id": node_id,
        "principal": namespace.principal,
        "status": "active",
        "activated_by": who,
        "commit": result.commit,
        "refs": list(result.refs),
    }


def approve(binding: DurableBinding, run: str, origin: Origin | None) -> dict[str, Any]:
    """Approve run ``run``'s proposal and activate the candidates it brought (:func:`approve_candidates`)."""
    from gitmem.durable.approval import approve_candidates

    who, on_main = _reviewer(origin, "an approval")
    outcome = approve_candidates(binding.repository, run, approver=who, origin=on_main)
    return {
        "run": run,
        "approval": outcome.approval,
        "approved_by": who,
        "activated": [ref.rsplit("@", 1)[0] for result in outcome.activations for ref in result.refs],
    }

"""Staging a change set: every transition and graph rule, decided before anything is written.

:func:`stage` runs the operations in order on copies of the nodes they touch
(read through ``lookup`` from one snapshot of the mount), then checks the graph
around every changed node. It returns the nodes to write, or raises; so a
change set with one bad operation writes nothing.

Status transitions (``activate`` is the only way into ``active``)::

    candidate  --activate-->  active          (new manual or verification evidence)
    candidate  --set_status-> conflicted | tombstoned
    active     --set_status-> superseded | conflicted | tombstoned
    conflicted --set_status-> superseded | tombstoned
    superseded --set_status-> tombstoned

Superseded and tombstoned nodes are frozen: no evidence, content or relation
changes. A superseded node must hold a ``superseded_by`` edge and a conflicted
one a ``conflicts_with`` edge; every edge needs its inverse on the target
(``supersedes`` ↔ ``superseded_by``; ``conflicts_with`` and ``related_to`` are
symmetric), the target must exist in the same namespace, and whatever a node
``supersedes`` must be superseded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from gitmem.durable.changes import (
    Activate,
    AddRelation,
    ChangeSet,
    Corroborate,
    Create,
    Operation,
    RemoveRelation,
    Revise,
    SetStatus,
)
from gitmem.durable.node import (
    FROZEN,
    MAX_EVIDENCE,
    MAX_RELATIONS,
    Evidence,
    Node,
    Status,
    bad,
    format_time,
)
from gitmem.errors import MemoryStoreError

#: ``set_status`` moves (``candidate → active`` is ``activate``'s alone).
TRANSITIONS: Final[frozenset[tuple[str, str]]] = frozenset(
    {
        ("candidate", "conflicted"),
        ("candidate", "tombstoned"),
        ("active", "superseded"),
        ("active", "conflicted"),
        ("active", "tombstoned"),
        ("conflicted", "superseded"),
        ("conflicted", "tombstoned"),
        ("superseded", "tombstoned"),
    }
)
SET_STATUS_TARGETS: Final = frozenset({"superseded", "conflicted", "tombstoned"})

Lookup = Callable[[str], Node | None]


@dataclass(frozen=True, slots=True)
class Staged:
    """The outcome of staging: the changed nodes (first-touched order) and what was read."""

    nodes: tuple[Node, ...]
    read: frozenset[str]  # ids looked up in the snapshot (changed or only checked)
    occurred_at: datetime


def refused(node: Node | None, node_id: str, to: str, why: str = "") -> MemoryStoreError:
    source = node.status if node is not None else "absent"
    text = f"node {node_id!r} cannot go from {source} to {to}"
    return MemoryStoreError("invalid_transition", f"{text}: {why}" if why else text)


class _Stage:
    def __init__(self, change: ChangeSet, lookup: Lookup, when: datetime) -> None:
        self.change = change
        self.lookup = lookup
        self.when = when
        self.staged: dict[str, Node] = {}
        self.base: dict[str, Node | None] = {}
        self.changed: dict[str, None] = {}
        self.neighbours: dict[str, None] = {}

    def find(self, node_id: str) -> Node | None:
        if node_id in self.staged:
            return self.staged[node_id]
        if node_id not in self.base:
            self.base[node_id] = self.lookup(node_id)
        return self.base[node_id]

    def for_update(self, node_id: str, expected: int) -> Node:
        node = self.find(node_id)
        if node is None:
            raise MemoryStoreError(
                "node_not_found", f"no node {node_id!r} in namespace {self.change.namespace.label()}"
            )
        if node.revision != expected:
            raise MemoryStoreError(
                "revision_mismatch",
                f"node {node_id!r} is at revision {node.revision}, not the expected {expected}; "
                "read it again and decide anew",
            )
        return node

    def put(self, node: Node) -> None:
        self.staged[node.id] = node
        self.changed[node.id] = None

    def evidence(self, items: Iterable[Evidence], node_id: str, *, required: bool = True) -> tuple[Evidence, ...]:
        timed = tuple(e.at(self.when) for e in items)
        if required and not timed:
            raise bad(f"the operation on node {node_id!r} needs evidence")
        for item in timed:
            assert item.occurred_at is not None
            if item.occurred_at > self.when:
                raise bad(
                    f"evidence {item.uri!r} occurred at {format_time(item.occurred_at)}, "
                    f"after the change set ({format_time(self.when)})"
                )
        return timed

    def add_evidence(self, node: Node, items: tuple[Evidence, ...]) -> tuple[Evidence, ...]:
        uris = [e.uri for e in items]
        known = {e.uri for e in node.evidence}
        if len(set(uris)) != len(uris) or known.intersection(uris):
            raise bad(f"node {node.id!r}: evidence uris must be new and unique (each uri is recorded once)")
        if len(node.evidence) + len(items) > MAX_EVIDENCE:
            raise bad(
                f"node {node.id!r} would hold {len(node.evidence) + len(items)} evidence items; the limit is {MAX_EVIDENCE}"
            )
        return tuple(sorted((*node.evidence, *items)))

    def not_frozen(self, node: Node, what: str) -> None:
        if node.status in FROZEN:
            raise MemoryStoreError(
                "invalid_transition", f"cannot {what} node {node.id!r}: a {node.status} node is frozen"
            )

    def run(self, op: Operation) -> None:
        if isinstance(op, Create):
            self.create(op)
            return
        node = self.for_update(op.node_id, op.expected_revision)
        if isinstance(op, Activate):
            if node.status != "candidate":
                raise refused(node, node.id, "active", "only a candidate can be activated")
            items = self.evidence(op.evidence, node.id)
            if not any(e.authorises for e in items):
                raise refused(
                    node,
                    node.id,
                    "active",
                    "activation needs new manual or verification evidence (confidence and importance never authorise it)",
                )
            evidence = self.add_evidence(node, items)
            self.put(node.next_revision(self.when, "activated", status="active", evidence=evidence))
        elif isinstance(op, Corroborate):
            self.not_frozen(node, "corroborate")
            evidence = self.add_evidence(node, self.evidence(op.evidence, node.id))
            self.put(node.next_revision(self.when, "corroborated", evidence=evidence))
        elif isinstance(op, Revise):
            self.not_frozen(node, "revise")
            evidence = self.add_evidence(node, self.evidence(op.evidence, node.id))
            self.put(
                node.next_revision(
                    self.when,
                    "refined" if op.mode == "refinement" else "corrected",
                    content=op.content,
                    evidence=evidence,
                    confidence=node.confidence if op.confidence is None else op.confidence,
                    importance=node.importance if op.importance is None else op.importance,
                )
            )
        elif isinstance(op, AddRelation):
            self.not_frozen(node, "add a relation to")
            if op.relation.target == node.id:
                raise bad(f"node {node.id!r} cannot relate to itself")
            if op.relation in node.relations:
                raise bad(f"node {node.id!r} already has {op.relation.kind} {op.relation.target!r}")
            if len(node.relations) >= MAX_RELATIONS:
                raise bad(f"node {node.id!r} already has {MAX_RELATIONS} relations, the limit")
            self.neighbours[op.relation.target] = None
            relations = tuple(sorted((*node.relations, op.relation)))
            self.put(node.next_revision(self.when, "relation_changed", relations=relations))
        elif isinstance(op, RemoveRelation):
            self.not_frozen(node, "remove a relation from")
            if op.relation not in node.relations:
                raise bad(f"node {node.id!r} has no {op.relation.kind} relation to {op.relation.target!r}")
            self.neighbours[op.relation.target] = None
            relations = tuple(r for r in node.relations if r != op.relation)
            self.put(node.next_revision(self.when, "relation_changed", relations=relations))
        else:
            self.set_status(node, op)

    def create(self, op: Create) -> None:
        draft = op.node
        if draft.status not in ("candidate", "active"):
            raise refused(None, draft.id, draft.status, "a node starts as a candidate (or active, with evidence)")
        if self.find(draft.id) is not None:
            raise MemoryStoreError(
                "already_exists", f"node {draft.id!r} already exists in namespace {self.change.namespace.label()}"
            )
        created = draft.created_at or self.when
        if created > self.when:
            raise bad(f"node {draft.id!r}: created_at follows the change set's occurred_at")
        items = self.evidence(draft.evidence, draft.id, required=False)
        if len({e.uri for e in items}) != len(items):
            raise bad(f"node {draft.id!r}: evidence uris must be unique")
        if draft.status == "active" and not any(e.authorises for e in items):
            raise refused(
                None,
                draft.id,
                "active",
                "a node created active needs manual or verification evidence (confidence never authorises it)",
            )
        node = Node(
            id=draft.id,
            namespace=self.change.namespace,
            revision=1,
            kind=draft.kind,
            status=draft.status,
            content=draft.content,
            confidence=draft.confidence,
            importance=draft.importance,
            created_at=created,
            updated_at=created,
            revision_kind="created",
            evidence=tuple(sorted(items)),
            relations=draft.relations,
            labels=draft.labels,
        )
        node.validate()
        self.neighbours.update(dict.fromkeys(r.target for r in node.relations))
        self.put(node)

    def set_status(self, node: Node, op: SetStatus) -> None:
        to: Status = op.status
        if to not in SET_STATUS_TARGETS:
            raise refused(node, node.id, to, "set_status moves to superseded, conflicted or tombstoned (use activate)")
        if (node.status, to) not in TRANSITIONS:
            raise refused(node, node.id, to)
        self.put(node.next_revision(self.when, "status_changed", status=to))

    def check_graph(self, node: Node) -> None:
        node.validate()
        for relation in node.relations:
            target = self.find(relation.target)
            if target is None:
                raise MemoryStoreError(
                    "node_not_found",
                    f"node {node.id!r} relates to {relation.target!r}, which is not in namespace "
                    f"{self.change.namespace.label()}",
                )
            if relation.inverse(node.id) not in target.relations:
                raise bad(
                    f"{relation.kind} from {node.id!r} to {target.id!r} needs its counterpart "
                    f"{relation.inverse(node.id).kind} on {target.id!r} in the same change set"
                )
            if relation.kind == "supersedes" and target.status != "superseded":
                raise bad(f"node {node.id!r} supersedes {target.id!r}, which is not superseded")


def stage(change: ChangeSet, lookup: Lookup, now: datetime) -> Staged:
    """Apply ``change`` to the snapshot behind ``lookup`` in memory; raise on the first broken rule.

    ``now`` is the change set's time when it names none.
    """
    when = change.occurred_at or now
    state = _Stage(change, lookup, when)
    for op in change.operations:
        state.run(op)
    for node_id in state.changed:
        state.check_graph(state.staged[node_id])
    for node_id in state.neighbours:
        if node_id not in state.changed:
            neighbour = state.find(node_id)
            if neighbour is not None:
                state.check_graph(neighbour)
    return Staged(
        nodes=tuple(state.staged[i] for i in state.changed),
        read=frozenset(state.base) | frozenset(state.changed),
        occurred_at=when,
    )

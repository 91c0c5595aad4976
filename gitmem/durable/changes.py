"""Change sets: 1 to 128 operations on one namespace, applied all or nothing.

The operations (``create``, ``activate``, ``corroborate``, ``revise``,
``add_relation``, ``remove_relation``, ``set_status``) are plain values; every
one but ``create`` names the node and the ``expected_revision`` it was read at.
A change set carries an idempotency key (unique per namespace): applying the
same key with the same content again answers with the first result, with other
content fails ``idempotency_conflict``. What "the same content" means is
:meth:`ChangeSet.digest`: the SHA-256 of the change set's canonical JSON, in
which times the caller left out stay out (they default to the moment of the
first application), so replaying the same JSON file is a replay.

The JSON form (``gitmem durable apply`` reads it) mirrors the values::

    {"namespace": {"tenant": "acme", "principal": "alice", "scope": "repo"},
     "idempotency_key": "turn-42", "occurred_at": "2026-12-01T10:00:00Z",
     "operations": [
       {"op": "create", "node": {"id": "pref-tabs", "kind": "semantic", "status": "candidate",
                                 "content": "Indent with tabs.", "evidence": [...]}},
       {"op": "activate", "node_id": "pref-tabs", "expected_revision": 1,
        "evidence": [{"uri": "review://1", "digest": "sha256:..", "kind": "manual"}]}]}
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal, get_args

from gitmem.durable.namespace import Namespace, check_identifier
from gitmem.durable.node import (
    MAX_CONTENT_BYTES,
    NODE_KINDS,
    STATUSES,
    Evidence,
    NodeKind,
    Relation,
    Status,
    bad,
    bounded_text,
    check_labels,
    choice,
    fields,
    format_time,
    parse_time,
    unit,
)

MAX_OPERATIONS: Final = 128
RevisionMode = Literal["refinement", "correction"]
REVISION_MODES: Final[tuple[RevisionMode, ...]] = get_args(RevisionMode)


@dataclass(frozen=True, slots=True)
class NodeDraft:
    """What ``create`` needs: revision 1 of a node (``candidate``, or ``active`` with evidence)."""

    id: str
    kind: NodeKind
    content: str
    status: Status = "candidate"
    confidence: float = 0.5
    importance: float = 0.5
    evidence: tuple[Evidence, ...] = ()
    relations: tuple[Relation, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    created_at: datetime | None = None

    def __post_init__(self) -> None:
        check_identifier("node.id", self.id)
        choice("node.kind", self.kind, NODE_KINDS)
        choice("node.status", self.status, STATUSES)
        bounded_text("node.content", self.content, MAX_CONTENT_BYTES)
        object.__setattr__(self, "confidence", unit("node.confidence", self.confidence))
        object.__setattr__(self, "importance", unit("node.importance", self.importance))
        object.__setattr__(self, "evidence", tuple(sorted(self.evidence)))
        object.__setattr__(self, "relations", tuple(sorted(self.relations)))
        if isinstance(self.labels, dict):
            object.__setattr__(self, "labels", check_labels(self.labels))
        if self.created_at is not None:
            object.__setattr__(self, "created_at", parse_time("node.created_at", self.created_at))

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "status": self.status,
            "content": self.content,
            "confidence": self.confidence,
            "importance": self.importance,
            "evidence": [e.as_dict() for e in self.evidence],
            "relations": [r.as_dict() for r in self.relations],
            "labels": dict(self.labels),
        }
        if self.created_at is not None:
            out["created_at"] = format_time(self.created_at)
        return out


@dataclass(frozen=True, slots=True)
class Create:
    node: NodeDraft
    op: Literal["create"] = "create"

    @property
    def node_id(self) -> str:
        return self.node.id


@dataclass(frozen=True, slots=True)
class Activate:
    """Candidate → active, on new ``manual`` or ``verification`` evidence."""

    node_id: str
    expected_revision: int
    evidence: tuple[Evidence, ...]
    op: Literal["activate"] = "activate"


@dataclass(frozen=True, slots=True)
class Corroborate:
    node_id: str
    expected_revision: int
    evidence: tuple[Evidence, ...]
    op: Literal["corroborate"] = "corroborate"


@dataclass(frozen=True, slots=True)
class Revise:
    node_id: str
    expected_revision: int
    content: str
    evidence: tuple[Evidence, ...]
    mode: RevisionMode = "refinement"
    confidence: float | None = None
    importance: float | None = None
    op: Literal["revise"] = "revise"


@dataclass(frozen=True, slots=True)
class AddRelation:
    node_id: str
    expected_revision: int
    relation: Relation
    op: Literal["add_relation"] = "add_relation"


@dataclass(frozen=True, slots=True)
class RemoveRelation:
    node_id: str
    expected_revision: int
    relation: Relation
    op: Literal["remove_relation"] = "remove_relation"


@dataclass(frozen=True, slots=True)
class SetStatus:
    """Candidate/active/conflicted/superseded → a later state (see :mod:`gitmem.durable.rules`)."""

    node_id: str
    expected_revision: int
    status: Status
    op: Literal["set_status"] = "set_status"


Operation = Create | Activate | Corroborate | Revise | AddRelation | RemoveRelation | SetStatus
OPERATION_NAMES: Final = (
    "create",
    "activate",
    "corroborate",
    "revise",
    "add_relation",
    "remove_relation",
    "set_status",
)


def operation_dict(op: Operation) -> dict[str, Any]:
    """The canonical JSON form of one operation."""
    if isinstance(op, Create):
        return {"op": op.op, "node": op.node.as_dict()}
    out: dict[str, Any] = {"op": op.op, "node_id": op.node_id, "expected_revision": op.expected_revision}
    if isinstance(op, Activate | Corroborate):
        out["evidence"] = [e.as_dict() for e in op.evidence]
    elif isinstance(op, Revise):
        out.update(content=op.content, mode=op.mode, evidence=[e.as_dict() for e in op.evidence])
        if op.confidence is not None:
            out["confidence"] = op.confidence
        if op.importance is not None:
            out["importance"] = op.importance
    elif isinstance(op, AddRelation | RemoveRelation):
        out["relation"] = op.relation.as_dict()
    else:
        out["status"] = op.status
    return out


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """1-128 operations on one namespace under one idempotency key (see the module docstring)."""

    namespace: Namespace
    idempotency_key: str
    operations: tuple[Operation, ...]
    occurred_at: datetime | None = None
    _digest: list[str] = field(default_factory=list, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.namespace, Namespace):
            raise bad("a change set needs a Namespace")
        check_identifier("idempotency_key", self.idempotency_key)
        object.__setattr__(self, "operations", tuple(self.operations))
        if not self.operations:
            raise bad("a change set needs at least one operation")
        if len(self.operations) > MAX_OPERATIONS:
            raise bad(f"a change set has {len(self.operations)} operations; the limit is {MAX_OPERATIONS}")
        for op in self.operations:
            if not isinstance(op, Create | Activate | Corroborate | Revise | AddRelation | RemoveRelation | SetStatus):
                raise bad(f"not an operation: {op!r}")
        if self.occurred_at is not None:
            object.__setattr__(self, "occurred_at", parse_time("occurred_at", self.occurred_at))

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "namespace": self.namespace.as_dict(),
            "idempotency_key": self.idempotency_key,
            "operations": [operation_dict(op) for op in self.operations],
        }
        if self.occurred_at is not None:
            out["occurred_at"] = format_time(self.occurred_at)
        return out

    def digest(self) -> str:
        """SHA-256 of the canonical JSON: equal for a replay, different for any other content."""
        if not self._digest:
            canonical = json.dumps(self.as_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
            self._digest.append("sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest())
        return self._digest[0]


# -- reading the JSON form --


def _revision(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise bad(f"{what}.expected_revision must be a whole number from 1, got {value!r}")
    return value


def _evidence_list(value: object, what: str) -> tuple[Evidence, ...]:
    if not isinstance(value, list):
        raise bad(f"{what}.evidence must be a list")
    return tuple(Evidence.from_dict(item) for item in value)


def parse_node(data: object) -> NodeDraft:
    d = fields(
        data,
        "create.node",
        {"id", "kind", "content"},
        {"status", "confidence", "importance", "evidence", "relations", "labels", "created_at"},
    )
    relations = d.get("relations", [])
    if not isinstance(relations, list):
        raise bad("create.node.relations must be a list")
    return NodeDraft(
        id=d["id"],
        kind=d["kind"],
        content=d["content"],
        status=d.get("status", "candidate"),
        confidence=d.get("confidence", 0.5),
        importance=d.get("importance", 0.5),
        evidence=_evidence_list(d.get("evidence", []), "create.node"),
        relations=tuple(Relation.from_dict(r) for r in relations),
        labels=check_labels(d.get("labels", {})),
        created_at=d.get("created_at"),
    )


def parse_operation(data: object, index: int) -> Operation:
    what = f"operations[{index}]"
    if not isinstance(data, dict):
        raise bad(f"{what} must be a JSON object")
    name = data.get("op")
    if name not in OPERATION_NAMES:
        raise bad(f"{what}.op must be one of {', '.join(OPERATION_NAMES)}, got {name!r}")
    base = {"op", "node_id", "expected_revision"}
    if name == "create":
        d = fields(data, what, {"op", "node"}, set())
        return Create(parse_node(d["node"]))
    if name in ("activate", "corroborate"):
        d = fields(data, what, {*base, "evidence"}, set())
        cls = Activate if name == "activate" else Corroborate
        return cls(
            check_identifier(f"{what}.node_id", d["node_id"]),
            _revision(d["expected_revision"], what),
            _evidence_list(d["evidence"], what),
        )
    if name == "revise":
        d = fields(data, what, {*base, "content", "evidence"}, {"mode", "confidence", "importance"})
        confidence, importance = d.get("confidence"), d.get("importance")
        return Revise(
            check_identifier(f"{what}.node_id", d["node_id"]),
            _revision(d["expected_revision"], what),
            bounded_text(f"{what}.content", d["content"], MAX_CONTENT_BYTES),
            _evidence_list(d["evidence"], what),
            mode=choice(f"{what}.mode", d.get("mode", "refinement"), REVISION_MODES),  # type: ignore[arg-type]
            confidence=None if confidence is None else unit(f"{what}.confidence", confidence),
            importance=None if importance is None else unit(f"{what}.importance", importance),
        )
    if name in ("add_relation", "remove_relation"):
        d = fields(data, what, {*base, "relation"}, set())
        rel_cls = AddRelation if name == "add_relation" else RemoveRelation
        return rel_cls(
            check_identifier(f"{what}.node_id", d["node_id"]),
            _revision(d["expected_revision"], what),
            Relation.from_dict(d["relation"]),
        )
    d = fields(data, what, {*base, "status"}, set())
    return SetStatus(
        check_identifier(f"{what}.node_id", d["node_id"]),
        _revision(d["expected_revision"], what),
        choice(f"{what}.status", d["status"], STATUSES),  # type: ignore[arg-type]
    )


def parse_change_set(data: object) -> ChangeSet:
    """A :class:`ChangeSet` from its JSON form; ``invalid_change_set`` saying what is wrong."""
    d = fields(data, "change set", {"namespace", "idempotency_key", "operations"}, {"occurred_at"})
    ops = d["operations"]
    if not isinstance(ops, list):
        raise bad("change set operations must be a list")
    if len(ops) > MAX_OPERATIONS:
        raise bad(f"a change set has {len(ops)} operations; the limit is {MAX_OPERATIONS}")
    return ChangeSet(
        namespace=Namespace.from_dict(d["namespace"]),
        idempotency_key=d["idempotency_key"],
        operations=tuple(parse_operation(op, i) for i, op in enumerate(ops)),
        occurred_at=d.get("occurred_at"),
    )

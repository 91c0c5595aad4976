"""Durable nodes: the values a change set creates and revises, and their own rules.

A node is one remembered fact, preference or procedure in one namespace. It has
a ``revision`` that starts at 1 and grows by one with every operation applied to
it; the node file in git always holds the current revision, and the earlier ones
are that file's git history.

Only an ``active`` node ever reaches a model's context. A node becomes active by
an explicit decision backed by ``manual`` or ``verification`` evidence (see
:mod:`gitmem.durable.changes`); a model's confidence or importance never does it.

Everything here is pure: values, limits and the checks one node can make on its
own. Rules that need other nodes (symmetric relations) live in
:mod:`gitmem.durable.changes`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal, get_args

from gitmem.durable.namespace import MAX_IDENTIFIER_BYTES, Namespace, check_identifier
from gitmem.errors import MemoryStoreError

NodeKind = Literal["episodic", "semantic", "procedural"]
Status = Literal["candidate", "active", "superseded", "conflicted", "tombstoned"]
EvidenceKind = Literal["user_statement", "tool_result", "artifact", "session_turn", "verification", "manual"]
RelationKind = Literal["supersedes", "superseded_by", "conflicts_with", "related_to"]
#: Why the current revision exists (the operation that made it).
RevisionKind = Literal[
    "created", "activated", "corroborated", "refined", "corrected", "relation_changed", "status_changed"
]

NODE_KINDS: Final[tuple[NodeKind, ...]] = get_args(NodeKind)
STATUSES: Final[tuple[Status, ...]] = get_args(Status)
EVIDENCE_KINDS: Final[tuple[EvidenceKind, ...]] = get_args(EvidenceKind)
RELATION_KINDS: Final[tuple[RelationKind, ...]] = get_args(RelationKind)
REVISION_KINDS: Final[tuple[RevisionKind, ...]] = get_args(RevisionKind)

#: Evidence that can authorise activation: a person's decision or a check that ran.
AUTHORISING_EVIDENCE: Final[frozenset[str]] = frozenset({"manual", "verification"})
#: Nodes in these states never change again (tombstoned ones can still be read).
FROZEN: Final[frozenset[str]] = frozenset({"superseded", "tombstoned"})

MAX_CONTENT_BYTES: Final = 64 * 1024
MAX_EVIDENCE: Final = 64
MAX_RELATIONS: Final = 256
MAX_LABELS: Final = 64
MAX_URI_BYTES: Final = 2048
MAX_DIGEST_BYTES: Final = 256
MAX_LABEL_KEY_BYTES: Final = 128
MAX_LABEL_VALUE_BYTES: Final = 1024

INVERSE: Final[dict[str, RelationKind]] = {
    "supersedes": "superseded_by",
    "superseded_by": "supersedes",
    "conflicts_with": "conflicts_with",
    "related_to": "related_to",
}


def bad(message: str) -> MemoryStoreError:
    return MemoryStoreError("invalid_change_set", message)


def fields(data: object, what: str, required: AbstractSet[str], optional: AbstractSet[str] = frozenset()) -> dict[str, Any]:
    """``data`` when it is a JSON object with every ``required`` field and no field outside ``optional``."""
    if not isinstance(data, dict):
        raise bad(f"{what} must be a JSON object")
    missing = sorted(required - set(data))
    if missing:
        raise bad(f"{what} is missing {', '.join(missing)}")
    unknown = sorted(set(data) - required - optional)
    if unknown:
        raise bad(f"{what} has unknown fields: {', '.join(map(str, unknown))}")
    return data


def choice(field_name: str, value: object, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise bad(f"{field_name} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def unit(field_name: str, value: object) -> float:
    """A finite number between 0 and 1 (bools are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad(f"{field_name} must be a number between 0 and 1, got {value!r}")
    if not 0.0 <= value <= 1.0:  # compared as it is (NaN fails): float() of an int past 1e308 raises OverflowError
        shown = value if isinstance(value, float) or -(10**9) < value < 10**9 else "a larger integer"
        raise bad(f"{field_name} must be a finite number between 0 and 1, got {shown!r}")
    return float(value)


def bounded_text(field_name: str, value: object, limit: int, *, required: bool = True) -> str:
    """Text of at most ``limit`` UTF-8 bytes; non-blank when ``required``."""
    if not isinstance(value, str):
        raise bad(f"{field_name} must be text, got {type(value).__name__}")
    if required and not value.strip():
        raise bad(f"{field_name} must not be blank")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise bad(f"{field_name} is not valid UTF-8 (it holds a lone surrogate)") from None
    if size > limit:
        raise bad(f"{field_name} is {size} bytes; the limit is {limit}")
    if "\x00" in value:
        raise bad(f"{field_name} holds a NUL character")
    return value


def one_line(field_name: str, value: object, limit: int, *, required: bool = True) -> str:
    text = bounded_text(field_name, value, limit, required=required)
    if any(c in text for c in "\r\n\u2028\u2029\x0b\x0c\x1c\x1d\x1e\x85"):
        raise bad(f"{field_name} must be one line")
    return text


def parse_time(field_name: str, value: object) -> datetime:
    """An ISO-8601 time with a zone (``2026-12-01T10:00:00Z``), as UTC."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise bad(f"{field_name} is not an ISO-8601 time: {value!r}") from None
    else:
        raise bad(f"{field_name} must be an ISO-8601 time, got {type(value).__name__}")
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise bad(f"{field_name} must name its time zone (e.g. end with Z): {value!r}")
    from gitmem.recall.values import utc_time

    try:
        return utc_time(moment)
    except ValueError as exc:
        raise bad(f"{field_name}: {exc}") from None


def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def content_digest(content: str) -> str:
    """The digest that pins a node's content (recall re-checks it before admitting a hit)."""
    return "sha256:" + hashlib.sha256(content.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True, order=True)
class Evidence:
    """A reference to immutable evidence the host keeps (a turn, a tool result, a review)."""

    uri: str
    digest: str
    kind: EvidenceKind
    #: ``None`` only in an operation: "when the change set happened". Stored
    #: evidence always carries its time.
    occurred_at: datetime | None = None

    def __post_init__(self) -> None:
        one_line("evidence.uri", self.uri, MAX_URI_BYTES)
        one_line("evidence.digest", self.digest, MAX_DIGEST_BYTES)
        choice("evidence.kind", self.kind, EVIDENCE_KINDS)
        if self.occurred_at is not None:
            object.__setattr__(self, "occurred_at", parse_time("evidence.occurred_at", self.occurred_at))

    @property
    def authorises(self) -> bool:
        """Whether this evidence can back an activation (a person's or a check's decision)."""
        return self.kind in AUTHORISING_EVIDENCE

    def at(self, when: datetime) -> Evidence:
        """This evidence with its time filled in (``when`` if it had none)."""
        return self if self.occurred_at is not None else replace(self, occurred_at=when)

    def as_dict(self) -> dict[str, str]:
        out = {"uri": self.uri, "digest": self.digest, "kind": self.kind}
        if self.occurred_at is not None:
            out["occurred_at"] = format_time(self.occurred_at)
        return out

    @classmethod
    def from_dict(cls, data: object) -> Evidence:
        data = fields(data, "evidence", set(), {"uri", "digest", "kind", "occurred_at"})
        return cls(data.get("uri"), data.get("digest"), data.get("kind"), data.get("occurred_at"))  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True, order=True)
class Relation:
    """A typed edge to another node of the same namespace."""

    kind: RelationKind
    target: str

    def __post_init__(self) -> None:
        choice("relation.kind", self.kind, RELATION_KINDS)
        check_identifier("relation.target", self.target)

    def inverse(self, source: str) -> Relation:
        """The edge the target must hold back to ``source``."""
        return Relation(INVERSE[self.kind], source)

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "target": self.target}

    @classmethod
    def from_dict(cls, data: object) -> Relation:
        if not isinstance(data, dict) or set(data) != {"kind", "target"}:
            raise bad("relation must be an object with exactly kind and target")
        return cls(data["kind"], data["target"])


def check_labels(labels: object) -> tuple[tuple[str, str], ...]:
    """Labels as sorted ``(key, value)`` pairs: at most 64, keys non-blank, one line each."""
    if not isinstance(labels, dict):
        raise bad("labels must be an object of text keys and text values")
    if len(labels) > MAX_LABELS:
        raise bad(f"a node has {len(labels)} labels; the limit is {MAX_LABELS}")
    pairs = []
    for key, value in labels.items():
        one_line("label key", key, MAX_LABEL_KEY_BYTES)
        one_line(f"label {key!r}", value, MAX_LABEL_VALUE_BYTES, required=False)
        pairs.append((key, value))
    return tuple(sorted(pairs))


@dataclass(frozen=True, slots=True)
class Node:
    """One durable node at its current revision (see the module docstring)."""

    id: str
    namespace: Namespace
    revision: int
    kind: NodeKind
    status: Status
    content: str
    confidence: float
    importance: float
    created_at: datetime
    updated_at: datetime
    revision_kind: RevisionKind = "created"
    evidence: tuple[Evidence, ...] = ()
    relations: tuple[Relation, ...] = ()
    labels: tuple[tuple[str, str], ...] = field(default=())

    @property
    def digest(self) -> str:
        return content_digest(self.content)

    @property
    def ref(self) -> str:
        """``id@revision``: how commit trailers and logs name this exact revision."""
        return f"{self.id}@{self.revision}"

    def as_dict(self) -> dict[str, object]:
        """Every field as JSON values, with the content's digest: what the CLI prints and a node file holds."""
        return {
            "id": self.id,
            "namespace": self.namespace.as_dict(),
            "revision": self.revision,
            "kind": self.kind,
            "status": self.status,
            "content": self.content,
            "content_digest": self.digest,
            "confidence": self.confidence,
            "importance": self.importance,
            "created_at": format_time(self.created_at),
            "updated_at": format_time(self.updated_at),
            "revision_kind": self.revision_kind,
            "evidence": [e.as_dict() for e in self.evidence],
            "relations": [r.as_dict() for r in self.relations],
            "labels": dict(self.labels),
        }

    def has_relation(self, kind: str) -> bool:
        return any(r.kind == kind for r in self.relations)

    def related(self, kind: str) -> tuple[str, ...]:
        return tuple(r.target for r in self.relations if r.kind == kind)

    def next_revision(self, when: datetime, why: RevisionKind, **changes: object) -> Node:
        """The node one revision later, made at ``when`` for reason ``why``."""
        if when < self.updated_at:
            raise bad(
                f"the change set's occurred_at {format_time(when)} precedes node {self.id!r}'s "
                f"last update {format_time(self.updated_at)}"
            )
        return replace(self, revision=self.revision + 1, updated_at=when, revision_kind=why, **changes)  # type: ignore[arg-type]

    def validate(self) -> Node:
        """Check everything one node can check alone; returns itself."""
        check_identifier("node.id", self.id)
        if isinstance(self.revision, bool) or not isinstance(self.revision, int) or self.revision < 1:
            raise bad(f"node {self.id!r}: revision must be a whole number from 1, got {self.revision!r}")
        choice("node.kind", self.kind, NODE_KINDS)
        choice("node.status", self.status, STATUSES)
        choice("node.revision_kind", self.revision_kind, REVISION_KINDS)
        bounded_text("node.content", self.content, MAX_CONTENT_BYTES)
        unit("node.confidence", self.confidence)
        unit("node.importance", self.importance)
        if self.created_at > self.updated_at:
            raise bad(f"node {self.id!r}: created_at follows updated_at")
        if len(self.evidence) > MAX_EVIDENCE:
            raise bad(f"node {self.id!r} has {len(self.evidence)} evidence items; the limit is {MAX_EVIDENCE}")
        if any(e.occurred_at is None for e in self.evidence):
            raise bad(f"node {self.id!r}: stored evidence needs its occurred_at")
        if len({e.uri for e in self.evidence}) != len(self.evidence):
            raise bad(f"node {self.id!r} lists the same evidence uri twice")
        if self.status == "active" and not self.evidence:
            raise bad(f"node {self.id!r}: an active node needs evidence")
        if len(self.relations) > MAX_RELATIONS:
            raise bad(f"node {self.id!r} has {len(self.relations)} relations; the limit is {MAX_RELATIONS}")
        if len(set(self.relations)) != len(self.relations):
            raise bad(f"node {self.id!r} lists the same relation twice")
        for relation in self.relations:
            if relation.target == self.id:
                raise bad(f"node {self.id!r} cannot relate to itself")
        if len(self.labels) > MAX_LABELS:
            raise bad(f"node {self.id!r} has {len(self.labels)} labels; the limit is {MAX_LABELS}")
        if self.status == "superseded" and not self.has_relation("superseded_by"):
            raise bad(f"superseded node {self.id!r} needs a superseded_by relation to the node that replaced it")
        if self.status == "conflicted" and not self.has_relation("conflicts_with"):
            raise bad(f"conflicted node {self.id!r} needs a conflicts_with relation to the node it contradicts")
        return self


__all__ = [
    "AUTHORISING_EVIDENCE",
    "EVIDENCE_KINDS",
    "FROZEN",
    "INVERSE",
    "MAX_CONTENT_BYTES",
    "MAX_EVIDENCE",
    "MAX_IDENTIFIER_BYTES",
    "MAX_LABELS",
    "MAX_RELATIONS",
    "NODE_KINDS",
    "RELATION_KINDS",
    "STATUSES",
    "Evidence",
    "EvidenceKind",
    "Node",
    "NodeKind",
    "Relation",
    "RelationKind",
    "RevisionKind",
    "Status",
    "content_digest",
    "format_time",
    "parse_time",
]

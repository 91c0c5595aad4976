"""Durable memory as agent tools: recall active nodes, propose candidates.

Framework-neutral, like :mod:`gitmem.tools`: each tool has a name, a
description and a JSON Schema for its arguments, and :meth:`DurableTools.call`
takes a JSON object and returns one (``{"error", "message"}`` when refused). The
MCP server offers them; any other harness can too.

An agent gets exactly two powers here, and neither can activate anything:

- ``durable_recall``: the active nodes of its namespace that match a query;
- ``durable_propose``: new **candidate** nodes, checked like extraction output
  (semantic or procedural, a matching source, workspace or user scope, 20-1200
  characters of content, a 12-320 character reason saying why it matters later,
  at most 8 tags, importance >= 0.70, confidence >= 0.75; secrets are refused
  by the store). A person activates them later (``gitmem durable activate``, or
  by approving the run's proposal).

The namespace is fixed when the tools are built (the host's choice, as A3S
binds a session to one namespace), so an agent cannot read or write another one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from gitmem.durable.binding import DurableBinding, candidate_id
from gitmem.durable.recall import RecallPolicy
from gitmem.errors import MemoryStoreError
from gitmem.model import Origin
from gitmem.session.binding import ExtractedItem

SOURCES: Final[dict[str, frozenset[str]]] = {
    "semantic": frozenset({"project_fact", "preference", "decision"}),
    "procedural": frozenset({"workflow", "failure"}),
}
SCOPES: Final = frozenset({"workspace", "user"})
MAX_PROPOSALS: Final = 8


@dataclass(frozen=True, slots=True)
class DurableTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool


_ITEM_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "content": {"type": "string", "minLength": 20, "maxLength": 1200},
        "memory_type": {"enum": ["semantic", "procedural"]},
        "source": {"enum": sorted(SOURCES["semantic"] | SOURCES["procedural"])},
        "scope": {"enum": sorted(SCOPES)},
        "reason": {"type": "string", "minLength": 12, "maxLength": 320},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
        "importance": {"type": "number", "minimum": 0.7, "maximum": 1.0},
        "confidence": {"type": "number", "minimum": 0.75, "maximum": 1.0},
    },
    "required": ["content", "memory_type", "source", "scope", "reason", "importance", "confidence"],
    "additionalProperties": False,
}

TOOLS: Final = (
    DurableTool(
        "durable_recall",
        "Recall the durable facts, preferences and procedures that were reviewed and activated for this "
        "workspace and match a query. Candidates and retired memories never appear.",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 5},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        True,
    ),
    DurableTool(
        "durable_propose",
        "Propose up to 8 durable memories (facts, preferences, decisions, workflows, failure lessons) that would "
        "change a future answer or action. They are stored as candidates for a person to review; nothing you "
        "propose is used until it is activated.",
        {
            "type": "object",
            "properties": {"items": {"type": "array", "items": _ITEM_SCHEMA, "minItems": 1, "maxItems": MAX_PROPOSALS}},
            "required": ["items"],
            "additionalProperties": False,
        },
        False,
    ),
)


def _refuse(message: str) -> MemoryStoreError:
    return MemoryStoreError("invalid_change_set", message)


def _number(value: object, what: str, floor: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not floor <= float(value) <= 1.0:
        raise _refuse(f"{what} must be a number from {floor} to 1")
    return float(value)


def check_proposal(raw: object, index: int) -> ExtractedItem:
    """One proposed item, checked like extraction output (see the module docstring)."""
    where = f"items[{index}]"
    if not isinstance(raw, Mapping):
        raise _refuse(f"{where} must be an object")
    unknown = sorted(set(raw) - set(_ITEM_SCHEMA["properties"]))
    if unknown:
        raise _refuse(f"{where} has unknown fields: {', '.join(map(str, unknown))}")
    content, reason = raw.get("content"), raw.get("reason")
    if not isinstance(content, str) or not 20 <= len(content.strip()) <= 1200:
        raise _refuse(f"{where}.content must be 20-1200 characters")
    if not isinstance(reason, str) or not 12 <= len(reason.strip()) <= 320:
        raise _refuse(f"{where}.reason must say in 12-320 characters why this matters later")
    kind = raw.get("memory_type")
    if kind not in SOURCES:
        raise _refuse(f"{where}.memory_type must be semantic or procedural")
    source = raw.get("source")
    if source not in SOURCES[kind]:
        raise _refuse(f"{where}.source must be one of {', '.join(sorted(SOURCES[kind]))} for {kind} memories")
    scope = raw.get("scope")
    if scope not in SCOPES:
        raise _refuse(f"{where}.scope must be workspace or user")
    tags = raw.get("tags", [])
    if not isinstance(tags, list) or len(tags) > 8 or not all(isinstance(t, str) and t.strip() for t in tags):
        raise _refuse(f"{where}.tags must be at most 8 non-empty strings")
    return ExtractedItem(
        content=content.strip(),
        memory_type=kind,
        source=source,
        scope=scope,
        reason=reason.strip(),
        tags=tuple(t.strip() for t in tags),
        importance=_number(raw.get("importance"), f"{where}.importance", 0.7),
        confidence=_number(raw.get("confidence"), f"{where}.confidence", 0.75),
    )


class DurableTools:
    """The two durable tools over one bound namespace."""

    def __init__(self, binding: DurableBinding) -> None:
        self.binding = binding

    @property
    def definitions(self) -> tuple[DurableTool, ...]:
        return TOOLS

    def handles(self, name: str) -> bool:
        return any(t.name == name for t in TOOLS)

    def call(self, name: str, arguments: Mapping[str, Any], *, origin: Origin | None = None) -> dict[str, Any]:
        """Run tool ``name``; a refusal is returned as ``{"error": code, "message": ...}``."""
        try:
            if name == "durable_recall":
                return self._recall(arguments)
            if name == "durable_propose":
                return self._propose(arguments, origin)
            raise MemoryStoreError("invalid_query", f"no durable tool named {name!r}")
        except MemoryStoreError as exc:
            return {"error": exc.code, "message": exc.message}

    def _recall(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(arguments) - {"query", "limit"})
        if unknown:
            raise MemoryStoreError("invalid_query", f"unknown arguments: {', '.join(unknown)}")
        limit = arguments.get("limit", 5)
        base = self.binding.policy
        policy = RecallPolicy(limit, base.min_score, base.related_lookups, base.semantic)
        answer = self.binding.repository.recall(self.binding.namespace, arguments.get("query"), policy)  # type: ignore[arg-type]
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

    def _propose(self, arguments: Mapping[str, Any], origin: Origin | None) -> dict[str, Any]:
        items = arguments.get("items")
        if set(arguments) != {"items"} or not isinstance(items, list) or not 1 <= len(items) <= MAX_PROPOSALS:
            raise _refuse(f"pass items: a list of 1 to {MAX_PROPOSALS} proposed memories")
        checked = [check_proposal(raw, i) for i, raw in enumerate(items)]
        result = self.binding.propose(checked, origin=origin)
        ids = list(dict.fromkeys(candidate_id(self.binding.namespace, item.content) for item in checked))
        new = [] if result is None else [ref.rsplit("@", 1)[0] for ref in result.refs]
        return {
            "candidates": ids,
            "new": new,
            "status": "candidate",
            "commit": None if result is None else result.commit,
        }

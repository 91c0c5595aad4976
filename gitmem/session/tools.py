"""Session memory as agent tools, framework-neutral: definitions with JSON Schemas and one ``call``.

Adapters (the MCP server) list :func:`tool_definitions` and hand each call to
:meth:`SessionTools.call`, which returns a JSON-ready dict: the result, or
``{"error", "message"}`` for a refused call (bad arguments included), so a model
sees why and can try again. Prune is offered as a dry run unless the adapter
allows destructive tools.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from gitmem.errors import MemoryStoreError
from gitmem.model import Origin
from gitmem.session.items import MEMORY_TYPES, MemoryItem
from gitmem.session.memory import SessionMemory

PREFIX: Final = "memory_session_"
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SessionToolDefinition:
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool


def _schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


_TAGS = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 64}, "maxItems": 64}
_N = {"type": "integer", "minimum": 1, "maximum": 100, "default": 10}

DEFINITIONS: Final[tuple[SessionToolDefinition, ...]] = (
    SessionToolDefinition(
        PREFIX + "remember",
        "Remember a reusable fact, preference, decision or lesson for later sessions. Exact duplicates "
        "(same text ignoring case and spacing) merge into the existing memory, whose id is returned. "
        "Never store credentials.",
        _schema(
            {
                "content": {"type": "string", "minLength": 1, "maxLength": 16000},
                "importance": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5},
                "tags": _TAGS,
                "memory_type": {"type": "string", "enum": list(MEMORY_TYPES), "default": "episodic"},
            },
            ("content",),
        ),
        read_only=False,
    ),
    SessionToolDefinition(
        PREFIX + "recall",
        "Recall the memories most similar to a query (superseded ones are left out; conflicting "
        "memories are listed with each other). Use them as supporting context, not as proof.",
        _schema({"query": {"type": "string", "minLength": 1}, "k": {**_N, "default": 5}}, ("query",)),
        read_only=True,
    ),
    SessionToolDefinition(
        PREFIX + "recent",
        "The newest memories, newest first.",
        _schema({"n": _N}),
        read_only=True,
    ),
    SessionToolDefinition(
        PREFIX + "tags",
        "Memories carrying any of the given tags, newest first; with no tags, every tag and its count.",
        _schema({"tags": _TAGS, "n": _N}),
        read_only=True,
    ),
    SessionToolDefinition(
        PREFIX + "prune",
        "List (dry_run, the default) or remove stale, low-importance, unprotected memories in one commit.",
        _schema(
            {
                "max_age_days": {"type": "number", "minimum": 0, "default": 90},
                "min_importance": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5},
                "max_items": {"type": "integer", "minimum": 0},
                "dry_run": {"type": "boolean", "default": True},
            }
        ),
        read_only=False,
    ),
)


def tool_definitions() -> tuple[SessionToolDefinition, ...]:
    return DEFINITIONS


def item_payload(item: MemoryItem) -> dict[str, Any]:
    return {
        "id": item.id,
        "content": item.content,
        "timestamp": datetime.fromtimestamp(item.timestamp, UTC).isoformat(),
        "importance": item.importance,
        "tags": list(item.tags),
        "memory_type": item.memory_type,
        "access_count": item.access_count,
        "conflicts_with": list(item.conflicts_with),
        "superseded": item.superseded,
    }


def _arg(args: Mapping[str, Any], key: str, kind: type | tuple[type, ...], default: Any) -> Any:
    value = args.get(key, default)
    if value is default:
        return value
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise MemoryStoreError("invalid_query", f"{key} has the wrong type")
    if not isinstance(value, kind):
        raise MemoryStoreError("invalid_query", f"{key} has the wrong type: {type(value).__name__}")
    return value


class SessionTools:
    """The tools over one :class:`SessionMemory`; ``allow_prune`` lets ``dry_run: false`` through."""

    def __init__(self, memory: SessionMemory, *, allow_prune: bool = False) -> None:
        self.memory = memory
        self.allow_prune = allow_prune
        self._handlers: dict[str, Callable[[Mapping[str, Any], Origin | None], dict[str, Any]]] = {
            PREFIX + "remember": self._remember,
            PREFIX + "recall": self._recall,
            PREFIX + "recent": self._recent,
            PREFIX + "tags": self._tags,
            PREFIX + "prune": self._prune,
        }

    def handles(self, name: str) -> bool:
        return name in self._handlers

    def call(self, name: str, arguments: Mapping[str, Any], *, origin: Origin | None = None) -> dict[str, Any]:
        handler = self._handlers.get(name)
        if handler is None:
            return {"error": "invalid_query", "message": f"no session memory tool {name!r}"}
        if not isinstance(arguments, Mapping):
            return {"error": "invalid_query", "message": "arguments must be an object"}
        unknown = set(arguments) - set(next(d for d in DEFINITIONS if d.name == name).input_schema["properties"])
        if unknown:
            return {"error": "invalid_query", "message": f"unknown arguments: {', '.join(sorted(unknown))}"}
        try:
            return handler(arguments, origin)
        except MemoryStoreError as exc:
            return {"error": exc.code, "message": exc.message}
        except (ValueError, TypeError, RecursionError, OverflowError) as exc:
            # The core refuses bad input with a code; anything it missed is still the caller's
            # input, answered as a refusal (and logged with its trace) rather than raised.
            _log.debug("session tool %s refused input the core did not check", name, exc_info=True)
            return {"error": "invalid_query", "message": f"arguments refused: {type(exc).__name__}: {exc}"[:500]}
        except OSError as exc:
            _log.debug("session tool %s failed", name, exc_info=True)
            return {"error": "unavailable", "message": f"the session memory could not be read or written: {exc}"[:500]}

    def _remember(self, args: Mapping[str, Any], origin: Origin | None) -> dict[str, Any]:
        item = self.memory.remember(
            args.get("content"),  # type: ignore[arg-type]  # checked by make_item, with a clear error
            importance=_arg(args, "importance", (int, float), 0.5),
            tags=_arg(args, "tags", list, []),
            memory_type=_arg(args, "memory_type", str, "episodic"),
            origin=origin,
        )
        return {"item": item_payload(item), "merged": bool(item.metadata.get("duplicate_count"))}

    def _recall(self, args: Mapping[str, Any], origin: Origin | None) -> dict[str, Any]:
        query = _arg(args, "query", str, None)
        if query is None:
            raise MemoryStoreError("invalid_query", "query is required")
        results = self.memory.recall_similar(query, _arg(args, "k", int, 5))
        return {
            "results": [
                {
                    **item_payload(r.item),
                    "score": round(r.score, 4),
                    "conflicts": [item_payload(c) for c in r.conflicts],
                }
                for r in results
            ]
        }

    def _recent(self, args: Mapping[str, Any], origin: Origin | None) -> dict[str, Any]:
        return {"items": [item_payload(i) for i in self.memory.recent(_arg(args, "n", int, 10))]}

    def _tags(self, args: Mapping[str, Any], origin: Origin | None) -> dict[str, Any]:
        tags = _arg(args, "tags", list, [])
        if not tags:
            return {"tags": self.memory.tag_counts()}
        items = self.memory.recall_by_tags(tags, _arg(args, "n", int, 10))
        return {"items": [item_payload(i) for i in items]}

    def _prune(self, args: Mapping[str, Any], origin: Origin | None) -> dict[str, Any]:
        dry_run = _arg(args, "dry_run", bool, True)
        if not dry_run and not self.allow_prune:
            raise MemoryStoreError("forbidden", "this server offers prune as a dry run only")
        report = self.memory.prune(
            max_age_days=_arg(args, "max_age_days", (int, float), 90.0),
            min_importance=_arg(args, "min_importance", (int, float), 0.5),
            max_items=_arg(args, "max_items", int, None),
            dry_run=dry_run,
            origin=origin,
        )
        return {
            "removed": list(report.removed),
            "reasons": report.reasons,
            "kept_protected": report.kept_protected,
            "remaining": report.remaining,
            "dry_run": report.dry_run,
        }

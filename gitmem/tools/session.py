"""Session memory as registry tools: remember, recall, recent, tags and prune.

Each call is checked against its model (:mod:`gitmem.tools.kind_schemas`) by the
registry before :class:`SessionTools` hands it to the
:class:`~gitmem.session.memory.SessionMemory`, so a schema limit (64 tags of at
most 64 characters) is never left for the core to find. Prune is offered as a
dry run unless the adapter allows destructive tools.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Final

from gitmem.errors import MemoryStoreError
from gitmem.model import Origin
from gitmem.session.memory import SessionMemory
from gitmem.tools.kind_schemas import PruneArgs, RecentArgs, RememberArgs, SessionRecallArgs, TagsArgs
from gitmem.tools.registry import KindTools, Payload, chosen

_log = logging.getLogger(__name__)
PREFIX: Final = "memory_session_"
PERMISSION_PREFIX: Final = "memory.session."

DESCRIPTIONS: Final[dict[str, str]] = {
    "remember": (
        "Remember a reusable fact, preference, decision or lesson for later sessions. Exact duplicates "
        "(same text ignoring case and spacing) merge into the existing memory, whose id is returned. "
        "Never store credentials."
    ),
    "recall": (
        "Recall the memories most similar to a query (superseded ones are left out; conflicting "
        "memories are listed with each other). Use them as supporting context, not as proof."
    ),
    "recent": "The newest memories, newest first.",
    "tags": "Memories carrying any of the given tags, newest first; with no tags, every tag and its count.",
    "prune": "List (dry_run, the default) or remove stale, low-importance, unprotected memories in one commit.",
}
MODELS: Final[dict[str, type[Any]]] = {
    "remember": RememberArgs,
    "recall": SessionRecallArgs,
    "recent": RecentArgs,
    "tags": TagsArgs,
    "prune": PruneArgs,
}
READ: Final = frozenset({"recall", "recent", "tags"})


class SessionTools(KindTools):
    """The tools over one :class:`SessionMemory`; ``allow_prune`` lets ``dry_run: false`` through."""

    kind = "session"
    prefix = PREFIX
    permission_prefix = PERMISSION_PREFIX
    descriptions = DESCRIPTIONS
    read = READ
    models = MODELS

    def __init__(self, memory: SessionMemory, *, allow_prune: bool = False, tools: Iterable[str] | None = None) -> None:
        self.memory = memory
        self.allow_prune = allow_prune
        self.tools = chosen(tools, DESCRIPTIONS, PREFIX, PERMISSION_PREFIX)

    def handle(self, tool: str, args: Any, who: Origin) -> Payload:
        try:
            return super().handle(tool, args, who)
        except (ValueError, TypeError, RecursionError, OverflowError) as exc:
            # The core refuses bad input with a code; anything it missed is still the caller's
            # input, answered as a refusal (and logged with its trace) rather than raised.
            _log.debug("session tool %s%s refused input the core did not check", PREFIX, tool, exc_info=True)
            message = f"arguments refused: {type(exc).__name__}: {exc}"[:500]
            raise MemoryStoreError("invalid_query", message) from None
        except OSError as exc:
            _log.debug("session tool %s%s failed", PREFIX, tool, exc_info=True)
            message = f"the session memory could not be read or written: {exc}"[:500]
            raise MemoryStoreError("unavailable", message) from None

    def _remember(self, args: RememberArgs, origin: Origin) -> Payload:
        item = self.memory.remember(
            args.content, importance=args.importance, tags=args.tags, memory_type=args.memory_type, origin=origin
        )
        return {"item": item.as_dict(), "merged": bool(item.metadata.get("duplicate_count"))}

    def _recall(self, args: SessionRecallArgs, origin: Origin) -> Payload:
        results = self.memory.recall_similar(args.query, args.k)
        return {
            "results": [
                {
                    **r.item.as_dict(),
                    "score": round(r.score, 4),
                    "conflicts": [c.as_dict() for c in r.conflicts],
                }
                for r in results
            ]
        }

    def _recent(self, args: RecentArgs, origin: Origin) -> Payload:
        return {"items": [i.as_dict() for i in self.memory.recent(args.n)]}

    def _tags(self, args: TagsArgs, origin: Origin) -> Payload:
        if not args.tags:
            return {"tags": self.memory.tag_counts()}
        return {"items": [i.as_dict() for i in self.memory.recall_by_tags(args.tags, args.n)]}

    def _prune(self, args: PruneArgs, origin: Origin) -> Payload:
        if not args.dry_run and not self.allow_prune:
            raise MemoryStoreError("forbidden", "this server offers prune as a dry run only")
        report = self.memory.prune(
            max_age_days=args.max_age_days,
            min_importance=args.min_importance,
            max_items=args.max_items,
            dry_run=args.dry_run,
            origin=origin,
        )
        return report.as_dict()

"""Store hygiene as pure rules: duplicate merge, pruning, supersede and conflict marks.

Nothing here reads or writes a store; :class:`gitmem.session.memory.SessionMemory`
applies these decisions in commits. Keeping them pure lets the table tests state
each rule with the examples it was written from.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from gitmem.session.items import MemoryItem, MemoryType, iso

#: Texts shorter than this (after normalising) are too generic to merge on equality.
MIN_FINGERPRINT_CHARS: Final = 24

#: Which type survives a merge: procedural and semantic outrank working, which outranks episodic.
TYPE_STRENGTH: Final[dict[MemoryType, int]] = {"procedural": 3, "semantic": 3, "working": 2, "episodic": 1}

PROTECTED_TAGS: Final = frozenset({"keep", "pinned", "protected", "consolidated", "conflict"})
PROTECTED_FLAGS: Final = ("keep", "pinned", "protected")
RELATION_KEYS: Final = ("supersedes", "conflicts_with", "superseded_by")
PROTECTED_ACCESS_COUNT: Final = 3

DAY: Final = 86_400.0
DEFAULT_MAX_AGE_DAYS: Final = 90.0
DEFAULT_MIN_IMPORTANCE: Final = 0.5
RELEVANCE_HALF_LIFE_DAYS: Final = 30.0  # the e-folding time of the recency term


def normalize_text(text: str) -> str:
    """Whitespace collapsed to single spaces, trimmed, lower-cased."""
    return " ".join(text.split()).lower()


def fingerprint(text: str) -> str | None:
    """The key exact duplicates share, or ``None`` when the text is too short to trust."""
    normal = normalize_text(text)
    return normal if len(normal) >= MIN_FINGERPRINT_CHARS else None


# --- duplicate merge ----------------------------------------------------------------------


def _union(first: Iterable[Any], second: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for value in (*first, *second):
        if value not in out:
            out.append(value)
    return out


def merge_metadata(existing: dict[str, Any], incoming: dict[str, Any]) -> dict[str, Any]:
    """Existing keys win for single values; lists (``supersedes``, ``conflicts_with``, …) are unioned."""
    merged = dict(existing)
    for key, value in incoming.items():
        if key not in merged:
            merged[key] = value
        elif isinstance(merged[key], list) and isinstance(value, list):
            merged[key] = _union(merged[key], value)
        elif isinstance(merged[key], list) and value not in merged[key]:
            merged[key] = [*merged[key], value]
    return merged


def merge_duplicate(existing: MemoryItem, incoming: MemoryItem, *, now: float) -> MemoryItem:
    """One item from an exact duplicate pair; ``existing`` is canonical and keeps its id.

    Importance, timestamp and access statistics take the maximum. The incoming text
    replaces the canonical one only when it is more important, or equally important
    and longer. The stronger type wins (a tie keeps the existing one); tags are
    unioned; list metadata is merged; the duplicate is recorded in
    ``duplicate_count``, ``duplicate_ids`` and ``last_duplicate_at``.
    """
    take_text = incoming.importance > existing.importance or (
        incoming.importance == existing.importance and len(incoming.content) > len(existing.content)
    )
    memory_type = existing.memory_type
    if TYPE_STRENGTH[incoming.memory_type] > TYPE_STRENGTH[memory_type]:
        memory_type = incoming.memory_type
    meta = merge_metadata(existing.metadata, incoming.metadata)
    dup_ids = [i for i in _union(existing.ids_in("duplicate_ids"), (incoming.id, *incoming.ids_in("duplicate_ids")))]
    meta["duplicate_ids"] = [i for i in dup_ids if i != existing.id]
    meta["duplicate_count"] = _count(existing) + 1 + _count(incoming)
    meta["last_duplicate_at"] = iso(now)
    last_seen = [t for t in (existing.last_accessed, incoming.last_accessed) if t is not None]
    return replace(
        existing,
        content=incoming.content if take_text else existing.content,
        timestamp=max(existing.timestamp, incoming.timestamp),
        importance=max(existing.importance, incoming.importance),
        tags=tuple(_union(existing.tags, incoming.tags)),
        memory_type=memory_type,
        metadata=meta,
        access_count=max(existing.access_count, incoming.access_count),
        last_accessed=max(last_seen) if last_seen else None,
    )


def _count(item: MemoryItem) -> int:
    value = item.metadata.get("duplicate_count", 0)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


# --- pruning ------------------------------------------------------------------------------


def protection(item: MemoryItem) -> str | None:
    """Why pruning must keep ``item`` (``None``: it may go)."""
    if item.access_count >= PROTECTED_ACCESS_COUNT:
        return f"recalled {item.access_count} times"
    for tag in item.tags:
        if tag in PROTECTED_TAGS:
            return f"tagged {tag}"
    for flag in PROTECTED_FLAGS:
        if item.metadata.get(flag):
            return f"metadata {flag} is set"
    for key in RELATION_KEYS:
        if item.ids_in(key):
            return f"carries {key}"
    return None


def relevance(item: MemoryItem, *, now: float) -> float:
    """0.7 · importance + 0.3 · e^(-age / 30 days); a future timestamp counts as age 0."""
    age_days = max(0.0, now - item.timestamp) / DAY
    return 0.7 * item.importance + 0.3 * math.exp(-age_days / RELEVANCE_HALF_LIFE_DAYS)


@dataclass(frozen=True)
class PrunePlan:
    """Which items go and why; ``kept_protected`` counts items a rule would have removed."""

    remove: tuple[MemoryItem, ...]
    reasons: dict[str, str]
    kept_protected: int


def select_prune(
    items: Sequence[MemoryItem],
    *,
    now: float,
    max_age_days: float = DEFAULT_MAX_AGE_DAYS,
    min_importance: float = DEFAULT_MIN_IMPORTANCE,
    max_items: int | None = None,
) -> PrunePlan:
    """Stale low-importance items (older than ``max_age_days`` AND below ``min_importance``),
    then, with ``max_items``, the least relevant until at most that many remain.

    Protected items (:func:`protection`) are never chosen, even if that leaves more
    than ``max_items``. Ties in relevance remove the older item first, then by id.
    """
    if max_items is not None and max_items < 0:
        raise ValueError("max_items must be 0 or more")
    cutoff = now - max_age_days * DAY
    remove: dict[str, MemoryItem] = {}
    reasons: dict[str, str] = {}
    kept_protected = 0
    for item in items:
        if item.timestamp < cutoff and item.importance < min_importance:
            if protection(item) is None:
                remove[item.id] = item
                reasons[item.id] = f"older than {max_age_days:g} days with importance {item.importance:g}"
            else:
                kept_protected += 1
    if max_items is not None:
        remaining = [i for i in items if i.id not in remove]
        excess = len(remaining) - max_items
        if excess > 0:
            ranked = sorted(
                (i for i in remaining if protection(i) is None),
                key=lambda i: (relevance(i, now=now), i.timestamp, i.id),
            )
            for item in ranked[:excess]:
                remove[item.id] = item
                reasons[item.id] = f"over max_items={max_items} (relevance {relevance(item, now=now):.3f})"
            kept_protected += max(0, excess - len(ranked))
    return PrunePlan(tuple(remove.values()), reasons, kept_protected)


# --- relations ----------------------------------------------------------------------------


def mark_superseded(old: MemoryItem, by: str, *, now: float) -> MemoryItem:
    """``old`` kept but out of recall: tagged ``superseded``, ``superseded_by`` naming the new item."""
    meta = dict(old.metadata)
    meta["superseded_by"] = _union(old.superseded_by, (by,))
    meta["superseded_at"] = iso(now)
    return replace(old, tags=tuple(_union(old.tags, ("superseded",))), metadata=meta)


def mark_supersedes(new: MemoryItem, old: str) -> MemoryItem:
    """The replacing end of a supersede: ``supersedes`` names ``old``, which protects ``new`` from prune.

    Without it a prune could delete the item that replaced another, and the fact would
    vanish from recall while the old item's ``superseded_by`` pointed at nothing.
    """
    meta = dict(new.metadata)
    meta["supersedes"] = _union(new.supersedes, (old,))
    return replace(new, tags=tuple(_union(new.tags, ("consolidated",))), metadata=meta)


def mark_conflict(item: MemoryItem, other: str) -> MemoryItem:
    """Both sides of a contradiction stay visible, tagged ``conflict`` and naming each other."""
    meta = dict(item.metadata)
    meta["conflicts_with"] = _union(item.conflicts_with, (other,))
    return replace(item, tags=tuple(_union(item.tags, ("conflict",))), metadata=meta)

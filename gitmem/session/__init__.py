"""Session memory: what an agent session learned, kept as items in a git-backed session mount.

See ``docs/session-memory.md``. The pure rules live in :mod:`~gitmem.session.items`,
:mod:`~gitmem.session.hygiene` and :mod:`~gitmem.session.extraction`; the store-backed
API in :mod:`~gitmem.session.memory`; turns in :mod:`~gitmem.session.runner`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitmem.lazyexports import exports as _exports

if TYPE_CHECKING:
    from gitmem.session.binding import CandidateSink, DurableRecall, ExtractedItem, RecalledNode
    from gitmem.session.extraction import (
        ExtractionRequest,
        ExtractionResult,
        Extractor,
        LessonExtractor,
        Rejection,
        RelatedMemory,
        validate_extraction,
    )
    from gitmem.session.items import MemoryItem, MemoryType
    from gitmem.session.location import default_memory_dir, open_session_memory
    from gitmem.session.memory import MemoryStore, PruneReport, RecallResult, SessionMemory
    from gitmem.session.runner import (
        MemoryEvent,
        ModelReply,
        RecalledMemory,
        SessionRunner,
        TurnContext,
        TurnRecall,
        TurnResult,
    )
    from gitmem.session.stats import AccessStats, FileAccessStats, MemoryAccessStats

#: Where each public name lives, imported on first use: the CLI imports this package for
#: its option choices, and `gitmem --help` must not load the store (pygit2) to show them.
_LAZY: dict[str, str] = {
    "AccessStats": "gitmem.session.stats",
    "CandidateSink": "gitmem.session.binding",
    "DurableRecall": "gitmem.session.binding",
    "ExtractedItem": "gitmem.session.binding",
    "ExtractionRequest": "gitmem.session.extraction",
    "ExtractionResult": "gitmem.session.extraction",
    "Extractor": "gitmem.session.extraction",
    "FileAccessStats": "gitmem.session.stats",
    "LessonExtractor": "gitmem.session.extraction",
    "MemoryAccessStats": "gitmem.session.stats",
    "MemoryEvent": "gitmem.session.runner",
    "MemoryItem": "gitmem.session.items",
    "MemoryStore": "gitmem.session.memory",
    "MemoryType": "gitmem.session.items",
    "ModelReply": "gitmem.session.runner",
    "PruneReport": "gitmem.session.memory",
    "RecallResult": "gitmem.session.memory",
    "RecalledMemory": "gitmem.session.runner",
    "RecalledNode": "gitmem.session.binding",
    "Rejection": "gitmem.session.extraction",
    "RelatedMemory": "gitmem.session.extraction",
    "SessionMemory": "gitmem.session.memory",
    "SessionRunner": "gitmem.session.runner",
    "TurnContext": "gitmem.session.runner",
    "TurnRecall": "gitmem.session.runner",
    "TurnResult": "gitmem.session.runner",
    "default_memory_dir": "gitmem.session.location",
    "open_session_memory": "gitmem.session.location",
    "validate_extraction": "gitmem.session.extraction",
}


__all__ = [
    "AccessStats",
    "CandidateSink",
    "DurableRecall",
    "ExtractedItem",
    "ExtractionRequest",
    "ExtractionResult",
    "Extractor",
    "FileAccessStats",
    "LessonExtractor",
    "MemoryAccessStats",
    "MemoryEvent",
    "MemoryItem",
    "MemoryStore",
    "MemoryType",
    "ModelReply",
    "PruneReport",
    "RecallResult",
    "RecalledMemory",
    "RecalledNode",
    "Rejection",
    "RelatedMemory",
    "SessionMemory",
    "SessionRunner",
    "TurnContext",
    "TurnRecall",
    "TurnResult",
    "default_memory_dir",
    "open_session_memory",
    "validate_extraction",
]

__getattr__, _ = _exports(__name__, _LAZY, globals(), __all__)

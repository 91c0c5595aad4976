"""Session memory: what an agent session learned, kept as items in a git-backed session mount.

See ``docs/session-memory.md``. The pure rules live in :mod:`~gitmem.session.items`,
:mod:`~gitmem.session.hygiene` and :mod:`~gitmem.session.extraction`; the store-backed
API in :mod:`~gitmem.session.memory`; turns in :mod:`~gitmem.session.runner`.
"""

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

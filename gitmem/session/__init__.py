"""Session memory: what an agent session learned, kept as items in a git-backed session mount."""

from gitmem.session.binding import CandidateSink, DurableRecall, ExtractedItem, RecalledNode

__all__ = ["CandidateSink", "DurableRecall", "ExtractedItem", "RecalledNode"]

"""A session's turn loop: recall before the model call, extraction after it.

:class:`SessionRunner` ties session memory to any model callable:

1. **Recall.** Up to five session items similar to the prompt, plus the active
   durable nodes when a :class:`~gitmem.session.binding.DurableRecall` is bound.
   When both layers hold the same normalised text, only the durable node is kept.
   Each recalled memory is reported as a ``memory_recalled`` event, then one
   ``memories_searched`` event closes the search; the memories become a
   ``<session-memory>`` block in the turn's context.
2. **The model call** gets the prompt and that block. With a
   :class:`~gitmem.session.binding.DurableAdmission` bound, the durable nodes
   are admitted first, under a new model-context id: a node that is no longer
   the current revision of an active node is dropped from the block.
3. **Extraction** of the finished turn runs on the session's FIFO job queue: in
   the background after a streaming turn, before returning otherwise. The
   extractor reads the turn with its credentials redacted. Accepted
   items are stored in session memory and, when a
   :class:`~gitmem.session.binding.CandidateSink` is bound, proposed as durable
   candidates (never activated).

A session id that once ran bound to durable memory can only be resumed with an
equivalent binding: the runner refuses to start otherwise (``forbidden``, see
:mod:`gitmem.session.resume`), rather than run its turns without durable memory.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from gitmem.errors import MemoryStoreError
from gitmem.model import Origin
from gitmem.session.binding import CandidateSink, DurableAdmission, DurableRecall, RecalledNode
from gitmem.session.extraction import (
    DEFAULT_MAX_INPUT_CHARS,
    DEFAULT_MAX_ITEMS,
    MAX_RELATED,
    ExtractionRequest,
    Extractor,
    Rejection,
    RelatedMemory,
    validate_for,
)
from gitmem.session.hygiene import normalize_text
from gitmem.session.jobs import CLOSE_TIMEOUT, JobQueue
from gitmem.session.memory import MemoryStore
from gitmem.session.resume import resume_session

log = logging.getLogger(__name__)

RECALL_LIMIT: Final = 5
EventKind = Literal["memory_recalled", "memories_searched"]


@dataclass(frozen=True)
class MemoryEvent:
    kind: EventKind
    data: dict[str, Any]


@dataclass(frozen=True)
class RecalledMemory:
    """One memory put in front of the model: from session memory or a durable node."""

    id: str
    content: str
    layer: Literal["session", "durable"]
    score: float
    memory_type: str | None = None
    revision: int | None = None
    conflicts_with: tuple[str, ...] = ()


@dataclass(frozen=True)
class TurnRecall:
    memories: tuple[RecalledMemory, ...]
    events: tuple[MemoryEvent, ...]
    block: str
    durable_error: str | None = None


@dataclass(frozen=True)
class ModelReply:
    """What a model returned: its text and, as context for extraction only, its tool calls."""

    text: str
    tool_calls: tuple[str, ...] = ()


@dataclass(frozen=True)
class TurnContext:
    prompt: str
    memory_block: str


Model = Callable[[TurnContext], "str | ModelReply"]


@dataclass(frozen=True)
class ExtractionOutcome:
    stored: tuple[str, ...] = ()
    rejected: tuple[Rejection, ...] = ()
    candidates: tuple[str, ...] = ()
    skipped: str | None = None
    error: str | None = None


@dataclass
class TurnResult:
    prompt: str
    response: str
    recall: TurnRecall
    extraction: Future[ExtractionOutcome] | None = field(default=None)
    context_id: str | None = None  # the model context the durable nodes were admitted under


def _inert(text: str) -> str:
    """``text`` on one line with ``&``, ``<`` and ``>`` as entities: no memory can close (or open) the block."""
    return " ".join(text.split()).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render_block(memories: tuple[RecalledMemory, ...]) -> str:
    """The recalled memories as the turn's context block ('' when there are none).

    A memory's words are anyone's (an item extracted from a turn, a node someone
    proposed), so they are made inert (:func:`_inert`) before they go inside it.
    """
    if not memories:
        return ""
    lines = ["<session-memory>", "Supporting context from earlier work; verify before relying on it."]
    for m in memories:
        label = f"durable {m.id} r{m.revision}" if m.layer == "durable" else f"{m.id} {m.memory_type}"
        note = f" (conflicts with {', '.join(m.conflicts_with)})" if m.conflicts_with else ""
        lines.append(_inert(f"- [{label}]{note} {m.content}"))
    lines.append("</session-memory>")
    return "\n".join(lines)


class SessionRunner:
    """One agent session over a :class:`MemoryStore` (see the module docstring)."""

    def __init__(
        self,
        memory: MemoryStore,
        model: Model,
        *,
        workspace: str,
        session_id: str,
        extractor: Extractor | None = None,
        durable: DurableRecall | None = None,
        candidates: CandidateSink | None = None,
        admission: DurableAdmission | None = None,
        on_event: Callable[[MemoryEvent], None] | None = None,
        recall_limit: int = RECALL_LIMIT,
        max_items: int = DEFAULT_MAX_ITEMS,
        max_input_chars: int = DEFAULT_MAX_INPUT_CHARS,
    ) -> None:
        # Before anything starts: a session bound to durable memory resumes only with an equivalent binding.
        resume_session(memory, session_id, durable, candidates, admission)
        self.memory = memory
        self.model = model
        self.workspace = workspace
        self.session_id = session_id
        self.extractor = extractor
        self.durable = durable
        self.candidates = candidates
        self.admission = admission
        self.on_event = on_event
        self.recall_limit = recall_limit
        self.max_items = max_items
        self.max_input_chars = max_input_chars
        self.origin = Origin(run_id=session_id)
        self.jobs = JobQueue(f"gitmem-session-{session_id}")

    # -- recall ------------------------------------------------------------------------

    def recall(self, prompt: str) -> TurnRecall:
        """The memories for a turn with this prompt, their events and context block."""
        session = self._session_hits(prompt)
        durable: list[RecalledMemory] = []
        durable_error = None
        if self.durable is not None and prompt.strip():
            try:
                for node in self.durable.recall_active(prompt, self.recall_limit):
                    durable.append(
                        RecalledMemory(node.node_id, node.content, "durable", node.score, None, node.revision)
                    )
            except Exception as exc:  # a failing binding must not stop the turn
                durable_error = f"{type(exc).__name__}: {exc}"
                log.warning("durable recall failed, continuing with session memory only: %s", durable_error)
        taken = {normalize_text(m.content) for m in durable}
        chosen = tuple(durable + [m for m in session if normalize_text(m.content) not in taken])
        events = [
            MemoryEvent(
                "memory_recalled",
                {
                    "id": m.id,
                    "layer": m.layer,
                    "score": m.score,
                    "revision": m.revision,
                    "conflicts_with": list(m.conflicts_with),
                },
            )
            for m in chosen
        ]
        events.append(
            MemoryEvent(
                "memories_searched",
                {
                    "count": len(chosen),
                    "session": sum(m.layer == "session" for m in chosen),
                    "durable": len(durable),
                    "durable_error": durable_error,
                },
            )
        )
        if self.on_event is not None:
            for event in events:
                self.on_event(event)
        return TurnRecall(chosen, tuple(events), render_block(chosen), durable_error)

    def _session_hits(self, prompt: str) -> list[RecalledMemory]:
        try:
            results = self.memory.recall_similar(prompt, self.recall_limit)
        except MemoryStoreError as exc:
            if exc.code != "invalid_query":  # a prompt with no word to look for recalls nothing
                raise
            return []
        return [
            RecalledMemory(
                r.item.id, r.item.content, "session", r.score, r.item.memory_type, None, r.item.conflicts_with
            )
            for r in results
        ]

    # -- a turn ------------------------------------------------------------------------

    def turn(self, prompt: str, *, stream: bool = False) -> TurnResult:
        """Recall, call the model, then extract (in the background when ``stream``)."""
        if self.jobs.closed:
            raise MemoryStoreError("unavailable", f"session {self.session_id} is closed")
        recall = self.recall(prompt)
        context_id = None
        block = recall.block
        durable = [m for m in recall.memories if m.layer == "durable"]
        if self.admission is not None and durable:
            nodes = [RecalledNode(m.id, m.revision or 0, m.content, m.score) for m in durable]
            context_id, admitted = self.admission.admit_context(nodes)
            kept = {(n.node_id, n.revision) for n in admitted}
            block = render_block(
                tuple(m for m in recall.memories if m.layer != "durable" or (m.id, m.revision) in kept)
            )
        reply = self.model(TurnContext(prompt, block))
        if isinstance(reply, str):
            reply = ModelReply(reply)
        result = TurnResult(prompt, reply.text, recall, context_id=context_id)
        if self.extractor is not None:
            request = ExtractionRequest(
                prompt=prompt,
                response=reply.text,
                workspace=self.workspace,
                session_id=self.session_id,
                tool_context=reply.tool_calls,
                related=tuple(
                    RelatedMemory(m.id, m.content, m.memory_type or "semantic")
                    for m in recall.memories
                    if m.layer == "session"
                )[:MAX_RELATED],
                max_items=self.max_items,
                max_input_chars=self.max_input_chars,
            ).redacted()  # the extraction model never reads a credential pasted into the turn
            result.extraction = self.jobs.submit(lambda: self.extract(request))
            if not stream:
                result.extraction.result()
        return result

    def extract(self, request: ExtractionRequest) -> ExtractionOutcome:
        """Run the extractor on one turn and store what passes validation."""
        if self.extractor is None or not request.worth_extracting:
            return ExtractionOutcome(skipped="no extractor" if self.extractor is None else "empty prompt or response")
        try:
            raw = self.extractor.extract(request)
        except Exception as exc:  # a model failure loses this turn's memories, never the session
            log.warning("extraction failed: %s", exc)
            return ExtractionOutcome(error=f"{type(exc).__name__}: {exc}")
        checked = validate_for(request, raw)
        stored = []
        rejected = list(checked.rejected)
        for index, item in enumerate(checked.accepted):
            try:
                stored.append(self.memory.remember_extracted(item, origin=self.origin).id)
            except MemoryStoreError as exc:
                rejected.append(Rejection(index, exc.code, exc.message))
        candidates: tuple[str, ...] = ()
        if self.candidates is not None and checked.accepted:
            try:
                candidates = tuple(self.candidates.propose_candidates(checked.accepted, origin=self.origin))
            except Exception as exc:
                return ExtractionOutcome(tuple(stored), tuple(rejected), (), error=f"candidates: {exc}")
        return ExtractionOutcome(tuple(stored), tuple(rejected), candidates)

    def close(self, timeout: float = CLOSE_TIMEOUT) -> int:
        """Wait up to ``timeout`` seconds for accepted extraction jobs; returns how many did not finish."""
        return self.jobs.close(timeout)

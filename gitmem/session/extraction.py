"""Extraction of memories from a finished turn: the request, the model's contract, validation.

A model (any :class:`Extractor`) reads one finished turn — prompt and response,
with tool calls as context only — plus up to five related memories, and answers
``{"items": [...]}``. Whatever it returns is *untrusted*: :func:`validate_extraction`
accepts only items that follow every rule below and reports each refusal with a
reason code, so a malformed or over-eager answer can never write junk:

- ``memory_type`` is ``semantic`` (sources ``project_fact``, ``preference``,
  ``decision``) or ``procedural`` (sources ``workflow``, ``failure``);
- ``scope`` is ``workspace`` or ``user``;
- ``content`` 20-1200 characters; a future-value ``reason`` 12-320 characters;
- at most 8 tags; ``importance`` >= 0.70 and ``confidence`` >= 0.75 (both at most 1);
- no credentials anywhere (the secret rule is named);
- ``supersedes`` / ``conflicts_with`` name only ids of the related memories shown;
- at most ``max_items`` items; an empty list is a valid answer.

Accepted items get metadata recording the workspace, the session id, the
schema ``a3s.memory.durable.v1`` and ``turn_digest``: the digest of the turn as
the model read it (:meth:`ExtractionRequest.evidence_digest`), which a durable
candidate keeps as its session-turn evidence. A host hands the model a turn
passed through :meth:`ExtractionRequest.redacted` (the session runner always
does), so neither the model nor that evidence sees a credential from the prompt.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Protocol

from gitmem.errors import MemoryStoreError
from gitmem.localfile import parse_json
from gitmem.secrets import find_secret, redact_secrets
from gitmem.session.binding import ExtractedItem, ExtractedType

SCHEMA: Final = "a3s.memory.durable.v1"
TURN_EVIDENCE_SCHEMA: Final = "gitmem.session.turn-evidence.v1"
SOURCES: Final[dict[str, ExtractedType]] = {
    "project_fact": "semantic",
    "preference": "semantic",
    "decision": "semantic",
    "workflow": "procedural",
    "failure": "procedural",
}
SCOPES: Final = ("workspace", "user")
CONTENT_CHARS: Final = (20, 1200)
REASON_CHARS: Final = (12, 320)
MAX_TAGS: Final = 8
MIN_IMPORTANCE: Final = 0.70
MIN_CONFIDENCE: Final = 0.75
MAX_RELATED: Final = 5
DEFAULT_MAX_ITEMS: Final = 5
DEFAULT_MAX_INPUT_CHARS: Final = 8000
REQUIRED: Final = ("content", "memory_type", "source", "scope", "reason", "importance", "confidence")


@dataclass(frozen=True)
class RelatedMemory:
    """An existing memory shown to the model; its id is the only kind it may relate to."""

    id: str
    content: str
    memory_type: str = "semantic"


@dataclass(frozen=True)
class ExtractionRequest:
    """One finished turn to judge. ``tool_context`` is context for the judgment, never content."""

    prompt: str
    response: str
    workspace: str
    session_id: str
    tool_context: tuple[str, ...] = ()
    related: tuple[RelatedMemory, ...] = ()
    max_items: int = DEFAULT_MAX_ITEMS
    max_input_chars: int = DEFAULT_MAX_INPUT_CHARS

    def __post_init__(self) -> None:
        if len(self.related) > MAX_RELATED:
            raise ValueError(f"at most {MAX_RELATED} related memories are shown to the model")

    @property
    def worth_extracting(self) -> bool:
        """Only turns with a non-empty prompt and response go to the model."""
        return bool(self.prompt.strip() and self.response.strip())

    def redacted(self) -> ExtractionRequest:
        """This turn with every credential in prompt, response and tool calls replaced (see
        :func:`gitmem.secrets.redact_secrets`): what a model may read."""
        return replace(
            self,
            prompt=redact_secrets(self.prompt),
            response=redact_secrets(self.response),
            tool_context=tuple(redact_secrets(t) for t in self.tool_context),
        )

    def evidence_payload(self) -> dict[str, str]:
        """The turn as evidence: schema, session id, prompt, response and the tool-call transcript."""
        return {
            "schema": TURN_EVIDENCE_SCHEMA,
            "session_id": self.session_id,
            "prompt": self.prompt,
            "response": self.response,
            "transcript": "\n".join(self.tool_context),
        }

    def evidence_digest(self) -> str:
        """``sha256:`` of :meth:`evidence_payload` as compact JSON with sorted keys (UTF-8).

        A reviewer holding the turn recomputes it to check that a candidate came from
        exactly that turn; with a redacted request it pins the redacted text. A turn's
        text is whatever the host was given, so a lone surrogate in it (half an emoji a
        client cut) is hashed as its three bytes (``surrogatepass``), not refused.
        """
        data = json.dumps(self.evidence_payload(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return "sha256:" + hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()


class Extractor(Protocol):
    """A model that reads a turn and answers ``{"items": [...]}`` (or the list itself, or JSON text)."""

    def extract(self, request: ExtractionRequest) -> object: ...


@dataclass(frozen=True)
class Rejection:
    """Why an answer (``index`` None) or one of its items was not accepted."""

    index: int | None
    reason: str
    detail: str


@dataclass(frozen=True)
class ExtractionResult:
    accepted: tuple[ExtractedItem, ...] = ()
    rejected: tuple[Rejection, ...] = field(default_factory=tuple)


# --- the prompt ----------------------------------------------------------------------------

INSTRUCTIONS: Final = """\
You decide whether a finished agent turn holds anything that can change a future answer or action.
Return ONLY memories of lasting value:
- semantic: a durable project fact, a user preference or a decision (source project_fact, preference or decision);
- procedural: a reusable workflow or a lesson from a failure (source workflow or failure).
Each item needs: content (20-1200 chars, self-contained), memory_type, source, scope (workspace or user),
reason (12-320 chars: why this will matter later), tags (at most 8), importance (0.70-1), confidence (0.75-1).
Use supersedes only for an existing memory this one directly replaces or consolidates, and conflicts_with
for one it contradicts and that should stay visible; use ONLY ids from the related memories listed.
Tool calls and results are context for your judgment: never copy them into memory.
Never include credentials. When nothing qualifies, return an empty items list."""


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 7)] + " [cut]"


def render_turn(request: ExtractionRequest) -> str:
    """The user message for the model: related memories, then the turn, within ``max_input_chars``."""
    budget = request.max_input_chars
    prompt = cut(request.prompt, budget // 4)
    response = cut(request.response, max(0, budget - len(prompt)) * 3 // 4)
    tools = cut("\n".join(request.tool_context), max(0, budget - len(prompt) - len(response)))
    related = "\n".join(f"- id={m.id} ({m.memory_type}): {cut(m.content, 400)}" for m in request.related)
    parts = [
        f"Related existing memories (ids you may use in supersedes/conflicts_with):\n{related or '(none)'}",
        f"User prompt:\n{prompt}",
        f"Assistant response:\n{response}",
    ]
    if tools:
        parts.append(f"Tool calls (context only, never copy):\n{tools}")
    parts.append(f"Return at most {request.max_items} items.")
    return "\n\n".join(parts)


#: The JSON Schema of an answer (for tool calls / structured output).
ANSWER_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string"},
                    "memory_type": {"type": "string", "enum": ["semantic", "procedural"]},
                    "source": {"type": "string", "enum": list(SOURCES)},
                    "scope": {"type": "string", "enum": list(SCOPES)},
                    "reason": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "importance": {"type": "number"},
                    "confidence": {"type": "number"},
                    "supersedes": {"type": "array", "items": {"type": "string"}},
                    "conflicts_with": {"type": "array", "items": {"type": "string"}},
                },
                "required": list(REQUIRED),
            },
        }
    },
    "required": ["items"],
}


# --- validation ----------------------------------------------------------------------------


class _Refused(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def _items_of(raw: object) -> list[object]:
    if isinstance(raw, str | bytes):
        try:
            raw = parse_json(raw, what="the answer")  # bounded nesting: a model's 30,000 brackets are refused too
        except MemoryStoreError as exc:
            raise _Refused("malformed_output", exc.message) from None
    if isinstance(raw, Mapping):
        if "items" not in raw:
            raise _Refused("malformed_output", "the answer has no 'items' list")
        raw = raw["items"]
    if not isinstance(raw, list):
        raise _Refused("malformed_output", f"'items' must be a list, got {type(raw).__name__}")
    return raw


def _text(entry: Mapping[str, Any], key: str, bounds: tuple[int, int], reason: str) -> str:
    value = entry[key]
    if not isinstance(value, str):
        raise _Refused("wrong_type", f"{key} must be text, got {type(value).__name__}")
    value = value.strip()
    low, high = bounds
    if not low <= len(value) <= high:
        raise _Refused(reason, f"{key} is {len(value)} characters; it must be {low}-{high}")
    return value


def _score(entry: Mapping[str, Any], key: str, floor: float) -> float:
    value = entry[key]
    # math.isfinite only on a float: an int past 1e308 (a JSON 10**400) raises OverflowError there.
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (isinstance(value, float) and not math.isfinite(value))
    ):
        raise _Refused("wrong_type", f"{key} must be a number, got {value!r}")
    if value > 1 or value < 0:
        shown = value if isinstance(value, float) or -(10**9) < value < 10**9 else "a larger integer"
        raise _Refused(f"{key}_out_of_range", f"{key} {shown} is not within 0-1")
    if value < floor:
        raise _Refused(f"{key}_too_low", f"{key} {value} is below {floor:.2f}")
    return float(value)


def _strings(entry: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = entry.get(key, [])
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise _Refused("wrong_type", f"{key} must be a list of non-empty strings")
    return tuple(dict.fromkeys(v.strip() for v in value))


def _choice(entry: Mapping[str, Any], key: str, allowed: Collection[str], shown: str) -> str:
    """``entry[key]`` when it is one of ``allowed``; refused (reason ``key``) otherwise, whatever its type
    (a model's ``{}`` or ``[]`` is looked up in nothing: it is unhashable)."""
    value = entry[key]
    if not isinstance(value, str) or value not in allowed:
        raise _Refused(key, f"{key} {repr(value)[:80]} is not {shown}")
    return value


def _one(entry: object, related_ids: Collection[str], base_meta: dict[str, Any]) -> ExtractedItem:
    if not isinstance(entry, Mapping):
        raise _Refused("not_an_object", f"an item must be an object, got {type(entry).__name__}")
    missing = [k for k in REQUIRED if k not in entry]
    if missing:
        raise _Refused("missing_field", f"missing {', '.join(missing)}")
    memory_type = _choice(entry, "memory_type", ("semantic", "procedural"), "semantic or procedural")
    source = _choice(entry, "source", SOURCES, f"one of {', '.join(SOURCES)}")
    if SOURCES[source] != memory_type:
        raise _Refused("source_type_mismatch", f"source {source} goes with {SOURCES[source]}, not {memory_type}")
    scope = _choice(entry, "scope", SCOPES, "workspace or user")
    content = _text(entry, "content", CONTENT_CHARS, "content_length")
    reason = _text(entry, "reason", REASON_CHARS, "reason_length")
    tags = tuple(dict.fromkeys(t.lower() for t in _strings(entry, "tags")))
    if len(tags) > MAX_TAGS:
        raise _Refused("too_many_tags", f"{len(tags)} tags; at most {MAX_TAGS}")
    importance = _score(entry, "importance", MIN_IMPORTANCE)
    confidence = _score(entry, "confidence", MIN_CONFIDENCE)
    for what, text in (("content", content), ("reason", reason), ("tags", " ".join(tags))):
        rule = find_secret(text)
        if rule is not None:
            raise _Refused("secret", f"{what} looks like {rule.explanation} (secret rule '{rule.name}')")
    supersedes = _strings(entry, "supersedes")
    conflicts = _strings(entry, "conflicts_with")
    unknown = [i for i in (*supersedes, *conflicts) if i not in related_ids]
    if unknown:
        raise _Refused("unknown_relation", f"relation ids {unknown} were not among the related memories shown")
    return ExtractedItem(
        content=content,
        memory_type=memory_type,
        source=source,
        scope=scope,
        reason=reason,
        tags=tags,
        importance=importance,
        confidence=confidence,
        supersedes=supersedes,
        conflicts_with=conflicts,
        metadata=dict(base_meta),
    )


def validate_extraction(
    raw: object,
    *,
    related_ids: Collection[str],
    workspace: str,
    session_id: str,
    max_items: int = DEFAULT_MAX_ITEMS,
    turn_digest: str | None = None,
) -> ExtractionResult:
    """The items of ``raw`` that follow every rule, and a :class:`Rejection` for each that does not."""
    try:
        entries = _items_of(raw)
    except _Refused as refused:
        return ExtractionResult((), (Rejection(None, refused.reason, refused.detail),))
    meta = {"workspace": workspace, "session_id": session_id, "schema": SCHEMA}
    if turn_digest is not None:
        meta["turn_digest"] = turn_digest
    accepted: list[ExtractedItem] = []
    rejected: list[Rejection] = []
    for index, entry in enumerate(entries):
        if index >= max_items:
            rejected.append(Rejection(index, "too_many_items", f"only the first {max_items} items are considered"))
            continue
        try:
            accepted.append(_one(entry, related_ids, meta))
        except _Refused as refused:
            rejected.append(Rejection(index, refused.reason, refused.detail))
    return ExtractionResult(tuple(accepted), tuple(rejected))


def validate_for(request: ExtractionRequest, raw: object) -> ExtractionResult:
    return validate_extraction(
        raw,
        related_ids={m.id for m in request.related},
        workspace=request.workspace,
        session_id=request.session_id,
        max_items=request.max_items,
        turn_digest=request.evidence_digest(),
    )


# --- a deterministic extractor -------------------------------------------------------------


class LessonExtractor:
    """A deterministic stand-in for a model (tests, demos, offline use).

    Every response line ``Lesson: <text>`` becomes a semantic project fact, and
    ``Workflow: <text>`` a procedural workflow, with fixed scores. It reads only the
    response, so tool output can never leak into memory through it.
    """

    def __init__(self, *, importance: float = 0.8, confidence: float = 0.9) -> None:
        self.importance = importance
        self.confidence = confidence
        self.requests: list[ExtractionRequest] = []

    def extract(self, request: ExtractionRequest) -> object:
        self.requests.append(request)
        items: list[dict[str, Any]] = []
        for line in request.response.splitlines():
            for marker, memory_type, source in (
                ("lesson:", "semantic", "project_fact"),
                ("workflow:", "procedural", "workflow"),
            ):
                if line.strip().lower().startswith(marker):
                    items.append(
                        {
                            "content": line.strip()[len(marker) :].strip(),
                            "memory_type": memory_type,
                            "source": source,
                            "scope": "workspace",
                            "reason": "stated as a lesson for later turns",
                            "tags": [source],
                            "importance": self.importance,
                            "confidence": self.confidence,
                        }
                    )
        return {"items": items}

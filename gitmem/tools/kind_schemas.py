"""The arguments of the session and durable memory tools, as pydantic models.

As for the file and record tools, each model is both the JSON Schema a model is
shown and the check its calls pass before the memory runs them
(:func:`gitmem.tools.schemas.validate`). The models are strict: a number sent as
text or a tag list sent as one string is refused with the tool's code instead of
being coerced, and every length limit of the schema (at most 64 tags, 8
proposals) holds before the core sees the call.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

MAX_TAGS: Final = 64
MAX_PROPOSALS: Final = 8

SessionType = Literal["episodic", "semantic", "procedural", "working"]
ProposalKind = Literal["semantic", "procedural"]
ProposalSource = Literal["decision", "failure", "preference", "project_fact", "workflow"]
Scope = Literal["user", "workspace"]
Tag = Annotated[str, StringConstraints(min_length=1, max_length=64)]
Count = Annotated[int, Field(ge=1, le=100)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class RememberArgs(_Strict):
    content: str = Field(min_length=1, max_length=16000)
    importance: float = Field(0.5, ge=0, le=1)
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    memory_type: SessionType = "episodic"


class SessionRecallArgs(_Strict):
    query: str = Field(min_length=1)
    k: Count = 5


class RecentArgs(_Strict):
    n: Count = 10


class TagsArgs(_Strict):
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    n: Count = 10


class PruneArgs(_Strict):
    max_age_days: float = Field(90, ge=0)
    min_importance: float = Field(0.5, ge=0, le=1)
    max_items: int | None = Field(None, ge=0)
    dry_run: bool = True


class DurableRecallArgs(_Strict):
    query: str = Field(min_length=1)
    limit: Count = 5


class Proposal(_Strict):
    content: str = Field(min_length=20, max_length=1200)
    memory_type: ProposalKind
    source: ProposalSource
    scope: Scope
    reason: str = Field(min_length=12, max_length=320)
    tags: list[str] = Field(default_factory=list, max_length=8)
    importance: float = Field(ge=0.7, le=1.0)
    confidence: float = Field(ge=0.75, le=1.0)


class ProposeArgs(_Strict):
    items: list[Proposal] = Field(min_length=1, max_length=MAX_PROPOSALS)


class NodeLogArgs(_Strict):
    id: str = Field(min_length=1, max_length=200, description="Id of an active node (from durable_recall).")
    limit: Count = 10

"""The arguments of the session and durable memory tools and of the memory-tool commands, as pydantic models.

As for the file and record tools, each model is both the JSON Schema a model is
shown and the check its calls pass before the memory runs them
(:func:`gitmem.tools.schemas.validate`). The models are strict: a number sent as
text or a tag list sent as one string is refused with the tool's code instead of
being coerced, and every length limit of the schema (at most 64 tags, 8
proposals) holds before the core sees the call.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, StringConstraints

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


class ActivateArgs(_Strict):
    id: str = Field(min_length=1, max_length=200, description="Id of the candidate node (from durable_propose).")
    revision: int = Field(ge=1, description="The candidate revision that was reviewed (from durable_log).")
    principal: str | None = Field(
        None, min_length=1, max_length=256, description="Whose candidate, in your tenant and scope; omit for yours."
    )


class ApproveArgs(_Strict):
    run: str = Field(
        min_length=1, max_length=200, description="The run whose proposal to approve, such as alice/mcp."
    )


# --- the commands of Anthropic's memory tool (memory_20250818) ------------------------------
# The SDK builds its command objects without checking them (``construct_type_unchecked``), so
# the backend checks each input against these models before a command runs.


class _Command(_Strict):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)


class ViewCommand(_Command):
    command: Literal["view"]
    path: str
    view_range: list[int] | None = Field(None, min_length=2, max_length=2)


class CreateCommand(_Command):
    command: Literal["create"]
    path: str
    file_text: str


class StrReplaceCommand(_Command):
    command: Literal["str_replace"]
    path: str
    old_str: str
    new_str: str


class InsertCommand(_Command):
    command: Literal["insert"]
    path: str
    insert_line: int
    insert_text: str


class DeleteCommand(_Command):
    command: Literal["delete"]
    path: str


class RenameCommand(_Command):
    command: Literal["rename"]
    old_path: str
    new_path: str


class MemoryCommand(
    RootModel[
        Annotated[
            ViewCommand | CreateCommand | StrReplaceCommand | InsertCommand | DeleteCommand | RenameCommand,
            Field(discriminator="command"),
        ]
    ]
):
    """One memory-tool command, whichever it is (``command`` picks the model)."""

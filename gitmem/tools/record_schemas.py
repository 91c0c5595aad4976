"""The arguments of the record tools, as pydantic models and JSON Schemas.

As for the file tools (:mod:`gitmem.tools.schemas`), the models are the one source
of both the schemas a model is shown and the validation of what it sends back;
arguments they refuse are ``invalid_arguments`` naming the field and why, and
the record rules (a text too long, a cursor that is not one) keep their codes.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

RecordToolName = Literal["search", "list", "history", "add", "update", "delete"]
RECORD_TOOLS: Final[tuple[RecordToolName, ...]] = get_args(RecordToolName)
RECORD_READ_TOOLS: Final[frozenset[str]] = frozenset({"search", "list", "history"})
#: The argument naming another record namespace: in a tool's schema only where a mount offers more than one.
NAMESPACE_ARGUMENT: Final = "namespace"
TOOL_PREFIX: Final = "memory_record_"
TOOL_ID_PREFIX: Final = "memory.record."

SEARCH_DEFAULT: Final = 5
SEARCH_MAX: Final = 20
LIST_DEFAULT: Final = 20
LIST_MAX: Final = 100
HISTORY_DEFAULT: Final = 10
HISTORY_MAX: Final = 50


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    memory: str = Field(description="Name of the memory to use.")
    namespace: str | None = Field(
        None, description="Whose records: one of the namespaces this memory offers; omit for your own."
    )


class SearchArgs(_Args):
    query: str = Field(min_length=1, description="What you are looking for, in plain words.")
    limit: int = Field(SEARCH_DEFAULT, ge=1, le=SEARCH_MAX, description="Most records to return.")


class ListArgs(_Args):
    limit: int = Field(LIST_DEFAULT, ge=1, le=LIST_MAX, description="Most records to return.")
    cursor: str | None = Field(None, description="next_cursor from the previous page; omit for the first page.")


class HistoryArgs(_Args):
    id: str = Field(description="Id of the record (from search or list).")
    limit: int = Field(HISTORY_DEFAULT, ge=1, le=HISTORY_MAX, description="Most changes to return, newest first.")


class AddArgs(_Args):
    text: str = Field(description="The record: one short fact, stored as written.")


class UpdateArgs(_Args):
    id: str = Field(description="Id of the record to change (from search or list).")
    text: str = Field(description="The record's new text; it replaces the old text.")


class DeleteArgs(_Args):
    id: str = Field(description="Id of the record to delete (from search or list).")


ARGUMENTS: Final[dict[RecordToolName, type[_Args]]] = {
    "search": SearchArgs,
    "list": ListArgs,
    "history": HistoryArgs,
    "add": AddArgs,
    "update": UpdateArgs,
    "delete": DeleteArgs,
}

"""The arguments of the five record tools, as pydantic models and JSON Schemas.

As for the file tools (:mod:`gitmem.tools.schemas`), the models are the one source
of both the schemas a model is shown and the validation of what it sends back; a
bad argument becomes the store error code of the field it concerns (a bad
``text`` is ``invalid_text``, a bad ``cursor`` ``invalid_cursor``, ...).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gitmem.errors import ErrorCode, MemoryStoreError, MemoryToolError

RecordToolName = Literal["search", "list", "add", "update", "delete"]
RECORD_TOOLS: Final[tuple[RecordToolName, ...]] = get_args(RecordToolName)
RECORD_READ_TOOLS: Final[frozenset[str]] = frozenset({"search", "list"})
TOOL_PREFIX: Final = "memory_record_"
TOOL_ID_PREFIX: Final = "memory.record."

SEARCH_DEFAULT: Final = 5
SEARCH_MAX: Final = 20
LIST_DEFAULT: Final = 20
LIST_MAX: Final = 100


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    memory: str = Field(description="Name of the memory to use.")


class SearchArgs(_Args):
    query: str = Field(min_length=1, description="What you are looking for, in plain words.")
    limit: int = Field(SEARCH_DEFAULT, ge=1, le=SEARCH_MAX, description="Most records to return.")


class ListArgs(_Args):
    limit: int = Field(LIST_DEFAULT, ge=1, le=LIST_MAX, description="Most records to return.")
    cursor: str | None = Field(None, description="next_cursor from the previous page; omit for the first page.")


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
    "add": AddArgs,
    "update": UpdateArgs,
    "delete": DeleteArgs,
}

_FIELD_CODES: Final[dict[str, ErrorCode]] = {
    "memory": "unknown_memory",
    "query": "invalid_query",
    "limit": "invalid_query",
    "cursor": "invalid_cursor",
    "text": "invalid_text",
    "id": "record_not_found",
}


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if k != "title" or not isinstance(v, str)}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


_SCHEMAS: Final[dict[RecordToolName, dict[str, Any]]] = {
    tool: _strip_titles(model.model_json_schema()) for tool, model in ARGUMENTS.items()
}


def input_schema(tool: RecordToolName, memories: Sequence[str]) -> dict[str, Any]:
    schema = copy.deepcopy(_SCHEMAS[tool])
    schema["properties"]["memory"]["enum"] = list(memories)
    return schema


def parse_arguments(tool: RecordToolName, arguments: object) -> _Args:
    """Validate a call's arguments, or raise the store error naming the problem."""
    if not isinstance(arguments, Mapping):
        raise MemoryToolError(
            "unknown_memory", f"arguments must be a JSON object naming the memory, got {type(arguments).__name__}"
        )
    try:
        return ARGUMENTS[tool].model_validate(dict(arguments))
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        errors.sort(key=lambda e: 0 if e["loc"][:1] == ("memory",) else 1)
        first = errors[0]
        name = str(first["loc"][0]) if first["loc"] else ""
        if first["type"] == "extra_forbidden":
            allowed = ", ".join(ARGUMENTS[tool].model_fields)
            return _raise(
                "invalid_query" if tool in RECORD_READ_TOOLS else "invalid_text",
                f"{TOOL_PREFIX}{tool} has no argument {name!r}; it takes {allowed}",
            )
        detail = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors)
        return _raise(_FIELD_CODES.get(name, "invalid_query"), f"bad arguments for {TOOL_PREFIX}{tool}: {detail}")


def _raise(code: ErrorCode, message: str) -> _Args:
    raise MemoryStoreError(code, message)

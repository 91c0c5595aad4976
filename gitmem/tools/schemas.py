"""The arguments of the seven memory tools, as pydantic models and JSON Schemas.

The models are the single source of both the schemas a model is shown and the
validation of what it sends back. A bad argument becomes a store error code the
model already knows, chosen by the field it concerns (a bad ``path`` is
``invalid_path``, a bad ``pattern`` is ``invalid_pattern``, …), so adapters never
see a pydantic exception.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gitmem.errors import ErrorCode, MemoryStoreError
from gitmem.tools.mounts import ToolName

GREP_DEFAULT_LIMIT: Final = 50
GREP_MAX_LIMIT: Final = 1000

_MEMORY = "Name of the memory to use."


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    memory: str = Field(description=_MEMORY)


class ViewArgs(_Args):
    path: str = Field(
        "",
        description="A file path, or a folder: '' for the top level, or a path ending in '/'.",
    )


class GrepArgs(_Args):
    pattern: str = Field(description="Text to look for; matched literally and ignoring case unless told otherwise.")
    path: str = Field("", description="Only search this folder ('' for the whole memory).")
    regex: bool = Field(False, description="Treat pattern as a Python regular expression.")
    case_sensitive: bool = Field(False, description="Match upper and lower case exactly.")
    limit: int = Field(GREP_DEFAULT_LIMIT, ge=1, le=GREP_MAX_LIMIT, description="Most matching lines to return.")


class CreateArgs(_Args):
    path: str = Field(description="Path of the new file, relative, such as prefs/language.md.")
    content: str = Field(description="The whole text of the new file.")


class EditArgs(_Args):
    path: str = Field(description="Path of the file to change.")
    old_string: str = Field(
        min_length=1,
        description="Exact text to replace; it must occur exactly once in the file, so include enough context.",
    )
    new_string: str = Field(description="Text to put in its place ('' removes it).")


class AppendArgs(_Args):
    path: str = Field(description="Path of an existing file.")
    content: str = Field(min_length=1, description="Text to add at the end; it starts on a new line.")


class MoveArgs(_Args):
    source: str = Field(description="Path of the file to move.")
    destination: str = Field(description="New path; nothing may exist there yet.")


class DeleteArgs(_Args):
    path: str = Field(description="Path of the file to delete.")
    version: str = Field(description="The file's version as you last saw it (from memory_file_view).")


ARGUMENTS: Final[dict[ToolName, type[_Args]]] = {
    "view": ViewArgs,
    "grep": GrepArgs,
    "create": CreateArgs,
    "edit": EditArgs,
    "append": AppendArgs,
    "move": MoveArgs,
    "delete": DeleteArgs,
}

# Which error code a bad value of each field is reported as.
_FIELD_CODES: Final[dict[str, ErrorCode]] = {
    "memory": "unknown_memory",
    "path": "invalid_path",
    "source": "invalid_path",
    "destination": "invalid_path",
    "content": "invalid_file",
    "new_string": "invalid_file",
    "old_string": "no_match",
    "pattern": "invalid_pattern",
    "regex": "invalid_pattern",
    "case_sensitive": "invalid_pattern",
    "limit": "invalid_pattern",
    "version": "version_mismatch",
}


def _strip_titles(node: Any) -> Any:
    """Drop pydantic's auto-generated titles: they repeat the field names and cost tokens."""
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if k != "title" or not isinstance(v, str)}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


_SCHEMAS: Final[dict[ToolName, dict[str, Any]]] = {
    tool: _strip_titles(model.model_json_schema()) for tool, model in ARGUMENTS.items()
}


def input_schema(tool: ToolName, memories: Sequence[str]) -> dict[str, Any]:
    """The JSON Schema of ``tool``'s arguments; ``memory`` is an enum of ``memories``."""
    schema = copy.deepcopy(_SCHEMAS[tool])
    schema["properties"]["memory"]["enum"] = list(memories)
    return schema


def parse_arguments(tool: ToolName, arguments: object) -> _Args:
    """Validate a tool call's arguments, or raise the store error that names the problem."""
    if not isinstance(arguments, Mapping):
        raise MemoryStoreError(
            "unknown_memory", f"arguments must be a JSON object naming the memory, got {type(arguments).__name__}"
        )
    model = ARGUMENTS[tool]
    try:
        return model.model_validate(dict(arguments))
    except ValidationError as exc:
        raise _translate(tool, exc) from None


def _translate(tool: ToolName, exc: ValidationError) -> MemoryStoreError:
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    # Report the memory first: nothing else matters when the memory is wrong.
    errors.sort(key=lambda e: 0 if e["loc"][:1] == ("memory",) else 1)
    first = errors[0]
    name = str(first["loc"][0]) if first["loc"] else ""
    if first["type"] == "extra_forbidden":
        allowed = ", ".join(ARGUMENTS[tool].model_fields)
        code: ErrorCode = "invalid_pattern" if tool == "grep" else "invalid_path"
        return MemoryStoreError(code, f"memory_file_{tool} has no argument {name!r}; it takes {allowed}")
    code = _FIELD_CODES.get(name, "invalid_path")
    detail = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors)
    return MemoryStoreError(code, f"bad arguments for memory_file_{tool}: {detail}")

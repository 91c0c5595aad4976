"""The arguments of the file-memory tools, as pydantic models and JSON Schemas, and the one validator.

The models are the single source of both the schemas a model is shown and the
validation of what it sends back. A bad argument becomes a store error code the
model already knows, chosen by the field it concerns (a bad ``path`` is
``invalid_path``, a bad ``pattern`` is ``invalid_pattern``, …), so adapters never
see a pydantic exception. :func:`schema_of` and :func:`validate` serve every
memory kind's models (:mod:`gitmem.tools.registry` calls them for each tool call).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gitmem.errors import ErrorCode, MemoryStoreError, MemoryToolError
from gitmem.tools.mounts import ToolName

GREP_DEFAULT_LIMIT: Final = 50
GREP_MAX_LIMIT: Final = 1000
HISTORY_DEFAULT_LIMIT: Final = 10
HISTORY_MAX_LIMIT: Final = 50
SEARCH_DEFAULT_LIMIT: Final = 5
SEARCH_MAX_LIMIT: Final = 20

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


class HistoryArgs(_Args):
    path: str = Field("", description="One file's changes; '' for every change of the memory.")
    limit: int = Field(
        HISTORY_DEFAULT_LIMIT, ge=1, le=HISTORY_MAX_LIMIT, description="Most changes to return, newest first."
    )
    cursor: str | None = Field(None, description="next_cursor from the previous page; omit for the newest.")


class ShowArgs(_Args):
    revision: str = Field(min_length=1, description="A commit from memory_file_history.")
    path: str | None = Field(
        None, description="The file as it was at that commit; omit to see what that change did (a diff)."
    )


class SearchArgs(_Args):
    query: str = Field(min_length=1, description="Words to rank the files by.")
    path: str = Field("", description="Only search this folder ('' for the whole memory).")
    limit: int = Field(SEARCH_DEFAULT_LIMIT, ge=1, le=SEARCH_MAX_LIMIT, description="Most files to return.")


class RestoreArgs(_Args):
    path: str = Field(description="Path of the file to put back.")
    revision: str = Field(min_length=1, description="The commit whose content to restore (from memory_file_history).")
    version: str | None = Field(
        description="The file's version now, as you last saw it (from memory_file_view); null if it does not exist now."
    )


ARGUMENTS: Final[dict[ToolName, type[_Args]]] = {
    "view": ViewArgs,
    "grep": GrepArgs,
    "create": CreateArgs,
    "edit": EditArgs,
    "append": AppendArgs,
    "move": MoveArgs,
    "delete": DeleteArgs,
    "history": HistoryArgs,
    "show": ShowArgs,
    "search": SearchArgs,
    "restore": RestoreArgs,
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
    "query": "invalid_pattern",
    "cursor": "invalid_cursor",
    "revision": "not_found",
}


def _strip_titles(node: Any) -> Any:
    """Drop pydantic's auto-generated titles: they repeat the field names and cost tokens."""
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if k != "title" or not isinstance(v, str)}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def _inline(node: Any, defs: Mapping[str, Any]) -> Any:
    """Replace ``$ref`` with the definition it names: some tool clients do not follow references."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline(defs[ref[len("#/$defs/") :]], defs)
        return {k: _inline(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


def _nullable(node: Any) -> Any:
    """``anyOf: [X, null]`` (pydantic's ``X | None``) as ``X`` with ``null`` in its type: shorter, same meaning."""
    if isinstance(node, dict):
        node = {k: _nullable(v) for k, v in node.items()}
        options = node.get("anyOf")
        if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
            other = next(o for o in options if o != {"type": "null"})
            if isinstance(other, dict) and isinstance(other.get("type"), str) and len(other) == 1:
                del node["anyOf"]
                node["type"] = [other["type"], "null"]
        return node
    if isinstance(node, list):
        return [_nullable(v) for v in node]
    return node


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema a model is shown for ``model``: no titles, no references."""
    raw = model.model_json_schema()
    return cast(dict[str, Any], _nullable(_strip_titles(_inline(raw, raw.get("$defs", {})))))


_SCHEMAS: Final[dict[ToolName, dict[str, Any]]] = {tool: schema_of(model) for tool, model in ARGUMENTS.items()}


def input_schema(tool: ToolName, memories: Sequence[str]) -> dict[str, Any]:
    """The JSON Schema of ``tool``'s arguments; ``memory`` is an enum of ``memories``."""
    return with_memories(_SCHEMAS[tool], memories)


def with_memories(schema: Mapping[str, Any], memories: Sequence[str]) -> dict[str, Any]:
    """A copy of ``schema`` whose ``memory`` property is an enum of ``memories``."""
    out = copy.deepcopy(dict(schema))
    out["properties"]["memory"]["enum"] = list(memories)
    return out


def validate(
    model: type[BaseModel],
    arguments: object,
    *,
    label: str,
    codes: Mapping[str, ErrorCode],
    default: ErrorCode,
    extra: ErrorCode | None = None,
    needs_object: ErrorCode | None = None,
) -> BaseModel:
    """``arguments`` checked against ``model``, or the store error naming the problem.

    ``codes`` maps a field to the code of a bad value (``default`` for the rest),
    ``extra`` is the code of an argument the tool does not take (``default``
    when not given), ``needs_object`` that of arguments that are not an object.
    """
    if not isinstance(arguments, Mapping):
        raise MemoryToolError(
            needs_object or default, f"{label}: arguments must be a JSON object, got {type(arguments).__name__}"
        )
    try:
        return model.model_validate(dict(arguments))
    except ValidationError as exc:
        raise _translate(model, exc, label, codes, default, extra) from None
    except RecursionError:  # arguments nested past what validation can walk
        raise MemoryToolError(default, f"{label}: the arguments are nested too deeply") from None


def parse_arguments(tool: ToolName, arguments: object) -> _Args:
    """Validate a file tool call's arguments, or raise the store error that names the problem."""
    extra: ErrorCode = "invalid_pattern" if tool in ("grep", "search") else "invalid_path"
    args = validate(
        ARGUMENTS[tool],
        arguments,
        label=f"memory_file_{tool}",
        codes=_FIELD_CODES,
        default="invalid_path",
        extra=extra,
        needs_object="unknown_memory",
    )
    assert isinstance(args, _Args)
    return args


def _where(loc: Sequence[int | str]) -> str:
    return f"{'.'.join(str(p) for p in loc)}: " if loc else ""


def _translate(
    model: type[BaseModel],
    exc: ValidationError,
    label: str,
    codes: Mapping[str, ErrorCode],
    default: ErrorCode,
    extra: ErrorCode | None,
) -> MemoryStoreError:
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    # Report the memory first: nothing else matters when the memory is wrong.
    errors.sort(key=lambda e: 0 if e["loc"][:1] == ("memory",) else 1)
    first = errors[0]
    name = str(first["loc"][0]) if first["loc"] else ""
    if first["type"] == "extra_forbidden" and len(first["loc"]) == 1:
        allowed = ", ".join(model.model_fields)
        return MemoryToolError(extra or default, f"{label} has no argument {name!r}; it takes {allowed}")
    detail = "; ".join(_where(e["loc"]) + e["msg"] for e in errors[:5])
    return MemoryToolError(codes.get(name, default), f"bad arguments for {label}: {detail}")


def check_memory_command(arguments: object) -> dict[str, Any]:
    """A memory-tool (``memory_20250818``) command checked against its model, as the plain dict it was.

    Unknown keys are dropped (the API may add some); a wrong type, a missing
    argument or an unknown command raises the store error naming it.
    """
    from gitmem.tools.kind_schemas import MemoryCommand

    checked = validate(MemoryCommand, arguments, label="memory", codes={}, default="invalid_path")
    assert isinstance(checked, MemoryCommand)
    return cast(dict[str, Any], checked.model_dump(exclude_none=True))

"""The arguments of the file-memory tools, as pydantic models and JSON Schemas, and the one validator.

The models are the single source of both the schemas a model is shown and the
validation of what it sends back. Arguments the schema refuses (one missing, one
the tool does not take, a wrong type, a value out of range) are one error,
``invalid_arguments``, whose message names each field and why, for every tool of
every kind and over every transport: a client or model learns from the code that
it called the tool wrongly, and from the message how. (A code per field, such as
``invalid_path`` for an argument the tool does not take, sent models looking for
a bad path.) The rules of the values themselves stay the store's, with its codes:
a path the schema takes but the path rules refuse is ``invalid_path``.
:func:`schema_of` and :func:`validate` serve every memory kind's models
(:mod:`gitmem.tools.registry` calls them for each tool call), so adapters never
see a pydantic exception.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gitmem.errors import INVALID_ARGUMENTS, MemoryStoreError, MemoryToolError
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


@functools.cache
def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema a model is shown for ``model``: no titles, no references.

    An optional value stays pydantic's ``anyOf: [{"type": X}, {"type": "null"}]``:
    the shorter ``type: [X, "null"]`` is the same JSON Schema, but strict schema
    checkers (the MCP Inspector's) warn about it and OpenAPI-style clients (Gemini's
    function declarations) do not take a list of types. Made once per model; a
    tool gets a copy (:func:`with_memories`).
    """
    raw = model.model_json_schema()
    return cast(dict[str, Any], _strip_titles(_inline(raw, raw.get("$defs", {}))))


def with_memories(schema: Mapping[str, Any], memories: Sequence[str]) -> dict[str, Any]:
    """A copy of ``schema`` whose ``memory`` property is an enum of ``memories`` (if any: kinds with no mounts)."""
    out = copy.deepcopy(dict(schema))
    if memories:
        out["properties"]["memory"]["enum"] = list(memories)
    return out


def validate(model: type[BaseModel], arguments: object, *, label: str) -> BaseModel:
    """``arguments`` checked against ``model``, or ``invalid_arguments`` naming each bad field and why."""
    if not isinstance(arguments, Mapping):
        raise MemoryToolError(
            INVALID_ARGUMENTS, f"{label}: the arguments must be a JSON object, got {type(arguments).__name__}"
        )
    try:
        return model.model_validate(dict(arguments))
    except ValidationError as exc:
        raise _translate(model, exc, label) from None
    except RecursionError:  # arguments nested past what validation can walk
        raise MemoryToolError(INVALID_ARGUMENTS, f"{label}: the arguments are nested too deeply") from None


_SHOWN_ERRORS: Final = 5


def _problem(error: Any) -> str:
    """One refused argument: its name (a dotted path inside lists and objects) and why."""
    loc = error["loc"]
    name = ".".join(str(p) for p in loc)
    if error["type"] == "missing":
        return f"{name!r} is required"
    if error["type"] == "extra_forbidden":
        return f"{name!r} is not an argument of this tool" if len(loc) == 1 else f"{name!r} is not allowed"
    return f"{name!r}: {error['msg']}" if name else str(error["msg"])


def _translate(model: type[BaseModel], exc: ValidationError, label: str) -> MemoryStoreError:
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    # The memory first: a client that got the memory wrong should fix that before anything else.
    errors.sort(key=lambda e: 0 if e["loc"][:1] == ("memory",) else 1)
    shown = "; ".join(_problem(e) for e in errors[:_SHOWN_ERRORS])
    more = f" (and {len(errors) - _SHOWN_ERRORS} more)" if len(errors) > _SHOWN_ERRORS else ""
    return MemoryToolError(INVALID_ARGUMENTS, f"bad arguments for {label}: {shown}{more}. {_takes(model)}")


def _takes(model: type[BaseModel]) -> str:
    """What the tool takes, for a caller that sent something else: ``It takes memory, path (optional: limit)``."""
    needed = [name for name, field in model.model_fields.items() if field.is_required()]
    optional = [name for name, field in model.model_fields.items() if not field.is_required()]
    if not needed and not optional:
        return "It takes no arguments."
    text = f"It takes {', '.join(needed)}" if needed else "It takes only optional arguments"
    return f"{text} (optional: {', '.join(optional)})." if optional else f"{text}."


def check_memory_command(arguments: object) -> dict[str, Any]:
    """A memory-tool (``memory_20250818``) command checked against its model, as the plain dict it was.

    Unknown keys are dropped (the API may add some); a wrong type, a missing
    argument or an unknown command raises the store error naming it.
    """
    from gitmem.tools.kind_schemas import MemoryCommand

    checked = validate(MemoryCommand, arguments, label="memory")
    assert isinstance(checked, MemoryCommand)
    return cast(dict[str, Any], checked.model_dump(exclude_none=True))

"""The one tool registry: a call is checked against its tool's model before any handler runs."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import pytest

from gitmem import InMemoryFileStore, MemoryStoreError
from gitmem.session import open_session_memory
from gitmem.tools import FileMemoryCapability, FileMount, ToolRegistry
from gitmem.tools.catalog import KINDS, unknown_tool_names
from gitmem.tools.mounts import TOOLS
from gitmem.tools.record_schemas import RECORD_TOOLS
from gitmem.tools.session import DESCRIPTIONS as SESSION_TOOLS
from gitmem.tools.session import SessionTools


def test_the_catalogue_names_what_each_kind_offers() -> None:
    assert KINDS["file"][2] == TOOLS
    assert KINDS["record"][2] == RECORD_TOOLS
    assert KINDS["session"][2] == tuple(SESSION_TOOLS)
    assert unknown_tool_names(["view", "memory_record_add", "memory.session.tags", "durable_log", "nope"]) == ["nope"]


def test_no_handler_runs_for_a_call_the_schema_refuses(tmp_path: Path) -> None:
    """60,000 tags (the schema says at most 64) are refused by the registry, fast, and nothing is written."""
    tools = SessionTools(open_session_memory(tmp_path / "m"))
    ran: list[Any] = []
    tool = tools.registry.get("memory_session_remember")
    assert tool is not None
    spy = ToolRegistry([dataclasses.replace(tool, handler=lambda args, origin: ran.append(args) or {})])
    head = tools.memory.store.head()
    started = time.process_time()
    for tags in (["t"] * 60_000, ["x" * 65], [""], "one string", [1]):
        answer = spy.call("memory_session_remember", {"content": "a fact", "tags": tags})
        assert answer["error"] == "invalid_arguments" and "tags" in answer["message"], tags
        assert answer["current"] is None
    assert time.process_time() - started < 2.0  # linear checks, not the core's per-tag work
    assert ran == [] and tools.memory.store.head() == head
    assert spy.call("memory_session_remember", {"content": "a fact", "tags": ["a"] * 64}) == {}
    assert len(ran) == 1 and len(ran[0].tags) == 64  # the schema's own limit reaches the handler


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"memory": "nope", "path": "a.md"}, "unknown_memory"),
        ({"memory": "user", "path": "a.md", "bogus": 1}, "invalid_arguments"),
        ({"memory": "user", "path": 7}, "invalid_arguments"),
        ("not an object", "invalid_arguments"),
        ({"memory": "user", "path": "a.md", **{f"k{i}": i for i in range(3)}}, "invalid_arguments"),
        ({"path": "a.md"}, "invalid_arguments"),
    ],
)
def test_file_tool_refusals_have_the_json_failure_shape(arguments: object, code: str) -> None:
    store = InMemoryFileStore()
    capability = FileMemoryCapability([FileMount("user", store, "write")])
    answer = capability.call("memory_file_view", arguments)
    assert answer == {"error": code, "message": answer["message"], "current": None}
    with pytest.raises(MemoryStoreError):
        capability.run("view", arguments)


def test_deeply_nested_arguments_are_refused_with_a_code(tmp_path: Path) -> None:
    nested: Any = "x"
    for _ in range(3000):
        nested = [nested]
    tools = SessionTools(open_session_memory(tmp_path / "m"))
    answer = tools.call("memory_session_remember", {"content": "a fact", "tags": nested})
    assert answer["error"] == "invalid_arguments" and "tags" in answer["message"]

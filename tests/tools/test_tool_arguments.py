"""Arguments a tool's schema refuses answer one code, ``invalid_arguments``, for every tool of every kind.

Whether an argument is missing, one the tool does not take, or of the wrong type,
the caller (a model, an MCP client) gets the same code and a message naming the
field and why, so it knows it called the tool wrongly rather than that a path, a
pattern or a version was bad. The registry is the one place every transport
passes (``gitmem mcp``, ``/mcp``, in-process tools), so this is checked here for
every tool; the MCP tests check the transports carry it unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from gitmem import InMemoryFileStore
from gitmem.durable.binding import DurableBinding
from gitmem.durable.namespace import Namespace
from gitmem.durable.nodefile import DURABLE_FORMAT
from gitmem.durable.repository import DurableRepository
from gitmem.records import RecordStore
from gitmem.session import open_session_memory
from gitmem.tools import FileMemoryCapability, FileMount, Tool, ToolRegistry
from gitmem.tools.durable import DurableTools
from gitmem.tools.records import RecordMemoryCapability, RecordMount
from gitmem.tools.session import SessionTools


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> ToolRegistry:
    folder = tmp_path_factory.mktemp("kinds")
    files = FileMemoryCapability([FileMount("notes", InMemoryFileStore(), "write")])
    records = RecordMemoryCapability([RecordMount("facts", RecordStore(InMemoryFileStore(), "alice"), "write")])
    session = SessionTools(open_session_memory(folder / "session"))
    durable = DurableTools(
        DurableBinding(DurableRepository(InMemoryFileStore(DURABLE_FORMAT)), Namespace("acme", "alice", "repo"))
    )
    return ToolRegistry.of(files, records, session, durable)


def base(tool: Tool) -> dict[str, Any]:
    """The smallest valid-looking call: every required argument, of its schema's type."""
    samples: dict[str, Any] = {"string": "x", "integer": 1, "number": 1.0, "boolean": True, "array": []}
    args: dict[str, Any] = {}
    for name in tool.input_schema.get("required", []):
        prop = tool.input_schema["properties"][name]
        if "enum" in prop:
            args[name] = prop["enum"][0]
        else:
            args[name] = samples.get(prop.get("type", "string"), "x")
    return args


def test_every_kind_is_covered(registry: ToolRegistry) -> None:
    assert {t.kind for t in registry} == {"file", "record", "session", "durable"}


def test_missing_extra_and_wrong_type_are_one_code_naming_the_field(registry: ToolRegistry) -> None:
    for tool in registry:
        required = tool.input_schema.get("required", [])
        cases: list[tuple[dict[str, Any], str]] = [
            ({**base(tool), "bogus_argument": 1}, "'bogus_argument' is not an argument of this tool")
        ]
        for name in required:
            if name == "memory":
                continue  # a memory is named first (unknown_memory for a wrong one), checked below
            cases.append(({k: v for k, v in base(tool).items() if k != name}, f"'{name}' is required"))
            cases.append(({**base(tool), name: {"not": "this type"}}, f"'{name}'"))
        for arguments, why in cases:
            answer = registry.call(tool.name, arguments)
            assert answer.get("error") == "invalid_arguments", (tool.name, arguments, answer)
            assert why in answer["message"] and tool.name in answer["message"], (tool.name, answer["message"])
            assert answer["current"] is None
            json.dumps(answer)
        not_an_object = registry.call(tool.name, ["x"])
        assert not_an_object["error"] == "invalid_arguments" and "JSON object" in not_an_object["message"]


def test_the_memory_argument_is_named_first_and_keeps_its_own_code(registry: ToolRegistry) -> None:
    for tool in registry:
        if "memory" not in tool.input_schema["properties"]:
            continue
        missing = registry.call(tool.name, {k: v for k, v in base(tool).items() if k != "memory"})
        assert missing["error"] == "invalid_arguments" and "'memory' is required" in missing["message"]
        unknown = registry.call(tool.name, {**base(tool), "memory": "nowhere"})
        assert unknown["error"] == "unknown_memory", (tool.name, unknown)


def test_no_schema_uses_a_list_of_types(registry: ToolRegistry) -> None:
    """``type: [X, "null"]`` draws strict checkers' warnings and OpenAPI-style clients refuse it: ``anyOf``."""

    def walk(node: Any, where: str) -> Iterator[str]:
        if isinstance(node, dict):
            if isinstance(node.get("type"), list):
                yield where
            for key, value in node.items():
                yield from walk(value, f"{where}.{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                yield from walk(value, f"{where}[{i}]")

    listed = [w for tool in registry for w in walk(tool.input_schema, tool.name)]
    assert listed == []
    listing = registry.get("memory_record_list")
    assert listing is not None
    assert listing.input_schema["properties"]["cursor"]["anyOf"] == [{"type": "string"}, {"type": "null"}]

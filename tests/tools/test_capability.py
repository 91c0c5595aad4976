"""What an adapter gets from the capability: instructions, tool definitions, routing, cursors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gitmem import InMemoryFileStore, MemoryStoreError
from gitmem.tools import DEFAULT_FILE_GUIDE, TOOLS, FileMemoryCapability, FileMount, MemoryCursors, tool_from_name
from gitmem.tools.schemas import ARGUMENTS
from tools.support import Agent

WRITE_TOOLS = ["create", "edit", "append", "move", "delete"]


def mounts() -> list[FileMount]:
    return [
        FileMount("user", InMemoryFileStore(), "write"),
        FileMount("team", InMemoryFileStore(), "read", guide="Company conventions. Ask before relying on them."),
        FileMount("scratch", InMemoryFileStore(), "write", guide=""),
    ]


def test_tool_definitions_name_id_effect_and_the_memories_that_allow_each_tool() -> None:
    definitions = FileMemoryCapability(mounts()).offered()
    # An in-memory store keeps no history and has no ranked index: those four tools are not offered.
    offered = [t for t in TOOLS if t not in ("search", "history", "show", "restore")]
    assert [d.name for d in definitions] == [f"memory_file_{t}" for t in offered]
    assert [d.permission for d in definitions] == [f"memory.file.{t}" for t in offered]
    assert [d.permission for d in definitions] == [f"memory.file.{t}" for t in offered]
    for d in definitions:
        enum = d.input_schema["properties"]["memory"]["enum"]
        if d.tool in ("view", "grep"):
            assert d.effect == "read" and enum == ["user", "team", "scratch"]
        else:
            assert d.effect == "write" and enum == ["user", "scratch"]
        assert list(d.memories) == enum
        assert json.loads(json.dumps(d.as_json())) == {
            "name": d.name,
            "description": d.description,
            "input_schema": d.input_schema,
        }


def test_schemas_come_from_the_argument_models() -> None:
    by_tool = {d.tool: d.input_schema for d in FileMemoryCapability(mounts()).offered()}
    assert by_tool["delete"]["required"] == ["memory", "path", "version"]
    assert by_tool["edit"]["required"] == ["memory", "path", "old_string", "new_string"]
    assert by_tool["grep"]["properties"]["limit"] == {
        "default": 50,
        "description": "Most matching lines to return.",
        "maximum": 1000,
        "minimum": 1,
        "type": "integer",
    }
    for tool, schema in by_tool.items():
        assert schema["additionalProperties"] is False
        assert set(schema["properties"]) == set(ARGUMENTS[tool].model_fields)
    # Only delete takes a version, and nothing overwrites a whole file or replaces all.
    assert [t for t, s in by_tool.items() if "version" in s["properties"]] == ["delete"]
    assert not any("replace_all" in s["properties"] for s in by_tool.values())


def test_a_capability_of_read_mounts_offers_only_view_and_grep() -> None:
    store = InMemoryFileStore()
    store.write("a.md", "A\n", expected=None)
    agent = Agent([FileMount("team", store, "read")])
    assert [d.tool for d in agent.capability.offered()] == ["view", "grep"]
    for tool in WRITE_TOOLS:
        failure = agent.call(
            tool,
            memory="team",
            path="a.md",
            content="x",
            old_string="A",
            new_string="B",
            source="a.md",
            destination="b.md",
            version="v",
        )
        assert failure["error"] == "forbidden", failure
    assert agent.call("append", memory="team", path="a.md", content="x")["error"] == "forbidden"
    assert store.read("a.md").text == "A\n"


def test_tools_narrow_every_mount() -> None:
    agent = Agent(mounts(), tools=("view", "grep"))
    assert [d.tool for d in agent.capability.offered()] == ["view", "grep"]
    assert agent.call("create", memory="user", path="a.md", content="x")["error"] == "forbidden"
    with pytest.raises(ValueError, match="unknown tools"):
        FileMemoryCapability(mounts(), tools=("view", "rm"))


def test_unknown_memory_and_bad_arguments_are_named() -> None:
    agent = Agent(mounts())
    unknown = agent.call("view", memory="nobody")
    assert unknown["error"] == "unknown_memory" and "user, team, scratch" in unknown["message"]
    # Arguments the schema refuses are one code, whatever the field: the message names it and why.
    missing = agent.call("view")
    assert missing["error"] == "invalid_arguments" and "'memory' is required" in missing["message"]
    assert agent.call("view", memory=3)["error"] == "invalid_arguments"
    typed = agent.call("create", memory="user", path=5, content="x")
    assert typed["error"] == "invalid_arguments" and "'path'" in typed["message"]
    absent = agent.call("create", memory="user", path="a.md")
    assert absent["error"] == "invalid_arguments" and "'content' is required" in absent["message"]
    assert agent.call("delete", memory="user", path="a.md")["error"] == "invalid_arguments"
    extra = agent.call("view", memory="user", path="", recursive=True)
    assert extra["error"] == "invalid_arguments" and "'recursive' is not an argument" in extra["message"]
    assert "It takes memory (optional: path)" in extra["message"]
    assert agent.capability.call("memory_file_view", ["user"])["error"] == "invalid_arguments"
    # The values' own rules keep their codes.
    assert agent.call("create", memory="user", path="../a.md", content="x")["error"] == "invalid_path"
    assert agent.capability.call("memory_file_rm", {"memory": "user"})["error"] == "forbidden"


def test_tool_names_and_ids_both_route() -> None:
    assert tool_from_name("memory_file_edit") == tool_from_name("memory.file.edit") == tool_from_name("edit") == "edit"
    assert tool_from_name("memory_file_overwrite") is None
    agent = Agent(mounts())
    assert agent.capability.call("memory.file.view", {"memory": "user"})["path"] == ""


def test_an_unexpected_store_exception_still_answers_json() -> None:
    class Exploding(InMemoryFileStore):
        def list(self) -> Any:
            raise RuntimeError("boom")

    failure = Agent([FileMount("user", Exploding())]).call("view", memory="user")
    assert failure == {
        "error": "unavailable",
        "message": "the memory store failed: RuntimeError: boom",
        "current": None,
    }


def test_instructions_list_every_mount_with_access_and_guide() -> None:
    text = FileMemoryCapability(mounts()).instructions
    assert 'Memory "user" (read and write; tools: view, grep, create, edit, append, move, delete).' in text
    assert 'Memory "team" (read only; tools: view, grep).\nCompany conventions.' in text
    assert 'Memory "scratch" (read and write; tools: view, grep, create, edit, append, move, delete).' in text
    assert text.count(DEFAULT_FILE_GUIDE.strip()) == 1
    assert "memory_file_" in text and "not" in text


def test_run_raises_instead_of_answering_json() -> None:
    capability = FileMemoryCapability(mounts())
    created = capability.run("create", {"memory": "user", "path": "a.md", "content": "A\n"}, tool_call_id="t1")
    assert created["status"] == "created"
    assert capability.run("view", {"memory": "user", "path": "a.md"})["content"] == "A\n"
    with pytest.raises(MemoryStoreError) as caught:
        capability.run("edit", {"memory": "user", "path": "a.md", "old_string": "zzz", "new_string": "y"})
    assert caught.value.code == "no_match" and caught.value.current is not None


def test_mount_and_capability_validation() -> None:
    store = InMemoryFileStore()
    for bad in ("User", "", "a b", "x" * 70):
        with pytest.raises(ValueError):
            FileMount(bad, store)
    with pytest.raises(ValueError):
        FileMount("user", store, "admin")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        FileMount("user", store, always_load="README.md")  # type: ignore[arg-type]
    with pytest.raises(Exception, match="invalid_path"):
        FileMount("user", store, always_load=("../x",))
    with pytest.raises(ValueError, match="unique"):
        FileMemoryCapability([FileMount("user", store), FileMount("user", store, "read")])
    with pytest.raises(ValueError, match="unique"):
        FileMemoryCapability([FileMount("a", store, cursor_key="k"), FileMount("b", store, cursor_key="k")])


def test_cursors_snapshot_restore_and_clear() -> None:
    cursors = MemoryCursors({"user": "c1"})
    cursors.set("team", "c2")
    assert cursors.snapshot() == {"user": "c1", "team": "c2"}
    snapshot = cursors.snapshot()
    snapshot["user"] = "tampered"
    assert cursors.get("user") == "c1"
    cursors.restore({"user": "c9"})
    assert cursors.snapshot() == {"user": "c9"}
    cursors.clear(["user"])
    assert cursors.get("user") is None
    cursors.set("a", "1")
    cursors.clear()
    assert cursors.snapshot() == {}
    with pytest.raises(ValueError):
        MemoryCursors({"user": 5})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        MemoryCursors(["user"])  # type: ignore[arg-type]


def test_context_can_be_recorded_only_once_delivered() -> None:
    store = InMemoryFileStore()
    store.write("a.md", "A\n", expected=None)
    cursors = MemoryCursors()
    capability = FileMemoryCapability([FileMount("user", store)], cursors=cursors)
    pending = capability.context(record=False)
    assert pending.blocks and cursors.snapshot() == {}
    capability.delivered(pending)
    assert cursors.snapshot() == dict(pending.cursors)
    assert capability.context().blocks == ()


def test_a_guide_shared_by_several_mounts_is_shown_once() -> None:
    text = FileMemoryCapability(
        [FileMount("user", InMemoryFileStore()), FileMount("work", InMemoryFileStore())]
    ).instructions
    assert text.count(DEFAULT_FILE_GUIDE) == 1
    assert (
        'Memory "work" (read and write; tools: view, grep, create, edit, append, move, delete). Guide: as for memory "user".'
        in text
    )

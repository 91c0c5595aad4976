"""No tool reply repeats more than a bounded part of what it was called with.

Every tool of every kind is called with each of its string arguments (and each
string inside its lists and objects) replaced by a megabyte - plain text, text
that quotes (control characters, which ``repr`` expands fourfold), regex syntax
- and with a megabyte tool name and argument name. Whatever each call answers
(a refusal with its code, a result with a hint), its message and hint stay
under the registry's bound and quote at most :data:`MAX_ECHO` characters of the
argument; the reply as a whole stays small.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitmem import Root
from gitmem.durable import DurableBinding, DurableRepository, Namespace
from gitmem.errors import MemoryStoreError
from gitmem.records import RecordStore
from gitmem.session import open_session_memory
from gitmem.tools import FileMemoryCapability, FileMount, ToolRegistry
from gitmem.tools.durable import DurableTools
from gitmem.tools.records import RecordMemoryCapability, RecordMount
from gitmem.tools.registry import MAX_ECHO, MAX_REPLY_TEXT, Tool, bound_echoes
from gitmem.tools.session import SessionTools

MB = 1 << 20
HUGE = {
    "plain": "x" * MB,
    "quoted": "\x01" * (MB // 4) + "tail",  # repr() turns each character into four
}
REPLY_BOUND = 3 * MAX_REPLY_TEXT  # message, hint and the reply's small fields together


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> ToolRegistry:
    tmp = tmp_path_factory.mktemp("echo")
    root = Root(tmp / "root")
    user = root.mount("user", create=True).sync
    user.write("notes/a.md", "hello\n", expected=None)
    files = FileMemoryCapability([FileMount("user", user, "write")])
    facts = root.mount("facts", create=True, kind="record").sync
    records = RecordMemoryCapability([RecordMount("facts", RecordStore(facts, "default"))])
    session = SessionTools(open_session_memory(tmp / "session"))
    repository = DurableRepository.open(root.path, "durable", create=True)
    durable = DurableTools(DurableBinding(repository, Namespace("acme", "alice", "workspace")))
    return ToolRegistry.of(files, records, session, durable)


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        found: Any = root
        for part in ref.lstrip("#/").split("/"):
            found = found[part]
        return _resolve(found, root)
    return schema


def sample(schema: dict[str, Any], root: dict[str, Any]) -> Any:
    """A plausible value for ``schema``: what a model would send."""
    schema = _resolve(schema, root)
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        return sample(schema["anyOf"][0], root)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object":
        required = schema.get("required", list(schema.get("properties", {})))
        return {k: sample(v, root) for k, v in schema.get("properties", {}).items() if k in required}
    if kind == "array":
        return [sample(schema.get("items", {"type": "string"}), root)]
    if kind == "integer":
        return max(1, int(schema.get("minimum", 1)))
    if kind == "number":
        return float(schema.get("minimum", 0.8))
    if kind == "boolean":
        return False
    return "notes/a.md" if "minLength" not in schema else "a" * max(int(schema["minLength"]), 24)


def string_slots(schema: dict[str, Any], root: dict[str, Any], at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Where a string can go in the arguments: each string property, in lists and objects too."""
    schema = _resolve(schema, root)
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "string" in kinds and "enum" not in schema:
        yield at
    if "object" in kinds:
        for key, sub in schema.get("properties", {}).items():
            yield from string_slots(sub, root, (*at, key))
    if "array" in kinds:
        yield from string_slots(schema.get("items", {}), root, (*at, 0))


def put(arguments: Any, at: tuple[Any, ...], value: str) -> Any:
    out = copy.deepcopy(arguments)
    target = out
    for i, step in enumerate(at[:-1]):
        if isinstance(target, dict) and step not in target:
            target[step] = [] if isinstance(at[i + 1], int) else {}
        if isinstance(target, list) and len(target) <= step:
            target.append({})
        target = target[step]
    last = at[-1]
    if isinstance(target, list):
        target[last : last + 1] = [value]
    else:
        target[last] = value
    return out


def check_reply(reply: dict[str, Any], huge: str, what: str) -> None:
    small = {k: v for k, v in reply.items() if k != "current"}
    size = len(json.dumps(small, ensure_ascii=False))
    assert size < REPLY_BOUND, f"{what}: a {size}-character reply: {json.dumps(small)[:300]}"
    for key in ("message", "hint"):
        text = reply.get(key)
        if isinstance(text, str):
            assert len(text) <= MAX_REPLY_TEXT, (what, key, len(text))
            # at most MAX_ECHO characters of the argument, as given or quoted
            assert huge[: MAX_ECHO + 1] not in text and repr(huge[: MAX_ECHO + 1])[:-1] not in text, (what, key)


def cases(registry: ToolRegistry) -> Iterator[tuple[Tool, tuple[Any, ...], dict[str, Any]]]:
    for tool in registry:
        schema = tool.input_schema
        base = sample(schema, schema)
        for slot in string_slots(schema, schema):
            yield tool, slot, base


def test_every_string_argument_of_every_tool_is_echoed_bounded(registry: ToolRegistry) -> None:
    tried = 0
    for tool, slot, base in cases(registry):
        for label, huge in HUGE.items():
            reply = registry.call(tool.name, put(base, slot, huge))
            check_reply(reply, huge, f"{tool.name} {'.'.join(map(str, slot))}={label}")
            tried += 1
    kinds = {t.kind for t in registry}
    assert kinds == {"file", "record", "session", "durable"} and tried > 2 * 30


def test_a_huge_tool_name_or_argument_name_is_echoed_bounded(registry: ToolRegistry) -> None:
    for huge in HUGE.values():
        check_reply(registry.call(huge, {}), huge, "tool name")
        for tool in registry:
            schema = tool.input_schema
            check_reply(registry.call(tool.name, {**sample(schema, schema), huge: 1}), huge, f"{tool.name} key")


def test_run_raises_the_same_error_bounded(registry: ToolRegistry) -> None:
    huge = HUGE["quoted"]
    with pytest.raises(MemoryStoreError) as raised:
        registry.run("memory_file_view", {"memory": "user", "path": huge})
    assert raised.value.code == "invalid_path"
    assert len(raised.value.message) <= MAX_REPLY_TEXT and len(str(raised.value)) <= MAX_REPLY_TEXT + 40


def test_a_grep_that_finds_nothing_quotes_the_start_of_its_pattern(registry: ToolRegistry) -> None:
    pattern = "no such line (a|b)*[" + "y" * MB
    reply = registry.call("memory_file_grep", {"memory": "user", "pattern": pattern})
    assert reply["matches"] == [] and "hint" in reply
    hint = reply["hint"]
    assert pattern[:MAX_ECHO] in repr(pattern) and repr(pattern)[:MAX_ECHO] in hint
    assert f"({len(repr(pattern))} characters)" in hint and "Try a shorter or different word" in hint
    assert "pass regex=true" in hint  # the advice after the pattern is kept
    short = registry.call("memory_file_grep", {"memory": "user", "pattern": "zebra"})
    assert "'zebra'" in short["hint"]  # a short pattern is quoted whole


def test_bound_echoes_leaves_short_texts_and_caps_any_other_repetition() -> None:
    assert bound_echoes("short message", {"path": "x" * MB}) == "short message"
    changed = "path " + ("X" * MB) + " refused"  # repeats the argument changed (upper-cased)
    out = bound_echoes(changed, {"path": "x" * MB})
    assert len(out) <= MAX_REPLY_TEXT and out.startswith("path XXX") and out.endswith("X refused")


def test_the_anthropic_memory_tool_bounds_what_its_refusals_repeat(tmp_path: Path) -> None:
    """The memory tool's commands are not registry tools; their refusals are bounded the same way."""
    pytest.importorskip("anthropic")
    from anthropic.lib.tools import ToolError

    from gitmem.adapters.anthropic_memory import GitMemoryTool

    store = Root(tmp_path / "root").mount("claude", create=True)
    tool = GitMemoryTool(store)
    tool.call({"command": "create", "path": "/memories/a.md", "file_text": "hello\n"})
    huge = "x" * MB
    commands = [
        {"command": "str_replace", "path": "/memories/a.md", "old_str": huge, "new_str": "y"},
        {"command": "view", "path": "/memories/" + huge},
        {"command": "create", "path": "/memories/" + "\x01" * (MB // 4), "file_text": "x"},
        {"command": "rename", "old_path": "/memories/a.md", "new_path": "/elsewhere/" + huge},
        {"command": "insert", "path": "/memories/" + huge, "insert_line": 0, "insert_text": "x"},
    ]
    for command in commands:
        with pytest.raises(ToolError) as raised:
            tool.call(command)
        text = str(raised.value.content)
        assert len(text) <= MAX_REPLY_TEXT, (command["command"], len(text))
        assert huge[: MAX_ECHO + 1] not in text
    assert store.sync.read("a.md").text == "hello\n"


def test_the_mcp_servers_own_refusals_are_bounded(tmp_path: Path) -> None:
    """Resources and prompts are answered by the MCP server itself, outside the registry: bounded too."""
    pytest.importorskip("mcp")
    from adapters.mcp_support import McpClient
    from mcp.shared.exceptions import MCPError

    Root(tmp_path / "root").mount("user", create=True)
    huge = "z" * (256 * 1024)
    with McpClient(tmp_path / "root", "--mount", "user", errlog=tmp_path / "stderr") as client:
        for ask in (
            lambda s: s.read_resource(f"memory://{huge}/context"),
            lambda s: s.read_resource(f"memory://user/{huge}"),
            lambda s: s.get_prompt(huge),
        ):
            with pytest.raises(MCPError) as raised:
                client.run(ask)
            message = str(raised.value)
            assert len(message) < 1000 and huge[: MAX_ECHO + 1] not in message, message[:300]

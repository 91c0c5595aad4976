"""``gitmem mcp`` with a record memory beside a file memory, driven by the real MCP client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp.types import TextContent

from adapters.mcp_support import McpClient, payload
from gitmem import Root
from gitmem.adapters.mcp_server import CONTEXT_PROMPT, NO_RECALL_TEXT, RECALL_PROMPT
from gitmem.records import RecordStore


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp-records") / "root"
    r = Root(path)
    r.mount("user", create=True).sync.write("README.md", "Alice.\n", expected=None)
    facts = r.mount("facts", create=True, kind="record").sync
    RecordStore(facts, "alice").add("prefers green tea")
    RecordStore(facts, "bob").add("prefers black coffee")
    r.mount("team", create=True, kind="record")
    return path


@pytest.fixture(scope="module")
def client(root: Path) -> Iterator[McpClient]:
    errlog = root.parent / "records.stderr"
    args = ("--mount", "user", "--mount", "facts", "--mount", "team:read", "--namespace", "alice")
    args += ("--principal", "alice")
    with McpClient(root, *args, errlog=errlog) as c:
        yield c
    assert "Traceback" not in errlog.read_text(encoding="utf-8")


def record_call(client: McpClient, tool: str, **arguments: object) -> tuple[bool, dict[str, object]]:
    result = client.run(lambda s: s.call_tool(f"memory_record_{tool}", arguments))
    return result.is_error, payload(result)


def test_record_tools_are_offered_beside_the_file_tools(client: McpClient) -> None:
    tools = {t.name: t for t in client.run(lambda s: s.list_tools()).tools}
    assert "memory_file_view" in tools and "memory_record_search" in tools
    assert tools["memory_file_view"].input_schema["properties"]["memory"]["enum"] == ["user"]
    assert tools["memory_record_search"].input_schema["properties"]["memory"]["enum"] == ["facts", "team"]
    assert tools["memory_record_add"].input_schema["properties"]["memory"]["enum"] == ["facts"]
    assert (
        tools["memory_record_search"].annotations is not None
        and tools["memory_record_search"].annotations.read_only_hint
    )
    assert (tools["memory_record_add"].meta or {}).get("io.gitmem/tool-id") == "memory.record.add"
    instructions = client.init.instructions or ""
    assert 'Memory "facts" (read and write' in instructions and 'Memory "team" (read only' in instructions


def test_records_round_trip_and_failures_are_flagged(client: McpClient, root: Path) -> None:
    failed, found = record_call(client, "search", memory="facts", query="which tea?")
    assert not failed and [r["text"] for r in found["records"]] == ["prefers green tea"]  # type: ignore[index]
    failed, added = record_call(client, "add", memory="facts", text="works in Berlin")
    assert not failed
    new_id = added["record"]["id"]  # type: ignore[index]
    store = RecordStore(Root(root).mount("facts", kind="record").sync, "alice")
    assert store.get(new_id).text == "works in Berlin"
    (entry,) = store.log(new_id)
    assert entry.origin.principal_id == "alice" and (entry.origin.tool_call_id or "").startswith("mcp-")
    failed, _ = record_call(client, "update", memory="facts", id=new_id, text="works in Hamburg")
    failed, history = record_call(client, "history", memory="facts", id=new_id)
    assert not failed and history["id"] == new_id
    changes = history["changes"]
    assert isinstance(changes, list) and [c["principal"] for c in changes] == ["alice", "alice"]
    assert changes[1]["commit"] == entry.commit and changes[0]["tool_call"] != changes[1]["tool_call"]
    failed, history = record_call(client, "history", memory="team", id=new_id)  # a read mount reads history
    assert not failed and history["changes"] == []
    assert RecordStore(store.store, "bob").search("berlin") == []  # the server's namespace only
    failed, error = record_call(client, "add", memory="team", text="x")
    assert failed and error["error"] == "forbidden"
    failed, error = record_call(client, "update", memory="facts", id="nope", text="x")
    assert failed and error == {"error": "record_not_found", "message": error["message"], "current": None}
    failed, error = client.call("view", memory="facts")
    assert failed and error["error"] in ("unknown_memory", "forbidden", "wrong_kind")


def test_recall_is_a_prompt(client: McpClient) -> None:
    names = [p.name for p in client.run(lambda s: s.list_prompts()).prompts]
    assert names == [CONTEXT_PROMPT, RECALL_PROMPT]

    def recall(text: str) -> str:
        result = client.run(lambda s: s.get_prompt(RECALL_PROMPT, {"input": text}))
        assert isinstance(result.messages[0].content, TextContent)
        return result.messages[0].content.text

    text = recall("I would like a tea")
    assert text.startswith('<memory-recall memory="facts" trust="untrusted">') and "prefers green tea" in text
    assert "black coffee" not in text
    assert recall("volcano") == NO_RECALL_TEXT

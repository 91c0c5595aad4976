"""The registry's tools driven by the ``anthropic`` SDK's own tool runner, beside the memory tool.

The API is a mock transport that answers scripted assistant messages; the runner
sends the tool definitions, runs the tool-use blocks through our tools and sends
their results back, as it would against the real API.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import httpx2
from anthropic import Anthropic

from adapters.test_anthropic_memory import message, use
from gitmem import Root
from gitmem.adapters.anthropic_memory import GitMemoryTool
from gitmem.adapters.anthropic_tools import registry_tools
from gitmem.model import Origin
from gitmem.tools import FileMemoryCapability, FileMount


def test_the_sdk_runner_calls_history_and_restore_with_tool_use_ids(tmp_path: Path) -> None:
    store = Root(tmp_path / "root").mount("claude", create=True)
    first = store.sync.write("prefs.md", "Reply in French.\n", expected=None)
    store.sync.write("prefs.md", "Reply in German.\n", expected=first)
    oldest = store.sync.log("prefs.md")[-1].commit
    capability = FileMemoryCapability([FileMount("claude", store)], tools=("view", "history", "show", "restore"))
    registry = capability.registry
    tools = registry_tools(registry, origin=Origin("run-1", "claude"))
    now = store.sync.read("prefs.md").version
    replies = [
        message(
            use("toolu_h", name="memory_file_history", memory="claude", path="prefs.md"),
            use(
                "toolu_bad",
                name="memory_file_restore",
                memory="claude",
                path="prefs.md",
                revision=oldest,
                version=first,
            ),
            use("toolu_r", name="memory_file_restore", memory="claude", path="prefs.md", revision=oldest, version=now),
            use("toolu_x", name="memory_file_history", memory="claude", limit="all"),
        ),
        message({"type": "text", "text": "Put back."}, stop="end_turn"),
    ]
    requests: list[dict[str, Any]] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        requests.append(json.loads(request.content))
        return httpx2.Response(200, json=replies[len(requests) - 1].model_dump(mode="json"))

    client = Anthropic(
        api_key="test", base_url="http://model.test", http_client=httpx2.Client(transport=httpx2.MockTransport(answer))
    )
    runner = client.beta.messages.tool_runner(
        model="claude-sonnet-5-5",
        max_tokens=512,
        system=registry.instructions,
        tools=[GitMemoryTool(store), *tools],
        messages=[{"role": "user", "content": "Undo the language change."}],
    )
    for reply in runner:
        tools.expect(reply)
    sent = requests[0]["tools"]
    assert sent[0] == {"type": "memory_20250818", "name": "memory"}
    assert sent[1:] == [t.as_json() for t in registry]  # the registry's one list, unchanged
    results = {r["tool_use_id"]: r for r in requests[1]["messages"][-1]["content"]}
    history = json.loads(results["toolu_h"]["content"])
    assert [c["commit"] for c in history["changes"]][-1] == oldest
    stale = json.loads(results["toolu_bad"]["content"])
    assert results["toolu_bad"]["is_error"] is True and stale["error"] == "version_mismatch"
    assert stale["current"]["content"] == "Reply in German.\n"
    assert json.loads(results["toolu_r"]["content"])["status"] == "restored"
    refused = json.loads(results["toolu_x"]["content"])
    assert results["toolu_x"]["is_error"] is True and refused["error"] == "invalid_arguments"
    assert store.sync.read("prefs.md").text == "Reply in French.\n"
    last = store.sync.log("prefs.md", limit=1)[0]
    assert last.op == "restore" and last.origin == Origin("run-1", "claude", "toolu_r")
    subprocess.run(["git", "fsck", "--strict"], cwd=store.path, check=True, capture_output=True)


def test_the_async_tools_answer_the_same(tmp_path: Path) -> None:
    store = Root(tmp_path / "root").mount("claude", create=True)
    store.sync.write("a.md", "green tea\n", expected=None)
    registry = FileMemoryCapability([FileMount("claude", store, "read")]).registry
    tools = registry_tools(registry, asynchronous=True)
    search = next(t for t in tools if t.name == "memory_file_search")
    found = json.loads(asyncio.run(search.call({"memory": "claude", "query": "tea"})))
    assert found["results"][0]["path"] == "a.md"
    assert not any(t.name == "memory_file_restore" for t in tools)  # a read mount

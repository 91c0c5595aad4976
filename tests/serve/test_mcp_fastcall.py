"""A plain ``tools/call`` over ``/mcp`` is answered without the SDK, exactly as the SDK answers it, behind every gate.

Raw HTTP against a real server on 127.0.0.1 (the bytes a client sends), the
answers compared with the SDK's own for the same call; then the shapes that must
still go to the SDK, checked on the function itself.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gitmem import Root
from gitmem.adapters import mcp_fastcall
from gitmem.adapters.http_front import GitHttpServer
from gitmem.adapters.http_server import GitHttpApp, load_tokens
from gitmem.adapters.mcp_http import McpHttpApp, WithMcp
from gitmem.adapters.mcp_server import MemoryMcpServer
from gitmem.adapters.tokens import token_entry
from gitmem.memstore import InMemoryFileStore
from gitmem.tools import FileMemoryCapability, FileMount

from .support import fsck_clean, seed

VERSION = "2025-06-18"


def token_of(who: str) -> str:
    return f"tok-{who}-fast-0123456789abcdef0123"


class Server:
    def __init__(self, root: Root, url: str, token_file: Path) -> None:
        self.root = root
        self.url = url
        self.token_file = token_file
        self.answered: list[bool] = []  # per tools/call seen by the fast path: answered there or not

    def post(self, body: object, who: str = "alice", session: str | None = None, **headers: str) -> tuple[int, Any]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        request = urllib.request.Request(self.url, data=data, method="POST")
        request.add_header("Content-Type", headers.pop("content_type", "application/json"))
        request.add_header("Accept", "application/json, text/event-stream")
        request.add_header("Authorization", f"Bearer {token_of(who)}")
        if session is not None:
            request.add_header("Mcp-Session-Id", session)
            request.add_header("MCP-Protocol-Version", headers.pop("version", VERSION))
        for key, value in headers.items():
            request.add_header(key.replace("_", "-"), value)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read()
                return response.status, (json.loads(text) if text else None, response.headers.get("mcp-session-id"))
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, (exc.read(), None)

    def open_session(self, who: str = "alice") -> str:
        hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                 "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
        status, (_, session) = self.post(hello, who)
        assert status == 200 and session
        status, _ = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, who, session)
        assert status == 202
        return str(session)


@contextmanager
def serving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, idle_timeout: float = 1800.0) -> Iterator[Server]:
    root = Root(tmp_path / "root")
    seed(root.mount("notes", create=True))
    token_file = tmp_path / "tokens.toml"
    token_file.write_text(token_entry(token_of("alice"), "alice", ["notes"], "write")
                          + token_entry(token_of("bob"), "bob", ["notes"], "write"))  # fmt: skip
    tokens = load_tokens(token_file, env={})
    mcp = McpHttpApp(root, tokens, max_body=64 * 1024, idle_timeout=idle_timeout)
    http = GitHttpServer(WithMcp(GitHttpApp(root, tokens=tokens), mcp), "127.0.0.1", 0, threads=4).start()
    served = Server(root, f"http://127.0.0.1:{http.port}/mcp", token_file)
    real = mcp_fastcall.tool_call

    def watched(*args: Any) -> bytes | None:
        answer = real(*args)
        if b'"tools/call"' in args[2]:
            served.answered.append(answer is not None)
        return answer

    monkeypatch.setattr(mcp_fastcall, "tool_call", watched)
    try:
        yield served
    finally:
        http.stop()


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    with serving(tmp_path, monkeypatch) as served:
        yield served


def call(n: int, name: str, **arguments: object) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def test_a_tool_call_is_answered_as_the_sdk_answers_it(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    session = server.open_session()
    view = {"memory": "notes", "path": "seed.md"}
    status, (fast, header) = server.post(call(1, "memory_file_view", **view), session=session)
    assert status == 200 and header == session and server.answered == [True]
    fast_write = server.post(call(2, "memory_file_create", memory="notes", path="a.md", content="one\n"), session=session)
    refused = server.post(call(3, "memory_file_create", memory="notes", path="a.md", content="two\n"), session=session)
    assert server.answered == [True, True, True]
    monkeypatch.setattr(mcp_fastcall, "tool_call", lambda *args: None)  # the SDK answers from here on
    status, (slow, header) = server.post(call(1, "memory_file_view", **view), session=session)
    assert status == 200 and header == session
    assert fast == slow  # the very same JSON-RPC response
    slow_write = server.post(call(2, "memory_file_create", memory="notes", path="b.md", content="one\n"), session=session)
    slow_refused = server.post(call(3, "memory_file_create", memory="notes", path="b.md", content="two\n"), session=session)
    for one, other in ((fast_write, slow_write), (refused, slow_refused)):
        assert one[0] == other[0] == 200
        mine, theirs = one[1][0]["result"], other[1][0]["result"]
        assert mine.keys() == theirs.keys() and mine["isError"] == theirs["isError"]
        assert mine["structuredContent"].keys() == theirs["structuredContent"].keys()
        assert json.loads(mine["content"][0]["text"]) == mine["structuredContent"]
    assert fast_write[1][0]["result"]["structuredContent"]["branch"] == "main"
    assert refused[1][0]["result"]["structuredContent"]["error"] == "already_exists"
    store = server.root.mount("notes").sync
    assert store.read("a.md").text == "one\n"
    assert store.log("a.md")[0].origin.tool_call_id.endswith("-2")  # the JSON-RPC id names the call, as before
    fsck_clean(server.root.mount_path("notes"))


def test_every_gate_holds_on_a_tool_call(server: Server) -> None:
    session = server.open_session()
    write = call(1, "memory_file_create", memory="notes", path="x.md", content="x\n")
    assert server.post(write, "bob", session)[0] == 404  # another token's session does not exist
    assert server.post(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "' + b"a" * 70_000
                       + b'"}}', session=session)[0] == 413  # fmt: skip
    assert server.post(write, session=session, Origin="https://evil.example")[0] == 403
    server.token_file.write_text(token_entry(token_of("bob"), "bob", ["notes"], "write"))  # alice revoked
    assert server.post(write, session=session)[0] == 401  # at the very next request
    assert server.answered == []  # none of them reached the tool
    assert "x.md" not in [e.path for e in server.root.mount("notes").sync.list()]


def test_an_unknown_tool_and_an_old_protocol_go_to_the_sdk(server: Server) -> None:
    session = server.open_session()
    status, (unknown, _) = server.post(call(1, "no_such_tool"), session=session)
    assert status == 200 and unknown["error"]["code"] == -32602  # the protocol's own answer
    status, (old, _) = server.post(call(2, "memory_file_view", memory="notes", path="seed.md"), session=session,
                                   version="2025-03-26")  # fmt: skip
    assert status == 200 and not old["result"]["isError"]
    assert server.answered == [False, False]


def test_a_session_busy_only_with_tool_calls_stays_and_an_idle_one_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serving(tmp_path, monkeypatch, idle_timeout=1.0) as server:
        busy, idle = server.open_session(), server.open_session()
        view = call(1, "memory_file_view", memory="notes", path="seed.md")
        began = time.monotonic()
        while time.monotonic() - began < 2.5:  # past the idle timeout, in tool calls only
            assert server.post(view, session=busy)[0] == 200
            time.sleep(0.1)
        assert all(server.answered)
        listed = server.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session=busy)
        assert listed[0] == 200 and listed[1][0]["result"]["tools"]  # the SDK still has the session
        assert server.post(view, session=idle)[0] == 404  # ended: its client starts a new one


@pytest.fixture
def memory() -> MemoryMcpServer:
    store = InMemoryFileStore()
    store.write("a.md", "hello\n", expected=None)
    return MemoryMcpServer(FileMemoryCapability([FileMount("notes", store, "write")]))


HEADERS = {"HTTP_MCP_PROTOCOL_VERSION": VERSION, "CONTENT_TYPE": "application/json", "HTTP_ACCEPT": "application/json"}
GOOD: dict[str, Any] = call(7, "memory_file_view", memory="notes", path="a.md")


def test_the_plain_shape_is_answered_here(memory: MemoryMcpServer) -> None:
    answer = mcp_fastcall.tool_call(memory, HEADERS, json.dumps(GOOD).encode())
    assert answer is not None
    data = json.loads(answer)
    assert data["id"] == 7 and data["result"]["structuredContent"]["content"] == "hello\n"
    for accept in ("*/*", "application/*;q=0.5", "text/event-stream, Application/JSON"):
        assert mcp_fastcall.tool_call(memory, {**HEADERS, "HTTP_ACCEPT": accept}, json.dumps(GOOD).encode())


@pytest.mark.parametrize(
    ("environ", "body"),
    [
        ({**HEADERS, "HTTP_MCP_PROTOCOL_VERSION": "2024-11-05"}, GOOD),  # results without structuredContent
        ({k: v for k, v in HEADERS.items() if k != "HTTP_MCP_PROTOCOL_VERSION"}, GOOD),
        ({**HEADERS, "CONTENT_TYPE": "text/plain"}, GOOD),
        ({**HEADERS, "CONTENT_TYPE": "Application/JSON"}, GOOD),  # the SDK refuses it: so it answers
        ({**HEADERS, "HTTP_ACCEPT": "text/event-stream"}, GOOD),
        (HEADERS, [GOOD]),  # a batch
        (HEADERS, {k: v for k, v in GOOD.items() if k != "id"}),  # a notification
        (HEADERS, {**GOOD, "id": True}),
        (HEADERS, {**GOOD, "id": None}),
        (HEADERS, {**GOOD, "jsonrpc": "1.0"}),
        (HEADERS, {**GOOD, "extra": 1}),
        (HEADERS, {**GOOD, "method": "tools/list"}),
        (HEADERS, {**GOOD, "params": {**GOOD["params"], "task": {}}}),
        (HEADERS, {**GOOD, "params": {**GOOD["params"], "_meta": []}}),
        (HEADERS, {**GOOD, "params": {**GOOD["params"], "arguments": ["notes"]}}),
        (HEADERS, {**GOOD, "params": {"name": "memory_file_nope", "arguments": {}}}),
        (HEADERS, {**GOOD, "params": {"name": 5}}),
    ],
)
def test_anything_else_goes_to_the_sdk(memory: MemoryMcpServer, environ: dict[str, str], body: object) -> None:
    assert mcp_fastcall.tool_call(memory, environ, json.dumps(body).encode()) is None


def test_broken_or_deep_json_goes_to_the_sdk(memory: MemoryMcpServer) -> None:
    assert mcp_fastcall.tool_call(memory, HEADERS, b'{"method": "tools/call", ') is None
    deep = b'{"method": "tools/call", "params": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert mcp_fastcall.tool_call(memory, HEADERS, deep) is None


@pytest.mark.parametrize(
    "body",
    [
        {**GOOD, "id": "a\ud800"},
        {**GOOD, "params": {**GOOD["params"], "arguments": {"memory": "notes", "path": "a\udc80.md"}}},
        {**GOOD, "params": {**GOOD["params"], "_meta": {"k": "\ud800"}}},
    ],
)
def test_a_lone_surrogate_anywhere_goes_to_the_sdk(memory: MemoryMcpServer, body: object) -> None:
    """The SDK refuses a ``\\ud800`` escape as a parse error; Python's json reads it: the SDK answers."""
    raw = json.dumps(body).encode()  # ensure_ascii: the surrogate travels as an escape, as a client would send it
    assert b"\\ud" in raw
    assert mcp_fastcall.tool_call(memory, HEADERS, raw) is None


def test_escaped_text_is_still_answered_here(memory: MemoryMcpServer) -> None:
    raw = json.dumps({**GOOD, "id": "caf\u00e9-\U0001f600"}).encode()  # escapes, all of them text
    answer = mcp_fastcall.tool_call(memory, HEADERS, raw)
    assert answer is not None and json.loads(answer)["id"] == "caf\u00e9-\U0001f600"

"""``/mcp`` sessions of clients that never end them: they cannot lock a token out.

MCP clients seen in the wild (the Inspector, ``mcp-remote``, Claude Code's health
checks) open a session and walk away without ``DELETE /mcp``. A token keeps at
most ``max_sessions``; one more closes the least recently used idle session, so
any number of such connects in a row succeed and the server holds a bounded
number of MCP servers. Only when every session is busy is a connect refused, with
a ``Retry-After`` by which a busy request is over.
"""

from __future__ import annotations

import gc
import json
import threading
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitmem import Root
from gitmem.adapters.http_front import GitHttpServer
from gitmem.adapters.http_server import GitHttpApp, load_tokens
from gitmem.adapters.mcp_http import McpHttpApp, WithMcp
from gitmem.adapters.mcp_server import MemoryMcpServer
from gitmem.adapters.tokens import Grant, token_entry

from .support import seed

TOKEN = "tok-alice-sessions-0123456789abcdef"
OTHER = "tok-bob-sessions-0123456789abcdef01"
HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "never-closes", "version": "1"},
    },
}


class Served:
    def __init__(self, server: GitHttpServer, app: McpHttpApp) -> None:
        self.server = server
        self.app = app
        self.url = f"http://127.0.0.1:{server.port}/mcp"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    root = Root(tmp_path / "root")
    seed(root.mount("notes", create=True))
    token_file = tmp_path / "tokens.toml"
    token_file.write_text(
        token_entry(TOKEN, "alice", ["notes"], "write") + token_entry(OTHER, "bob", ["notes"], "write"),
        encoding="utf-8",
    )
    tokens = load_tokens(token_file, env={})
    app = McpHttpApp(root, tokens, max_sessions=8)
    server = GitHttpServer(WithMcp(GitHttpApp(root, tokens=tokens), app), "127.0.0.1", 0, threads=8).start()
    try:
        yield Served(server, app)
    finally:
        server.stop()


def post(url: str, body: object, token: str = TOKEN, session: str | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json, text/event-stream")
    request.add_header("Authorization", f"Bearer {token}")
    if session is not None:
        request.add_header("Mcp-Session-Id", session)
        request.add_header("MCP-Protocol-Version", "2025-06-18")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, dict(exc.headers), exc.read()


def connect(url: str, token: str = TOKEN) -> str:
    """What a health check does: initialize, say initialized, list the tools; never DELETE."""
    status, headers, body = post(url, HELLO, token)
    assert status == 200, body
    session = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
    assert post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, token, session)[0] == 202
    return session


def tools_list(url: str, session: str, token: str = TOKEN) -> tuple[int, bytes]:
    status, _, body = post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, token, session)
    return status, body


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def test_hundreds_of_connects_that_never_close_all_succeed_with_bounded_memory(served: Served) -> None:
    """300 connects hold 8 sessions: a connect's MCP server or session left alive would be 290 too many.

    The memory bound is 80 KiB a connect, about the 64 KiB a connect of the 1000 this
    took before (300 grow the process by some 6 MiB of allocator slack).
    """
    made: weakref.WeakSet[MemoryMcpServer] = weakref.WeakSet()
    build = served.app.memory_server

    def tracked(grant: Grant, topic: str = "mcp", *, watched: bool = True) -> MemoryMcpServer:
        server = build(grant, topic, watched=watched)
        made.add(server)
        return server

    served.app.memory_server = tracked  # type: ignore[method-assign]
    for _ in range(50):  # warm up: imports, caches and the loop are the same for every later connect
        connect(served.url)
    gc.collect()
    before = rss_kib()
    sessions = [connect(served.url) for _ in range(300)]
    gc.collect()
    grown = rss_kib() - before
    assert served.app.session_count() == 8
    assert len(made) <= 8 + 2, f"{len(made)} MCP servers are still alive after 300 connects"
    assert grown < 24 * 1024, f"the server grew by {grown} KiB over 300 connects"
    # The newest sessions are the ones kept and still work; an evicted one is told to start again.
    status, body = tools_list(served.url, sessions[-1])
    assert status == 200 and b"memory_file_view" in body
    status, body = tools_list(served.url, sessions[0])
    assert status == 404 and b"Session not found" in body


def test_the_least_recently_used_session_is_the_one_closed(served: Served) -> None:
    first = [connect(served.url) for _ in range(8)]
    assert tools_list(served.url, first[0])[0] == 200  # first[0] is now the most recently used
    connect(served.url)  # one past the limit: first[1] has been idle longest
    assert tools_list(served.url, first[1])[0] == 404
    assert tools_list(served.url, first[0])[0] == 200
    assert all(tools_list(served.url, s)[0] == 200 for s in first[2:])
    # Another token's sessions are its own: alice's connects never close bob's.
    bob = connect(served.url, OTHER)
    for _ in range(10):
        connect(served.url)
    assert tools_list(served.url, bob, OTHER)[0] == 200


def test_when_every_session_is_busy_a_connect_is_told_truly_when_to_retry(served: Served) -> None:
    served.app.max_sessions = 1
    served.app.call_timeout = 30.0
    busy = connect(served.url)
    session = served.app._sessions[busy]
    entered, release = threading.Event(), threading.Event()
    call = session.server.registry.call

    def slow(*args: Any, **kwargs: Any) -> dict[str, Any]:
        entered.set()
        release.wait(60)
        return call(*args, **kwargs)

    session.server.registry.call = slow  # type: ignore[method-assign]
    view = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "memory_file_view", "arguments": {"memory": "notes", "path": ""}}}  # fmt: skip
    answers: list[tuple[int, dict[str, str], bytes]] = []
    worker = threading.Thread(target=lambda: answers.append(post(served.url, view, session=busy)))
    worker.start()
    try:
        assert entered.wait(30)
        started = time.monotonic()
        status, headers, body = post(served.url, HELLO)
        assert status == 429, body
        wait = int(headers["Retry-After"])
        assert 0 < wait <= 30  # the busy call is cut off at call_timeout, so a slot is free by then
        assert "in flight" in json.loads(body)["error"]["message"]
    finally:
        release.set()
        worker.join(60)
    assert answers and answers[0][0] == 200
    assert time.monotonic() - started < wait
    connect(served.url)  # the call is over: its session is idle and gives way
    assert tools_list(served.url, busy)[0] == 404


LIST_2026 = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/list",
    "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    },
}


def test_session_less_requests_keep_at_most_max_sessions_servers_per_token(served: Served) -> None:
    """A 2026-era client sends no session id: the server it gets is kept per topic and scope
    it names, and a token naming ever new scopes still holds at most ``max_sessions`` of them."""

    def call(scope: str) -> int:
        request = urllib.request.Request(
            served.url, data=json.dumps(LIST_2026).encode(), method="POST"
        )
        request.add_header("Content-Type", "application/json")
        request.add_header("Accept", "application/json, text/event-stream")
        request.add_header("Authorization", f"Bearer {TOKEN}")
        request.add_header("MCP-Protocol-Version", "2026-07-28")
        request.add_header("Mcp-Method", "tools/list")
        request.add_header("Gitmem-Scope", scope)
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status

    for n in range(3 * served.app.max_sessions):
        assert call(f"scope-{n}") == 200
        with served.app._lock:
            kept = len(served.app._shared)
        assert kept <= served.app.max_sessions
    assert call("scope-0") == 200  # one evicted is made again when asked for

"""MCP over streamable HTTP at ``/mcp`` of ``gitmem serve``, with the real ``mcp`` client.

The same server and port serve git; each token sees only its memories, at its
access, and every write is committed as the token's principal.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult

from bench.mcp_http_client import HttpMcpClient, payload
from gitmem import Root
from gitmem.adapters.http_front import GitHttpServer
from gitmem.adapters.http_server import GitHttpApp, load_tokens
from gitmem.adapters.mcp_http import McpHttpApp, WithMcp
from gitmem.adapters.tokens import parse_token_file, token_entry
from gitmem.git.review import PROPOSALS

from .support import fsck_clean, git, seed

PEOPLE = {
    "alice": (["notes"], "write"),
    "nobody": (["absent-*"], "write"),
    "bob": (["notes"], "read"),
    "carol": (["notes"], "propose"),
    "eve": (["other"], "write"),
}


def token_of(who: str) -> str:
    return f"tok-{who}-http-0123456789abcdef01234"


class Served:
    def __init__(self, root: Root, server: GitHttpServer, app: McpHttpApp, token_file: Path) -> None:
        self.root = root
        self.server = server
        self.app = app
        self.token_file = token_file

    @property
    def mcp_url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}/mcp"

    def client(self, who: str) -> HttpMcpClient:
        return HttpMcpClient(self.mcp_url, token_of(who))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    root = Root(tmp_path / "root")
    for name in ("notes", "other"):
        seed(root.mount(name, create=True))
    text = "".join(token_entry(token_of(w), w, m, a) for w, (m, a) in PEOPLE.items())  # type: ignore[arg-type]
    token_file = tmp_path / "tokens.toml"
    token_file.write_text(text, encoding="utf-8")
    tokens = load_tokens(token_file, env={})
    mcp = McpHttpApp(root, tokens)
    server = GitHttpServer(WithMcp(GitHttpApp(root, tokens=tokens), mcp), "127.0.0.1", 0, threads=8).start()
    try:
        yield Served(root, server, mcp, token_file)
    finally:
        server.stop()


def post(url: str, body: object, headers: dict[str, str], method: str = "POST") -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method=method)
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json, text/event-stream")
    for key, value in headers.items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()


def test_list_view_create_edit_and_history_as_the_tokens_principal(served: Served, tmp_path: Path) -> None:
    with served.client("alice") as alice:
        assert alice.memories() == ["notes"]
        assert "memory_file_create" in alice.tool_names()
        listing = payload(alice.call("memory_file_view", memory="notes", path=""))
        assert "seed.md" in json.dumps(listing)
        created = alice.call("memory_file_create", memory="notes", path="team/plan.md", content="step one\n")
        assert not created.is_error, created
        edited = alice.call(
            "memory_file_edit", memory="notes", path="team/plan.md", old_string="step one", new_string="step two"
        )
        assert not edited.is_error, edited
        assert payload(alice.call("memory_file_view", memory="notes", path="team/plan.md"))["content"] == "step two\n"
    store = served.root.mount("notes").sync
    history = store.log("team/plan.md")
    assert [e.op for e in history] == ["edit", "create"]
    assert {e.origin.principal_id for e in history} == {"alice"}
    assert {e.origin.run_id for e in history} == {"alice/mcp"}  # one run per principal and topic
    author = git("log", "-1", "--format=%an", "main", cwd=served.root.mount_path("notes")).stdout.strip()
    assert author == "alice"
    # The same server and port serve git: a clone sees the MCP write.
    url = f"http://alice:{token_of('alice')}@127.0.0.1:{served.server.port}/notes.git"
    git("clone", "-q", url, str(tmp_path / "clone"))
    assert (tmp_path / "clone" / "team" / "plan.md").read_text() == "step two\n"
    fsck_clean(served.root.mount_path("notes"))


def test_a_read_token_gets_no_write_and_is_refused_one(served: Served) -> None:
    head = served.root.mount("notes").sync.head()
    with served.client("bob") as bob:
        names = bob.tool_names()
        assert "memory_file_view" in names and "memory_file_create" not in names
        with pytest.raises(MCPError) as refused:  # a tool this session does not offer: the protocol's error
            bob.call("memory_file_create", memory="notes", path="bob.md", content="no\n")
        assert refused.value.error.code == -32602
        assert payload(bob.call("memory_file_view", memory="notes", path="seed.md"))["content"].endswith("hello\n")
    assert served.root.mount("notes").sync.head() == head


def test_a_propose_tokens_write_lands_on_its_proposal(served: Served) -> None:
    store = served.root.mount("notes").sync
    head = store.head()
    with served.client("carol") as carol:
        done = carol.call("memory_file_create", memory="notes", path="idea.md", content="carol's idea\n")
        assert not done.is_error, done
        assert payload(done)["branch"] == "proposals/carol/mcp"  # the reply says where the write went
        # carol reads her own proposal; main does not have it.
        assert payload(carol.call("memory_file_view", memory="notes", path="idea.md"))["content"] == "carol's idea\n"
    assert store.head() == head
    branches = git("for-each-ref", "--format=%(refname)", PROPOSALS, cwd=served.root.mount_path("notes")).stdout.split()
    assert branches == [PROPOSALS + "carol/mcp"]
    shown = git("show", f"{branches[0]}:idea.md", cwd=served.root.mount_path("notes")).stdout
    assert shown == "carol's idea\n"


def test_two_clients_racing_on_one_file_one_wins_the_other_sees_the_file(served: Served) -> None:
    store = served.root.mount("notes").sync
    store.write("shared.md", "owner: nobody\n", expected=None)
    with served.client("alice") as first, served.client("alice") as second:
        assert first.session is not None and second.session is not None
        calls: list[Future[CallToolResult]] = [
            client.submit(
                client.session.call_tool(  # type: ignore[union-attr]
                    "memory_file_edit",
                    {"memory": "notes", "path": "shared.md", "old_string": "nobody", "new_string": who},
                )
            )
            for client, who in ((first, "first"), (second, "second"))
        ]
        results = [c.result(timeout=60) for c in calls]
    errors = [r for r in results if r.is_error]
    assert len(errors) == 1, results
    now = store.read("shared.md").text
    assert now in ("owner: first\n", "owner: second\n")
    assert payload(errors[0])["current"]["content"] == now  # the loser is shown the file as it is now


def test_tokens_sessions_and_methods_are_checked(served: Served) -> None:
    url = served.mcp_url
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    assert post(url, hello, {})[0] == 401
    assert post(url, hello, {"Authorization": "Bearer not-a-token"})[0] == 401
    with served.client("eve") as eve:
        assert eve.memories() == ["other"]  # notes does not exist for eve
        refused = eve.call("memory_file_view", memory="notes", path="")
        assert refused.is_error and "notes" not in eve.memories()
    with served.client("alice") as alice:
        assert alice.session is not None
        sessions = list(served.app._sessions)
        assert len(sessions) == 1
        stolen = post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                      {"Authorization": f"Bearer {token_of('bob')}", "Mcp-Session-Id": sessions[0],
                       "MCP-Protocol-Version": "2025-06-18"})  # fmt: skip
        assert stolen[0] == 404  # another token's session is not found
    get = urllib.request.Request(url, headers={"Authorization": f"Bearer {token_of('alice')}"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(get, timeout=30)
    assert caught.value.code == 405
    caught.value.close()
    assert served.app.session_count() == 0  # closing a client ended its session


def _prompt(client: HttpMcpClient) -> str:
    assert client.session is not None
    result = client.run(client.session.get_prompt("memory_context", {}))
    return "".join(getattr(m.content, "text", "") for m in result.messages)


def test_context_cursors_are_per_client_session(served: Served) -> None:
    with served.client("alice") as first:
        full = _prompt(first)
        assert "seed.md" in full
        again = _prompt(first)
        assert "seed.md" not in again, "the same session's second context should carry only changes"
        with served.client("alice") as second:
            assert _prompt(second) == full  # a new session starts from the full context


def test_a_modern_era_client_is_served_without_a_session(served: Served) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def use() -> tuple[list[str], bool]:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token_of('alice')}"})
        async with http, Client(streamable_http_client(served.mcp_url, http_client=http), mode="auto") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            done = await client.call_tool("memory_file_create", {"memory": "notes", "path": "m.md", "content": "m\n"})
            return names, done.is_error

    import asyncio

    names, failed = asyncio.run(use())
    assert "memory_file_create" in names and not failed
    entry = served.root.mount("notes").sync.log("m.md")[0]
    assert entry.origin.principal_id == "alice"


def test_unreached_memories_look_like_absent_ones(served: Served) -> None:
    with served.client("eve") as eve:
        unreached = payload(eve.call("memory_file_view", memory="notes", path=""))
        absent = payload(eve.call("memory_file_view", memory="nothing", path=""))
    assert unreached["error"] == absent["error"]
    assert unreached["message"].replace("notes", "X") == absent["message"].replace("nothing", "X")
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    status, _ = post(served.mcp_url, hello, {"Authorization": f"Bearer {token_of('nobody')}"})
    assert status == 403


def test_a_token_holds_a_bounded_number_of_sessions(served: Served) -> None:
    served.app.max_sessions = 2
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    auth = {"Authorization": f"Bearer {token_of('alice')}"}
    with served.client("alice") as older, served.client("alice") as newer:
        with served.client("bob") as bob:  # another token's sessions do not count against alice's
            assert post(served.mcp_url, hello, auth)[0] == 200  # past the limit: the oldest idle one gives way
            assert served.app.session_count() == 3
            assert bob.memories() == ["notes"] and newer.memories() == ["notes"]
            with pytest.raises(MCPError, match="Session not found"):
                older.memories()


def test_a_session_ends_when_the_token_file_changes_what_its_token_may_do(served: Served) -> None:
    with served.client("alice") as alice:
        assert "memory_file_create" in alice.tool_names()
        people = {**PEOPLE, "alice": (["notes"], "read")}
        text = "".join(token_entry(token_of(w), w, m, a) for w, (m, a) in people.items())  # type: ignore[arg-type]
        served.token_file.write_text(text, encoding="utf-8")
        with pytest.raises(MCPError, match="Session not found"):  # the client starts again, as after a restart
            alice.call("memory_file_create", memory="notes", path="late.md", content="no\n")
    assert "late.md" not in [e.path for e in served.root.mount("notes").sync.list()]
    with served.client("alice") as again:  # a new session, under the narrowed grant
        names = again.tool_names()
        assert "memory_file_view" in names and "memory_file_create" not in names


def test_record_memories_are_served_in_each_principals_namespace(tmp_path: Path) -> None:
    root = Root(tmp_path / "root")
    root.mount("people", create=True, kind="record")
    seed(root.mount("notes", create=True))
    team = {"rita": (["people", "notes"], "write"), "rob": (["people"], "read"), "pam": (["people"], "propose")}
    tokens = parse_token_file("".join(token_entry(token_of(w), w, m, a) for w, (m, a) in team.items()))  # type: ignore[arg-type]
    server = GitHttpServer(WithMcp(GitHttpApp(root, tokens=tokens), McpHttpApp(root, tokens)), "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{server.port}/mcp"
    try:
        with HttpMcpClient(url, token_of("rita")) as rita:
            names = rita.tool_names()
            assert "memory_record_add" in names and "memory_file_view" in names
            added = rita.call("memory_record_add", memory="people", text="prefers green tea")
            assert not added.is_error, added
            found = payload(rita.call("memory_record_search", memory="people", query="tea"))
            assert "prefers green tea" in json.dumps(found)
        with HttpMcpClient(url, token_of("rob")) as rob:
            names = rob.tool_names()
            assert "memory_record_search" in names and "memory_record_add" not in names
            assert "memory_file_view" not in names  # rob reaches no file memory
            theirs = payload(rob.call("memory_record_search", memory="people", query="tea"))
            assert "green tea" not in json.dumps(theirs)  # rita's records are in rita's namespace
            with pytest.raises(MCPError) as refused:
                rob.call("memory_record_add", memory="people", text="no")
            assert refused.value.error.code == -32602
        main_before = root.mount("people").sync.head()
        with HttpMcpClient(url, token_of("pam")) as pam:
            proposed = pam.call("memory_record_add", memory="people", text="wants a standing desk")
            assert not proposed.is_error, proposed
            assert payload(proposed)["branch"] == "proposals/pam/mcp"
        assert root.mount("people").sync.head() == main_before  # a proposal, never main
        branches = git("for-each-ref", "--format=%(refname)", PROPOSALS, cwd=root.mount_path("people")).stdout.split()
        assert branches == [f"{PROPOSALS}pam/mcp"], branches
    finally:
        server.stop()
    store = root.mount("people").sync
    entry = store.log()[0]
    assert entry.origin.principal_id == "rita" and entry.origin.run_id == "rita/mcp"
    from gitmem.records import RecordStore

    assert [r.text for r in RecordStore(store, "rita").search("tea")] == ["prefers green tea"]
    fsck_clean(root.mount_path("people"))


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_capabilities_are_truthful_and_a_writes_ids_name_one_session(served: Served, mode: str) -> None:
    """No list-changed notifications and no subscriptions over HTTP; the run id and the tool call id agree."""
    import asyncio

    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def use() -> tuple[str, Any, bool]:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token_of('alice')}"})
        async with http, Client(streamable_http_client(served.mcp_url, http_client=http), mode=mode) as client:
            done = await client.call_tool("memory_file_create", {"memory": "notes", "path": f"{mode}.md", "content": "x\n"})
            return client.protocol_version, client.server_capabilities, done.is_error

    version, caps, failed = asyncio.run(use())
    assert not failed and (version == "2026-07-28") is (mode == "auto")
    for declared in (caps.tools, caps.prompts, caps.resources):
        assert declared is not None and declared.list_changed is False
    # A session (handshake era) has a GET event stream to be told on; the 2026 era's requests have none.
    assert caps.resources.subscribe is (mode == "legacy")
    origin = served.root.mount("notes").sync.log(f"{mode}.md")[0].origin
    assert origin.run_id is not None and origin.tool_call_id is not None
    assert origin.run_id == "alice/mcp"
    assert re.fullmatch(r"mcp-[0-9a-f]{8}-\S+", origin.tool_call_id), origin.tool_call_id  # names the session


def test_oauth_discovery_and_a_bad_token_say_that_bearer_tokens_are_used(served: Served) -> None:
    """What ``mcp-remote`` and other OAuth-aware clients probe gets a JSON answer about tokens, not git's 404."""
    base = f"http://127.0.0.1:{served.server.port}"
    for path in (
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-authorization-server/mcp",
        "/.well-known/openid-configuration",
        "/register",
    ):
        method = "POST" if path == "/register" else "GET"
        status, body = post(base + path, {}, {}, method=method) if method == "POST" else get(base + path)
        assert status == 404, path
        answer = json.loads(body)
        assert answer["error"] == "not_found" and "bearer tokens, not OAuth" in answer["error_description"], path
        assert "repository" not in answer["error_description"]
    assert get(base + "/nothing.git/info/refs?service=git-upload-pack")[0] in (401, 404)  # git's paths are git's
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    for headers, word in (({}, "needs 'Authorization: Bearer <token>'"), ({"Authorization": "Bearer nope"}, "not accepted")):
        request = urllib.request.Request(served.mcp_url, data=json.dumps(hello).encode(), method="POST")
        for key, value in {"Content-Type": "application/json", **headers}.items():
            request.add_header(key, value)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        with refused.value as response:
            assert response.code == 401
            assert response.headers["WWW-Authenticate"].startswith("Bearer ")
            answer = json.loads(response.read())
        assert word in answer["error"]["message"] and answer["error_description"] == answer["error"]["message"]


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()


class LoseInitialized:
    """A loopback relay to ``port`` that ends, unanswered, the connection carrying an ``initialized``
    notification, as a server process killed with that request in flight does (its client reads
    the end of the connection where the answer should be)."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.lost = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                near, _ = self.listener.accept()
            except OSError:  # closed: the test is over
                return
            far = socket.create_connection(("127.0.0.1", self.target), timeout=30)
            threading.Thread(target=self._relay, args=(near, far, True), daemon=True).start()
            threading.Thread(target=self._relay, args=(far, near, False), daemon=True).start()

    def _relay(self, source: socket.socket, sink: socket.socket, from_client: bool) -> None:
        try:
            while data := source.recv(65536):
                if from_client and b"notifications/initialized" in data:
                    self.lost.set()
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
                end.close()

    def close(self) -> None:
        self.listener.close()


def test_the_test_client_opens_only_once_the_server_took_its_whole_handshake(served: Served) -> None:
    """The mcp SDK's ``initialize()`` returns before its ``initialized`` notification is sent, and
    a failed send ends the client's transport: a client the tests had opened was then found closed
    at its first call (after a worker it had just talked to was killed, test_serve_workers.py).
    Opened, a client's handshake is over, or it did not open."""
    relay = LoseInitialized(served.server.port)
    try:
        client = HttpMcpClient(f"http://127.0.0.1:{relay.port}/mcp", token_of("alice"))
        with pytest.raises(MCPError, match="Connection closed"):
            client.__enter__()
        assert relay.lost.is_set()
    finally:
        relay.close()
    with served.client("alice") as client:  # straight to the server, the same client opens and works
        assert not client.call("memory_file_view", memory="notes", path="").is_error

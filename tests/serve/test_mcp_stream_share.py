"""The event streams of a worker are shared among tokens: one token cannot take them all.

Each ``GET /mcp`` stream holds a thread, so a worker keeps ``max_streams`` of
them. Agents are the official ``mcp`` client, which opens its session's stream
after the handshake. A ``read`` token's clients holding every place must not
leave another principal's agent without change notifications.
"""

from __future__ import annotations

import queue
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from bench.mcp_http_client import HttpMcpClient
from gitmem import Root
from gitmem.adapters.http_front import GitHttpServer
from gitmem.adapters.http_server import GitHttpApp, load_tokens
from gitmem.adapters.mcp_http import McpHttpApp, WithMcp
from gitmem.adapters.tokens import hash_token, token_entry
from gitmem.errors import MemoryStoreError

from .support import seed

ROB = "tok-rob-stream-share-0123456789abcdef"
ALICE = "tok-alice-stream-share-0123456789abcd"
CONTEXT = "memory://notes/context"
STREAMS = 2
WAIT = 20.0  # a liveness bound for one notification or one stream's end on a loaded machine


class Served:
    def __init__(self, server: GitHttpServer, app: McpHttpApp) -> None:
        self.app = app
        self.url = f"http://127.0.0.1:{server.port}/mcp"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with serve(tmp_path, STREAMS) as server:
        yield server


@contextmanager
def serve(tmp_path: Path, streams: int) -> Iterator[Served]:
    root = Root(tmp_path / "root")
    seed(root.mount("notes", create=True))
    token_file = tmp_path / "tokens.toml"
    token_file.write_text(
        token_entry(ROB, "rob", ["notes"], "read") + token_entry(ALICE, "alice", ["notes"], "write"), encoding="utf-8"
    )
    tokens = load_tokens(token_file, env={})
    app = McpHttpApp(root, tokens, max_streams=streams)
    server = GitHttpServer(WithMcp(GitHttpApp(root, tokens=tokens), app), "127.0.0.1", 0, threads=4 + streams).start()
    try:
        yield Served(server, app)
    finally:
        server.stop()


def wait_for(check: object, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_token_holding_every_stream_gives_one_up_to_another_principal(served: Served) -> None:
    with HttpMcpClient(served.url, ROB) as first, HttpMcpClient(served.url, ROB) as second:
        wait_for(lambda: served.app.stream_count() == STREAMS, "rob's clients did not open their streams")
        with HttpMcpClient(served.url, ALICE) as alice:
            alice.subscribe(CONTEXT)
            made = alice.call("memory_file_create", memory="notes", path="plan.md", content="one\n")
            assert not made.is_error, made
            uri, _ = alice.updates.get(timeout=WAIT)
            assert uri == CONTEXT
            # The place alice took was rob's longest open stream, which ended: the worker holds its limit again.
            wait_for(lambda: served.app.stream_count() <= STREAMS, "the stream that gave its place did not end")
            # A third rob client gets no stream (rob holds its share) and works without one.
            with HttpMcpClient(served.url, ROB) as third:
                assert "notes" in third.memories()
                made = alice.call("memory_file_create", memory="notes", path="two.md", content="two\n")
                assert not made.is_error, made
                uri, _ = alice.updates.get(timeout=WAIT)
                assert uri == CONTEXT
                assert served.app.stream_count() <= STREAMS
            assert first.tool_names() and second.tool_names()  # rob's sessions go on, streams or not


def test_a_token_cannot_push_out_a_stream_while_it_holds_its_share(served: Served) -> None:
    with HttpMcpClient(served.url, ALICE) as alice, HttpMcpClient(served.url, ROB) as rob:
        wait_for(lambda: served.app.stream_count() == STREAMS, "the clients did not open their streams")
        alice.subscribe(CONTEXT)
        with HttpMcpClient(served.url, ROB), HttpMcpClient(served.url, ROB):  # refused: rob holds one, alice one
            time.sleep(1.5)  # longer than a stream's check: a stream told to end would have ended
            assert served.app.stream_count() == STREAMS
            made = alice.call("memory_file_create", memory="notes", path="kept.md", content="kept\n")
            assert not made.is_error, made
            uri, _ = alice.updates.get(timeout=WAIT)
            assert uri == CONTEXT
        with pytest.raises(queue.Empty):
            rob.updates.get(timeout=0.2)  # rob never subscribed


def test_a_second_stream_of_one_session_never_ends_another_token_s(tmp_path: Path) -> None:
    """The SDK refuses a second stream of a session (409); asked for before a place was taken, each
    such request by a token holding two fewer streams than another ended one of that token's."""
    with serve(tmp_path, 4) as served, ExitStack() as stack:
        for _ in range(3):
            stack.enter_context(HttpMcpClient(served.url, ALICE))
        stack.enter_context(HttpMcpClient(served.url, ROB))
        wait_for(lambda: served.app.stream_count() == 4, "the clients did not open their streams")
        (rob_session,) = [sid for sid, s in served.app._sessions.items() if s.owner == hash_token(ROB)]
        request = urllib.request.Request(
            served.url,
            headers={"Authorization": f"Bearer {ROB}", "Accept": "text/event-stream", "Mcp-Session-Id": rob_session,
                     "MCP-Protocol-Version": "2025-06-18"},
        )  # fmt: skip
        for _ in range(3):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=WAIT)
            refused.value.close()
            assert refused.value.code == 409
        time.sleep(1.5)  # longer than a stream's check: a stream told to end would have ended
        assert served.app.stream_count() == 4
        alice_streams = [s for s in served.app._sessions.values() if s.owner == hash_token(ALICE) and s.streams]
        assert len(alice_streams) == 3


def test_a_stream_that_fails_after_it_was_made_gives_its_place_back(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream whose answer fails between its making and waitress taking it (the session book unreadable
    for a moment) is ended there: it held its place and its session's one stream for good, so the worker
    had a place less and the SDK client's next try at that session was refused (409) until the end."""
    failed: list[int] = []
    catch_up = served.app._catch_up

    def broken_once(session: object) -> None:
        if not failed:
            failed.append(1)
            raise MemoryStoreError("unavailable", "the session book cannot be read now")
        catch_up(session)  # type: ignore[arg-type]

    monkeypatch.setattr(served.app, "_catch_up", broken_once)
    with HttpMcpClient(served.url, ALICE) as alice:
        wait_for(lambda: failed, "the client did not open its stream")
        alice.subscribe(CONTEXT)
        wait_for(lambda: served.app.stream_count() == 1, "the client's second try got no stream")
        made = alice.call("memory_file_create", memory="notes", path="back.md", content="back\n")
        assert not made.is_error, made
        uri, _ = alice.updates.get(timeout=WAIT)  # the SDK client's try after the failure has the stream
        assert uri == CONTEXT
    wait_for(lambda: served.app.stream_count() == 0, "a stream's place was kept after its client left")


def test_an_event_stream_silent_past_the_idle_timeout_still_carries_the_next_notification(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream says nothing between events (the SDK's ping is every 15 s): the server's closing of
    connections silent past the idle timeout, answers nobody reads included, must leave it open."""
    root = Root(tmp_path / "root")
    seed(root.mount("notes", create=True))
    token_file = tmp_path / "tokens.toml"
    token_file.write_text(token_entry(ALICE, "alice", ["notes"], "write"), encoding="utf-8")
    tokens = load_tokens(token_file, env={})
    app = McpHttpApp(root, tokens, max_streams=STREAMS)
    opened: list[object] = []
    take = app._slots.take
    monkeypatch.setattr(app._slots, "take", lambda owner: opened.append(owner) or take(owner))
    server = GitHttpServer(WithMcp(GitHttpApp(root, tokens=tokens), app), "127.0.0.1", 0, threads=4 + STREAMS,
                           channel_timeout=1).start()  # fmt: skip
    try:
        with HttpMcpClient(f"http://127.0.0.1:{server.port}/mcp", ALICE) as alice:
            alice.subscribe(CONTEXT)
            wait_for(lambda: app.stream_count() == 1, "the client did not open its stream")
            time.sleep(4.0)  # silent four idle timeouts (the stalled-answer check runs every second)
            assert app.stream_count() == 1
            made = alice.call("memory_file_create", memory="notes", path="late.md", content="late\n")
            assert not made.is_error, made
            uri, _ = alice.updates.get(timeout=WAIT)
            assert uri == CONTEXT
            assert len(opened) == 1  # the first stream carried it: none was closed and opened again
    finally:
        server.stop()

"""Two ``/mcp`` apps sharing one session book behave as one server: what every worker of ``gitmem serve`` relies on.

Each app here stands for a worker (its own servers, SDK sessions and loop; the
book is the only thing they share, as between processes). A session opened
through one answers through the other; the per-token limit, least-recently-used
eviction, DELETE and a changed grant hold across both. The real processes are
in ``test_serve_workers.py``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import queue
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gitmem import Root
from gitmem.adapters.http_front import GitHttpServer
from gitmem.adapters.http_server import GitHttpApp, load_tokens
from gitmem.adapters.mcp_http import McpHttpApp, WithMcp
from gitmem.adapters.mcp_stream import ChangeFanout
from gitmem.adapters.tokens import token_entry
from gitmem.adapters.watch import Watcher

from .support import book_workers, seed

TOKEN = "tok-alice-book-0123456789abcdef0123"
HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@dataclass
class Two:
    a: str
    b: str
    apps: tuple[McpHttpApp, McpHttpApp]
    token_file: Path


@pytest.fixture
def two(tmp_path: Path) -> Iterator[Two]:
    with book_workers(tmp_path, TOKEN, "alice", "write", max_sessions=2) as (_, _, token_file, apps, urls):
        yield Two(urls[0], urls[1], (apps[0], apps[1]), token_file)


def post(url: str, body: object, session: str | None = None, method: str = "POST") -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method=method)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "Authorization": f"Bearer {TOKEN}"}  # fmt: skip
    if session is not None:
        headers |= {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"}
    for key, value in headers.items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, {}, exc.read()


def connect(url: str) -> str:
    status, headers, body = post(url, HELLO)
    assert status == 200, body
    session = headers["mcp-session-id"]
    assert post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0] == 202
    return session


def listed(url: str, session: str) -> int:
    return post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session)[0]


def test_a_session_opened_through_one_worker_answers_through_the_other(two: Two) -> None:
    session = connect(two.a)
    assert listed(two.b, session) == 200  # taken up by b
    view = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "memory_file_view", "arguments": {"memory": "notes", "path": "seed.md"}}}  # fmt: skip
    status, headers, body = post(two.b, view, session)
    assert status == 200 and b"hello" in body
    assert headers["mcp-session-id"] == session  # the client only ever sees the book's id
    assert two.apps[1]._sessions[session].server.session_tag == two.apps[0]._sessions[session].server.session_tag


def test_the_token_limit_and_lru_eviction_hold_across_workers(two: Two) -> None:
    first, second = connect(two.a), connect(two.b)
    assert listed(two.b, first) == 200  # first is now the most recently used, through b
    third = connect(two.a)  # one past the limit of 2: second idled longest
    assert listed(two.a, second) == 404 and listed(two.b, second) == 404
    assert listed(two.a, first) == 200 and listed(two.b, third) == 200
    assert sum(app.session_count() for app in two.apps) <= 4


def test_delete_through_one_worker_ends_the_session_for_both(two: Two) -> None:
    session = connect(two.a)
    assert listed(two.b, session) == 200
    assert post(two.b, {}, session, method="DELETE")[0] == 200
    assert listed(two.a, session) == 404 and listed(two.b, session) == 404


def test_a_changed_grant_ends_the_session_for_both(two: Two) -> None:
    session = connect(two.a)
    assert listed(two.b, session) == 200
    two.token_file.write_text(token_entry(TOKEN, "alice", ["notes"], "read"), encoding="utf-8")
    assert listed(two.b, session) == 404
    assert listed(two.a, session) == 404
    assert listed(two.a, connect(two.b)) == 200  # a new session, under the new grant


def watching() -> bool:
    return any(thread.name == "gitmem-watch" for thread in threading.enumerate())


def test_a_subscription_through_one_worker_is_told_on_the_stream_of_the_other(two: Two) -> None:
    """Nothing watches the memories before a subscription; one made through the other worker is followed."""
    session = connect(two.a)
    stream, events = open_stream(two.a, session)
    try:
        create = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                  "params": {"name": "memory_file_create", "arguments": {"memory": "notes", "path": "one.md", "content": "1\n"}}}  # fmt: skip
        assert post(two.b, create, session)[0] == 200
        assert not watching()  # an open stream without a subscription: no watcher handles the write
        subscribe = {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "resources/subscribe",
            "params": {"uri": "memory://notes/context"},
        }
        assert post(two.b, subscribe, session)[0] == 200
        create["params"]["arguments"] = {"memory": "notes", "path": "two.md", "content": "2\n"}  # type: ignore[index]
        assert post(two.b, create, session)[0] == 200
        deadline = time.monotonic() + 30
        told = False
        while not told and time.monotonic() < deadline:
            with contextlib.suppress(queue.Empty):
                told = "notifications/resources/updated" in events.get(timeout=1)
        assert told and watching()
    finally:
        end(stream)


def end(stream: Any) -> None:
    """Close an event stream that another thread reads: its socket first, which wakes that read
    (closing the response alone waits for the reader, until the server's next bytes)."""
    with contextlib.suppress(OSError, AttributeError):  # AttributeError: the server ended it (no socket left)
        stream.fp.raw._sock.shutdown(socket.SHUT_RDWR)
    stream.close()


def open_stream(url: str, session: str) -> tuple[object, queue.Queue[str]]:
    """``session``'s GET event stream at ``url`` and the queue its lines arrive in."""
    request = urllib.request.Request(url, headers={
        "Accept": "text/event-stream", "Authorization": f"Bearer {TOKEN}", "Mcp-Session-Id": session,
        "MCP-Protocol-Version": "2025-06-18"})  # fmt: skip
    stream = urllib.request.urlopen(request, timeout=60)
    events: queue.Queue[str] = queue.Queue()

    def read() -> None:
        with contextlib.suppress(Exception):  # the stream closed under it at the end of the test, whichever way
            for line in stream:
                events.put(line.decode())

    threading.Thread(target=read, daemon=True).start()
    return stream, events


def told(events: queue.Queue[str], wait: float) -> bool:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        with contextlib.suppress(queue.Empty):
            if "notifications/resources/updated" in events.get(timeout=0.5):
                return True
    return False


def test_a_move_before_the_watcher_starts_is_told_to_every_stream_subscribed_through_another_worker(
    two: Two, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subscribes nothing yet; a session subscribes through b and the memory moves; then another session's
    subscription starts a's watcher. Both streams on a are told of the move, not only the one that started it."""
    monkeypatch.setattr("gitmem.adapters.mcp_stream.GRANT_CHECK", 15.0)  # no once-a-second check within the test
    starter, follower = connect(two.a), connect(two.a)
    streams = [open_stream(two.a, starter), open_stream(two.a, follower)]
    try:
        subscribe = {"jsonrpc": "2.0", "id": 4, "method": "resources/subscribe",
                     "params": {"uri": "memory://notes/context"}}  # fmt: skip
        assert post(two.b, subscribe, follower)[0] == 200
        create = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                  "params": {"name": "memory_file_create", "arguments": {"memory": "notes", "path": "one.md", "content": "1\n"}}}  # fmt: skip
        assert post(two.b, create, follower)[0] == 200  # moved after follower's subscription, before any watcher on a
        assert post(two.a, subscribe, starter)[0] == 200  # a's watcher starts now
        assert told(streams[1][1], 6.0), "the follower's stream was never told of the move"
    finally:
        for stream, _ in streams:
            end(stream)


def test_a_watcher_that_could_not_start_is_tried_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A passing failure (the inotify table full for a moment) does not end notifications for the server's life."""
    root = Root(tmp_path / "root")
    seed(root.mount("notes", create=True))
    tries: list[int] = []
    real = Watcher.start

    def flaky(self: Watcher) -> Watcher:
        tries.append(1)
        if len(tries) == 1:
            raise OSError(errno.ENOSPC, "inotify watch limit reached")
        return real(self)

    monkeypatch.setattr(Watcher, "start", flaky)
    monkeypatch.setattr("gitmem.adapters.mcp_stream.RETRY_START", 0.0, raising=False)
    fanout = ChangeFanout(root, list, lambda: None)
    try:
        assert not fanout.start() and not fanout.started
        assert fanout.start() and fanout.started  # tried again, and watching now
        assert not fanout.start() and len(tries) == 2  # once watching, never started twice
    finally:
        fanout.close()


def test_a_server_stopping_ends_its_open_event_streams_and_waits_for_no_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C with a client's event stream open: the streams end as the server stops, so waitress's request
    threads all finish when it shuts them down (it waited out its 5 s time-out, here made 20 s, and left them)."""
    from waitress.task import ThreadedTaskDispatcher

    left: list[int] = []
    shutdown = ThreadedTaskDispatcher.shutdown

    def counting(self: ThreadedTaskDispatcher, cancel_pending: bool = True, timeout: int = 5) -> bool:
        done = shutdown(self, cancel_pending, 20)
        left.append(len(self.threads))  # request threads still running when waitress gave up waiting
        return done

    monkeypatch.setattr(ThreadedTaskDispatcher, "shutdown", counting)
    root = Root(tmp_path / "root")
    seed(root.mount("notes", create=True))
    token_file = tmp_path / "tokens.toml"
    token_file.write_text(token_entry(TOKEN, "alice", ["notes"], "write"), encoding="utf-8")
    tokens = load_tokens(token_file, env={})
    server = GitHttpServer(WithMcp(GitHttpApp(root, tokens=tokens), McpHttpApp(root, tokens)), "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{server.port}/mcp"
    stream, events = open_stream(url, connect(url))
    try:
        assert events.get(timeout=30).startswith(":")  # the stream is open and being answered
        server.stop(timeout=90)
        assert left == [0], f"request threads left running when the server stopped: {left}"
    finally:
        end(stream)

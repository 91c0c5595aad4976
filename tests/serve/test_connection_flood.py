"""Connections held open without a request: they must not lock token holders out of the server.

waitress takes at most ``connection_limit`` (100) connections at once and stops
accepting past that, and a connection that sends nothing is kept for its
``channel_timeout`` (two minutes). Anyone who can reach the port could hold 100
sockets open, each with half a request line, and nobody else got in. These tests
hold that many against a real server (loopback, bounded counts) and ask for an
answer beside them.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from gitmem import Root
from gitmem.adapters.http_front import FrontApp, GitHttpServer
from gitmem.adapters.http_server import GitHttpApp, load_tokens
from gitmem.adapters.tokens import token_entry

from .support import TOKEN, git, seed, serving

FLOOD = 130  # past the 100 connections one server holds
ANSWER_TIMEOUT = 20.0  # a liveness guard: the answer comes within a loop turn or two


def _app(release: threading.Event) -> Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]:
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/slow":  # a request in flight until the test lets it finish
            release.wait(ANSWER_TIMEOUT)
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "3")])
        return [b"ok\n"]

    return app


@contextmanager
def _server(release: threading.Event) -> Iterator[GitHttpServer]:
    server = GitHttpServer(_app(release), "127.0.0.1", 0).start()
    try:
        yield server
    finally:
        release.set()
        server.stop()


def _idle_sockets(port: int, count: int, stack: ExitStack) -> list[socket.socket]:
    """``count`` connections that each sent half a request and then nothing."""
    held = []
    for _ in range(count):
        sock = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=ANSWER_TIMEOUT))
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        held.append(sock)
    return held


def _get(port: int, path: str = "/") -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=ANSWER_TIMEOUT) as answer:
        return bytes(answer.read())


def test_connections_that_never_send_a_request_do_not_lock_others_out(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    release = threading.Event()
    with _server(release) as server, ExitStack() as stack:
        _idle_sockets(server.port, FLOOD, stack)
        time.sleep(0.5)  # every one accepted that will be
        began = time.monotonic()
        assert _get(server.port) == b"ok\n"
        assert time.monotonic() - began < ANSWER_TIMEOUT / 2
        # and again, while the idle ones are still held open
        for _ in range(10):
            assert _get(server.port) == b"ok\n"
    # A flood is said once, not twice for every connection it brings.
    said = [r.getMessage() for r in caplog.records if "connection" in r.getMessage()]
    assert len(said) <= 1, said


def test_a_connection_with_a_request_in_flight_is_never_the_one_closed() -> None:
    release = threading.Event()
    with _server(release) as server, ExitStack() as stack:
        slow = stack.enter_context(socket.create_connection(("127.0.0.1", server.port), timeout=ANSWER_TIMEOUT))
        slow.sendall(b"GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        time.sleep(0.3)  # its request is being served (the app waits)
        _idle_sockets(server.port, FLOOD, stack)
        time.sleep(0.5)
        for _ in range(5):  # new connections, each making room
            assert _get(server.port) == b"ok\n"
        release.set()
        answer = b""
        while not answer.endswith(b"ok\n"):
            chunk = slow.recv(4096)
            assert chunk, f"the connection with a request in flight was closed: {answer!r}"
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200")


def test_a_served_process_with_two_workers_answers_beside_idle_connections(tmp_path: Path) -> None:
    """The real ``gitmem serve --workers 2``: each worker's 100 places held by idle sockets, and a clone still lands."""
    root = Root(tmp_path / "mem")
    seed(root.mount("team", create=True))
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(token_entry(TOKEN, "alice", ["team"], "read"), encoding="utf-8")
    with serving(root.path, tokens, "--workers", "2") as server, ExitStack() as stack:
        port = int(server.info["url"].rsplit(":", 1)[1])
        _idle_sockets(port, 2 * FLOOD, stack)
        time.sleep(1.0)
        assert _get(port, "/health") == b"ok\n"
        git("clone", "-q", f"http://alice:{TOKEN}@127.0.0.1:{port}/team.git", str(tmp_path / "clone"))
        assert (tmp_path / "clone" / "seed.md").is_file()


def test_a_client_that_stops_reading_a_large_answer_does_not_hold_a_thread_for_ever() -> None:
    """An answer past waitress's 16 MiB buffer waits on the client's reading, with the request's thread.

    A read token's client asking for a large clone and then reading nothing held
    that thread for as long as it kept the connection; sixteen such held them all.
    """
    ended = threading.Event()

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != "/large":
            start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "3")])
            return [b"ok\n"]
        start_response("200 OK", [("Content-Type", "application/octet-stream")])

        def body() -> Iterator[bytes]:
            try:
                for _ in range(64):
                    yield b"x" * (1 << 20)
            finally:
                ended.set()

        return body()

    server = GitHttpServer(app, "127.0.0.1", 0, threads=1, channel_timeout=2).start()
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=ANSWER_TIMEOUT) as reader:
            reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            reader.sendall(b"GET /large HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert ended.wait(ANSWER_TIMEOUT), "the answer nobody reads still holds its thread"
            assert _get(server.port) == b"ok\n"  # the server's one thread answers again
    finally:
        server.stop()


def test_a_whole_answer_its_client_never_reads_does_not_hold_a_place_for_ever() -> None:
    """An answer under waitress's buffer, all written, that the client never reads (a few MiB: past the
    kernel's socket buffers) kept its connection: waitress's idle check only marks it to close once its
    output is flushed, which never comes, and such a connection is never the one that makes room. A read
    token (or anybody, with ``--public-read``) could hold every place of a worker with a clone each."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return [b"x" * (1 << 20)] * 12  # 12 MiB: past the socket buffers, under waitress's 16 MiB

    server = GitHttpServer(app, "127.0.0.1", 0, threads=1, channel_timeout=1).start()
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=ANSWER_TIMEOUT) as reader:
            reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            reader.sendall(b"GET /large HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            deadline = time.monotonic() + ANSWER_TIMEOUT

            def written() -> bool:  # the whole answer handed to waitress, most of it waiting to be sent
                return any(not c.requests and c.total_outbufs_len for c in list(server._server.active_channels.values()))

            while not written():
                assert time.monotonic() < deadline, "the answer was never written"
                time.sleep(0.05)
            while server._server.active_channels:
                assert time.monotonic() < deadline, "a connection whose client reads nothing is kept"
                time.sleep(0.1)
    finally:
        server.stop()


def _announce(port: int, path: str, length: int, authorization: str = "", wait: float = ANSWER_TIMEOUT) -> bytes:
    """Send only the headers of a POST of ``length`` bytes; what the server answers before any body."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        auth = f"Authorization: {authorization}\r\n" if authorization else ""
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Type: application/json\r\n"
            f"Content-Length: {length}\r\n\r\n".encode()
        )
        try:
            return sock.recv(200)
        except TimeoutError:
            return b""


def test_only_a_push_with_a_token_that_may_push_may_send_a_pack_sized_body(tmp_path: Path) -> None:
    """waitress reads a whole request body (spooled to a temporary file) before the app checks its token.

    With the one cap a push needs (64 MiB), anybody who could reach the port could
    have a worker spool 64 MiB per connection, 100 connections at once, before
    being told 401. Only a push whose token may push gets the push's cap; another
    request with a token the server knows is refused (413) past 8 MiB as soon as its
    headers say so, and one without past what a fetch request may hold (2 MiB).
    """
    root = Root(tmp_path / "mem")
    seed(root.mount("team", create=True))
    tokens_file = tmp_path / "tokens.toml"
    reader = "tok-reader-bodies-0123456789abcdef"
    tokens_file.write_text(
        token_entry(TOKEN, "alice", ["team"], "write") + token_entry(reader, "rob", ["team"], "read"), encoding="utf-8"
    )
    tokens = load_tokens(tokens_file, env={})
    app = FrontApp(GitHttpApp(root, tokens=tokens))
    server = GitHttpServer(app, "127.0.0.1", 0, channel_timeout=3).start()
    big = 40 * 1024 * 1024
    try:
        for path, auth in [
            ("/mcp", ""),
            ("/team.git/git-receive-pack", ""),
            ("/team.git/git-receive-pack", "Bearer not-a-token"),
            ("/team.git/git-receive-pack", f"Bearer {reader}"),  # a read token may not push
            ("/team.git/git-upload-pack", f"Bearer {TOKEN}"),
        ]:
            answer = _announce(server.port, path, big, auth)
            assert answer.startswith(b"HTTP/1.1 413"), (path, auth, answer)
        # A push with a token that may push is read on (the server waits for its body).
        assert _announce(server.port, "/team.git/git-receive-pack", big, f"Bearer {TOKEN}", wait=1.0) == b""
        # A token the server knows may send up to 8 MiB (an MCP call takes 4 MiB) ...
        middling = 5 * 1024 * 1024
        for auth in (f"Bearer {reader}", f"Bearer {TOKEN}"):
            assert _announce(server.port, "/mcp", middling, auth, wait=1.0) == b"", auth
        # ... and a request without one only what a --public-read fetch needs: 100 of them
        # could otherwise have a worker spool 800 MB before each was told 401.
        for path, auth in [("/mcp", ""), ("/team.git/git-upload-pack", ""), ("/mcp", "Bearer not-a-token")]:
            answer = _announce(server.port, path, middling, auth)
            assert answer.startswith(b"HTTP/1.1 413"), (path, auth, answer)
        # A body within a fetch request's size is taken from anybody, to be answered by the app.
        assert _announce(server.port, "/mcp", 1024, "", wait=1.0) == b""
        assert _announce(server.port, "/team.git/git-upload-pack", 1024 * 1024, "", wait=1.0) == b""
    finally:
        server.stop()

"""A line ``gitmem mcp`` cannot take as a JSON-RPC message is answered, never left unanswered.

The SDK's stdio transport parses each line strictly (no lone surrogate, nesting
bounded) and drops what it refuses, so a client whose request held a truncated
emoji (JavaScript's ``JSON.stringify`` writes ``"\\ud83d"`` for half a pair) or a
deeply nested argument waited for its whole timeout. Driven over raw stdio of a
real server process, as a client of any language would.
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from tests.adapters.mcp_support import server_args

WAIT = 30.0


class RawClient:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        assert process.stdin is not None and process.stdout is not None
        self.stdin: IO[bytes] = process.stdin
        self.stdout: IO[bytes] = process.stdout

    def send(self, line: bytes) -> None:
        self.stdin.write(line + b"\n")
        self.stdin.flush()

    def request(self, request_id: object, method: str, params: dict[str, Any]) -> None:
        self.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode())

    def reply(self) -> dict[str, Any]:
        ready, _, _ = select.select([self.stdout], [], [], WAIT)
        assert ready, "the server sent no reply"
        answer: dict[str, Any] = json.loads(self.stdout.readline())
        return answer


@pytest.fixture
def client(tmp_path: Path) -> Iterator[RawClient]:
    with (tmp_path / "err.log").open("wb") as errors:
        process = subprocess.Popen(
            [sys.executable, *server_args(tmp_path / "root", "--mount", "notes", "--no-watch")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
        )
        raw = RawClient(process)
        try:
            raw.request(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}})  # fmt: skip
            assert raw.reply()["id"] == 0
            raw.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
            yield raw
        finally:
            raw.stdin.close()
            code = process.wait(timeout=WAIT)
            raw.stdout.close()
            assert code == 0


def call(tool: str, arguments_json: str, request_id: int) -> bytes:
    head = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool}})
    return (head[:-2] + ', "arguments": ' + arguments_json + "}}").encode()


def test_a_request_the_transport_refuses_is_answered_under_its_id(client: RawClient) -> None:
    half_emoji = '{"memory": "notes", "path": "a.md", "content": "hi \\ud83d"}'
    client.send(call("memory_file_create", half_emoji, 7))
    answer = client.reply()
    assert answer["id"] == 7 and answer["error"]["code"] == -32600
    assert "surrogate" in answer["error"]["message"] or "escape" in answer["error"]["message"]

    deep = '{"memory": "notes", "path": "a.md", "content": ' + "[" * 300 + "]" * 300 + "}"
    client.send(call("memory_file_create", deep, "eight"))
    answer = client.reply()
    assert answer["id"] == "eight" and answer["error"]["code"] == -32600

    client.request(9, "tools/call", {"name": "memory_file_view", "arguments": {"memory": "notes"}})
    answer = client.reply()
    assert answer["id"] == 9 and "error" not in answer  # served on as before; nothing was written
    assert "a.md" not in json.dumps(answer)


def test_a_line_that_is_no_json_gets_a_parse_error_and_a_bad_notification_nothing(client: RawClient) -> None:
    client.send(b"\xff\xfe{ not json")
    answer = client.reply()
    assert answer["id"] is None and answer["error"]["code"] == -32700
    client.send(b'{"jsonrpc": "2.0", "method": "notifications/x", "params": {"v": "\\udc00"}}')
    client.send(b'{"jsonrpc": "2.0", "id": 3, "result": {"v": "\\udc00"}}')  # a reply the server did not ask for
    client.request(4, "tools/list", {})
    assert client.reply()["id"] == 4  # the notification and the stray reply were answered by nothing


def test_a_blank_line_is_answered_by_nothing(client: RawClient) -> None:
    # Between messages, not one: a client that ends each line twice (or with CRLF and a newline) sent
    # them before and got no answer; a Parse error under a null id is an answer to nothing it sent.
    client.send(b"")
    client.send(b"  \r")
    client.send(b"\t")
    client.request(5, "tools/list", {})
    assert client.reply()["id"] == 5

"""Web pages cannot use ``gitmem serve``: ``Origin`` and ``Host`` are checked on every path.

Real ``gitmem serve`` processes on 127.0.0.1: one with the defaults, one with
``--allow-origin`` and ``--allow-host``. Requests are sent raw (``http.client``),
so the test controls the ``Host`` and ``Origin`` headers a browser would send:
an unexpected origin or a rebinding page's host gets 403 with a body naming the
option that would allow it, on ``/mcp`` and on git's endpoints, and changes
nothing; clients that send no ``Origin`` (git, the MCP SDK, scripts) work as before.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitmem import Root
from gitmem.adapters.tokens import token_entry

from .support import GIT_ENV, GIT_TIMEOUT, GITMEM, fsck_clean, git, seed, start_serve, stop_serve

REPO = Path(__file__).resolve().parents[2]
ALICE = "tok-alice-origins-0123456789abcdef"
HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
CREATE = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "memory_file_create", "arguments": {"memory": "notes", "path": "evil.md", "content": "x\n"}},
}


class Serve:
    """A ``gitmem serve`` process; ``port`` once it listens."""

    def __init__(self, root: Root, tokens: Path, *options: str) -> None:
        self.root = root
        self.proc, info = start_serve(root.path, tokens, *options)
        self.port = int(info["url"].rsplit(":", 1)[1])
        self.sent: set[tuple[str, str, str | None]] = set()  # (method, path, origin) of each request

    def request(
        self, method: str, path: str, *, host: str | None = None, origin: str | None = None, body: object = None
    ) -> tuple[int, str]:
        self.sent.add((method, path, origin))
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=GIT_TIMEOUT)
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            conn.putheader("Host", host if host is not None else f"127.0.0.1:{self.port}")
            if origin is not None:
                conn.putheader("Origin", origin)
            data = b""
            if body is not None:
                data = json.dumps(body).encode()
                conn.putheader("Content-Type", "application/json")
                conn.putheader("Accept", "application/json, text/event-stream")
                conn.putheader("Authorization", f"Bearer {ALICE}")
                conn.putheader("MCP-Protocol-Version", "2025-06-18")
            conn.putheader("Content-Length", str(len(data)))
            conn.endheaders(data)
            reply = conn.getresponse()
            return reply.status, reply.read().decode("utf-8", "replace")
        finally:
            conn.close()

    def mcp(self, **headers: str) -> tuple[int, str]:
        return self.request("POST", "/mcp", body=HELLO, **headers)

    def refs(self, **headers: str) -> tuple[int, str]:
        return self.request("GET", "/notes.git/info/refs?service=git-upload-pack", **headers)

    def stop(self) -> str:
        """Stop the server; its stderr (the server log)."""
        return stop_serve(self.proc)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Root, Path]:
    tmp = tmp_path_factory.mktemp("origins")
    root = Root(tmp / "root")
    seed(root.mount("notes", create=True))
    tokens = tmp / "tokens.toml"
    tokens.write_text(token_entry(ALICE, "alice", ["notes"], "write"))
    return root, tokens


@pytest.fixture(scope="module")
def default(setup: tuple[Root, Path]) -> Iterator[Serve]:
    served = Serve(*setup)
    try:
        yield served
    finally:
        log = served.stop()
    assert "Traceback" not in log, log[-3000:]
    if ("POST", "/mcp", "http://evil.example") in served.sent:  # (the tests of a module may run in two processes)
        assert "refused POST /mcp: Origin 'http://evil.example'" in log  # each refusal is logged


@pytest.fixture(scope="module")
def configured(setup: tuple[Root, Path]) -> Iterator[Serve]:
    served = Serve(*setup, "--allow-origin", "https://App.Example:443", "--allow-host", "memory.example")
    try:
        yield served
    finally:
        served.stop()


def refused(answer: tuple[int, str], option: str) -> bool:
    status, body = answer
    return status == 403 and option in body


def test_requests_without_an_origin_are_served(default: Serve) -> None:
    assert default.mcp()[0] == 200
    assert default.refs()[0] == 401  # git's endpoint as before: it wants a token
    for host in (f"localhost:{default.port}", f"[::1]:{default.port}", "127.0.0.1", "LOCALHOST."):
        assert default.mcp(host=host)[0] == 200, host


def test_unexpected_origins_are_refused_on_every_path(default: Serve) -> None:
    head = default.root.mount("notes").sync.head()
    for origin in ("http://evil.example", f"http://evil.example:{default.port}", "http://localhost:3000", "null",
                   "not an origin", "https://127.0.0.1"):  # fmt: skip
        assert refused(default.mcp(origin=origin), "--allow-origin"), origin
        assert refused(default.refs(origin=origin), "--allow-origin"), origin
        assert refused(default.request("POST", "/mcp", origin=origin, body=CREATE), "--allow-origin"), origin
        upload = default.request("POST", "/notes.git/git-upload-pack", origin=origin)
        assert refused(upload, "--allow-origin"), origin
    assert refused(default.mcp(origin="http://evil.example/" + "x" * 100_000), "--allow-origin")
    assert len(default.mcp(origin="http://evil.example/" + "x" * 100_000)[1]) < 1000  # the body does not echo it
    assert default.root.mount("notes").sync.head() == head
    fsck_clean(default.root.mount_path("notes"))


def test_the_servers_own_origin_passes(default: Serve) -> None:
    for origin in (
        f"http://127.0.0.1:{default.port}",
        f"http://localhost:{default.port}",
        f"http://[::1]:{default.port}",
    ):
        assert default.mcp(origin=origin)[0] == 200, origin


def test_a_rebinding_pages_host_is_refused(default: Serve) -> None:
    """A name the attacker points at 127.0.0.1: the browser sends it as Host, with no Origin on a same-site GET."""
    for host in (f"evil.example:{default.port}", "evil.example", f"127.0.0.1.evil.example:{default.port}", "[::2]:1",
                 "bad host:x"):  # fmt: skip
        assert refused(default.mcp(host=host), "--allow-host"), host
        assert refused(default.refs(host=host), "--allow-host"), host


def test_configured_origins_and_hosts_pass_and_no_others(configured: Serve) -> None:
    assert configured.mcp(origin="https://app.example")[0] == 200
    assert configured.mcp(origin="https://APP.example:443")[0] == 200
    assert configured.mcp(host="memory.example", origin="https://memory.example")[0] == 200  # behind a proxy
    assert configured.mcp(host="Memory.Example:8443")[0] == 200
    assert configured.mcp(origin=f"http://localhost:{configured.port}")[0] == 200
    assert refused(configured.mcp(origin="https://app.example:8443"), "--allow-origin")
    assert refused(configured.mcp(origin="https://other.example"), "--allow-origin")
    assert refused(configured.mcp(host="other.example"), "--allow-host")


def test_git_and_the_mcp_sdk_client_work_unchanged(default: Serve, tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO))
    from bench.mcp_http_client import HttpMcpClient

    url = f"http://alice:{ALICE}@127.0.0.1:{default.port}/notes.git"
    git("clone", "-q", url, str(tmp_path / "clone"))
    with HttpMcpClient(f"http://127.0.0.1:{default.port}/mcp", ALICE) as client:
        result = client.call("memory_file_view", memory="notes", path="")
        assert not result.is_error


def test_a_bad_allow_origin_is_a_usage_error(setup: tuple[Root, Path]) -> None:
    root, tokens = setup
    done = subprocess.run(
        [*GITMEM, "serve", "--root", str(root.path), "--port", "0", "--token-file", str(tokens),
         "--allow-origin", "https://app.example/path"],
        capture_output=True, text=True, timeout=GIT_TIMEOUT, env=GIT_ENV,
    )  # fmt: skip
    assert done.returncode == 2 and "is not an origin" in done.stderr, done.stderr


def test_a_hand_built_fetch_to_the_process_gets_git_s_answer(default: Serve) -> None:
    """The real process answers a want it cannot serve with git's ERR line (see test_upload_pack.py)."""
    missing = "1" * 40
    line = f"want {missing} ofs-delta\n".encode()
    body = b"%04x" % (len(line) + 4) + line + b"0000" + b"0009done\n"
    conn = http.client.HTTPConnection("127.0.0.1", default.port, timeout=GIT_TIMEOUT)
    try:
        conn.request("POST", "/notes.git/git-upload-pack", body=body, headers={
            "Content-Type": "application/x-git-upload-pack-request", "Authorization": f"Bearer {ALICE}"})  # fmt: skip
        reply = conn.getresponse()
        status, data = reply.status, reply.read()
    finally:
        conn.close()
    message = f"ERR upload-pack: not our ref {missing}".encode()
    assert (status, data) == (200, b"%04x" % (len(message) + 4) + message)
    assert default.proc.poll() is None

"""gitmem driven by MCP clients that are not the Python SDK it is built on.

The MCP Inspector's CLI, the TypeScript SDK's client (what the Inspector,
``mcp-remote`` and most IDEs are built on) and ``mcp-remote`` itself talk to
``gitmem mcp`` over stdio and to ``/mcp`` of a real ``gitmem serve`` process over
streamable HTTP: listing tools (the Inspector's strict schema check included),
calls, argument errors, an unknown tool, resources, prompts, and 100 reconnects of
a client that never ends its session. They are installed with npm into
``.cache/interop-npm`` of the checkout (ignored by git) on first use; without
node and npm, or without the npm registry, the module is skipped and says why.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve.support import fsck_clean

from gitmem import Root
from gitmem.adapters.tokens import token_entry

PACKAGES = {"@modelcontextprotocol/inspector": "2.12.0", "mcp-remote": "0.15.1"}
CACHE = Path(__file__).resolve().parents[2] / ".cache" / "interop-npm"
INSTALL_SECONDS = 110
CLIENT_SECONDS = 180
TOKEN = "tok-interop-alice-0123456789abcdef0123"
SERVER = [sys.executable, "-m", "gitmem.adapters.cli"]
HERE = Path(__file__).resolve().parent


def _installed(modules: Path) -> bool:
    for name, version in PACKAGES.items():
        try:
            found = json.loads((modules / name / "package.json").read_text(encoding="utf-8"))["version"]
        except (OSError, ValueError, KeyError):
            return False
        if found != version:
            return False
    return True


@pytest.fixture(scope="module")
def node_modules() -> Path:
    """The pinned clients, installed once into the checkout's cache (a fresh folder renamed into place)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not on PATH: the interop tests need them to run the MCP Inspector")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    if int(re.sub(r"\D.*", "", version.lstrip("v")) or 0) < 20:
        pytest.skip(f"node {version} is too old for the MCP Inspector (20 or later)")
    modules = CACHE / "node_modules"
    if _installed(modules):
        return modules
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix="interop-npm-", dir=CACHE.parent))
    (fresh / "package.json").write_text(json.dumps({"private": True, "dependencies": PACKAGES}), encoding="utf-8")
    command = [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error",
               "--fetch-retries=1", "--fetch-timeout=30000"]  # fmt: skip
    try:
        done = subprocess.run(command, cwd=fresh, capture_output=True, text=True, timeout=INSTALL_SECONDS)
    except subprocess.TimeoutExpired:
        shutil.rmtree(fresh, ignore_errors=True)
        pytest.skip(f"npm could not install the MCP clients within {INSTALL_SECONDS} s (offline?)")
    if done.returncode != 0 or not _installed(fresh / "node_modules"):
        shutil.rmtree(fresh, ignore_errors=True)
        pytest.skip(f"npm could not install the MCP clients (offline?): {done.stderr.strip()[-500:]}")
    shutil.rmtree(CACHE, ignore_errors=True)
    fresh.rename(CACHE)
    return modules


def inspector(modules: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One run of the Inspector's CLI (each run is one client connection)."""
    launcher = modules / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
    return subprocess.run(
        ["node", str(launcher), "--cli", *args], capture_output=True, text=True, timeout=CLIENT_SECONDS
    )


def ts_client(modules: Path, target: list[str], steps: list[list[Any]]) -> dict[str, Any]:
    """The TypeScript SDK's client running ``steps`` (see ``ts_client.mjs``) on one connection."""
    done = subprocess.run(
        ["node", str(HERE / "ts_client.mjs"), str(modules), *target, "--", json.dumps(steps)],
        capture_output=True,
        text=True,
        timeout=CLIENT_SECONDS,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def payload(result: dict[str, Any]) -> dict[str, Any]:
    """A tool result's JSON: its text and its structured content must agree."""
    (content,) = result["content"]
    data: dict[str, Any] = json.loads(content["text"])
    assert data == result["structuredContent"]
    return data


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Root:
    root = Root(tmp_path_factory.mktemp("interop") / "root")
    root.mount("notes", create=True).sync.write("README.md", "---\ndescription: Who\n---\nAlice.\n", expected=None)
    root.mount("facts", create=True, kind="record")
    return root


def _git_env_args() -> list[str]:
    """The Inspector starts a stdio server with a minimal environment: hand it the tests' git isolation."""
    names = [n for n in os.environ if n.startswith(("GIT_", "XDG_")) or n == "HOME"]
    return [arg for n in names for arg in ("-e", f"{n}={os.environ[n]}")]


def check_inspector(modules: Path, target: list[str], root: Root, tag: str) -> None:
    """Everything a person checks with the Inspector: strict schemas, a call, an error, a resource, a prompt."""
    listed = inspector(modules, *target, "--method", "tools/list", "--strict")
    assert listed.returncode == 0, listed.stderr
    assert "Warning" not in listed.stderr and "error" not in listed.stderr.lower(), listed.stderr
    names = [t["name"] for t in json.loads(listed.stdout)["tools"]]
    assert "memory_file_create" in names and "memory_record_add" in names

    path = f"inspector-{tag}.md"
    created = inspector(modules, *target, "--method", "tools/call", "--tool-name", "memory_file_create",
                        "--tool-arg", "memory=notes", f"path={path}", "content=written by the Inspector")  # fmt: skip
    assert created.returncode == 0, created.stderr
    assert payload(json.loads(created.stdout))["status"] == "created"
    assert root.mount("notes").sync.read(path).text == "written by the Inspector"

    head = root.mount("notes").sync.head()
    missing = inspector(modules, *target, "--method", "tools/call", "--tool-name", "memory_file_create",
                        "--tool-arg", "memory=notes", "path=never.md")  # fmt: skip
    assert missing.returncode != 0  # the Inspector exits non-zero on a tool error
    refused = payload(json.loads(missing.stdout))
    assert refused["error"] == "invalid_arguments" and "'content' is required" in refused["message"]
    assert root.mount("notes").sync.head() == head

    read = inspector(modules, *target, "--method", "resources/read", "--uri", "memory://notes/context")
    assert read.returncode == 0, read.stderr
    assert "README.md" in json.loads(read.stdout)["contents"][0]["text"]

    prompt = inspector(modules, *target, "--method", "prompts/get", "--prompt-name", "memory_recall",
                       "--prompt-args", "input=who is alice")  # fmt: skip
    assert prompt.returncode == 0, prompt.stderr
    assert json.loads(prompt.stdout)["messages"][0]["content"]["type"] == "text"


def check_ts_client(modules: Path, target: list[str], reconnects: int, *, http: bool) -> None:
    """What the TypeScript SDK sees: capabilities, the spec's unknown-tool error, lists, prompts, reconnects."""
    steps: list[list[Any]] = [
        ["unknown", "tools/call", {"name": "memory_file_launch", "arguments": {"memory": "notes"}}],
        ["extra", "tools/call", {"name": "memory_file_view", "arguments": {"memory": "notes", "recursive": True}}],
        ["wrong_type", "tools/call", {"name": "memory_record_search", "arguments": {"memory": "facts", "query": 5}}],
        ["resources", "resources/list"],
        ["prompts", "prompts/list"],
        ["context", "prompts/get", {"name": "memory_context", "arguments": {}}],
        ["reconnect", "reconnect", {"times": reconnects}],
    ]
    answer = ts_client(modules, target, steps)
    caps = answer["capabilities"]
    assert caps["tools"]["listChanged"] is False and caps["prompts"]["listChanged"] is False
    assert caps["resources"]["listChanged"] is False
    # Resource updates over stdio, and over HTTP on a session's GET event stream.
    assert caps["resources"].get("subscribe") is True, (http, caps)
    assert answer["unknown"]["failed"] and answer["unknown"]["code"] == -32602, answer["unknown"]
    assert "Unknown tool" in answer["unknown"]["message"]
    for step, field in (("extra", "'recursive'"), ("wrong_type", "'query'")):
        assert answer[step]["isError"] is True, answer[step]
        refused = payload(answer[step])
        assert refused["error"] == "invalid_arguments" and field in refused["message"], refused
    assert [r["uri"] for r in answer["resources"]["resources"]] == ["memory://notes/context"]
    assert {p["name"] for p in answer["prompts"]["prompts"]} == {"memory_context", "memory_recall"}
    assert "README.md" in answer["context"]["messages"][0]["content"]["text"]
    assert answer["reconnect"] == {"ok": reconnects}, answer["reconnect"]


def test_over_stdio(node_modules: Path, root: Root) -> None:
    server = [*SERVER, "mcp", "--root", str(root.path), "--mount", "notes", "--mount", "facts"]
    check_inspector(node_modules, [*_git_env_args(), *server], root, "stdio")
    # Each stdio connect starts a gitmem mcp process (2-6 s under load): one more after the first,
    # dropped without ending its session, is served; the HTTP test makes 100 against four sessions.
    check_ts_client(node_modules, ["stdio", *server], 1, http=False)
    fsck_clean(root.mount_path("notes"))


class Serve:
    """A ``gitmem serve`` process; its URL once it listens."""

    def __init__(self, root: Root, token_file: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [*SERVER, "serve", "--root", str(root.path), "--port", "0", "--token-file", str(token_file),
             "--json", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        assert ready, "gitmem serve did not say where it listens"
        self.info = json.loads(self.proc.stdout.readline())
        self.url = f"{self.info['url']}/mcp"

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err


@pytest.fixture(scope="module")
def served(root: Root, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    token_file = tmp_path_factory.mktemp("tokens") / "tokens.toml"
    token_file.write_text(token_entry(TOKEN, "alice", ["notes", "facts"], "write"), encoding="utf-8")
    server = Serve(root, token_file, "--mcp-sessions", "4")
    try:
        yield server
    finally:
        err = server.stop()
        assert "Traceback" not in err, err


def test_over_http(node_modules: Path, root: Root, served: Serve) -> None:
    assert served.info["mcp_sessions"] == 4
    target = [served.url, "--transport", "http", "--header", f"Authorization: Bearer {TOKEN}"]
    check_inspector(node_modules, target, root, "http")
    before = served.rss_kib()
    # 100 connects of a client that never ends its session, with 4 sessions kept: every one succeeds.
    check_ts_client(node_modules, ["http", served.url, TOKEN], 100, http=True)
    grown = served.rss_kib() - before
    assert grown < 64 * 1024, f"gitmem serve grew by {grown} KiB over 100 connects"
    origin = root.mount("notes").sync.log("inspector-http.md")[0].origin
    assert origin.principal_id == "alice" and origin.run_id and origin.tool_call_id
    # One run per principal and topic; the session is named in the tool call id.
    assert origin.run_id == "alice/mcp" and re.fullmatch(r"mcp-[0-9a-f]+-\d+", origin.tool_call_id), origin
    fsck_clean(root.mount_path("notes"))


def remote_answer(modules: Path, url: str, token: str) -> tuple[str, str]:
    """``mcp-remote`` (the bridge Claude Desktop uses) asked to initialize: its first stdout line, and its stderr."""
    bridge = modules / "mcp-remote" / "dist" / "proxy.js"
    env = {**os.environ, "MCP_REMOTE_CONFIG_DIR": tempfile.mkdtemp(prefix="mcp-remote-"), "AUTH": f"Bearer {token}"}
    proc = subprocess.Popen(
        ["node", str(bridge), url, "--header", "Authorization:${AUTH}", "--transport", "http-only"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    proc.stdin.write(json.dumps(hello) + "\n")
    proc.stdin.flush()
    line = ""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            line = proc.stdout.readline()
            break
    proc.kill()
    _, err = proc.communicate(timeout=30)
    return line, err


def test_mcp_remote_shows_why_a_token_is_refused(node_modules: Path, served: Serve) -> None:
    line, err = remote_answer(node_modules, served.url, TOKEN)
    assert json.loads(line)["result"]["serverInfo"]["name"] == "gitmem", err[-2000:]
    line, err = remote_answer(node_modules, served.url, "not-a-token")
    assert "bearer tokens, not OAuth" in err and "refused the token" in err, err[-2000:]
    assert "no such repository" not in err

"""``gitmem mcp`` driven by the real MCP SDK client over stdio.

Two server processes on one root serve the whole module: ``a`` (memories ``user``
and ``docs:read``, principal alice) and ``b`` (``user``, principal bob), as two agents
would run them. What they must show: the capability's tools, schemas and
instructions reach the client unchanged; tool results are the capability's JSON;
changes are attributed to the call; two sessions editing one file get the CAS
behaviour; the context is a resource and a prompt with cursors.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from mcp.types import TextContent, TextResourceContents

from adapters.mcp_support import McpClient, payload
from gitmem import Root
from gitmem.adapters.cli import cli
from gitmem.adapters.mcp_server import CONTEXT_PROMPT, NO_CHANGE_TEXT, MemoryMcpServer, context_uri, tool_result
from gitmem.model import Origin
from gitmem.tools import FileMemoryCapability, FileMount

README = "---\ndescription: Who the user is\n---\nAlice. Reply briefly.\n"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp") / "root"
    r = Root(path)
    r.mount("user", create=True).sync.write("README.md", README, expected=None)
    r.mount("docs", create=True).sync.write("guide/style.md", "Use short sentences.\n", expected=None)
    return path


def _client(root: Path, name: str, *args: str) -> Iterator[McpClient]:
    errlog = root.parent / f"{name}.stderr"
    with McpClient(root, *args, errlog=errlog) as client:
        yield client
    assert "Traceback" not in errlog.read_text(encoding="utf-8"), errlog.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def a(root: Path) -> Iterator[McpClient]:
    yield from _client(
        root,
        "a",
        "--mount",
        "user",
        "--mount",
        "docs:read",
        "--always-load",
        "user:README.md",
        "--principal",
        "alice",
        "--run",
        "run-a",
    )


@pytest.fixture(scope="module")
def b(root: Path) -> Iterator[McpClient]:
    yield from _client(root, "b", "--mount", "user:write", "--always-load", "user:README.md", "--principal", "bob")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


# --- what the client is shown ------------------------------------------------------


def test_tools_schemas_and_instructions_reach_the_client_unchanged(a: McpClient, root: Path) -> None:
    r = Root(root)
    expected = FileMemoryCapability(
        [
            FileMount("user", r.mount("user"), "write", always_load=("README.md",)),
            FileMount("docs", r.mount("docs"), "read"),
        ]
    )
    listed = a.run(lambda s: s.list_tools()).tools
    assert [t.name for t in listed] == [d.name for d in expected.offered()]
    for tool, definition in zip(listed, expected.offered(), strict=True):
        assert tool.input_schema == definition.input_schema
        assert tool.description == definition.description
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint == (definition.effect == "read")
        assert tool.meta == {"io.gitmem/tool-id": definition.permission, "io.gitmem/memories": list(definition.memories)}
    by_name = {t.name: t for t in listed}
    assert by_name["memory_file_view"].input_schema["properties"]["memory"]["enum"] == ["user", "docs"]
    assert by_name["memory_file_create"].input_schema["properties"]["memory"]["enum"] == ["user"]
    assert a.init.instructions == expected.instructions
    assert a.init.server_info.name == "gitmem"


# --- tool calls ---------------------------------------------------------------------


def test_create_edit_grep_and_view_through_a_real_client(a: McpClient) -> None:
    failed, created = a.call("create", memory="user", path="notes/plan.md", content="step one\nstep two\n")
    assert not failed and created["status"] == "created" and created["path"] == "notes/plan.md"

    failed, edited = a.call("edit", memory="user", path="notes/plan.md", old_string="step two", new_string="step 2")
    assert not failed and edited["status"] == "edited" and edited["version"] != created["version"]

    failed, found = a.call("grep", memory="user", pattern="STEP 2")
    assert not failed
    assert found["matches"] == [{"path": "notes/plan.md", "line": 2, "text": "step 2"}]

    failed, view = a.call("view", memory="user", path="notes/plan.md")
    assert not failed
    assert view == {"path": "notes/plan.md", "version": edited["version"], "size": 16, "content": "step one\nstep 2\n"}

    failed, folder = a.call("view", memory="user", path="notes/")
    assert not failed and [f["path"] for f in folder["files"]] == ["notes/plan.md"]

    failed, nothing = a.call("grep", memory="user", pattern="no such words")
    assert not failed and nothing["matches"] == [] and "hint" in nothing


def test_failures_are_flagged_errors_carrying_the_json_and_the_current_file(a: McpClient) -> None:
    a.call("create", memory="user", path="notes/dup.md", content="first\n")
    failed, error = a.call("create", memory="user", path="notes/dup.md", content="second\n")
    assert failed
    assert error["error"] == "already_exists" and error["current"]["content"] == "first\n"

    failed, error = a.call("edit", memory="user", path="notes/dup.md", old_string="absent", new_string="x")
    assert failed and error["error"] == "no_match" and error["current"]["path"] == "notes/dup.md"

    failed, error = a.call("create", memory="docs", path="guide/new.md", content="x\n")
    assert failed and error["error"] == "forbidden" and error["current"] is None

    failed, error = a.call("view", memory="nobody")
    assert failed and error["error"] == "unknown_memory"

    # A tool the server does not have is the protocol's invalid-params error, not a tool result.
    with pytest.raises(MCPError) as unknown:
        a.run(lambda s: s.call_tool("memory_file_launch", {"memory": "user"}))
    assert unknown.value.error.code == -32602 and "Unknown tool: 'memory_file_launch'" in unknown.value.error.message
    assert "memory_file_view" in unknown.value.error.message

    # Arguments the schema refuses are one code, whatever is wrong, with the field and why.
    for arguments, why in (
        ({"memory": "user", "path": "x.md"}, "'content' is required"),
        ({"memory": "user", "path": "x.md", "content": "x", "mode": "w"}, "'mode' is not an argument"),
        ({"memory": "user", "path": 7, "content": "x"}, "'path': Input should be a valid string"),
    ):
        failed, error = a.call("create", **arguments)
        assert failed and error["error"] == "invalid_arguments" and why in error["message"], error

    failed, docs = a.call("view", memory="docs", path="guide/style.md")
    assert not failed and docs["content"] == "Use short sentences.\n"


def test_a_hostile_grep_neither_freezes_the_server_nor_runs_without_bound(a: McpClient) -> None:
    """An agent can write a line that makes ``(a|aa)+$`` backtrack ~10^8 times, then grep for it.

    The server must answer ping while that grep runs (the regex engine lets go
    of the GIL), and the grep must end as ``invalid_pattern`` when its matching
    budget is spent, not minutes later. Both waits are the client's hang guard.
    """
    failed, _ = a.call("create", memory="user", path="hostile/line.md", content="a" * 40 + "b\n")
    assert not failed
    grep = a.submit(
        lambda s: s.call_tool("memory_file_grep", {"memory": "user", "pattern": "(a|aa)+$", "regex": True})
    )
    time.sleep(0.5)  # let the server get into the match
    a.run(lambda s: s.send_ping())
    assert not grep.done(), "the ping was only answered once the grep had finished"
    result = grep.result(timeout=300)
    assert result.is_error and payload(result)["error"] == "invalid_pattern"
    failed, found = a.call("grep", memory="user", pattern="a+b$", regex=True, path="hostile/")
    assert not failed and [m["path"] for m in found["matches"]] == ["hostile/line.md"]


def test_every_change_records_its_call_run_and_principal(a: McpClient, root: Path) -> None:
    first = a.call("create", memory="user", path="who/one.md", content="1\n")[1]
    second = a.call("append", memory="user", path="who/one.md", content="2")[1]
    assert second["status"] == "appended" and first["status"] == "created"
    repo = root / "user.git"
    fmt = "%an|%(trailers:key=Gitmem-Run,valueonly,separator=)|%(trailers:key=Gitmem-Tool-Call,valueonly,separator=)"
    lines = git(repo, "log", "-2", f"--format={fmt}", "--", "who/one.md").splitlines()
    assert len(lines) == 2
    calls = set()
    for line in lines:
        author, run, call = line.split("|")
        assert author == "alice" and run == "run-a"
        assert re.fullmatch(r"mcp-[0-9a-f]{8}-\d+", call), call
        calls.add(call)
    assert len(calls) == 2, "each tool call has its own id"


# --- two sessions, one file ----------------------------------------------------------


def test_two_sessions_edit_one_file_with_compare_and_swap(a: McpClient, b: McpClient, root: Path) -> None:
    text = "".join(f"line {n}: todo\n" for n in range(1, 7))
    assert not a.call("create", memory="user", path="shared/list.md", content=text)[0]
    seen_by_b = b.call("view", memory="user", path="shared/list.md")[1]

    def replace(client: McpClient, old: str, new: str) -> tuple[bool, dict[str, Any]]:
        return client.call("edit", memory="user", path="shared/list.md", old_string=old, new_string=new)

    # a and b edit different lines: both remain.
    assert not replace(a, "line 1: todo", "line 1: A")[0]
    failed, by_b = replace(b, "line 3: todo", "line 3: B")
    assert not failed and by_b["version"] != seen_by_b["version"]
    both = b.call("view", memory="user", path="shared/list.md")[1]["content"]
    assert "line 1: A" in both and "line 3: B" in both

    # b edits a line a has already changed: refused, with the file as it is now.
    failed, error = replace(b, "line 1: todo", "line 1: B")
    assert failed and error["error"] == "no_match"
    assert error["current"]["content"] == both

    # Both sessions fire edits of different lines at the same time. Each attempt can only
    # lose to a commit of one of the three others, so with write_retries 3 all four land.
    def edit(line: int, who: str) -> Any:
        async def go(s: ClientSession) -> Any:
            args = {"memory": "user", "path": "shared/list.md", "old_string": f"line {line}: todo"}
            return await s.call_tool("memory_file_edit", {**args, "new_string": f"line {line}: {who}"})

        return go

    def two(line_1: int, line_2: int, who: str) -> Any:
        async def go(s: ClientSession) -> Any:
            return await asyncio.gather(edit(line_1, who)(s), edit(line_2, who)(s))

        return go

    futures: list[Future[Any]] = [a.submit(two(2, 4, "A")), b.submit(two(5, 6, "B"))]
    results = [r for f in futures for r in f.result(timeout=60)]
    assert [r.is_error for r in results] == [False] * 4, [payload(r) for r in results]
    final = a.call("view", memory="user", path="shared/list.md")[1]["content"]
    assert final == "line 1: A\nline 2: A\nline 3: B\nline 4: A\nline 5: B\nline 6: B\n"

    log = git(root / "user.git", "log", "--format=%an %s", "--", "shared/list.md").splitlines()
    assert log.count("alice edit shared/list.md") == 3 and log.count("bob edit shared/list.md") == 3
    fsck = subprocess.run(["git", "-C", str(root / "user.git"), "fsck", "--strict"], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr


# --- context: resource and prompt -----------------------------------------------------


def test_the_context_is_a_resource_and_a_prompt_with_cursors(a: McpClient, b: McpClient) -> None:
    resources = b.run(lambda s: s.list_resources()).resources
    assert [r.uri for r in resources] == [context_uri("user")]
    assert [str(r.uri) for r in a.run(lambda s: s.list_resources()).resources] == [
        "memory://user/context",
        "memory://docs/context",
    ]

    contents = a.run(lambda s: s.read_resource("memory://docs/context")).contents
    assert len(contents) == 1 and isinstance(contents[0], TextResourceContents)
    assert contents[0].text.startswith('<memory-context memory="docs" trust="untrusted" kind="full">')
    assert "guide/style.md: Use short sentences." in contents[0].text

    with pytest.raises(MCPError):
        a.run(lambda s: s.read_resource("memory://nobody/context"))

    prompts = b.run(lambda s: s.list_prompts()).prompts
    assert [p.name for p in prompts] == [CONTEXT_PROMPT]

    def prompt(client: McpClient) -> str:
        result = client.run(lambda s: s.get_prompt(CONTEXT_PROMPT))
        assert len(result.messages) == 1 and isinstance(result.messages[0].content, TextContent)
        return result.messages[0].content.text

    first = prompt(b)  # b's first prompt: nothing delivered yet, so the full context
    assert first.startswith('<memory-context memory="user" trust="untrusted" kind="full">')
    assert json.dumps("Alice. Reply briefly.\n")[1:-1] in first
    assert prompt(b) == NO_CHANGE_TEXT

    a.call("create", memory="user", path="prompt/new.md", content="fresh\n")
    changed = prompt(b)
    assert changed.startswith('<memory-context memory="user" trust="untrusted" kind="changes">')
    assert "prompt/new.md" in changed and "README.md" not in changed
    assert prompt(b) == NO_CHANGE_TEXT

    again = a.run(lambda s: s.read_resource(context_uri("user"))).contents[0]
    assert isinstance(again, TextResourceContents) and 'kind="full"' in again.text, "the resource keeps no cursor"


# --- in process: cursor file, helpers -------------------------------------------------


def test_cursors_persist_between_sessions_in_the_cursor_file(tmp_path: Path) -> None:
    store = Root(tmp_path / "root").mount("user", create=True)
    store.sync.write("README.md", README, expected=None)
    cursors = tmp_path / "state" / "cursors.json"

    def server() -> MemoryMcpServer:
        mount = FileMount("user", store, "write", always_load=("README.md",))
        return MemoryMcpServer(FileMemoryCapability([mount]), origin=Origin(principal_id="p"), cursor_file=cursors)

    assert 'kind="full"' in asyncio.run(server().context_text())
    assert json.loads(cursors.read_text()) == {"user": store.sync.head()}
    assert asyncio.run(server().context_text()) == NO_CHANGE_TEXT  # a new session continues from the file
    store.sync.write("b.md", "new\n", expected=None)
    assert 'kind="changes"' in asyncio.run(server().context_text())

    cursors.write_text("{not json")
    assert 'kind="full"' in asyncio.run(server().context_text()), "an unreadable cursor file means full context"


def test_a_server_without_a_run_id_gives_its_session_one() -> None:
    from gitmem import InMemoryFileStore

    cap = FileMemoryCapability([FileMount("user", InMemoryFileStore())])
    one, two = MemoryMcpServer(cap), MemoryMcpServer(cap, origin=Origin(run_id="given", principal_id="p"))
    assert one.origin.run_id == f"mcp-{one.session_tag}" and one.origin.principal_id is None
    assert two.origin == Origin(run_id="given", principal_id="p")
    result = tool_result({"error": "not_found", "message": "m", "current": None})
    assert result.is_error and result.structured_content == {"error": "not_found", "message": "m", "current": None}
    assert not tool_result({"status": "created"}).is_error


# --- the command's arguments ------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["--mount", "user:admin"], 2, "'read' or 'write'"),
        (["--mount", "user", "--mount", "user:read"], 2, "twice"),
        (["--mount", "user", "--always-load", "other:README.md"], 2, "not one of the --mount"),
        (["--mount", "user", "--always-load", "README.md"], 2, "NAME:PATH"),
        (["--mount", "absent:read"], 1, "unknown_memory"),
        (["--mount", "Bad_Name"], 1, "invalid_path"),
        ([], 2, "--mount"),
    ],
)
def test_bad_arguments_stop_before_serving(tmp_path: Path, args: list[str], code: int, says: str) -> None:
    result = CliRunner().invoke(cli, ["mcp", "--root", str(tmp_path), *args])
    assert result.exit_code == code, result.output
    assert says in result.output
    assert not (tmp_path / "absent.git").exists()


def test_an_always_load_file_the_memory_lacks_is_warned_about_at_start(tmp_path: Path) -> None:
    # A real server process: it starts, warns on stderr (stdout is the MCP stream), and stops at EOF.
    Root(tmp_path).mount("user", create=True).sync.write("README.md", "hello\n", expected=None)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from gitmem.adapters.cli import main; main()",
            *("mcp", "--root", str(tmp_path), "--mount", "user", "--no-watch"),
            *("--always-load", "user:README.md", "--always-load", "user:typo.md"),
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "--always-load user:typo.md: memory 'user' has no file 'typo.md'" in done.stderr
    assert "README.md" not in done.stderr and done.stdout == ""

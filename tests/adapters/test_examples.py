"""The examples run as shipped: the two-agent script, the Anthropic example without a key, the MCP config."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import TextContent

from adapters.mcp_support import TIMEOUT

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True, env=env, timeout=TIMEOUT
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


def test_two_agents_get_full_then_changes_then_nothing(tmp_path: Path) -> None:
    out = run_example("two_agents.py", "--root", str(tmp_path / "memories"))
    heads = re.findall(r"--- (planner|booker), run (\d): context", out)
    assert heads == [
        ("planner", "1"),
        ("booker", "1"),
        ("planner", "2"),
        ("booker", "2"),
        ("planner", "3"),
        ("booker", "3"),
    ]
    blocks = re.findall(r'<memory-context memory="trip" trust="untrusted" kind="(\w+)">', out)
    assert blocks == ["full", "full", "changes", "changes", "changes"], "booker's third run has no block"
    assert '"deleted":["ideas/food.md"]' in out
    assert "day 1: Lisbon (arrive 10:00)\n    day 2: Sintra\n    day 3: Porto (train booked)" in out
    assert "the stale edit got 'no_match'" in out
    assert "(no block: nothing changed since the last run)" in out
    assert (tmp_path / "memories" / "trip.git" / "HEAD").exists()


def test_the_anthropic_example_without_a_key_calls_no_api(tmp_path: Path) -> None:
    out = run_example("anthropic_memory_tool.py", "--root", str(tmp_path / "memories"))
    assert "ANTHROPIC_API_KEY is not set" in out
    assert "File created successfully at: /memories/traveller.md" in out
    assert "would escape /memories" in out
    log = subprocess.run(
        ["git", "-C", str(tmp_path / "memories" / "claude.git"), "log", "--format=%(trailers:key=Gitmem-Tool-Call)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert log == [
        "Gitmem-Tool-Call:",
        "toolu_demo_4",
        "Gitmem-Tool-Call:",
        "toolu_demo_3",
        "Gitmem-Tool-Call:",
        "toolu_demo_2",
    ]


def test_the_mcp_client_config_launches_a_working_server(tmp_path: Path) -> None:
    config = json.loads((EXAMPLES / "mcp_client_config.json").read_text())
    server = config["mcpServers"]["gitmem"]
    assert Path(server["command"]).name == "gitmem" and server["args"][0] == "mcp"
    args = [a.replace("/path/to/state", str(tmp_path / "state")) for a in server["args"]]
    env = {k: v.replace("/path/to/memories", str(tmp_path / "memories")) for k, v in server["env"].items()}
    params = StdioServerParameters(command=sys.executable, args=["-m", "gitmem.adapters.cli", *args], env=env)

    async def session() -> tuple[list[str], str]:
        with (tmp_path / "stderr").open("w") as errors:
            async with stdio_client(params, errlog=errors) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=TIMEOUT) as s:
                    await s.initialize()
                    tools = [t.name for t in (await s.list_tools()).tools]
                    await s.call_tool("memory_file_create", {"memory": "user", "path": "README.md", "content": "Me.\n"})
                    prompt = (await s.get_prompt("memory_context")).messages[0].content
                    assert isinstance(prompt, TextContent)
                    return tools, prompt.text

    tools, context = asyncio.run(asyncio.wait_for(session(), TIMEOUT))
    assert len(tools) == 11  # the seven file tools, and search, history, show and restore
    assert '"path":"README.md","content":"Me.\\n"' in context
    assert (tmp_path / "memories" / "user.git" / "HEAD").exists(), "GITMEM_ROOT from the config's env"
    assert json.loads((tmp_path / "state" / "claude-desktop-cursors.json").read_text())["user"]
    assert "Traceback" not in (tmp_path / "stderr").read_text()

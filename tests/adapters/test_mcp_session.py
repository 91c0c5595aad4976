"""`gitmem mcp --session-memory DIR`: the memory_session_* tools over a real MCP client session."""

from __future__ import annotations

import subprocess
from pathlib import Path

from adapters.mcp_support import McpClient, payload


def test_session_tools_over_mcp(tmp_path: Path) -> None:
    root = tmp_path / "root"
    session_dir = tmp_path / "session"
    errlog = tmp_path / "mcp.stderr"
    with McpClient(
        root, "--mount", "user", "--session-memory", str(session_dir), "--run", "agent-1", "--no-watch", errlog=errlog
    ) as client:
        tools = {t.name: t for t in client.run(lambda s: s.list_tools()).tools}
        assert {"memory_session_remember", "memory_session_recall", "memory_session_prune"} <= set(tools)
        assert tools["memory_session_recall"].annotations is not None
        assert tools["memory_session_recall"].annotations.read_only_hint is True
        made = client.run(
            lambda s: s.call_tool(
                "memory_session_remember",
                {"content": "Releases need PROVIDER_BASE_URL set first", "tags": ["release"], "importance": 0.8},
            )
        )
        assert not made.is_error
        item = payload(made)["item"]
        found = client.run(lambda s: s.call_tool("memory_session_recall", {"query": "release provider_base_url"}))
        assert [r["id"] for r in payload(found)["results"]] == [item["id"]]
        refused = client.run(lambda s: s.call_tool("memory_session_prune", {"dry_run": False}))
        assert refused.is_error and payload(refused)["error"] == "forbidden"
        bad = client.run(lambda s: s.call_tool("memory_session_remember", {"content": "password = hunter2hunter2"}))
        assert bad.is_error and "password_assignment" in payload(bad)["message"]
    assert "Traceback" not in errlog.read_text(encoding="utf-8")
    log = subprocess.run(
        [
            "git",
            "-C",
            str(session_dir / "session.git"),
            "log",
            "-1",
            "--format=%(trailers:key=Gitmem-Tool-Call,valueonly)%n%(trailers:key=Gitmem-Run,valueonly)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert log[0].startswith("mcp-") and log[1] == "agent-1"

"""Session memory over ``/mcp`` of a running ``gitmem serve``, with the official ``mcp`` client.

The token decides what the session memory offers (``write`` remembers, ``read``
only recalls) and whose name each item's commit carries; the tools are the
registry's, as over stdio.
"""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
from pathlib import Path

from bench.mcp_http_client import HttpMcpClient, payload
from gitmem import Root
from gitmem.adapters.tokens import token_entry

from .support import GIT_ENV, GIT_TIMEOUT, fsck_clean, seed

GITMEM = [sys.executable, "-c", "from gitmem.adapters.cli import main; main()"]


def token_of(who: str) -> str:
    return f"tok-{who}-session-0123456789abcdef"


def test_a_team_shares_a_session_memory_at_each_tokens_access(tmp_path: Path) -> None:
    root = Root(tmp_path / "mem")
    seed(root.mount("team", create=True))
    root.mount("team-lessons", create=True, kind="session")
    tokens = tmp_path / "tokens.toml"
    people = {"alice": "write", "rob": "read", "carol": "propose"}
    tokens.write_text("".join(token_entry(token_of(w), w, ["team*"], a) for w, a in people.items()))  # type: ignore[arg-type]
    proc = subprocess.Popen(
        [*GITMEM, "serve", "--root", str(root.path), "--port", "0", "--token-file", str(tokens), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=GIT_ENV,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], GIT_TIMEOUT)
        assert ready, "gitmem serve did not say where it listens"
        url = json.loads(proc.stdout.readline())["url"] + "/mcp"
        with HttpMcpClient(url, token_of("alice")) as alice:
            assert {"memory_session_remember", "memory_session_recall", "memory_file_view"} <= set(alice.tool_names())
            kept = alice.call("memory_session_remember", content="The team deploys on Tuesdays.", tags=["deploy"])
            assert not kept.is_error, kept
        for reader in ("rob", "carol"):
            with HttpMcpClient(url, token_of(reader)) as agent:
                names = set(agent.tool_names())
                assert {"memory_session_recall", "memory_session_recent", "memory_session_tags"} <= names
                assert "memory_session_remember" not in names and "memory_session_prune" not in names
                found = payload(agent.call("memory_session_recall", query="when does the team deploy"))
                assert "Tuesdays" in json.dumps(found)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=GIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise AssertionError("gitmem serve ignored SIGTERM") from None
    assert proc.returncode == 0, err
    entry = root.mount("team-lessons").sync.log()[0]
    assert entry.origin.principal_id == "alice" and entry.origin.run_id == "alice/mcp"
    fsck_clean(root.mount_path("team-lessons"))

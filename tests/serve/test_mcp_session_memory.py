"""Session memory over ``/mcp`` of a running ``gitmem serve``, with the official ``mcp`` client.

The token decides what the session memory offers (``write`` remembers, ``read``
only recalls) and whose name each item's commit carries; the tools are the
registry's, as over stdio.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.mcp_http_client import HttpMcpClient, payload
from gitmem import Root
from gitmem.adapters.tokens import token_entry

from .support import fsck_clean, seed, serving


def token_of(who: str) -> str:
    return f"tok-{who}-session-0123456789abcdef"


def test_a_team_shares_a_session_memory_at_each_tokens_access(tmp_path: Path) -> None:
    root = Root(tmp_path / "mem")
    seed(root.mount("team", create=True))
    root.mount("team-lessons", create=True, kind="session")
    tokens = tmp_path / "tokens.toml"
    people = {"alice": "write", "rob": "read", "carol": "propose"}
    tokens.write_text("".join(token_entry(token_of(w), w, ["team*"], a) for w, a in people.items()))  # type: ignore[arg-type]
    with serving(root.path, tokens) as served:
        url = served.info["url"] + "/mcp"
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
    entry = root.mount("team-lessons").sync.log()[0]
    assert entry.origin.principal_id == "alice" and entry.origin.run_id == "alice/mcp"
    fsck_clean(root.mount_path("team-lessons"))

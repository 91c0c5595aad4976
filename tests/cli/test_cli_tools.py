"""``gitmem tools``: the registry's one list, as a person or a script sees it."""

from __future__ import annotations

from pathlib import Path

from cli.conftest import Run, as_json
from gitmem.root import Root


def test_tools_lists_every_tool_of_the_root_with_its_permission_id(user: Run) -> None:
    result = user("--json", "tools")
    assert result.exit_code == 0, result.output
    listing = as_json(result)
    names = [t["name"] for t in listing["tools"]]
    assert names[:3] == ["memory_file_view", "memory_file_grep", "memory_file_search"]
    assert "memory_file_restore" in names and "memory_file_history" in names
    restore = next(t for t in listing["tools"] if t["name"] == "memory_file_restore")
    assert restore == {
        "name": "memory_file_restore",
        "permission": "memory.file.restore",
        "kind": "file",
        "effect": "write",
        "memories": ["user"],
        "chars": restore["chars"],
    }
    assert listing["chars"] == sum(t["chars"] for t in listing["tools"])


def test_tools_narrows_like_mcp_and_refuses_unknown_names(user: Run) -> None:
    listing = as_json(user("--json", "tools", "--mount", "user:read", "--tools", "view,memory.file.history,restore"))
    assert [t["name"] for t in listing["tools"]] == ["memory_file_view", "memory_file_history"]  # read: no restore
    text = user("tools", "--tools", "grep")
    assert text.exit_code == 0 and "memory_file_grep" in text.output and "1 tool," in text.output
    bad = user("tools", "--tools", "view,teleport")
    assert bad.exit_code == 2 and "teleport" in bad.output


def test_mcp_refuses_the_reviewer_tools_a_local_server_never_offers(user: Run) -> None:
    for command in ("mcp", "tools"):
        for name in ("durable_activate", "memory.durable.approve"):
            refused = user(command, "--mount", "user", "--tools", f"durable_recall,{name}")
            assert refused.exit_code == 2, refused.output
            assert name in refused.output and "gitmem serve" in refused.output and "admin" in refused.output


def test_tools_without_mount_lists_what_can_be_served_and_names_the_rest(user: Run, root: Path) -> None:
    # A durable memory is not offered through --mount: its tools need a namespace.
    Root(root).mount("facts", create=True, kind="record")
    Root(root).mount("deep", create=True, kind="durable")
    result = user("--json", "tools")
    assert result.exit_code == 0, result.output
    listing = as_json(result)
    by_name = {t["name"]: t["memories"] for t in listing["tools"]}
    assert by_name["memory_file_view"] == ["user"] and by_name["memory_record_search"] == ["facts"]
    assert listing["not_listed"] == [
        {
            "memory": "deep",
            "kind": "durable",
            "how": "a durable memory is offered with --durable deep --durable-namespace TENANT PRINCIPAL SCOPE",
        }
    ]
    text = user("tools")
    assert text.exit_code == 0 and "not listed: deep (durable): a durable memory is offered with --durable deep" in text.stdout
    named = user("tools", "--mount", "deep")
    assert named.exit_code == 2 and "--durable deep --durable-namespace" in named.stderr

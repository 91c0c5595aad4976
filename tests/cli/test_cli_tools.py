"""``gitmem tools``: the registry's one list, as a person or a script sees it."""

from __future__ import annotations

from cli.conftest import Run, as_json


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

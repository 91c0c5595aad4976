"""Behaviour a deletion once took away, held here: MCP cursor snapshots in a folder that is a link,
written fresh at 0600; the Anthropic memory tool's execute() refusing a bad view_range as a tool
error; watch() taking a callback.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path

import pytest

from gitmem import Root
from gitmem.adapters.mcp_server import MemoryMcpServer, save_cursors
from gitmem.model import Origin
from gitmem.tools import FileMemoryCapability, FileMount

# --- cursor files ---------------------------------------------------------------------------


def test_a_cursor_file_in_a_linked_folder_is_saved_without_error(tmp_path: Path) -> None:
    # `--cursors ~/state/cursors.json` where ~/state is a link (a dotfiles folder, or macOS's /tmp):
    # the prompt's cursors were saved before; now every memory_context prompt fails after writing them.
    real = tmp_path / "real-state"
    real.mkdir()
    (tmp_path / "state").symlink_to(real, target_is_directory=True)
    cursors = tmp_path / "state" / "cursors.json"
    store = Root(tmp_path / "root").mount("user", create=True)
    store.sync.write("README.md", "# notes\n", expected=None)
    server = MemoryMcpServer(
        FileMemoryCapability([FileMount("user", store, "write", always_load=("README.md",))]),
        origin=Origin(principal_id="p"),
        cursor_file=cursors,
    )
    text = asyncio.run(server.context_text())  # the memory_context prompt's body
    assert 'kind="full"' in text
    assert json.loads(cursors.read_text()) == {"user": store.sync.head()}


def test_save_cursors_into_a_linked_folder(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    save_cursors(tmp_path / "link" / "cursors.json", {"user": "a" * 40})
    assert json.loads((real / "cursors.json").read_text()) == {"user": "a" * 40}


def test_a_rewritten_cursor_file_is_private_again(tmp_path: Path) -> None:
    # Before: every save made a fresh 0600 file (mkstemp). Now an existing file's mode is kept,
    # so a cursor file left group/world-readable (0644 by a copy, a restore, an older tool) stays so.
    cursors = tmp_path / "cursors.json"
    cursors.write_text("{}")
    os.chmod(cursors, 0o644)
    save_cursors(cursors, {"user": "a" * 40})
    assert stat.S_IMODE(os.stat(cursors).st_mode) == 0o600


# --- the Anthropic memory tool: MemoryCommands checks its own inputs ----------------------------


def test_execute_with_a_view_range_of_three_numbers_is_a_tool_error(tmp_path: Path) -> None:
    # `execute(command)` is the SDK's public entry (gitmem's own tests use it); it does not go
    # through `call`, so the schema check never runs. The SDK's model takes any list of ints.
    from anthropic.lib.tools import ToolError
    from anthropic.types.beta import BetaMemoryTool20250818CreateCommand as Create
    from anthropic.types.beta import BetaMemoryTool20250818ViewCommand as View

    from gitmem.adapters.anthropic_memory import GitMemoryTool

    tool = GitMemoryTool(Root(tmp_path / "root").mount("claude", create=True))
    tool.execute(Create(command="create", path="/memories/a.md", file_text="one\ntwo\nthree\n"))
    for bad in ([1, 2, 3], [1]):
        with pytest.raises(ToolError):
            tool.execute(View(command="view", path="/memories/a.md", view_range=bad))


# --- watch(): a callback as well as the queue ------------------------------------------------


def test_watch_still_takes_a_callback(tmp_path: Path) -> None:
    from gitmem.adapters.watch import watch

    root = Root(tmp_path / "root")
    root.mount("user", create=True)
    seen: list[object] = []
    with watch(root.path, ["user"], timeout=0.1, callback=seen.append, index=False):
        pass


def test_gitmem_mcp_with_cursors_in_a_linked_folder_answers_the_prompt(tmp_path: Path) -> None:
    # The same over a real `gitmem mcp` process and the MCP SDK's stdio client.
    from adapters.mcp_support import McpClient
    from gitmem.adapters.mcp_server import CONTEXT_PROMPT

    root = tmp_path / "root"
    Root(root).mount("user", create=True).sync.write("README.md", "# notes\n", expected=None)
    real = tmp_path / "real-state"
    real.mkdir()
    (tmp_path / "state").symlink_to(real, target_is_directory=True)
    cursors = tmp_path / "state" / "cursors.json"
    with McpClient(root, "--mount", "user", "--cursors", str(cursors), errlog=tmp_path / "err.log") as client:
        result = client.run(lambda s: s.get_prompt(CONTEXT_PROMPT))
    assert 'kind="full"' in result.messages[0].content.text  # type: ignore[union-attr]

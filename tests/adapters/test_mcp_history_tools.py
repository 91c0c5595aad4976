"""History, show, search and restore over ``gitmem mcp``, driven by the real MCP SDK client.

Three server processes on one root: ``rw`` (memory ``notes`` to write, ``docs`` to
read, a session memory, principal alice), ``narrow`` (``--tools view,grep,history``)
and nothing else. What they must show: every new tool works on a write and a
read mount; a read mount neither lists nor runs restore; narrowing lists exactly
the named tools; a restore that races another writer changes nothing and answers
the file as it is now; and a call the declared schema refuses (60,000 tags) is
refused before the memory sees it, leaving the same head.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from adapters.mcp_support import McpClient, payload
from gitmem import Root

NOTE = "---\ndescription: Tea preferences\n---\nThe user drinks green tea.\n"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcphist") / "root"
    r = Root(path)
    r.mount("notes", create=True).sync.write("prefs/tea.md", NOTE, expected=None)
    r.mount("docs", create=True).sync.write("style.md", "Use short sentences about tea.\n", expected=None)
    return path


def _serve(root: Path, name: str, *args: str) -> Iterator[McpClient]:
    errlog = root.parent / f"{name}.stderr"
    with McpClient(root, *args, errlog=errlog) as client:
        yield client
    assert "Traceback" not in errlog.read_text(encoding="utf-8"), errlog.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def rw(root: Path) -> Iterator[McpClient]:
    session = root.parent / "session"
    yield from _serve(
        root, "rw", "--mount", "notes", "--mount", "docs:read", "--session-memory", str(session), "--principal", "alice"
    )


@pytest.fixture(scope="module")
def narrow(root: Path) -> Iterator[McpClient]:
    yield from _serve(root, "narrow", "--mount", "notes", "--tools", "view,grep,memory.file.history", "--no-watch")


def listed(client: McpClient) -> dict[str, Any]:
    return {t.name: t for t in client.run(lambda s: s.list_tools()).tools}


def head(root: Path, name: str) -> str:
    return Root(root).mount(name).sync.head()


def fsck(root: Path, name: str) -> None:
    subprocess.run(["git", "fsck", "--strict"], cwd=Root(root).mount_path(name), check=True, capture_output=True)


def test_the_new_tools_are_listed_with_their_permission_ids(rw: McpClient) -> None:
    tools = listed(rw)
    for tool in ("search", "history", "show", "restore"):
        assert tools[f"memory_file_{tool}"].meta["io.gitmem/tool-id"] == f"memory.file.{tool}"
    assert tools["memory_file_history"].meta["io.gitmem/memories"] == ["notes", "docs"]
    assert tools["memory_file_restore"].meta["io.gitmem/memories"] == ["notes"]  # not the read mount
    assert tools["memory_file_restore"].annotations.read_only_hint is False
    assert tools["memory_file_history"].annotations.read_only_hint is True
    assert "version_mismatch" in (rw.init.instructions or "") and "memory_file_history" in (rw.init.instructions or "")


def test_history_show_and_restore_on_a_write_mount(rw: McpClient, root: Path) -> None:
    failed, viewed = rw.call("view", memory="notes", path="prefs/tea.md")
    assert not failed
    failed, _ = rw.call("edit", memory="notes", path="prefs/tea.md", old_string="green", new_string="black")
    assert not failed
    failed, _ = rw.call("append", memory="notes", path="prefs/tea.md", content="No sugar.")
    assert not failed

    failed, page = rw.call("history", memory="notes", path="prefs/tea.md", limit=2)
    assert not failed
    assert [c["op"] for c in page["changes"]] == ["edit", "edit"]  # an append is an edit at the end
    assert all(c["principal"] == "alice" and c["tool_call"].startswith("mcp-") for c in page["changes"])
    assert page["next_cursor"] is not None
    failed, older = rw.call("history", memory="notes", path="prefs/tea.md", cursor=page["next_cursor"])
    assert not failed and older["next_cursor"] is None
    first = older["changes"][0]["commit"]  # the write that made the file (not through a tool)
    assert [c["principal"] for c in older["changes"]] == [None]

    failed, then = rw.call("show", memory="notes", revision=first, path="prefs/tea.md")
    assert not failed and then["content"] == NOTE
    edit = page["changes"][1]["commit"]
    failed, change = rw.call("show", memory="notes", revision=edit)
    assert not failed and change["commit"] == edit and change["principal"] == "alice"
    assert "-The user drinks green tea." in change["diff"] and "+The user drinks black tea." in change["diff"]
    assert change["files"] == [{"path": "prefs/tea.md", "old_path": "prefs/tea.md", "status": "modified"}]

    failed, now = rw.call("view", memory="notes", path="prefs/tea.md")
    failed, restored = rw.call("restore", memory="notes", path="prefs/tea.md", revision=first, version=now["version"])
    assert not failed and restored["status"] == "restored" and restored["version"] == viewed["version"]
    failed, latest = rw.call("history", memory="notes", path="prefs/tea.md", limit=1)
    assert latest["changes"][0]["op"] == "restore" and first[:12] in latest["changes"][0]["summary"]
    fsck(root, "notes")


def test_a_restore_that_races_another_writer_fails_with_the_current_file(rw: McpClient, root: Path) -> None:
    failed, seen = rw.call("view", memory="notes", path="prefs/tea.md")
    failed, page = rw.call("history", memory="notes", path="prefs/tea.md", limit=50)
    oldest = page["changes"][-1]["commit"]
    store = Root(root).mount("notes").sync
    store.write("prefs/tea.md", NOTE + "Oolong on Sundays.\n", expected=seen["version"])  # another writer
    before = store.head()
    failed, answer = rw.call("restore", memory="notes", path="prefs/tea.md", revision=oldest, version=seen["version"])
    assert failed and answer["error"] == "version_mismatch"
    assert answer["current"]["content"].endswith("Oolong on Sundays.\n")
    assert store.head() == before
    fsck(root, "notes")


def test_search_ranks_files_with_the_line_that_matched(rw: McpClient) -> None:
    failed, found = rw.call("search", memory="notes", query="tea")
    assert not failed and found["results"][0]["path"] == "prefs/tea.md"
    hit = found["results"][0]
    assert hit["score"] > 0 and hit["line"] >= 4 and "tea" in hit["text"]  # a body line, not the frontmatter
    assert "description" not in hit["text"]
    failed, docs = rw.call("search", memory="docs", query="sentences")
    assert not failed and docs["results"][0]["path"] == "style.md" and docs["results"][0]["line"] == 1


def test_a_read_mount_reads_history_but_cannot_restore(rw: McpClient, root: Path) -> None:
    failed, page = rw.call("history", memory="docs")
    assert not failed and page["changes"][0]["paths"] == ["style.md"]
    failed, old = rw.call("show", memory="docs", revision=page["changes"][0]["commit"], path="style.md")
    assert not failed and old["content"].startswith("Use short sentences")
    before = head(root, "docs")
    failed, refused = rw.call(
        "restore", memory="docs", path="style.md", revision=page["changes"][-1]["commit"], version=None
    )
    assert failed and refused["error"] == "forbidden" and refused["current"] is None
    assert head(root, "docs") == before


def test_narrowing_lists_and_runs_only_the_named_tools(narrow: McpClient) -> None:
    assert sorted(listed(narrow)) == ["memory_file_grep", "memory_file_history", "memory_file_view"]
    failed, page = narrow.call("history", memory="notes", limit=1)
    assert not failed and len(page["changes"]) == 1
    with pytest.raises(MCPError) as refused:  # a tool this server does not offer: the protocol's invalid params
        narrow.call("restore", memory="notes", path="prefs/tea.md", revision="main", version=None)
    assert refused.value.error.code == -32602 and "memory_file_restore" in refused.value.error.message
    assert "restore" not in (narrow.init.instructions or "").split("tools:")[-1]


def test_arguments_are_checked_against_the_schema_before_the_memory_runs(rw: McpClient, root: Path) -> None:
    result = rw.run(lambda s: s.call_tool("memory_session_remember", {"content": "a fact", "tags": ["t"] * 60_000}))
    answer = payload(result)
    assert result.is_error and answer["error"] == "invalid_arguments" and "tags" in answer["message"]
    listed_items = payload(rw.run(lambda s: s.call_tool("memory_session_recent", {})))
    assert listed_items["items"] == []  # nothing was remembered
    failed, refused = rw.call("history", memory="notes", limit=10_000)
    assert failed and refused["error"] == "invalid_arguments" and "limit" in refused["message"]
    before = head(root, "notes")
    failed, refused = rw.call("restore", memory="notes", path="prefs/tea.md", revision="main", version=None, extra=1)
    assert failed and refused["error"] == "invalid_arguments" and "extra" in refused["message"]
    assert head(root, "notes") == before

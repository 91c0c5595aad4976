"""Where GitMemoryTool meets what the SDK's tool meets, the model reads the SDK's words.

The SDK's own test file runs against GitMemoryTool in tests/adapters/sdk/; these
cover what it cannot set up: git entries no filesystem has (submodules), files past
gitmem's size cap pushed with plain git, and the same answers from the async tool.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest
from anthropic.lib.tools import ToolError
from anthropic.types.beta import BetaMemoryTool20250818CreateCommand as Create
from anthropic.types.beta import BetaMemoryTool20250818DeleteCommand as Delete
from anthropic.types.beta import BetaMemoryTool20250818InsertCommand as Insert
from anthropic.types.beta import BetaMemoryTool20250818RenameCommand as Rename
from anthropic.types.beta import BetaMemoryTool20250818StrReplaceCommand as StrReplace
from anthropic.types.beta import BetaMemoryTool20250818ViewCommand as View

from gitmem import GitFileStore, Origin, review
from gitmem.adapters.anthropic_commands import MAX_VIEW_CHARS
from gitmem.adapters.anthropic_memory import AsyncGitMemoryTool, GitMemoryTool


def git(store: GitFileStore, *args: str, input: str | None = None) -> str:
    done = subprocess.run(["git", "-C", store.path, *args], capture_output=True, text=True, check=True, input=input)
    return done.stdout.strip()


def plain_git_commit(store: GitFileStore, extra: str) -> str:
    """Add tree entries (``ls-tree`` lines) to main the way a plain-git push would."""
    head = git(store, "rev-parse", "main")
    tree = git(store, "mktree", input=git(store, "ls-tree", "main") + "\n" + extra)
    commit = git(store, "commit-tree", tree, "-p", head, "-m", "plain git")
    git(store, "update-ref", "refs/heads/main", commit, head)
    return commit


@pytest.fixture
def store(tmp_path: Path) -> GitFileStore:
    store = GitFileStore.init(tmp_path / "mem.git")
    store.sync.write("notes.md", "inside\n", expected=None)
    return store


def refusal(tool: Any, command: Any) -> str:
    with pytest.raises(ToolError) as caught:
        result = tool.execute(command)
        if asyncio.iscoroutine(result):
            asyncio.run(result)
    assert isinstance(caught.value.content, str)
    return caught.value.content


def with_links(store: GitFileStore) -> None:
    link = git(store, "hash-object", "-w", "--stdin", input="notes.md")
    head = git(store, "rev-parse", "main")
    plain_git_commit(store, f"120000 blob {link}\tlink.md\n160000 commit {head}\tsub\n120000 blob {link}\tdir")


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("name", ["link.md", "sub"])
def test_a_symlink_or_submodule_answers_is_a_symlink_on_every_command(
    store: GitFileStore, name: str, asynchronous: bool
) -> None:
    with_links(store)
    tool: Any = AsyncGitMemoryTool(store) if asynchronous else GitMemoryTool(store)
    head = store.sync.head()
    path = f"/memories/{name}"
    why = "(a symbolic link or submodule in git, which the memory tool does not follow; nothing was done)"

    assert refusal(tool, View(command="view", path=path)) == (
        f"Unsupported file type for {path}: path '{path}' is a symlink {why}"
    )
    for command in (
        StrReplace(command="str_replace", path=path, old_str="inside", new_str="x"),
        Insert(command="insert", path=path, insert_line=0, insert_text="x"),
        Delete(command="delete", path=path),
        Create(command="create", path=path, file_text="x"),
        Rename(command="rename", old_path=path, new_path="/memories/elsewhere.md"),
        Rename(command="rename", old_path="/memories/notes.md", new_path=path),
    ):
        message = refusal(tool, command)
        assert message.startswith("path '/memories/") and f"is a symlink {why}" in message, (command, message)
    # Below a link: nothing to follow, so the SDK's "would escape" answer.
    for command in (
        View(command="view", path=f"{path}/secret.md"),
        Create(command="create", path=f"{path}/new.md", file_text="x"),
        StrReplace(command="str_replace", path=f"{path}/secret.md", old_str="a", new_str="b"),
        Delete(command="delete", path=f"{path}/secret.md"),
    ):
        message = refusal(tool, command)
        assert message.startswith(f"Path {path}/") and "would escape /memories directory via symlink" in message
    assert store.sync.head() == head  # nothing was written


def test_link_answers_follow_a_runs_proposal(store: GitFileStore) -> None:
    review.enable(store)
    with_links(store)
    tool = GitMemoryTool(store, origin=Origin(run_id="run-1"))
    tool.execute(Create(command="create", path="/memories/mine.md", file_text="the run's\n"))  # opens a proposal
    assert "is a symlink" in refusal(tool, View(command="view", path="/memories/link.md"))
    assert refusal(tool, View(command="view", path="/memories/none.md")).startswith("The path /memories/none.md does")


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_view_refuses_a_file_past_the_sdk_line_limit_and_a_view_too_long_to_return(
    store: GitFileStore, asynchronous: bool
) -> None:
    tall = git(store, "hash-object", "-w", "--stdin", input="\n".join(["line"] * 1_000_000))
    wide = git(store, "hash-object", "-w", "--stdin", input="a few lines\n" + "x" * (3 * MAX_VIEW_CHARS) + "\nend\n")
    plain_git_commit(store, f"100644 blob {tall}\ttall.md\n100644 blob {wide}\twide.md")
    tool: Any = AsyncGitMemoryTool(store) if asynchronous else GitMemoryTool(store)

    assert refusal(tool, View(command="view", path="/memories/tall.md")) == (
        "File /memories/tall.md exceeds maximum line limit of 999,999 lines."
    )
    message = refusal(tool, View(command="view", path="/memories/wide.md"))
    assert message.startswith("File /memories/wide.md is too long to view at once") and "view_range" in message
    assert len(message) < 300
    # A range that fits is shown.
    result = tool.execute(View(command="view", path="/memories/wide.md", view_range=[1, 1]))
    if asyncio.iscoroutine(result):
        result = asyncio.run(result)
    assert result == "Here's the content of /memories/wide.md with line numbers:\n     1\ta few lines"


@pytest.mark.parametrize("path", ["/memories/.", "/memories/sub/..", "/memories/a/b/../..", "/memories/../memories"])
def test_dot_paths_naming_the_root_get_the_sdk_refusal(store: GitFileStore, path: str) -> None:
    tool = GitMemoryTool(store)
    assert refusal(tool, Delete(command="delete", path=path)) == "Cannot delete the /memories directory itself"
    renamed = refusal(tool, Rename(command="rename", old_path=path, new_path="/memories/moved"))
    assert renamed == "Cannot rename the /memories directory itself"
    # Other dot paths are still refused for their segments, not taken for the root.
    assert "would escape /memories" in refusal(tool, Delete(command="delete", path="/memories/sub/."))
    assert [e.path for e in store.sync.list()] == ["notes.md"]

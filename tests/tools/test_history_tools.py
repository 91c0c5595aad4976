"""The history, show, search and restore file tools over a git mount, called on the capability."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitmem import InMemoryFileStore, Root
from gitmem.tools import FileMemoryCapability, FileMount
from gitmem.tools.history_ops import MAX_DIFF_CHARS, matched_line

NOTE = "---\ndescription: about tea and coffee\n---\nIntro line.\nThe user likes tea.\n"


@pytest.fixture
def memory(tmp_path: Path) -> FileMemoryCapability:
    store = Root(tmp_path / "root").mount("notes", create=True).sync
    store.write("tea.md", NOTE, expected=None)
    return FileMemoryCapability([FileMount("notes", store)])


def test_the_matched_line_is_a_body_line_with_its_number() -> None:
    assert matched_line(NOTE, "tea") == (5, "The user likes tea.")
    assert matched_line("no frontmatter\nabout TEA\n", "tea") == (2, "about TEA")
    assert matched_line(NOTE, "coffee") is None  # only the frontmatter says it
    assert matched_line("---\nunclosed\n", "unclosed") == (2, "unclosed")


def test_refusals_name_the_problem_and_change_nothing(memory: FileMemoryCapability) -> None:
    store = memory.mounts[0].store
    head = store.head()
    cases = [
        ("history", {"cursor": "main~1"}, "invalid_cursor"),
        ("history", {"cursor": "ab" * 20}, "not_found"),
        ("history", {"limit": 51}, "invalid_arguments"),
        ("show", {"revision": "nope"}, "not_found"),
        ("show", {"revision": "main", "path": "../x"}, "invalid_path"),
        ("show", {"revision": "main", "path": "missing.md"}, "not_found"),
        ("search", {"query": ""}, "invalid_arguments"),
        ("restore", {"path": "tea.md", "revision": "main", "version": None}, "already_exists"),
        ("restore", {"path": "tea.md", "revision": "main"}, "invalid_arguments"),
    ]
    for tool, args, code in cases:
        answer = memory.call(tool, {"memory": "notes", **args})
        assert answer["error"] == code, (tool, args, answer)
    assert store.head() == head


def test_a_big_change_shows_a_bounded_diff(memory: FileMemoryCapability) -> None:
    store = memory.mounts[0].store
    big = "".join(f"line {i} of a long note\n" for i in range(2000))
    memory.run("create", {"memory": "notes", "path": "big.md", "content": big})
    change = memory.run("show", {"memory": "notes", "revision": store.head()})
    assert change["truncated"] is True and len(change["diff"].encode()) <= MAX_DIFF_CHARS
    assert change["files"] == [{"path": "big.md", "old_path": "big.md", "status": "added"}]


def test_the_history_guide_comes_with_the_history_tools(memory: FileMemoryCapability) -> None:
    assert "version_mismatch" in memory.instructions and "memory_file_restore" in memory.instructions
    plain = FileMemoryCapability([FileMount("notes", InMemoryFileStore())])
    assert "memory_file_history" not in plain.instructions
    narrowed = FileMemoryCapability(memory.mounts, tools=("view", "memory_file_search"))
    assert [t.name for t in narrowed.offered()] == ["memory_file_view", "memory_file_search"]
    assert "memory_file_history" not in narrowed.instructions

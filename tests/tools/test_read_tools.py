"""memory_file_view and memory_file_grep: what a model sees when it looks at a memory."""

from __future__ import annotations

from typing import Any

import pytest

from gitmem import FileFormat, InMemoryFileStore
from gitmem.tools import FileMemoryLimits
from tools.support import Agent, PlainStore, one

PREFS = "---\ndescription: Language and tone\n---\n- likes tea\n- reply in English\n"


def seeded(store: Any) -> Agent:
    agent = Agent([one(store)])
    for path, text in {
        "README.md": "# About the user\n",
        "prefs/language.md": PREFS,
        "prefs/food.md": "Vegetarian, no mushrooms.\n",
        "prefs/old/2023.md": "Used to like coffee.\n",
        "projects/alpha/notes.md": "Alpha ships in May.\nTea with the team on Fridays.\n",
    }.items():
        assert agent.call("create", memory="user", path=path, content=text)["status"] == "created"
    return agent


def test_view_of_the_top_lists_one_level_with_descriptions_sizes_versions_and_folder_counts(store: Any) -> None:
    agent = seeded(store)
    listing = agent.call("view", memory="user", path="")
    versions = {e.path: e.version for e in store.list()}
    assert listing["path"] == ""
    assert listing["files"] == [
        {"path": "README.md", "description": "# About the user", "size": 17, "version": versions["README.md"]}
    ]
    assert listing["folders"] == [{"path": "prefs/", "files": 3}, {"path": "projects/", "files": 1}]


@pytest.mark.parametrize("path", ["prefs/", "prefs"])
def test_view_of_a_folder_lists_its_files_and_subfolders(store: Any, path: str) -> None:
    listing = seeded(store).call("view", memory="user", path=path)
    assert listing["path"] == "prefs/"
    assert [(f["path"], f["description"]) for f in listing["files"]] == [
        ("prefs/food.md", "Vegetarian, no mushrooms."),
        ("prefs/language.md", "Language and tone"),
    ]
    assert listing["folders"] == [{"path": "prefs/old/", "files": 1}]


def test_view_of_a_file_returns_content_version_and_size(store: Any) -> None:
    view = seeded(store).call("view", memory="user", path="prefs/language.md")
    assert view == {
        "path": "prefs/language.md",
        "version": store.read("prefs/language.md").version,
        "size": len(PREFS.encode()),
        "content": PREFS,
    }


def test_view_of_an_empty_memory_says_so(store: Any) -> None:
    listing = Agent([one(store)]).call("view", memory="user")
    assert listing["files"] == [] and listing["folders"] == []
    assert "memory_file_create" in listing["hint"]


@pytest.mark.parametrize("path", ["nothing.md", "prefs/nothing.md", "nothing/", "prefs/language.md/"])
def test_view_of_a_missing_path_is_not_found(store: Any, path: str) -> None:
    failure = seeded(store).call("view", memory="user", path=path)
    assert failure["error"] in ("not_found", "invalid_path")
    assert failure["current"] is None
    if path.endswith(".md"):
        assert failure["error"] == "not_found"


def test_view_of_a_file_over_the_current_limit_is_cut_and_marked_truncated(store: Any) -> None:
    text = "é" * 30 + "\n"  # 61 bytes
    store.write("big.md", text, expected=None)
    agent = Agent([one(store)], limits=FileMemoryLimits(format=FileFormat(max_file_bytes=21)))
    view = agent.call("view", memory="user", path="big.md")
    assert view["truncated"] is True
    assert view["content"] == "é" * 10  # cut on a character boundary, within 21 bytes
    assert view["size"] == 61
    whole = Agent([one(store)]).call("view", memory="user", path="big.md")
    assert whole["content"] == text and "truncated" not in whole


def test_view_refuses_paths_that_escape_or_are_malformed(store: Any) -> None:
    agent = seeded(store)
    for path in ("../x", "/etc/passwd", "a//b", "a\\b", ".git/config"):
        assert agent.call("view", memory="user", path=path)["error"] == "invalid_path", path


# --- grep ------------------------------------------------------------------------------


def lines(result: dict[str, Any]) -> list[tuple[str, int]]:
    return [(m["path"], m["line"]) for m in result["matches"]]


def test_grep_is_literal_and_case_insensitive_by_default(store: Any) -> None:
    agent = seeded(store)
    result = agent.call("grep", memory="user", pattern="TEA")
    assert lines(result) == [("prefs/language.md", 4), ("projects/alpha/notes.md", 2)]
    assert result["matches"][0]["text"] == "- likes tea"
    assert result["truncated"] is False and "hint" not in result


def test_grep_treats_regex_characters_literally_unless_asked(store: Any) -> None:
    agent = seeded(store)
    literal = agent.call("grep", memory="user", pattern="likes.*tea")
    assert literal["matches"] == []
    assert "regex=true" in literal["hint"]
    regex = agent.call("grep", memory="user", pattern="likes.*tea", regex=True)
    assert lines(regex) == [("prefs/language.md", 4)]


def test_grep_case_sensitive_and_folder_restriction(store: Any) -> None:
    agent = seeded(store)
    assert lines(agent.call("grep", memory="user", pattern="Tea", case_sensitive=True)) == [
        ("projects/alpha/notes.md", 2)
    ]
    for folder in ("prefs", "prefs/"):
        assert lines(agent.call("grep", memory="user", pattern="tea", path=folder)) == [("prefs/language.md", 4)]
    nothing = agent.call("grep", memory="user", pattern="alpha", path="prefs/", case_sensitive=True)
    assert "case_sensitive=false" in nothing["hint"] and "path ''" in nothing["hint"]


def test_grep_reports_more_matches_than_its_limit(store: Any) -> None:
    agent = seeded(store)
    result = agent.call("grep", memory="user", pattern="e", limit=2)
    assert len(result["matches"]) == 2 and result["truncated"] is True
    assert "narrow" in result["hint"]


def test_grep_without_store_search_reads_the_files_and_answers_the_same() -> None:
    inner = InMemoryFileStore()
    searchable = seeded(inner)
    plain = Agent([one(PlainStore(inner))])
    for args in (
        {"pattern": "tea"},
        {"pattern": "T", "case_sensitive": True},
        {"pattern": "^-", "regex": True, "path": "prefs/"},
        {"pattern": "e", "limit": 3},
        {"pattern": "absent"},
    ):
        assert plain.call("grep", memory="user", **args) == searchable.call("grep", memory="user", **args), args


def test_grep_refuses_a_bad_pattern(store: Any) -> None:
    agent = seeded(store)
    assert agent.call("grep", memory="user", pattern="(", regex=True)["error"] == "invalid_pattern"
    assert agent.call("grep", memory="user", pattern="")["error"] == "invalid_pattern"
    assert agent.call("grep", memory="user", pattern="x", limit=0)["error"] == "invalid_arguments"
    assert agent.call("grep", memory="user", pattern="x", path="../")["error"] == "invalid_path"


def test_grep_cuts_very_long_lines(store: Any) -> None:
    store.write("long.md", "needle " + "x" * 2000 + "\n", expected=None)
    match = Agent([one(store)]).call("grep", memory="user", pattern="needle")["matches"][0]
    assert match["text"].startswith("needle x") and match["text"].endswith("…") and len(match["text"]) < 600


def test_grep_in_one_file(store: Any) -> None:
    agent = seeded(store)
    result = agent.call("grep", memory="user", pattern="tea", path="projects/alpha/notes.md")
    assert lines(result) == [("projects/alpha/notes.md", 2)]
    nothing = agent.call("grep", memory="user", pattern="tea", path="prefs/food.md")
    assert nothing["matches"] == [] and nothing["hint"].startswith("No line in prefs/food.md contains 'tea'")

"""grep, find and the index commands through the CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .conftest import Run, as_json


@pytest.fixture
def notes(gm: Run) -> Run:
    gm("init", "user")
    files = {
        "prefs/drinks.md": "Green tea in the morning.\nNo coffee after 3pm.\n",
        "prefs/lang.md": "Reply in Chinese.\nKeep answers short.\n",
        "work/coffee.md": "The team orders Coffee on Fridays.\n",
    }
    for path, text in files.items():
        assert gm("write", "user", path, "--create", input=text).exit_code == 0
    return gm


def test_grep_prints_path_line_text_ignoring_case(notes: Run) -> None:
    result = notes("grep", "user", "coffee")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "prefs/drinks.md:2:No coffee after 3pm.",
        "work/coffee.md:1:The team orders Coffee on Fridays.",
    ]


def test_grep_options_narrow_the_answer(notes: Run) -> None:
    def paths(*args: str) -> list[tuple[str, int]]:
        data = as_json(notes("grep", "user", *args, "--json"))
        return [(m["path"], m["line"]) for m in data["matches"]]

    assert paths("coffee", "-s") == [("prefs/drinks.md", 2)]
    assert paths("coffee", "--path", "work") == [("work/coffee.md", 1)]
    assert paths("^(reply|keep)", "-E") == [("prefs/lang.md", 1), ("prefs/lang.md", 2)]
    assert paths("^(reply|keep)") == []  # literal by default


def test_grep_limit_reports_truncation(notes: Run) -> None:
    data = as_json(notes("grep", "user", "e", "--limit", "2", "--json"))
    assert len(data["matches"]) == 2 and data["truncated"] is True
    text = notes("grep", "user", "e", "--limit", "2")
    assert "raise --limit" in text.stderr and len(text.stdout.splitlines()) == 2


def test_grep_finding_nothing_is_success_and_a_bad_regex_is_refused(notes: Run) -> None:
    none = notes("grep", "user", "zebra")
    assert none.exit_code == 0 and none.stdout == ""
    bad = notes("grep", "user", "(unclosed", "-E", "--json")
    assert bad.exit_code == 1 and as_json(bad)["error"] == "invalid_pattern"


def test_find_ranks_files_by_words(notes: Run) -> None:
    data = as_json(notes("find", "user", "coffee fridays", "--json"))
    assert data["query"] == "coffee fridays"
    hits = data["hits"]
    assert hits[0]["path"] == "work/coffee.md" and set(hits[0]) == {"path", "score", "snippet", "version"}
    assert "Fridays" in hits[0]["snippet"]
    assert [h["path"] for h in as_json(notes("find", "user", "coffee", "--path", "prefs/", "--json"))["hits"]] == [
        "prefs/drinks.md"
    ]
    first = notes("find", "user", "coffee fridays").stdout.splitlines()[0]
    assert "work/coffee.md" in first and "Fridays" in first


def test_index_status_and_rebuild_after_the_index_is_deleted(notes: Run, root: Path) -> None:
    notes("find", "user", "tea")  # a search brings the index up to date
    status = as_json(notes("index", "status", "user", "--json"))
    assert status["state"] == "current" and status["commit"] == status["head"] and status["documents"] >= 3
    shutil.rmtree(status["directory"])
    assert as_json(notes("index", "status", "user", "--json"))["state"] == "missing"
    rebuilt = notes("index", "rebuild", "user", "--json")
    assert rebuilt.exit_code == 0 and rebuilt.stderr == ""  # no progress bar off a terminal
    assert as_json(rebuilt)["state"] == "current"
    notes("write", "user", "new.md", "--create", input="Matcha is green tea too.\n")
    assert as_json(notes("index", "status", "user", "--json"))["state"] == "behind"
    assert "new.md:1:Matcha is green tea too." in notes("grep", "user", "green tea").stdout
    assert "state:     current" in notes("index", "rebuild", "user").stdout


def test_index_commands_refuse_an_unknown_memory(gm: Run) -> None:
    assert gm("index", "status", "nobody").exit_code == 1
    assert gm("index").exit_code == 2


def test_find_snippets_show_the_matching_body_line_not_the_frontmatter(gm: Run) -> None:
    assert gm("init", "team").exit_code == 0
    text = "---\ndescription: Bob\ntags: [people, team]\n---\nBob joined in May.\nBob is the team lead for payments.\n"
    assert gm("write", "team", "people/bob.md", "--create", input=text).exit_code == 0
    [hit] = as_json(gm("find", "team", "team lead", "--json"))["hits"]
    assert hit["snippet"] == "Bob is the team lead for payments."
    # A word found only in the frontmatter still shows the line that holds it.
    [hit] = as_json(gm("find", "team", "people", "--json"))["hits"]
    assert hit["snippet"] == "tags: [people, team]"

"""log, show, diff, blame, restore, revert through the CLI."""

from __future__ import annotations

import pytest

from .conftest import Run, as_json


@pytest.fixture
def hist(gm: Run) -> Run:
    """notes/a.md created by alice (run r1), edited by bob (run r2), then moved to notes/b.md."""
    gm("init", "user")
    gm("write", "user", "notes/a.md", "--create", "--principal", "alice", "--run", "r1", input="one\ntwo\n")
    gm("edit", "user", "notes/a.md", "--old", "two", "--new", "TWO", "--principal", "bob", "--run", "r2")
    gm("mv", "user", "notes/a.md", "notes/b.md", "--principal", "bob", "--run", "r2")
    return gm


def log(gm: Run, *args: str) -> list[dict[str, object]]:
    result = gm("log", "user", *args, "--json")
    assert result.exit_code == 0, result.output
    entries: list[dict[str, object]] = as_json(result)["entries"]
    return entries


def test_log_lists_changes_newest_first_with_origins(hist: Run) -> None:
    entries = log(hist)
    assert [e["op"] for e in entries] == ["move", "edit", "create", "init"]
    assert set(entries[0]) == {"commit", "time", "op", "paths", "origin", "summary", "author"}
    assert entries[0]["paths"] == ["notes/a.md", "notes/b.md"]
    assert entries[2]["origin"] == {"run_id": "r1", "principal_id": "alice", "tool_call_id": "cli"}
    text = hist("log", "user").stdout.splitlines()
    assert len(text) == 4 and "create notes/a.md" in text[2] and "alice, run r1, via cli" in text[2]


def test_log_filters_by_run_principal_tool_call_and_limit(hist: Run) -> None:
    assert [e["op"] for e in log(hist, "--principal", "alice")] == ["create"]
    assert [e["op"] for e in log(hist, "--run", "r2")] == ["move", "edit"]
    assert [e["op"] for e in log(hist, "--tool-call", "cli")] == ["move", "edit", "create"]
    assert log(hist, "--principal", "nobody") == []
    assert len(log(hist, "--limit", "1")) == 1
    assert hist("log", "user", "--limit", "0").exit_code == 2


def test_log_of_a_path_follows_the_move(hist: Run) -> None:
    assert [e["op"] for e in log(hist, "notes/b.md")] == ["move", "edit", "create"]


def test_log_since_a_revision_and_a_date(hist: Run) -> None:
    first = log(hist)[-1]["commit"]
    assert [e["op"] for e in log(hist, "--since", str(first))] == ["move", "edit", "create"]
    assert log(hist, "--since", "2999-01-01") == []
    assert len(log(hist, "--since", "2000-01-01T00:00:00")) == 4
    # before the year 1: every change since the earliest date, not an OverflowError traceback
    assert len(log(hist, "--since", "9999 years ago")) == len(log(hist, "--since", "999999999999.years")) == 4
    assert log(hist, "--until", "9999 years ago") == []
    # more digits than Python converts (4,300): a ValueError traceback, where one digit fewer was the year 1
    assert len(log(hist, "--since", "9" * 5000 + " days ago")) == 4


def test_show_prints_an_old_version(hist: Run) -> None:
    assert hist("show", "user", "main~1", "notes/a.md").stdout == "one\nTWO\n"
    old = as_json(hist("show", "user", "main~2", "notes/a.md", "--json"))
    assert old["content"] == "one\ntwo\n" and old["rev"] == "main~2"
    missing = hist("show", "user", "main", "notes/a.md")
    assert missing.exit_code == 1 and "error [not_found]" in missing.stderr
    assert hist("show", "user", "no-such-rev", "notes/b.md").exit_code == 1


def test_diff_to_head_between_revisions_and_for_one_path(hist: Run) -> None:
    hist("write", "user", "other.md", "--create", input="x\n")
    patch = hist("diff", "user", "main~3").stdout  # from the create to the head
    assert "diff --git" in patch and "-two" in patch and "+TWO" in patch and "+x" in patch
    data = as_json(hist("diff", "user", "main~2", "main~1", "--json"))
    [only] = data["files"]
    assert only["status"] == "renamed" and only["old_path"] == "notes/a.md" and only["path"] == "notes/b.md"
    assert data["from"] == "main~2" and data["to"] == "main~1"
    # one word after A: a path when it names no commit, B when it does
    narrowed = as_json(hist("diff", "user", "main~3", "other.md", "--json"))
    assert [f["path"] for f in narrowed["files"]] == ["other.md"] and narrowed["to"] is None
    assert as_json(hist("diff", "user", "main~3", "main~2", "--json"))["to"] == "main~2"
    three = as_json(hist("diff", "user", "main~4", "main", "other.md", "--json"))
    assert [f["status"] for f in three["files"]] == ["added"]
    hunk = three["files"][0]["hunks"][0]
    assert hunk["lines"] == ["+x"] and hunk["new_start"] == 1


def test_blame_names_who_wrote_each_line(hist: Run) -> None:
    lines = as_json(hist("blame", "user", "notes/b.md", "--json"))["lines"]
    assert [(b["line"], b["text"], b["origin"]["principal_id"]) for b in lines] == [
        (1, "one", "alice"),
        (2, "TWO", "bob"),
    ]
    assert lines[0]["path"] == "notes/a.md"  # the name the file had then
    text = hist("blame", "user", "notes/b.md").stdout.splitlines()
    assert "alice" in text[0] and text[0].endswith(") one")


def test_restore_a_deleted_file_and_a_moved_files_old_path(hist: Run) -> None:
    version = as_json(hist("cat", "user", "notes/b.md", "--json"))["version"]
    hist("rm", "user", "notes/b.md", "--expect", version)
    back = as_json(hist("restore", "user", "notes/b.md", "--rev", "main~1", "--json"))
    assert back["previous"] is None and back["version"] == version
    old = as_json(hist("restore", "user", "notes/a.md", "--rev", "main~4", "--principal", "carol", "--json"))
    assert hist("cat", "user", "notes/a.md").stdout == "one\ntwo\n" and old["version"] is not None
    assert log(hist)[0]["origin"]["principal_id"] == "carol"  # type: ignore[index]
    # restoring to a revision where the file did not exist is refused, unless --delete asks for it
    head = log(hist, "--limit", "1")
    refused = hist("restore", "user", "notes/a.md", "--rev", "main~6", "--json")
    assert refused.exit_code == 1 and as_json(refused)["error"] == "not_found"
    assert "--delete" in as_json(refused)["message"]
    assert log(hist, "--limit", "1") == head
    gone = as_json(hist("restore", "user", "notes/a.md", "--rev", "main~6", "--delete", "--json"))
    assert gone["version"] is None
    assert hist("cat", "user", "notes/a.md").exit_code == 1


def test_restore_refuses_a_stale_expectation(hist: Run) -> None:
    result = hist("restore", "user", "notes/b.md", "--rev", "main~1", "--expect", "0" * 40, "--json")
    assert result.exit_code == 1 and as_json(result)["error"] == "version_mismatch"


def test_revert_undoes_one_change_and_refuses_a_conflict(hist: Run) -> None:
    edit = log(hist, "--principal", "bob")[1]["commit"]
    hist("write", "user", "c.md", "--create", input="c\n")
    created = log(hist)[0]["commit"]
    undone = as_json(hist("revert", "user", str(created), "--json"))
    assert undone["reverted_by"] is not None
    assert hist("cat", "user", "c.md").exit_code == 1
    # bob's edit was followed by a move of the same file: reverting it conflicts
    refused = hist("revert", "user", str(edit))
    assert refused.exit_code == 1
    assert "error [version_mismatch]" in refused.stderr and "gitmem restore" in refused.stderr
    assert hist("cat", "user", "notes/b.md").stdout == "one\nTWO\n"

"""create, edit, append, move, delete: their conditions, results and failures."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gitmem import FileFormat, InMemoryFileStore, SyncGitFileStore
from gitmem.model import Origin
from gitmem.tools import FileMemoryLimits
from tools.support import Agent, MovingStore, git, one


def files(store: Any) -> dict[str, str]:
    return {e.path: store.read(e.path).text for e in store.list()}


def test_create_writes_a_new_file_and_reports_its_version(store: Any) -> None:
    agent = Agent([one(store)])
    result = agent.call("create", memory="user", path="prefs/language.md", content="Reply in Chinese.\n")
    assert result == {
        "status": "created",
        "path": "prefs/language.md",
        "version": store.read("prefs/language.md").version,
        "size": 18,
    }


def test_create_over_an_existing_file_fails_and_shows_it(store: Any) -> None:
    agent = Agent([one(store)])
    agent.call("create", memory="user", path="a.md", content="first\n")
    failure = agent.call("create", memory="user", path="a.md", content="second\n")
    assert failure["error"] == "already_exists"
    assert failure["current"]["content"] == "first\n"
    assert files(store) == {"a.md": "first\n"}


@pytest.mark.parametrize(
    ("path", "content", "code"),
    [
        ("../a.md", "x", "invalid_path"),
        ("a/", "x", "invalid_path"),
        ("notes.md/inner.md", "x", "invalid_path"),  # a parent is a file
        ("key.md", "-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----\n", "invalid_file"),
        ("bad.md", "---\ndescription: [unclosed\n", "invalid_file"),
        ("nul.md", "a\x00b", "invalid_file"),
        ("big.md", "x" * 101, "too_large"),
    ],
)
def test_create_refuses_bad_paths_and_content_and_writes_nothing(
    store: Any, path: str, content: str, code: str
) -> None:
    agent = Agent([one(store)], limits=FileMemoryLimits(format=FileFormat(max_file_bytes=100)))
    agent.call("create", memory="user", path="notes.md", content="n\n")
    failure = agent.call("create", memory="user", path=path, content=content)
    assert failure["error"] == code, failure
    assert files(store) == {"notes.md": "n\n"}


def test_edit_replaces_the_one_occurrence(store: Any) -> None:
    agent = Agent([one(store)])
    agent.call("create", memory="user", path="p.md", content="- likes tea\n- reply in English\n")
    result = agent.call("edit", memory="user", path="p.md", old_string="English", new_string="Chinese")
    assert result["status"] == "edited" and result["version"] == store.read("p.md").version
    assert files(store) == {"p.md": "- likes tea\n- reply in Chinese\n"}
    agent.call("edit", memory="user", path="p.md", old_string="- likes tea\n", new_string="")
    assert files(store) == {"p.md": "- reply in Chinese\n"}


def test_edit_fails_with_no_match_or_ambiguous_match_and_shows_the_file(store: Any) -> None:
    agent = Agent([one(store)])
    agent.call("create", memory="user", path="p.md", content="aaa\ntea tea\n")
    version = store.read("p.md").version
    cases = (("coffee", "no_match"), ("tea", "ambiguous_match"), ("aa", "ambiguous_match"), ("", "invalid_arguments"))
    for old, code in cases:
        failure = agent.call("edit", memory="user", path="p.md", old_string=old, new_string="x")
        assert failure["error"] == code, old
        if old:
            assert failure["current"] == {"path": "p.md", "version": version, "size": 12, "content": "aaa\ntea tea\n"}
    assert store.read("p.md").version == version


def test_edit_of_a_missing_file_and_an_invalid_result(store: Any) -> None:
    agent = Agent([one(store)], limits=FileMemoryLimits(format=FileFormat(max_file_bytes=60)))
    assert agent.call("edit", memory="user", path="none.md", old_string="a", new_string="b")["error"] == "not_found"
    agent.call("create", memory="user", path="p.md", content="short\n")
    too_big = agent.call("edit", memory="user", path="p.md", old_string="short", new_string="x" * 60)
    assert too_big["error"] == "too_large"
    secret = agent.call("edit", memory="user", path="p.md", old_string="short", new_string="ghp_" + "a" * 36)
    assert secret["error"] == "invalid_file"
    assert files(store) == {"p.md": "short\n"}


@pytest.mark.parametrize(
    ("before", "after"),
    [("one\n", "one\ntwo"), ("one", "one\ntwo"), ("", "two")],
)
def test_append_starts_on_a_new_line(store: Any, before: str, after: str) -> None:
    store.write("log.md", before, expected=None)
    result = Agent([one(store)]).call("append", memory="user", path="log.md", content="two")
    assert result["status"] == "appended"
    assert files(store) == {"log.md": after}


def test_append_needs_an_existing_file_and_some_text(store: Any) -> None:
    agent = Agent([one(store)])
    assert agent.call("append", memory="user", path="none.md", content="x")["error"] == "not_found"
    store.write("log.md", "a\n", expected=None)
    assert agent.call("append", memory="user", path="log.md", content="")["error"] == "invalid_arguments"
    assert files(store) == {"log.md": "a\n"}


def test_move_renames_in_one_change(store: Any) -> None:
    agent = Agent([one(store)])
    agent.call("create", memory="user", path="inbox/a.md", content="A\n")
    version = store.read("inbox/a.md").version
    before = store.changes(None).cursor
    result = agent.call("move", memory="user", source="inbox/a.md", destination="archive/2024/a.md")
    assert result == {"status": "moved", "source": "inbox/a.md", "destination": "archive/2024/a.md", "version": version}
    assert files(store) == {"archive/2024/a.md": "A\n"}
    delta = store.changes(before)
    assert set(delta.paths) == {"inbox/a.md", "archive/2024/a.md"}
    if isinstance(store, SyncGitFileStore):
        assert git(store.path, "rev-list", "--count", f"{before}..main").strip() == "1"


def test_move_failures_change_nothing(store: Any) -> None:
    agent = Agent([one(store)])
    agent.call("create", memory="user", path="a.md", content="A\n")
    agent.call("create", memory="user", path="b.md", content="B\n")
    taken = agent.call("move", memory="user", source="a.md", destination="b.md")
    assert taken["error"] == "already_exists" and taken["current"]["content"] == "B\n"
    assert agent.call("move", memory="user", source="a.md", destination="a.md")["error"] == "already_exists"
    assert agent.call("move", memory="user", source="none.md", destination="c.md")["error"] == "not_found"
    assert agent.call("move", memory="user", source="a.md", destination="b.md/c.md")["error"] == "invalid_path"
    assert agent.call("move", memory="user", source="a.md", destination="../c.md")["error"] == "invalid_path"
    assert files(store) == {"a.md": "A\n", "b.md": "B\n"}


def test_delete_takes_the_version_the_model_saw(store: Any) -> None:
    agent = Agent([one(store)])
    agent.call("create", memory="user", path="a.md", content="A\n")
    seen = agent.call("view", memory="user", path="a.md")["version"]
    agent.call("edit", memory="user", path="a.md", old_string="A", new_string="B")
    stale = agent.call("delete", memory="user", path="a.md", version=seen)
    assert stale["error"] == "version_mismatch"
    assert stale["current"]["content"] == "B\n"
    assert files(store) == {"a.md": "B\n"}
    assert agent.call("delete", memory="user", path="a.md", version=stale["current"]["version"]) == {
        "status": "deleted",
        "path": "a.md",
        "version": stale["current"]["version"],
    }
    assert files(store) == {}
    assert agent.call("delete", memory="user", path="a.md", version=seen)["error"] == "not_found"


def test_a_lost_delete_is_not_retried() -> None:
    moving = MovingStore(InMemoryFileStore())
    moving.inner.write("a.md", "A\n", expected=None)
    seen = moving.inner.read("a.md").version
    failure = Agent([one(moving)]).call("delete", memory="user", path="a.md", version=seen)
    assert failure["error"] == "version_mismatch" and failure["current"]["content"] == "A\n!"
    assert moving.deletes == 1


def test_every_failure_has_the_same_json_shape(store: Any) -> None:
    agent = Agent([one(store)])
    agent.call("create", memory="user", path="a.md", content="A\n")
    failures = [
        agent.call("edit", memory="user", path="a.md", old_string="zzz", new_string="y"),
        agent.call("view", memory="user", path="none.md"),
        agent.call("create", memory="nobody", path="b.md", content="x"),
    ]
    for failure in failures:
        assert set(failure) == {"error", "message", "current"}
        assert isinstance(failure["message"], str) and failure["message"]
        assert json.loads(json.dumps(failure)) == failure
    assert set(failures[0]["current"]) == {"path", "version", "size", "content"}
    assert failures[1]["current"] is None


def test_each_change_records_the_tool_call_and_the_runs_origin(tmp_path: Any) -> None:
    store = SyncGitFileStore.init(tmp_path / "m.git")
    agent = Agent([one(store)], origin=Origin(run_id="run-7", principal_id="alice"))
    agent.call("create", memory="user", path="a.md", content="A\n")  # call-1
    agent.call("edit", memory="user", path="a.md", old_string="A", new_string="B")  # call-2
    log = git(
        store.path,
        "log",
        "-2",
        "--format=%an|%(trailers:key=Gitmem-Run,valueonly,separator=)|"
        "%(trailers:key=Gitmem-Tool-Call,valueonly,separator=)",
    )
    assert log.split() == ["alice|run-7|call-2", "alice|run-7|call-1"]

    twin = InMemoryFileStore()
    Agent([one(twin)], origin=Origin(run_id="run-8")).call("create", memory="user", path="a.md", content="A\n")
    assert twin.origins == [("create", Origin(run_id="run-8", tool_call_id="call-1"))]

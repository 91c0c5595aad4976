"""gitmem records: add, list, search, update, rm, purge, log, over a record mount."""

from __future__ import annotations

from pathlib import Path

from .conftest import Run, as_json


def test_records_round_trip_through_the_cli(gm: Run) -> None:
    assert as_json(gm("records", "init", "facts", "--json"))["created"] is True
    added = as_json(gm("records", "add", "facts", "prefers green tea", "-n", "alice", "--json"))["record"]
    plain = gm("records", "add", "facts", "-", "-n", "alice", input="lives in Berlin\nnear the park\n")
    assert plain.exit_code == 0 and len(plain.stdout.strip()) == 26
    listed = as_json(gm("records", "list", "facts", "-n", "alice", "--json"))
    assert [r["text"] for r in listed["records"]] == ["prefers green tea", "lives in Berlin\nnear the park\n"]
    found = as_json(gm("records", "search", "facts", "which tea?", "-n", "alice", "--json"))["records"]
    assert [r["id"] for r in found] == [added["id"]] and found[0]["score"] > 0
    text = gm("records", "search", "facts", "tea", "-n", "alice")
    assert added["id"] in text.stdout and "prefers green tea" in text.stdout
    updated = gm("records", "update", "facts", added["id"], "prefers oolong tea", "-n", "alice", "--json")
    assert as_json(updated)["record"]["text"] == "prefers oolong tea"
    assert gm("records", "rm", "facts", added["id"], "-n", "alice").exit_code == 0
    assert as_json(gm("records", "search", "facts", "tea", "-n", "alice", "--json"))["records"] == []
    log = as_json(gm("records", "log", "facts", added["id"], "-n", "alice", "--json"))["entries"]
    assert len(log) == 3 and all(e["time"] for e in log)
    # Another namespace of the same mount is a different set of records.
    assert as_json(gm("records", "list", "facts", "--json"))["records"] == []


def test_list_pages_with_the_cursor(gm: Run) -> None:
    gm("records", "init", "facts")
    for i in range(5):
        gm("records", "add", "facts", f"fact {i}")
    first = as_json(gm("records", "list", "facts", "--limit", "3", "--json"))
    rest = as_json(gm("records", "list", "facts", "--cursor", first["next_cursor"], "--json"))
    assert [r["text"] for r in first["records"] + rest["records"]] == [f"fact {i}" for i in range(5)]
    assert rest["next_cursor"] is None
    bad = gm("records", "list", "facts", "--cursor", "nope", "--json")
    assert bad.exit_code == 1 and as_json(bad)["error"] == "invalid_cursor"


def test_refusals_name_their_code_and_change_nothing(gm: Run) -> None:
    gm("records", "init", "facts")
    for args, code in [
        (("add", "facts", ""), "invalid_text"),
        (("add", "facts", "x" * 8001), "invalid_text"),
        (("add", "facts", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"), "invalid_text"),
        (("update", "facts", "01JDQ6Z5V6R7XKQ3M8T2B4N9CW", "x"), "record_not_found"),
        (("rm", "facts", "../../x"), "record_not_found"),
        (("list", "nope"), "unknown_memory"),
    ]:
        result = gm("records", *args, "--json")
        assert result.exit_code == 1 and as_json(result)["error"] == code, (args, result.stdout)
    assert as_json(gm("records", "list", "facts", "--json"))["records"] == []
    text = gm("records", "add", "facts", "")
    assert text.exit_code == 1 and "invalid_text" in text.stderr


def test_a_file_memory_is_not_a_record_memory(gm: Run) -> None:
    gm("init", "notes")
    result = gm("records", "add", "notes", "x", "--json")
    assert result.exit_code == 1 and as_json(result)["error"] == "wrong_kind"
    gm("records", "init", "facts")
    assert gm("records", "init", "notes").exit_code == 1


def test_purge_needs_yes_and_erases_one_namespace(gm: Run) -> None:
    gm("records", "init", "facts")
    gm("records", "add", "facts", "alice fact", "-n", "alice")
    gm("records", "add", "facts", "bob fact", "-n", "bob")
    refused = gm("records", "purge", "facts", "-n", "alice")
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    assert gm("records", "purge", "facts", "-n", "alice", "--yes").exit_code == 0
    assert as_json(gm("records", "list", "facts", "-n", "alice", "--json"))["records"] == []
    assert [r["text"] for r in as_json(gm("records", "list", "facts", "-n", "bob", "--json"))["records"]] == [
        "bob fact"
    ]
    assert as_json(gm("records", "log", "facts", "-n", "alice", "--json"))["entries"] == []



def test_the_file_commands_refuse_a_record_session_or_durable_memory(gm: Run, root: Path) -> None:
    """As the memory_file_* tools do: those memories' files follow their own rules, not a file memory's."""
    from gitmem.durable import DurableRepository

    gm("records", "init", "facts")
    record = as_json(gm("records", "add", "facts", "prefers green tea", "--json"))["record"]
    assert gm("session", "remember", "a fact worth keeping for later", "--mount", "mine").exit_code == 0
    DurableRepository.open(root, "nodes", create=True)
    gm("init", "notes")
    for name in ("facts", "mine", "nodes"):
        for args in [
            ("ls", name),
            ("cat", name, "default/last-id"),
            ("write", name, "x.md", "--create"),
            ("edit", name, "x.md", "--old", "a", "--new", "b"),
            ("mv", name, "a.md", "b.md", "--expect", "0000000"),
            ("rm", name, "a.md", "--expect", "0000000"),
            ("changes", name),
            ("grep", name, "tea"),
            ("find", name, "tea"),
            ("import", name, str(root)),
        ]:
            result = gm(*args, "--json", input="text\n")
            assert result.exit_code == 1 and as_json(result)["error"] == "wrong_kind", (args, result.stdout)
            assert "file commands" in as_json(result)["message"]
    # history still reads every kind, the records are untouched, and file memories work as before
    assert gm("log", "facts", "--json").exit_code == 0
    assert [r["id"] for r in as_json(gm("records", "list", "facts", "--json"))["records"]] == [record["id"]]
    assert gm("ls", "notes", "--json").exit_code == 0

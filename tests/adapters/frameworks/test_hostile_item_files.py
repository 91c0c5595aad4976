"""Item files pushed or edited by someone else: each is skipped (with its reason) or a clear error, never a crash.

An item file is anyone's who can push to the memory. Whatever it holds - a
number where a namespace belongs, 30,000 nested brackets, a TTL past the last
date, a session head pointing past every name the reader lists - the
LangGraph store and the Agents SDK session keep answering for every other
item, and what they refuse to write changes nothing.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gitmem import Root
from gitmem.adapters.cli import cli
from gitmem.adapters.langgraph_items import FORMAT, item_path
from gitmem.adapters.langgraph_store import GitMemStore
from gitmem.adapters.openai_session import MAX_SEQUENCE, GitMemSession
from gitmem.errors import MemoryStoreError
from gitmem.localfile import JSON_DEPTH
from tests.adapters.frameworks.support import fsck, git

DEEP = "[" * 30_000 + "]" * 30_000


def item_file(namespace: object, key: str, value: object, **extra: object) -> str:
    when = datetime(2026, 1, 1, tzinfo=UTC).isoformat()
    record = {
        "format": FORMAT,
        "namespace": namespace,
        "key": key,
        "value": value,
        "created_at": when,
        "updated_at": when,
    }
    return json.dumps({**record, **extra}) + "\n"


def nest(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"text": "bottom"}
    for _ in range(levels - 1):
        value = {"x": value}
    return value


def nested_list(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def head(repo: Path) -> tuple[str, str]:
    return git(repo, "rev-parse", "main").strip(), git(repo, "rev-parse", "main^{tree}").strip()


# -- the LangGraph store ----------------------------------------------------------------------------

HOSTILE_ITEMS = {
    "namespace-is-a-number": lambda path: item_file(7, "bad", {"text": "green tea"}),
    "namespace-holds-numbers": lambda path: item_file(["users", 3], "bad", {"text": "green tea"}),
    "30000-brackets": lambda path: DEEP,
    "30000-deep-value": lambda path: (
        item_file(["users", "alice"], "bad", {"text": "tea"})[:-3] + ', "deep": ' + DEEP + "}\n"
    ),
    "ttl-past-the-last-date": lambda path: item_file(["users", "alice"], "bad", {"text": "tea"}, ttl_minutes=1e300),
    # no float holds it: math.isfinite raised OverflowError out of every refresh
    "ttl-past-floats": lambda path: item_file(["users", "alice"], "bad", {"text": "tea"}, ttl_minutes=10**400),
    "time-out-of-range": lambda path: item_file(
        ["users", "alice"], "bad", {"text": "tea"}, created_at="0001-01-01T00:00:00+05:00"
    ),
    "index-is-a-number": lambda path: item_file(["users", "alice"], "bad", {"text": "tea"}, index=5),
    "a-huge-integer": lambda path: item_file(["users", "alice"], "bad", {"text": "tea", "n": 0}).replace(
        '"n": 0', '"n": ' + "9" * 5000
    ),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE_ITEMS))
def test_a_hostile_item_file_is_skipped_and_every_search_still_answers(tmp_path: Path, kind: str) -> None:
    store = GitMemStore.open(tmp_path)
    store.put(("users", "alice"), "tea", {"text": "prefers green tea"})
    store.put(("teams", "core"), "rule", {"text": "review every change"})
    path = item_path(("users", "alice"), "bad")
    Root(tmp_path).mount("langgraph").sync.write(path, HOSTILE_ITEMS[kind](path), expected=None)

    reader = GitMemStore.open(tmp_path)  # a new handle: its catalogue reads every file
    assert [i.key for i in reader.search(("users",))] == ["tea"]
    assert [i.key for i in reader.search(("users",), query="green tea")] == ["tea"]
    assert [i.key for i in reader.search(("teams",))] == ["rule"]
    assert sorted(reader.list_namespaces()) == [("teams", "core"), ("users", "alice")]
    assert reader.catalogue.skipped.get(path)  # the reason is kept
    with pytest.raises(MemoryStoreError) as refused:  # read by key: a clear error naming the item
        reader.get(("users", "alice"), "bad")
    assert refused.value.code == "invalid_file"
    assert store.get(("users", "alice"), "tea").value == {"text": "prefers green tea"}  # type: ignore[union-attr]


def test_the_sweep_command_lists_a_skipped_file_and_sweeps_the_rest(tmp_path: Path) -> None:
    store = GitMemStore.open(tmp_path)
    store.put(("t",), "short", {"text": "soon gone"}, ttl=1)
    path = item_path(("t",), "bad")
    Root(tmp_path).mount("langgraph").sync.write(path, DEEP, expected=None)
    result = CliRunner().invoke(cli, ["--root", str(tmp_path), "sweep", "langgraph", "--json"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.output)
    assert answer["deleted"] == 0 and list(answer["skipped"]) == [path]
    assert "nested" in answer["skipped"][path]


@pytest.mark.parametrize(
    ("value", "ttl"),
    [(nest(JSON_DEPTH), None), ({"deep": nested_list(2000)}, None), ({"text": "x"}, 1e300)],
)
def test_a_put_that_a_read_would_not_take_back_is_refused_and_changes_nothing(
    tmp_path: Path, value: dict[str, Any], ttl: float | None
) -> None:
    store = GitMemStore.open(tmp_path)
    store.put(("n",), "kept", {"text": "here"})
    repo = tmp_path / "langgraph.git"
    before = head(repo)
    with pytest.raises(MemoryStoreError) as refused:
        store.put(("n",), "bad", value, ttl=ttl)
    assert refused.value.code == "invalid_file"
    assert head(repo) == before
    store.put(("n",), "fine", nest(JSON_DEPTH - 1))  # as deep as a value may be: written and read back
    assert GitMemStore.open(tmp_path).get(("n",), "fine").value == nest(JSON_DEPTH - 1)  # type: ignore[union-attr]
    fsck(repo)


# -- the Agents SDK session -------------------------------------------------------------------------

FOLDER = "conversations/chat"


def planted_session(tmp_path: Path, head_text: str) -> tuple[GitMemSession, Any]:
    session = GitMemSession.open("chat", tmp_path)
    session.add_items_sync([{"role": "user", "content": "one"}, {"role": "user", "content": "two"}])
    store = Root(tmp_path).mount("session").sync
    store.write(f"{FOLDER}/head.json", head_text, expected=store.read(f"{FOLDER}/head.json").version)
    return session, store


@pytest.mark.parametrize(
    "head_text",
    [
        json.dumps({"last": 10**15}),  # past the 12 digits of a name
        json.dumps({"last": MAX_SEQUENCE}),  # the last name: one more add would run past it
        json.dumps({"last": 1e300}),
        json.dumps({"last": "5"}),
        json.dumps({"last": -3}),
        json.dumps([1, 2]),
        DEEP,
        "{not json",
    ],
)
def test_a_hostile_head_loses_no_added_item(tmp_path: Path, head_text: str) -> None:
    session, store = planted_session(tmp_path, head_text)
    session.add_items_sync([{"role": "user", "content": "three"}, {"role": "user", "content": "four"}])
    assert [i["content"] for i in session.get_items_sync()] == ["one", "two", "three", "four"]
    assert [i["content"] for i in GitMemSession.open("chat", tmp_path).get_items_sync(limit=1)] == ["four"]
    names = sorted(e.path for e in store.list())
    assert names == [f"{FOLDER}/{n:012d}.json" for n in range(1, 5)] + [f"{FOLDER}/head.json"]
    assert json.loads(store.read(f"{FOLDER}/head.json").text) == {"last": 4}  # the head is whole again
    assert session.pop_item_sync() == {"role": "user", "content": "four"}
    assert [i["content"] for i in session.get_items_sync()] == ["one", "two", "three"]
    fsck(tmp_path / "session.git")


def test_a_hostile_head_is_not_believed_by_a_pop_either(tmp_path: Path) -> None:
    session, _ = planted_session(tmp_path, DEEP)
    assert session.pop_item_sync() == {"role": "user", "content": "two"}
    assert session.get_items_sync() == [{"role": "user", "content": "one"}]


def test_a_30000_deep_item_file_is_skipped_and_popped_past(tmp_path: Path) -> None:
    session = GitMemSession.open("chat", tmp_path)
    session.add_items_sync([{"role": "user", "content": "one"}])
    store = Root(tmp_path).mount("session").sync
    store.write(f"{FOLDER}/000000000002.json", DEEP, expected=None)
    assert session.get_items_sync() == [{"role": "user", "content": "one"}]
    session.add_items_sync([{"role": "user", "content": "three"}])
    assert [i["content"] for i in session.get_items_sync()] == ["one", "three"]
    assert session.pop_item_sync() == {"role": "user", "content": "three"}
    assert session.pop_item_sync() == {"role": "user", "content": "one"}  # the deep file went on the way
    assert session.get_items_sync() == []
    fsck(tmp_path / "session.git")


def test_an_item_nested_deeper_than_reads_take_back_is_refused(tmp_path: Path) -> None:
    session = GitMemSession.open("chat", tmp_path)
    session.add_items_sync([{"role": "user", "content": "one"}])
    before = head(tmp_path / "session.git")
    with pytest.raises(MemoryStoreError) as refused:
        session.add_items_sync([{"role": "user", "content": "fine"}, nest(JSON_DEPTH + 5)])
    assert refused.value.code == "invalid_file"
    assert head(tmp_path / "session.git") == before
    assert session.get_items_sync() == [{"role": "user", "content": "one"}]


def test_an_order_filter_compares_an_integer_past_floats_as_the_number_it_is(tmp_path: Path) -> None:
    # float() of it raised OverflowError out of the search (a value is anyone's who can push an item).
    store = GitMemStore.open(tmp_path)
    store.put(("users", "alice"), "small", {"text": "tea", "n": 3})
    path = item_path(("users", "alice"), "big")
    Root(tmp_path).mount("langgraph").sync.write(
        path, item_file(["users", "alice"], "big", {"n": 10**400}), expected=None
    )
    reader = GitMemStore.open(tmp_path)
    assert [i.key for i in reader.search(("users",), filter={"n": {"$gt": 5}})] == ["big"]
    assert [i.key for i in reader.search(("users",), filter={"n": {"$lt": 5}})] == ["small"]

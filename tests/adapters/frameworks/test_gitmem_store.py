"""GitMemStore's own promises, beyond what LangGraph's suites check: commits, files, refusals, races."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from langgraph.store.base import PutOp

from gitmem import Root
from gitmem.adapters.cli import cli
from gitmem.adapters.langgraph_items import item_path, parse_path
from gitmem.adapters.langgraph_store import GitMemStore
from gitmem.errors import MemoryStoreError
from gitmem.memstore import InMemoryFileStore
from gitmem.model import Origin
from tests.adapters.frameworks.support import WORKER, commits, fsck, git, run_workers


class Clock:
    def __init__(self) -> None:
        self.moment = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.moment


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return tmp_path / "langgraph.git"


def test_every_put_is_one_commit_naming_who_made_it(tmp_path: Path, repo: Path) -> None:
    store = GitMemStore.open(tmp_path, origin=Origin(run_id="run-7", principal_id="alice"))
    before = len(commits(repo))
    store.batch(
        [
            PutOp(("users", "alice"), "tea", {"likes": "green tea"}),
            PutOp(("users", "alice"), "coffee", {"likes": "none"}),
            PutOp(("users", "alice"), "tea", {"likes": "oolong"}),  # the batch's last put of an item wins
        ]
    )
    log = git(repo, "log", f"-{2}", "--format=%an%n%B%n--", "main")
    assert len(commits(repo)) == before + 2
    assert log.count("Gitmem-Op: langgraph-put") == 2
    assert log.count("Gitmem-Run: run-7") == 2 and log.count("alice") >= 2
    assert store.get(("users", "alice"), "tea").value == {"likes": "oolong"}  # type: ignore[union-attr]
    store.delete(("users", "alice"), "tea")
    assert commits(repo)[0].startswith("langgraph-delete")
    fsck(repo)


def test_an_item_is_a_reviewable_json_file_at_its_namespace_folder(tmp_path: Path, repo: Path) -> None:
    clock = Clock()
    store = GitMemStore.open(tmp_path, clock=clock)
    store.put(("Users", "3f"), "My Key", {"text": "prefers green tea", "n": 1})
    path = item_path(("Users", "3f"), "My Key")
    assert path.startswith(".55sers/3f/") and path.endswith("/.4Dy.20.4Bey.json")
    assert parse_path(path) == (("Users", "3f"), "My Key")
    record = json.loads(git(repo, "show", f"main:{path}"))
    assert record["value"] == {"text": "prefers green tea", "n": 1}
    assert record["namespace"] == ["Users", "3f"] and record["key"] == "My Key"
    # a namespace label that looks like a fan-out folder is still told apart by depth
    store.put(("Users",), "x", {"text": "one level up"})
    assert store.list_namespaces() == [("Users",), ("Users", "3f")]
    # an update keeps created_at and moves updated_at
    clock.moment += timedelta(minutes=5)
    store.put(("Users", "3f"), "My Key", {"text": "prefers oolong"})
    item = store.get(("Users", "3f"), "My Key")
    assert item is not None and item.created_at < item.updated_at


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ({"n": float("nan")}, "invalid_file"),
        ({"when": datetime(2026, 1, 1)}, "invalid_file"),
        ({"token": "ghp_" + "a1B2" * 9}, "invalid_file"),
        ({"big": "x" * 70_000}, "too_large"),
    ],
)
def test_a_refused_put_changes_nothing(tmp_path: Path, repo: Path, value: dict[str, object], code: str) -> None:
    store = GitMemStore.open(tmp_path)
    store.put(("a",), "k", {"ok": True})
    head = git(repo, "rev-parse", "main")
    with pytest.raises(MemoryStoreError) as caught:
        store.put(("a",), "k", value)
    assert caught.value.code == code
    assert git(repo, "rev-parse", "main") == head
    assert store.get(("a",), "k").value == {"ok": True}  # type: ignore[union-attr]


def test_a_batch_with_one_bad_put_commits_none_of_them(tmp_path: Path, repo: Path) -> None:
    store = GitMemStore.open(tmp_path)
    head = git(repo, "rev-parse", "main")
    with pytest.raises(MemoryStoreError) as caught:
        store.batch(
            [
                PutOp(("a",), "good", {"text": "fine"}),
                PutOp(("a",), "bad", {"text": "key AKIAQWERTYUIOPASDFGH"}),
            ]
        )
    assert caught.value.code == "invalid_file"
    assert git(repo, "rev-parse", "main") == head and store.get(("a",), "good") is None


def test_bad_search_arguments_are_clear_errors(tmp_path: Path) -> None:
    store = GitMemStore.open(tmp_path)
    with pytest.raises(MemoryStoreError, match="unknown filter operator") as caught:
        store.search(("a",), filter={"n": {"$regex": "x"}})
    assert caught.value.code == "invalid_query"
    with pytest.raises(MemoryStoreError):
        store.search(("a",), limit=-1)


def test_search_filters_and_ranks_through_the_recall_engine(tmp_path: Path) -> None:
    store = GitMemStore.open(tmp_path)
    store.put(("u", "alice"), "1", {"text": "prefers green tea in the morning", "kind": "drink", "n": 2})
    store.put(("u", "alice"), "2", {"text": "allergic to peanuts", "kind": "health", "n": 5})
    store.put(("u", "bob"), "3", {"text": "drinks black tea", "kind": "drink", "n": 9})
    hits = store.search(("u",), query="tea", filter={"kind": "drink"})
    assert [h.key for h in hits][:2] == ["3", "1"] or [h.key for h in hits][:2] == ["1", "3"]
    assert all(h.score and h.score > 0 for h in hits)
    assert [h.key for h in store.search(("u",), filter={"n": {"$gte": 5}})] == ["3", "2"]  # newest first
    assert store.search(("u", "alice"), query="peanuts")[0].key == "2"
    # index=False: stored and filterable, never ranked by a query
    store.put(("u", "bob"), "4", {"text": "tea tea tea"}, index=False)
    ranked = store.search(("u", "bob"), query="tea")
    assert ranked[0].key == "3" and ranked[-1].key == "4" and ranked[-1].score == 0.0


def test_search_sees_what_another_handle_wrote(tmp_path: Path) -> None:
    reader = GitMemStore.open(tmp_path)
    assert reader.search(("n",)) == []
    GitMemStore.open(tmp_path).put(("n",), "k", {"text": "written elsewhere"})
    assert [i.key for i in reader.search(("n",), query="elsewhere")] == ["k"]
    GitMemStore.open(tmp_path).delete(("n",), "k")
    assert reader.search(("n",)) == [] and reader.list_namespaces() == []


def test_expired_items_are_hidden_then_swept_by_the_command(tmp_path: Path, repo: Path) -> None:
    clock = Clock()
    store = GitMemStore.open(tmp_path, clock=clock)
    store.put(("t",), "short", {"text": "soon gone"}, ttl=1)
    store.put(("t",), "long", {"text": "stays"}, ttl=60)
    store.put(("t2",), "forever", {"text": "no ttl"})
    clock.moment += timedelta(minutes=2)
    assert store.get(("t",), "short") is None
    assert [i.key for i in store.search(("t",))] == ["long"]
    # the item is hidden but its file is still on main until a sweep
    assert item_path(("t",), "short") in git(repo, "ls-tree", "-r", "--name-only", "main")
    # the command's clock is the real one, far past both expiries
    clock.moment += timedelta(days=1)
    assert store.list_namespaces() == [("t2",)]
    result = CliRunner().invoke(cli, ["--root", str(tmp_path), "sweep", "langgraph", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["deleted"] == 2
    assert commits(repo)[0].startswith("ttl-sweep")
    assert git(repo, "ls-tree", "-r", "--name-only", "main").strip() == item_path(("t2",), "forever")
    fsck(repo)


def test_a_read_restarts_a_ttl_only_when_configured_and_in_one_commit(tmp_path: Path, repo: Path) -> None:
    clock = Clock()
    store = GitMemStore.open(tmp_path, clock=clock, ttl={"refresh_on_read": True})
    store.put(("t",), "a", {"text": "one"}, ttl=10)
    store.put(("t",), "b", {"text": "two"}, ttl=10)
    before = len(commits(repo))
    clock.moment += timedelta(minutes=8)
    assert len(store.search(("t",))) == 2
    assert len(commits(repo)) == before + 1 and commits(repo)[0].startswith("ttl-refresh")
    store.get(("t",), "a")  # within 1% of the TTL of the restart: no commit
    assert len(commits(repo)) == before + 1
    clock.moment += timedelta(minutes=8)
    assert store.get(("t",), "a", refresh_ttl=False) is not None  # 16 minutes after the put: restarted at 8
    plain = GitMemStore.open(tmp_path / "other", clock=clock)
    plain.put(("t",), "a", {"text": "one"}, ttl=10)
    clock.moment += timedelta(minutes=8)
    plain.get(("t",), "a")
    clock.moment += timedelta(minutes=8)
    assert plain.get(("t",), "a") is None  # no refresh_on_read: reads never restart it


def test_it_runs_on_the_in_memory_twin_too() -> None:
    store = GitMemStore(InMemoryFileStore())
    store.put(("a", "b"), "k", {"text": "hello"})
    assert store.search(("a",), query="hello")[0].key == "k"
    assert store.list_namespaces(prefix=("a",), max_depth=1) == [("a",)]


def test_async_calls_run_the_same_store(tmp_path: Path) -> None:
    import asyncio

    store = GitMemStore.open(tmp_path)

    async def script() -> list[str]:
        await asyncio.gather(*(store.aput(("a",), f"k{i}", {"text": f"item {i}"}) for i in range(8)))
        return [i.key for i in await store.asearch(("a",), limit=20)]

    assert sorted(asyncio.run(script())) == [f"k{i}" for i in range(8)]


@pytest.mark.slow
def test_concurrent_puts_from_processes_lose_nothing(tmp_path: Path, repo: Path) -> None:
    Root(tmp_path).mount("langgraph", create=True)
    jobs: list[dict[str, object]] = [
        {"mode": "put", "root": str(tmp_path), "tag": f"w{n}", "count": 10} for n in range(3)
    ]
    acknowledged = run_workers(tmp_path, jobs)
    store = GitMemStore.open(tmp_path)
    found = {item.key for item in store.search(("race",), limit=1000)}
    assert found == {key for keys in acknowledged for key in keys}
    assert len(found) == 30
    assert sum(1 for s in commits(repo) if s.startswith("langgraph-put")) == 30  # one commit per put
    runs = git(repo, "log", "--format=%(trailers:key=Gitmem-Run,valueonly)", "main").split()
    assert sorted(set(runs)) == ["w0", "w1", "w2"]
    fsck(repo)


@pytest.mark.slow
def test_a_writer_killed_mid_put_loses_nothing_it_acknowledged(tmp_path: Path, repo: Path) -> None:
    """SIGKILL a process that keeps putting: every put it was told landed is there, whole, and the store goes on."""
    Root(tmp_path).mount("langgraph", create=True)
    out = tmp_path / "out"
    out.touch()
    (tmp_path / "go").touch()
    args = {"mode": "put", "root": str(tmp_path), "tag": "k", "count": 10_000, "out": str(out), "go": str(tmp_path / "go")}
    proc = subprocess.Popen([sys.executable, WORKER, json.dumps(args)])
    deadline = time.monotonic() + 120
    while len(out.read_text().split()) < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    acknowledged = out.read_text().split()
    assert len(acknowledged) >= 20
    store = GitMemStore.open(tmp_path)
    found = {item.key: item.value for item in store.search(("race",), limit=100_000)}
    assert set(acknowledged) <= set(found) and len(found) - len(acknowledged) <= 1  # at most the one in flight
    for key, value in found.items():  # each item file whole: what its put wrote
        assert value == {"text": f"note {int(key.split('-')[1])} from k"}
    assert sum(1 for s in commits(repo) if s.startswith("langgraph-put")) == len(found)  # one commit per put
    store.put(("race", "after"), "after", {"text": "after"})
    item = store.get(("race", "after"), "after")
    assert item is not None and item.value == {"text": "after"}
    fsck(repo)

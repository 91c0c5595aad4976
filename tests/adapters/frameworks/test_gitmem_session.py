"""GitMemSession's own promises: one commit per batch, pops guarded by compare-and-swap, refusals, races."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitmem import Root
from gitmem.adapters.openai_session import GitMemSession
from gitmem.errors import MemoryStoreError
from gitmem.memstore import InMemoryFileStore
from gitmem.model import FileText, Origin
from tests.adapters.frameworks.support import WORKER, commits, fsck, git, run_workers


def test_each_add_items_batch_is_one_commit_and_each_item_a_file(tmp_path: Path) -> None:
    session = GitMemSession.open("chat 1", tmp_path, origin=Origin(run_id="r1", principal_id="bob"))
    repo = tmp_path / "session.git"
    before = len(commits(repo))
    asyncio.run(session.add_items([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
    asyncio.run(session.add_items([]))  # nothing to add: no commit
    assert len(commits(repo)) == before + 1
    files = git(repo, "ls-tree", "-r", "--name-only", "main").split()
    assert files == [
        "conversations/chat.201/000000000001.json",
        "conversations/chat.201/000000000002.json",
        "conversations/chat.201/head.json",
    ]
    assert json.loads(git(repo, "show", "main:conversations/chat.201/000000000002.json"))["content"] == "hello"
    assert "Gitmem-Run: r1" in git(repo, "log", "-1", "--format=%B", "main")
    assert asyncio.run(session.pop_item()) == {"role": "assistant", "content": "hello"}
    assert commits(repo)[0].startswith("session-pop")
    asyncio.run(session.clear_session())
    assert git(repo, "ls-tree", "-r", "--name-only", "main").strip() == ""
    fsck(repo)


def test_a_refused_batch_adds_nothing(tmp_path: Path) -> None:
    session = GitMemSession.open("s", tmp_path)
    asyncio.run(session.add_items([{"role": "user", "content": "first"}]))
    head = git(tmp_path / "session.git", "rev-parse", "main")
    for bad in ({"role": "user", "content": "my key is AKIAQWERTYUIOPASDFGH"}, {"content": "x" * 70_000}):
        with pytest.raises(MemoryStoreError):
            asyncio.run(session.add_items([{"role": "user", "content": "fine"}, bad]))
    assert git(tmp_path / "session.git", "rev-parse", "main") == head
    assert asyncio.run(session.get_items()) == [{"role": "user", "content": "first"}]


def test_a_pop_that_lost_the_race_takes_the_next_item() -> None:
    """Two handles read the same newest item; the second pop's compare-and-swap fails and it retries."""
    store = InMemoryFileStore()
    first, second = GitMemSession("s", store), GitMemSession("s", store)
    first.add_items_sync([{"content": "a"}, {"content": "b"}])
    stale = second._read_newest()
    real_read = second._read_newest
    calls = []

    def read_once_stale() -> object:
        calls.append(1)
        return stale if len(calls) == 1 else real_read()

    second._read_newest = read_once_stale  # type: ignore[method-assign]
    assert first.pop_item_sync() == {"content": "b"}
    assert second.pop_item_sync() == {"content": "a"}  # not "b" again
    assert len(calls) == 1 and first.get_items_sync() == []  # the retry read the whole folder


def test_a_hand_edited_file_that_is_not_json_is_skipped() -> None:
    store = InMemoryFileStore()
    session = GitMemSession("s", store)
    session.add_items_sync([{"content": "a"}])
    store.write("conversations/s/000000000002.json", "not json\n", expected=None)
    assert session.get_items_sync() == [{"content": "a"}]
    assert session.pop_item_sync() == {"content": "a"}  # the broken newest file went first
    assert session.get_items_sync() == [] and isinstance(store.read("conversations/s/head.json"), FileText)


@pytest.mark.slow
def test_concurrent_adds_and_pops_from_processes(tmp_path: Path) -> None:
    Root(tmp_path).mount("session", create=True, kind="session")
    adds: list[dict[str, object]] = [
        {"mode": "add", "root": str(tmp_path), "tag": f"w{n}", "count": 15} for n in range(2)
    ]
    acknowledged = run_workers(tmp_path, adds)
    session = GitMemSession.open("race", tmp_path)
    items = [i["content"] for i in session.get_items_sync()]
    assert sorted(items) == sorted(k for keys in acknowledged for k in keys)  # nothing lost, nothing twice
    for keys in acknowledged:  # each writer's items in its own order
        assert [i for i in items if i in set(keys)] == keys
    (tmp_path / "pops").mkdir()
    popped = run_workers(tmp_path / "pops", [{"mode": "pop", "root": str(tmp_path), "tag": "p"}] * 2)
    everything = [k for keys in popped for k in keys]
    assert sorted(everything) == sorted(items)  # every item popped exactly once
    assert session.get_items_sync() == []
    fsck(tmp_path / "session.git")


@pytest.mark.slow
def test_a_writer_killed_mid_conversation_leaves_whole_batches(tmp_path: Path) -> None:
    """SIGKILL a process that keeps adding: every batch it was told landed is there, and the session goes on."""
    Root(tmp_path).mount("session", create=True, kind="session")
    out = tmp_path / "out"
    out.touch()
    (tmp_path / "go").touch()
    args = {
        "mode": "add",
        "root": str(tmp_path),
        "tag": "k",
        "count": 10_000,
        "out": str(out),
        "go": str(tmp_path / "go"),
    }
    proc = subprocess.Popen([sys.executable, WORKER, json.dumps(args)])
    deadline = time.monotonic() + 120
    while len(out.read_text().split()) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    acknowledged = out.read_text().split()
    session = GitMemSession.open("race", tmp_path)
    items = [i["content"] for i in session.get_items_sync()]
    assert (
        items[: len(acknowledged)] == acknowledged and len(items) - len(acknowledged) <= 1
    )  # at most the one in flight
    head = json.loads(session.store.read("conversations/race/head.json").text)
    assert head["last"] == len(items)  # the head moved with every batch, never without it
    session.add_items_sync([{"role": "user", "content": "after"}])
    assert session.get_items_sync()[-1]["content"] == "after"
    fsck(tmp_path / "session.git")

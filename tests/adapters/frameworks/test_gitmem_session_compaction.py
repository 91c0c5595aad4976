"""GitMemSession under the SDK's compaction session: one commit per replacement, refusals, races, wrappers.

The copied SDK suites (``test_openai_compaction_*``) show the SDK gets what it needs;
these show what gitmem adds: the replacement is one commit on main, and a refused
summary or a write that landed since the snapshot leaves the memory as it was.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest.mock import AsyncMock, MagicMock

import pytest
from agents import Agent, RunConfig, Runner
from agents.memory import OpenAIResponsesCompactionSession
from agents.testing import ScriptedModel

from gitmem import Root
from gitmem.adapters.openai_session import GitMemSession
from gitmem.errors import MemoryStoreError
from tests.adapters.frameworks.agents_helpers import get_text_message
from tests.adapters.frameworks.support import WORKER, commits, fsck, git

SUMMARY = {"type": "compaction", "id": "cmp", "encrypted_content": "summary"}


def _compacting(session: Any, output: list[dict[str, Any]]) -> tuple[OpenAIResponsesCompactionSession, MagicMock]:
    client = MagicMock()
    client.responses.compact = AsyncMock(return_value=SimpleNamespace(output=output))
    wrapper = OpenAIResponsesCompactionSession(
        "c", session, client=client, compaction_mode="input", should_trigger_compaction=lambda _: True
    )
    return wrapper, client


def _items(n: int) -> list[Any]:
    return [{"role": "assistant" if i % 2 else "user", "content": f"turn {i}"} for i in range(n)]


def test_an_automatic_compaction_is_one_commit_that_replaces_the_turn(tmp_path: Path) -> None:
    session = GitMemSession.open("c", tmp_path)
    asyncio.run(session.add_items(_items(4)))
    wrapper, client = _compacting(session, [SUMMARY])
    reply = get_text_message("done")
    # the model sees only the newest stored item: the turn, not the older history, is what gets compacted
    config = RunConfig(session_settings={"limit": 1})
    agent = Agent(name="a", model=ScriptedModel(steps=[[reply]]))
    asyncio.run(Runner.run(agent, "next", session=wrapper, run_config=config))
    client.responses.compact.assert_awaited_once()
    repo = tmp_path / "session.git"
    assert commits(repo)[0].startswith("session-compact")
    assert commits(repo)[1].startswith("session-add")  # the turn's own add, then the replacement
    assert asyncio.run(session.get_items()) == [*_items(4), SUMMARY]
    fsck(repo)


def test_a_manual_compaction_swaps_the_history_in_one_commit_not_a_clear_then_an_add(tmp_path: Path) -> None:
    session = GitMemSession.open("c", tmp_path)
    asyncio.run(session.add_items(_items(6)))
    repo = tmp_path / "session.git"
    before = len(commits(repo))
    wrapper, _ = _compacting(session, [SUMMARY])
    asyncio.run(wrapper.run_compaction({"force": True}))
    assert len(commits(repo)) == before + 1 and commits(repo)[0].startswith("session-compact")
    assert asyncio.run(session.get_items()) == [SUMMARY]
    # the next add lands after the summary, in order
    asyncio.run(session.add_items([{"role": "user", "content": "after"}]))
    assert asyncio.run(session.get_items()) == [SUMMARY, {"role": "user", "content": "after"}]
    fsck(repo)


def test_a_refused_summary_leaves_the_memory_unchanged(tmp_path: Path) -> None:
    session = GitMemSession.open("c", tmp_path)
    asyncio.run(session.add_items(_items(3)))
    repo = tmp_path / "session.git"
    head = git(repo, "rev-parse", "main")
    snapshot = asyncio.run(session._get_compaction_snapshot(10))
    assert snapshot is not None and snapshot.complete and snapshot.items == _items(3)
    for bad in ({"content": "my key is AKIAQWERTYUIOPASDFGH"}, {"content": "x" * 70_000}):
        with pytest.raises(MemoryStoreError):
            asyncio.run(snapshot.replace_suffix(0, [bad]))
    assert git(repo, "rev-parse", "main") == head
    assert asyncio.run(session.get_items()) == _items(3)
    # manual compaction refuses the same way
    with pytest.raises(MemoryStoreError):
        asyncio.run(session._atomic_replace_items([{"content": "AKIAQWERTYUIOPASDFGH"}]))
    assert git(repo, "rev-parse", "main") == head


def test_a_write_since_the_snapshot_makes_the_replacement_decline(tmp_path: Path) -> None:
    """Another process's add, pop or clear after the snapshot: the replacement writes nothing and says so."""
    for change in ("add", "pop", "clear"):
        session = GitMemSession.open("c", tmp_path / change)
        other = GitMemSession.open("c", tmp_path / change)  # a second handle, as another process would hold
        asyncio.run(session.add_items(_items(4)))
        snapshot = asyncio.run(session._get_compaction_snapshot(2))
        assert snapshot is not None and not snapshot.complete and snapshot.items == _items(4)[-2:]
        if change == "add":
            asyncio.run(other.add_items([{"content": "newer"}]))
        elif change == "pop":
            asyncio.run(other.pop_item())
        else:
            asyncio.run(other.clear_session())
        repo = tmp_path / change / "session.git"
        head = git(repo, "rev-parse", "main")
        assert asyncio.run(snapshot.replace_suffix(0, [SUMMARY])) is False
        assert git(repo, "rev-parse", "main") == head


def test_the_expired_prefix_goes_in_the_same_commit_up_to_the_first_item_kept(tmp_path: Path) -> None:
    session = GitMemSession.open("c", tmp_path)
    old = [{"content": "old 1"}, {"content": "old 2"}, {"content": "keep"}, {"content": "old 3"}]
    asyncio.run(session.add_items([*old, *_items(2)]))
    snapshot = asyncio.run(session._get_compaction_snapshot(2, prune_prefix=lambda i: i["content"].startswith("old")))
    assert snapshot is not None and snapshot.items == _items(2)
    repo = tmp_path / "session.git"
    before = len(commits(repo))
    assert asyncio.run(snapshot.replace_suffix(0, [SUMMARY])) is True
    assert len(commits(repo)) == before + 1
    assert asyncio.run(session.get_items()) == [{"content": "keep"}, {"content": "old 3"}, SUMMARY]
    fsck(repo)


def test_a_subclass_that_transforms_items_gets_no_hooks(tmp_path: Path) -> None:
    class Upper(GitMemSession):
        async def add_items(self, items: list[Any]) -> None:
            await super().add_items([{**i, "content": str(i.get("content", "")).upper()} for i in items])

    plain = GitMemSession.open("c", tmp_path)
    upper = Upper(plain.session_id, plain.store)
    assert asyncio.run(upper._get_compaction_snapshot(5)) is None
    assert asyncio.run(upper._atomic_replace_items([SUMMARY])) is False
    assert asyncio.run(plain._get_compaction_snapshot(5)) is not None


@pytest.mark.slow
def test_a_compaction_killed_mid_way_leaves_the_old_items_or_the_summary(tmp_path: Path) -> None:
    """SIGKILL a process that keeps adding a pair and compacting it: each round is whole, never half replaced."""
    Root(tmp_path).mount("session", create=True, kind="session")
    out, go = tmp_path / "out", tmp_path / "go"
    out.touch()
    go.touch()
    args = {"mode": "compact", "root": str(tmp_path), "tag": "c", "count": 10_000, "out": str(out), "go": str(go)}
    proc = subprocess.Popen([sys.executable, WORKER, json.dumps(args)])
    deadline = time.monotonic() + 120
    while len(out.read_text().split()) < 7 and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    lines = out.read_text().split()
    summaries = [line for line in lines if line.startswith("c-s")]
    added = [line for line in lines if line.endswith("-added")]
    session = GitMemSession.open("race", tmp_path)
    names = [i.get("id") or i.get("content") for i in session.get_items_sync()]
    done = len(summaries)
    assert names[:done] == summaries  # every acknowledged round is its summary, in order
    tail = names[done:]
    if len(added) > done:  # the round in flight had its pair acknowledged: the pair, or its summary, is there whole
        assert tail in ([f"c-{done}-a", f"c-{done}-b"], [f"c-s{done}"]), tail
    else:  # its add may have landed unacknowledged, and even been compacted
        assert tail in ([], [f"c-{done}-a", f"c-{done}-b"], [f"c-s{done}"]), tail
    session.add_items_sync([{"role": "user", "content": "after"}])
    assert session.get_items_sync()[-1]["content"] == "after"
    fsck(tmp_path / "session.git")

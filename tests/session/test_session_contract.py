"""One behaviour, two stores: SessionMemory over the git session mount and the in-memory twin."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gitmem.errors import MemoryStoreError
from gitmem.memstore import InMemoryFileStore
from gitmem.model import Changes
from gitmem.session.binding import ExtractedItem
from gitmem.session.extraction import LessonExtractor
from gitmem.session.hygiene import DAY
from gitmem.session.location import open_session_memory
from gitmem.session.memory import SessionMemory
from gitmem.session.runner import SessionRunner, TurnContext
from gitmem.session.stats import MemoryAccessStats


class Clock:
    def __init__(self) -> None:
        self.t = 1_790_000_000.0

    def __call__(self) -> float:
        self.t += 1.0  # every call is a later moment, so "newest first" is well defined
        return self.t


Factory = Callable[[Clock], SessionMemory]


@pytest.fixture(params=["git", "memory"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Factory:
    if request.param == "git":
        return lambda clock: open_session_memory(tmp_path / "m", clock=clock)
    return lambda clock: SessionMemory(InMemoryFileStore(), stats=MemoryAccessStats(), clock=clock)


def extracted(content: str, **kw: object) -> ExtractedItem:
    fields: dict[str, object] = {
        "content": content,
        "memory_type": "semantic",
        "source": "decision",
        "scope": "workspace",
        "reason": "changes how deploys are done",
        "tags": ("deploy",),
        "importance": 0.9,
        "confidence": 0.9,
    }
    fields.update(kw)
    return ExtractedItem(**fields)  # type: ignore[arg-type]


def test_the_same_answers_on_both_stores(make: Factory) -> None:
    memory = make(Clock())
    a = memory.remember("Release checks passed after provider verification", importance=0.4, tags=["release"])
    b = memory.remember("release checks passed AFTER provider verification", importance=0.7, memory_type="semantic")
    assert b.id == a.id and len(memory) == 1
    merged = memory.get(a.id)
    assert (merged.importance, merged.memory_type, merged.metadata["duplicate_count"]) == (0.7, "semantic", 1)
    memory.remember_failure("provider verification", "missing PROVIDER_BASE_URL", ["bash"])
    assert [r.item.content.split("\n")[0] for r in memory.recall_similar("provider verification release", 5)] == [
        "release checks passed AFTER provider verification",
        "Failure: provider verification",
    ]
    assert [i.tags[0] for i in memory.recent(5)] == ["failure", "release"]
    assert [i.id for i in memory.recall_by_tags(["release"], 5)] == [a.id]
    assert memory.get(a.id).access_count == 2  # one recall_similar, one recall_by_tags
    with pytest.raises(MemoryStoreError) as caught:
        memory.remember("token ghp_abcdefghijklmnopqrstuvwxyz0123456789 for CI")
    assert caught.value.code == "invalid_text"


def test_extraction_relations_land_in_one_commit(make: Factory) -> None:
    memory = make(Clock())
    old = memory.remember("deploys go through the staging cluster first")
    other = memory.remember("deploys are frozen on Fridays")
    before = memory.store.head()
    new = memory.remember_extracted(
        extracted("deploys go straight to production once CI passes", supersedes=(old.id,), conflicts_with=(other.id,))
    )
    changes = memory.store.changes(before)
    assert isinstance(changes, Changes) and len(changes.paths) == 3
    assert new.supersedes == (old.id,) and {"consolidated", "conflict"} <= set(new.tags)
    assert memory.get(old.id).superseded_by == (new.id,)
    assert memory.get(other.id).conflicts_with == (new.id,)
    assert new.metadata["source"] == "decision" and new.metadata["confidence"] == 0.9
    assert [r.item.id for r in memory.recall_similar("deploys", 5)] == [new.id, other.id]


def test_prune_on_both_stores(make: Factory) -> None:
    clock = Clock()
    memory = make(clock)
    stale = [memory.remember(f"an unimportant note number {n}", importance=0.1).id for n in range(3)]
    pinned = memory.remember("an unimportant but pinned note", importance=0.1, tags=["pinned"])
    clock.t += 100 * DAY
    fresh = memory.remember("a fresh unimportant note", importance=0.1)
    report = memory.prune()
    assert set(report.removed) == set(stale) and report.kept_protected == 1
    assert {i.id for i in memory.items()} == {pinned.id, fresh.id}


def test_two_turns_on_both_stores(make: Factory) -> None:
    memory = make(Clock())

    def model(turn: TurnContext) -> str:
        if "lint before every push" in turn.memory_block:
            return "Run the linter first, as remembered."
        return "Lesson: this repository wants lint before every push"

    runner = SessionRunner(memory, model, workspace="/w", session_id="s", extractor=LessonExtractor())
    first = runner.turn("how do I push?")
    assert first.recall.memories == ()
    second = runner.turn("what should happen before a push?")
    assert second.response == "Run the linter first, as remembered."
    assert runner.close() == 0

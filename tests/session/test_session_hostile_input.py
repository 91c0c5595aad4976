"""Session memory handed what it must refuse: lone surrogates, deep metadata, floods of tags.

Each is refused with ``invalid_text`` by the core and as an ``{"error"}`` answer by the
tools; none changes the memory (same head, same tree), and ``git fsck --strict`` is clean.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitmem.errors import MemoryStoreError
from gitmem.session import items
from gitmem.session.extraction import ExtractionRequest
from gitmem.session.hygiene import DAY
from gitmem.session.location import open_session_memory
from gitmem.session.memory import SessionMemory
from gitmem.session.runner import ModelReply, SessionRunner
from gitmem.tools.session import SessionTools


class Clock:
    def __init__(self, t: float = 1_790_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def memory(tmp_path: Path, clock: Clock) -> SessionMemory:
    return open_session_memory(tmp_path / "mem", clock=clock)


def git(memory: SessionMemory, *args: str) -> str:
    repo = memory.store.path  # type: ignore[attr-defined]
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def state(memory: SessionMemory) -> tuple[str, str]:
    return git(memory, "rev-parse", "main"), git(memory, "rev-parse", "main^{tree}")


def deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    top = value
    for _ in range(levels - 1):
        value["x"] = {}
        value = value["x"]
    return top


def nested_list(levels: int) -> list[Any]:
    value: list[Any] = [1]
    for _ in range(levels):
        value = [value]
    return value


BAD_REMEMBERS: dict[str, dict[str, Any]] = {
    "surrogate content": {"content": "a note with a lone \ud800 surrogate"},
    "surrogate tag": {"content": "a note with a bad tag", "tags": ["ok", "bad\udcff"]},
    "surrogate metadata value": {"content": "a note with bad metadata", "metadata": {"k": "\udc80"}},
    "surrogate metadata key": {"content": "a note with a bad key", "metadata": {"\udc80": 1}},
    "3000-deep metadata": {"content": "a note with deep metadata", "metadata": deep(3000)},
    "33-deep metadata": {"content": "a note with deep metadata", "metadata": deep(items.MAX_METADATA_DEPTH + 1)},
    "deep list metadata": {"content": "a note with a deep list", "metadata": {"l": nested_list(40)}},
    "huge metadata": {"content": "a note with huge metadata", "metadata": {"k": "x" * 20_000}},
    "too many tags": {"content": "a note with tags", "tags": [f"t{n}" for n in range(65)]},
    "a flood of tags": {"content": "a note with a flood", "tags": ["t"] * 100_000},
    "an importance no float holds": {"content": "a note of endless importance", "importance": 10**400},
}


@pytest.mark.parametrize("args", list(BAD_REMEMBERS.values()), ids=list(BAD_REMEMBERS))
def test_remember_refuses_with_a_code_and_changes_nothing(memory: SessionMemory, args: dict[str, Any]) -> None:
    memory.remember("something already there to keep the head real")
    before = state(memory)
    with pytest.raises(MemoryStoreError) as caught:
        memory.remember(**args)
    assert caught.value.code == "invalid_text" and len(caught.value.message) < 300
    assert state(memory) == before
    subprocess.run(["git", "-C", memory.store.path, "fsck", "--strict"], check=True, capture_output=True)  # type: ignore[attr-defined]


def test_deep_metadata_at_the_limit_is_kept(memory: SessionMemory) -> None:
    item = memory.remember("a note at the nesting limit", metadata=deep(items.MAX_METADATA_DEPTH))
    assert memory.get(item.id).metadata == deep(items.MAX_METADATA_DEPTH)


@pytest.mark.parametrize(
    "arguments",
    [
        {"content": "lone \ud800 surrogate"},
        {"content": "tags with a surrogate", "tags": ["\udcff"]},
        {"content": "a flood of tags", "tags": [str(n) for n in range(100_000)]},
        {"query": "lone \ud800"},
    ],
    ids=["content", "tag", "flood", "recall"],
)
def test_session_tools_answer_every_refusal_as_an_error(memory: SessionMemory, arguments: dict[str, Any]) -> None:
    memory.remember("something already there to keep the head real")
    before = state(memory)
    name = "memory_session_recall" if "query" in arguments else "memory_session_remember"
    answer = SessionTools(memory).call(name, arguments)
    if name == "memory_session_remember":
        assert answer.get("error") in ("invalid_text", "invalid_arguments"), answer  # the core's rule, or the schema's
    else:  # a query is only read: an odd one may simply match nothing
        assert "error" in answer or answer.get("results") == [], answer
    assert state(memory) == before


def test_session_tools_translate_what_the_core_did_not_check(
    memory: SessionMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(memory, "remember", boom)
    answer = SessionTools(memory).call("memory_session_remember", {"content": "x"})
    assert answer["error"] == "invalid_query" and "RecursionError" in answer["message"]


def test_clean_tags_applies_its_limits_before_the_work() -> None:
    # Over the entry limit: refused by the count, no entry is looked at (these would fail another way).
    with pytest.raises(MemoryStoreError) as caught:
        items.clean_tags([object()] * (items.MAX_TAG_ENTRIES + 1))
    assert "the limit is 64" in caught.value.message
    # From a generator: no more entries are taken than it needs to refuse.
    taken = 0

    def endless() -> Iterator[str]:
        nonlocal taken
        while True:
            taken += 1
            yield f"tag{taken}"

    with pytest.raises(MemoryStoreError):
        items.clean_tags(endless())
    assert taken == items.MAX_TAGS + 1
    # Duplicates are free up to the entry limit, and the first spelling wins.
    assert items.clean_tags([" A ", "a", "b"] * 300) == ("a", "b")
    with pytest.raises(MemoryStoreError) as caught:
        items.clean_tags(["x" * 10_000_000])
    assert len(caught.value.message) < 200


def test_clean_tags_is_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    # Counted, not timed: each distinct tag is looked for in the secret rules exactly once.
    seen: list[str] = []
    real = items.check_no_secret

    def counting(text: str, what: str) -> None:
        seen.append(text)
        real(text, what)

    monkeypatch.setattr(items, "check_no_secret", counting)
    items.clean_tags([f"t{n % 64}" for n in range(items.MAX_TAG_ENTRIES)])
    assert len(seen) == 64


def test_supersede_marks_both_ends_and_prune_keeps_the_replacement(memory: SessionMemory, clock: Clock) -> None:
    old = memory.remember("deploys go through the staging cluster first", importance=0.1)
    new = memory.remember("deploys go straight to production after CI passes", importance=0.1)
    memory.supersede(old.id, new.id)
    assert memory.get(old.id).superseded_by == (new.id,)
    assert memory.get(new.id).supersedes == (old.id,) and not memory.get(new.id).superseded
    assert [i.id for i in memory.recent(10)] == [new.id]
    clock.t += 365 * DAY  # both are old and unimportant: only their relation protects them
    report = memory.prune()
    assert report.removed == ()
    assert {i.id for i in memory.items()} == {old.id, new.id}
    assert [r.item.id for r in memory.recall_similar("deploys production", 5)] == [new.id]
    with pytest.raises(MemoryStoreError) as caught:
        memory.supersede(new.id, new.id)
    assert caught.value.code == "invalid_query"
    subprocess.run(["git", "-C", memory.store.path, "fsck", "--strict"], check=True, capture_output=True)  # type: ignore[attr-defined]


def test_conflict_marks_both_ends_and_prune_keeps_them(memory: SessionMemory, clock: Clock) -> None:
    a = memory.remember("the API returns timestamps in UTC", importance=0.1)
    b = memory.remember("the API returns timestamps in local time", importance=0.1)
    memory.mark_conflict(a.id, b.id)
    clock.t += 365 * DAY
    assert memory.prune().removed == ()
    assert memory.get(a.id).conflicts_with == (b.id,) and memory.get(b.id).conflicts_with == (a.id,)


def test_a_turn_whose_text_holds_half_an_emoji_is_extracted_all_the_same(memory: SessionMemory) -> None:
    """A prompt, reply or tool call cut inside a surrogate pair is the host's text as given: the
    turn's evidence is hashed (it raised UnicodeEncodeError and lost the turn's memories)."""
    item = {
        "content": "Release checks need PROVIDER_BASE_URL set before verification",
        "memory_type": "procedural",
        "source": "failure",
        "scope": "workspace",
        "reason": "the next release would fail the same way",
        "tags": ["release"],
        "importance": 0.85,
        "confidence": 0.9,
    }

    class Extractor:
        def extract(self, request: ExtractionRequest) -> object:
            return {"items": [item]}

    runner = SessionRunner(
        memory,
        lambda ctx: ModelReply("noted \ud83d", ("tool \udc00",)),
        workspace="w",
        session_id="s-1",
        extractor=Extractor(),
    )
    try:
        outcome = runner.turn("the release failed again \ud83d").extraction
        assert outcome is not None
        done = outcome.result()
    finally:
        runner.close()
    assert done.error is None and len(done.stored) == 1 and not done.rejected
    assert [m.content for m in memory.recall_by_tags(["release"])] == [item["content"]]
    turn = ExtractionRequest("a \ud83d", "b", "w", "s-1")
    assert turn.evidence_digest() == ExtractionRequest("a \ud83d", "b", "w", "s-1").evidence_digest()
    assert turn.evidence_digest() != ExtractionRequest("a \ud83e", "b", "w", "s-1").evidence_digest()

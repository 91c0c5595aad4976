"""The pure hygiene rules of session memory, as tables built from the seed's examples."""

from __future__ import annotations

import math

import pytest

from gitmem.errors import MemoryStoreError
from gitmem.session.hygiene import (
    DAY,
    fingerprint,
    mark_conflict,
    mark_superseded,
    merge_duplicate,
    normalize_text,
    protection,
    relevance,
    select_prune,
)
from gitmem.session.items import (
    MemoryItem,
    decode_item,
    encode_item,
    iso,
    make_item,
    path_for_fingerprint,
    path_for_id,
)

NOW = 1_790_000_000.0


def item(
    id: str = "mem-a",
    content: str = "Release checks passed after provider verification",
    *,
    age_days: float = 0.0,
    importance: float = 0.5,
    tags: tuple[str, ...] = (),
    memory_type: str = "episodic",
    metadata: dict[str, object] | None = None,
    access_count: int = 0,
) -> MemoryItem:
    return MemoryItem(
        id=id,
        content=content,
        timestamp=NOW - age_days * DAY,
        importance=importance,
        tags=tags,
        memory_type=memory_type,  # type: ignore[arg-type]
        metadata=dict(metadata or {}),
        access_count=access_count,
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Release checks passed after provider verification", "release checks passed after provider verification"),
        (
            "  Release   checks\tpassed\nafter provider verification ",
            "release checks passed after provider verification",
        ),
        ("Use pnpm, not npm, here.", "use pnpm, not npm, here."),  # 24 characters: just long enough
        ("Use pnpm not npm here", None),  # 21 characters: too short to merge on equality
        ("   ", None),
    ],
)
def test_fingerprint_is_collapsed_lowercased_text_of_at_least_24_characters(text: str, expected: str | None) -> None:
    assert fingerprint(text) == expected
    if expected is not None:
        assert normalize_text(text) == expected


def test_a_merge_keeps_the_canonical_id_and_the_maxima() -> None:
    old = item("mem-old", importance=0.4, age_days=3, tags=("release",), access_count=2)
    new = item("mem-new", importance=0.8, age_days=0, tags=("bash", "release"), memory_type="procedural")
    merged = merge_duplicate(old, new, now=NOW)
    assert merged.id == "mem-old"
    assert merged.importance == 0.8
    assert merged.timestamp == NOW
    assert merged.access_count == 2
    assert merged.tags == ("release", "bash")
    assert merged.memory_type == "procedural"
    assert merged.metadata["duplicate_count"] == 1
    assert merged.metadata["duplicate_ids"] == ["mem-new"]
    assert merged.metadata["last_duplicate_at"] == iso(NOW)


@pytest.mark.parametrize(
    ("old_imp", "new_imp", "old_text", "new_text", "kept"),
    [
        (0.5, 0.9, "release checks passed after verification", "Release checks passed after verification", "new"),
        (0.9, 0.5, "release checks passed after verification", "Release checks passed after verification", "old"),
        (0.5, 0.5, "release checks passed after verification", "release  checks passed after verification", "new"),
        (0.5, 0.5, "release  checks passed after verification", "release checks passed after verification", "old"),
        (0.5, 0.5, "release checks passed after verification", "Release checks passed after verification", "old"),
    ],
)
def test_the_incoming_text_wins_when_more_important_or_equally_important_and_longer(
    old_imp: float, new_imp: float, old_text: str, new_text: str, kept: str
) -> None:
    merged = merge_duplicate(item("a", old_text, importance=old_imp), item("b", new_text, importance=new_imp), now=NOW)
    assert merged.content == (new_text if kept == "new" else old_text)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("episodic", "working", "working"),
        ("working", "semantic", "semantic"),
        ("episodic", "procedural", "procedural"),
        ("procedural", "semantic", "procedural"),  # equally strong: the canonical type stays
        ("semantic", "procedural", "semantic"),
        ("semantic", "episodic", "semantic"),
        ("working", "episodic", "working"),
    ],
)
def test_the_stronger_type_survives_a_merge(old: str, new: str, expected: str) -> None:
    assert merge_duplicate(item("a", memory_type=old), item("b", memory_type=new), now=NOW).memory_type == expected


def test_list_metadata_is_merged_and_duplicates_accumulate() -> None:
    old = item("a", metadata={"supersedes": ["x"], "source": "workflow", "duplicate_ids": ["z"], "duplicate_count": 1})
    new = item("b", metadata={"supersedes": ["y", "x"], "conflicts_with": ["w"], "source": "decision"})
    merged = merge_duplicate(old, new, now=NOW)
    assert merged.metadata["supersedes"] == ["x", "y"]
    assert merged.metadata["conflicts_with"] == ["w"]
    assert merged.metadata["source"] == "workflow"
    assert merged.metadata["duplicate_ids"] == ["z", "b"]
    assert merged.metadata["duplicate_count"] == 2


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"access_count": 3}, "recalled 3 times"),
        ({"tags": ("keep",)}, "tagged keep"),
        ({"tags": ("pinned",)}, "tagged pinned"),
        ({"tags": ("protected",)}, "tagged protected"),
        ({"tags": ("consolidated",)}, "tagged consolidated"),
        ({"tags": ("conflict",)}, "tagged conflict"),
        ({"metadata": {"keep": True}}, "metadata keep is set"),
        ({"metadata": {"pinned": 1}}, "metadata pinned is set"),
        ({"metadata": {"protected": "yes"}}, "metadata protected is set"),
        ({"metadata": {"supersedes": ["x"]}}, "carries supersedes"),
        ({"metadata": {"conflicts_with": ["x"]}}, "carries conflicts_with"),
        ({"metadata": {"superseded_by": ["x"]}}, "carries superseded_by"),
    ],
)
def test_protected_items_survive_pruning(changes: dict[str, object], reason: str) -> None:
    stale = item("p", age_days=200, importance=0.1, **changes)  # type: ignore[arg-type]
    assert protection(stale) == reason
    plan = select_prune([stale], now=NOW)
    assert plan.remove == ()
    assert plan.kept_protected == 1


@pytest.mark.parametrize(
    "changes",
    [
        {"access_count": 2},
        {"tags": ("release",)},
        {"metadata": {"keep": False, "pinned": 0, "protected": ""}},
        {"metadata": {"supersedes": [], "conflicts_with": []}},
    ],
)
def test_what_does_not_protect(changes: dict[str, object]) -> None:
    stale = item("p", age_days=200, importance=0.1, **changes)  # type: ignore[arg-type]
    assert protection(stale) is None
    assert [i.id for i in select_prune([stale], now=NOW).remove] == ["p"]


@pytest.mark.parametrize(
    ("age_days", "importance", "removed"),
    [
        (91, 0.49, True),
        (91, 0.5, False),  # importance must be below 0.5
        (89, 0.1, False),  # age must be over 90 days
        (365, 0.0, True),
    ],
)
def test_default_prune_needs_old_and_unimportant(age_days: float, importance: float, removed: bool) -> None:
    plan = select_prune([item("x", age_days=age_days, importance=importance)], now=NOW)
    assert bool(plan.remove) is removed


def test_relevance_formula() -> None:
    assert relevance(item(importance=1.0, age_days=0), now=NOW) == pytest.approx(1.0)
    assert relevance(item(importance=0.5, age_days=30), now=NOW) == pytest.approx(0.35 + 0.3 * math.exp(-1))
    assert relevance(item(importance=0.0, age_days=-5), now=NOW) == pytest.approx(0.3)


def test_max_items_drops_the_least_relevant_unprotected_items() -> None:
    items = [
        item("fresh-low", importance=0.2, age_days=0),  # 0.14 + 0.3 = 0.44
        item("old-high", importance=0.9, age_days=60),  # 0.63 + 0.04 = 0.67
        item("old-low", importance=0.3, age_days=60),  # 0.21 + 0.04 = 0.25
        item("pinned-old-low", importance=0.1, age_days=80, tags=("pinned",)),
    ]
    plan = select_prune(items, now=NOW, max_items=2)
    assert [i.id for i in plan.remove] == ["old-low", "fresh-low"]
    plan = select_prune(items, now=NOW, max_items=0)
    assert {i.id for i in plan.remove} == {"fresh-low", "old-high", "old-low"}
    assert plan.kept_protected == 1


def test_superseding_keeps_the_old_item_marked_and_out_of_recall() -> None:
    old = item("old")
    marked = mark_superseded(old, "new", now=NOW)
    assert marked.superseded and not marked.recallable
    assert "superseded" in marked.tags
    assert marked.superseded_by == ("new",)
    assert protection(marked) == "carries superseded_by"
    assert mark_superseded(marked, "new", now=NOW).superseded_by == ("new",)


def test_conflicts_stay_recallable_and_annotated() -> None:
    marked = mark_conflict(item("a"), "b")
    assert marked.recallable
    assert marked.conflicts_with == ("b",)
    assert "conflict" in marked.tags


def test_tombstoned_items_are_not_recallable() -> None:
    assert not item(tags=("tombstoned",)).recallable
    assert not item(metadata={"status": "tombstoned"}).recallable
    assert item().recallable


def test_an_item_file_round_trips_and_has_one_key_per_line() -> None:
    it = make_item(
        "Use pnpm, not npm, in this repo.",
        now=NOW + 0.1234567,
        importance=0.7,
        tags=["Tooling", "tooling", " node "],
        memory_type="semantic",
        metadata={"source": "preference"},
        item_id="mem-1",
    )
    assert it.tags == ("tooling", "node")
    text = encode_item(it)
    assert decode_item(text) == it
    lines = text.splitlines()
    assert lines[0] == "{" and lines[-1] == "}"
    assert '  "content": "Use pnpm, not npm, in this repo.",' in lines
    assert '  "importance": 0.7,' in lines


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[]", "JSON object"),
        ("{", "not JSON"),
        ('{"schema": "other"}', "schema"),
        ('{"schema": "gitmem.session.item.v1", "id": "x", "content": 3, "timestamp": "2026-01-01T00:00:00Z"}', "text"),
    ],
)
def test_a_bad_item_file_is_a_value_error(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        decode_item(text)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"content": "  "}, "empty"),
        ({"content": "the deploy key is sk-abcdefghijklmnopqrstuvwxyz0123"}, "secret rule 'api_key_sk'"),
        ({"content": "db password = hunter2hunter2"}, "secret rule 'password_assignment'"),
        ({"importance": 1.5}, "from 0 to 1"),
        ({"importance": True}, "number"),
        ({"memory_type": "durable"}, "memory_type"),
        ({"tags": "release"}, "not one string"),
        ({"tags": [""]}, "non-empty"),
        ({"metadata": {"x": object()}}, "JSON"),
        ({"metadata": {"note": "token: ghp_abcdefghijklmnopqrstuvwxyz0123456789"}}, "secret rule"),
        ({"item_id": "has space"}, "item id"),
    ],
)
def test_bad_input_is_refused_naming_the_problem(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"content": "a perfectly fine memory about releases", **kwargs}
    content = args.pop("content")
    with pytest.raises(MemoryStoreError, match=message) as caught:
        make_item(content, now=NOW, **args)  # type: ignore[arg-type]
    assert caught.value.code == "invalid_text"


def test_paths_fan_out_and_separate_fingerprints_from_ids() -> None:
    a = path_for_fingerprint("release checks passed after provider verification")
    assert a.startswith("items/") and a.endswith(".json") and a.count("/") == 2
    assert a.split("/")[1] == a.split("/")[2][:2]
    assert path_for_fingerprint("release checks passed after provider verification") == a
    assert path_for_id("release checks passed after provider verification") != a

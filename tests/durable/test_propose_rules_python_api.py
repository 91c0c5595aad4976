"""`gitmem.durable.agent.propose` (the public rules of durable_propose) checks a candidate itself:
the tool schema runs first over MCP, but a Python caller reaches the rules without it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gitmem.durable import DurableBinding, DurableRepository
from gitmem.durable import agent as rules
from gitmem.errors import MemoryStoreError
from gitmem.model import Origin

from .support import NS

GOOD: dict[str, Any] = {
    "content": "The API server must be restarted after editing config.toml.",
    "memory_type": "semantic",
    "source": "project_fact",
    "scope": "workspace",
    "reason": "saves a debugging session next time",
    "tags": ["ops"],
    "importance": 0.8,
    "confidence": 0.9,
}


@pytest.mark.parametrize(
    "change",
    [
        {"scope": "galaxy"},  # not workspace or user
        {"importance": 0.1},  # below the 0.70 floor
        {"confidence": 7.0},  # above 1
        {"tags": [f"t{i}" for i in range(20)]},  # more than 8 tags
        {"surprise": "field"},  # an unknown field
        {"importance": 10**400},  # no float holds it: OverflowError, not a refusal
        {"memory_type": {}},  # unhashable: looked up in the sources, a TypeError
        {"source": ["project_fact"]},
        {"scope": {"workspace": 1}},
    ],
    ids=[
        "scope",
        "importance",
        "confidence",
        "tags",
        "unknown-field",
        "importance-past-floats",
        "memory-type-object",
        "source-list",
        "scope-object",
    ],
)
def test_propose_refuses_what_the_rules_refuse(tmp_path: Path, change: dict[str, Any]) -> None:
    binding = DurableBinding(DurableRepository.open(tmp_path / "root", "team", create=True), NS)
    with pytest.raises(MemoryStoreError) as caught:
        rules.propose(binding, [{**GOOD, **change}], Origin(principal_id="alice"))
    assert caught.value.code == "invalid_change_set"


def test_propose_with_a_field_missing_is_a_refusal_not_a_crash(tmp_path: Path) -> None:
    binding = DurableBinding(DurableRepository.open(tmp_path / "root", "team", create=True), NS)
    item = {k: v for k, v in GOOD.items() if k != "memory_type"}
    with pytest.raises(MemoryStoreError) as caught:
        rules.propose(binding, [item], Origin(principal_id="alice"))
    assert caught.value.code == "invalid_change_set"


def test_propose_without_tags_still_works(tmp_path: Path) -> None:
    # tags were optional (default none), as in the tool's schema
    binding = DurableBinding(DurableRepository.open(tmp_path / "root", "team", create=True), NS)
    item = {k: v for k, v in GOOD.items() if k != "tags"}
    assert rules.propose(binding, [item], Origin(principal_id="alice"))


def test_propose_refuses_more_than_eight(tmp_path: Path) -> None:
    binding = DurableBinding(DurableRepository.open(tmp_path / "root", "team", create=True), NS)
    items = [{**GOOD, "content": f"{GOOD['content']} (variant number {i})"} for i in range(9)]
    with pytest.raises(MemoryStoreError):
        rules.propose(binding, items, Origin(principal_id="alice"))

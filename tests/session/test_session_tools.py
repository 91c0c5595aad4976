"""The framework-neutral session tools: schemas, results and refusals as JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitmem.model import Origin
from gitmem.session.location import open_session_memory
from gitmem.tools.session import SessionTools


@pytest.fixture
def tools(tmp_path: Path) -> SessionTools:
    return SessionTools(open_session_memory(tmp_path / "m"))


def test_every_tool_has_a_strict_object_schema(tools: SessionTools) -> None:
    names = [d.name for d in tools.offered()]
    assert names == [
        "memory_session_remember",
        "memory_session_recall",
        "memory_session_recent",
        "memory_session_tags",
        "memory_session_prune",
    ]
    for d in tools.offered():
        assert d.input_schema["type"] == "object" and d.input_schema["additionalProperties"] is False


def test_remember_recall_recent_tags(tools: SessionTools) -> None:
    origin = Origin(run_id="run-7", principal_id="agent")
    made = tools.call(
        "memory_session_remember",
        {"content": "Releases need PROVIDER_BASE_URL set first", "tags": ["release"], "importance": 0.8},
        origin=origin,
    )
    assert made["merged"] is False
    again = tools.call("memory_session_remember", {"content": "releases need provider_base_url set FIRST"})
    assert again["item"]["id"] == made["item"]["id"] and again["merged"] is True
    recalled = tools.call("memory_session_recall", {"query": "release provider_base_url", "k": 3})
    assert [r["id"] for r in recalled["results"]] == [made["item"]["id"]]
    assert tools.call("memory_session_recent", {"n": 1})["items"][0]["id"] == made["item"]["id"]
    assert tools.call("memory_session_tags", {})["tags"] == {"release": 1}
    assert len(tools.call("memory_session_tags", {"tags": ["release"]})["items"]) == 1
    log = tools.memory.store.log()  # type: ignore[attr-defined]
    assert any(entry.origin.run_id == "run-7" for entry in log)


@pytest.mark.parametrize(
    ("name", "arguments", "code"),
    [
        ("memory_session_remember", {"content": "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"}, "invalid_text"),
        ("memory_session_remember", {"content": "  "}, "invalid_text"),
        ("memory_session_remember", {"content": "fine text here", "importance": "high"}, "invalid_arguments"),
        ("memory_session_remember", {"content": "fine text here", "colour": "red"}, "invalid_arguments"),
        ("memory_session_recall", {}, "invalid_arguments"),
        ("memory_session_recall", {"query": "x", "k": True}, "invalid_arguments"),
        ("memory_session_recall", {"query": "!!!"}, "invalid_query"),
        ("memory_session_prune", {"dry_run": False}, "forbidden"),
        ("memory_session_nothing", {}, "forbidden"),
    ],
)
def test_refusals_are_json(tools: SessionTools, name: str, arguments: dict[str, object], code: str) -> None:
    answer = tools.call(name, arguments)
    assert answer["error"] == code and answer["message"]


def test_prune_is_a_dry_run_unless_allowed(tmp_path: Path) -> None:
    memory = open_session_memory(tmp_path / "m")
    memory.remember("something of little importance", importance=0.1)
    dry = SessionTools(memory).call("memory_session_prune", {"max_items": 0})
    assert dry["dry_run"] is True and len(dry["removed"]) == 1 and len(memory) == 1
    done = SessionTools(memory, allow_prune=True).call("memory_session_prune", {"max_items": 0, "dry_run": False})
    assert done["dry_run"] is False and len(memory) == 0

"""Extraction validation: every rejection reason, and what an accepted item carries."""

from __future__ import annotations

from typing import Any

import pytest

from gitmem.session.extraction import (
    SCHEMA,
    ExtractionRequest,
    LessonExtractor,
    RelatedMemory,
    render_turn,
    validate_extraction,
)

RELATED = {"mem-1", "mem-2"}


def good(**changes: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "content": "Release checks need PROVIDER_BASE_URL set before verification",
        "memory_type": "procedural",
        "source": "failure",
        "scope": "workspace",
        "reason": "the next release would fail the same way",
        "tags": ["release", "Provider"],
        "importance": 0.85,
        "confidence": 0.9,
    }
    entry.update(changes)
    return {k: v for k, v in entry.items() if v is not ...}


def check(raw: object) -> tuple[list[Any], list[tuple[int | None, str]]]:
    result = validate_extraction(raw, related_ids=RELATED, workspace="/repo", session_id="s-1")
    return list(result.accepted), [(r.index, r.reason) for r in result.rejected]


def test_an_accepted_item_carries_its_fields_and_the_session_metadata() -> None:
    accepted, rejected = check({"items": [good(supersedes=["mem-1"], conflicts_with=["mem-2"])]})
    assert rejected == []
    (item,) = accepted
    assert item.content == "Release checks need PROVIDER_BASE_URL set before verification"
    assert (item.memory_type, item.source, item.scope) == ("procedural", "failure", "workspace")
    assert item.tags == ("release", "provider")
    assert (item.importance, item.confidence) == (0.85, 0.9)
    assert item.supersedes == ("mem-1",) and item.conflicts_with == ("mem-2",)
    assert item.metadata == {"workspace": "/repo", "session_id": "s-1", "schema": SCHEMA}


@pytest.mark.parametrize("raw", [{"items": []}, [], '{"items": []}'])
def test_an_empty_list_is_a_valid_answer(raw: object) -> None:
    assert check(raw) == ([], [])


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("not json at all", "malformed_output"),
        ({"memories": []}, "malformed_output"),
        ({"items": "none"}, "malformed_output"),
        (42, "malformed_output"),
    ],
)
def test_a_malformed_answer_is_rejected_as_a_whole(raw: object, reason: str) -> None:
    assert check(raw) == ([], [(None, reason)])


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("just a string", "not_an_object"),
        (good(reason=...), "missing_field"),
        (good(confidence=...), "missing_field"),
        (good(memory_type="episodic"), "memory_type"),
        (good(memory_type="working"), "memory_type"),
        (good(source="gossip"), "source"),
        (good(memory_type="semantic", source="workflow"), "source_type_mismatch"),
        (good(memory_type="procedural", source="preference"), "source_type_mismatch"),
        (good(source={"kind": "failure"}), "source"),  # unhashable: a TypeError ended the turn's extraction
        (good(source=["failure"]), "source"),
        (good(memory_type={}), "memory_type"),
        (good(scope="global"), "scope"),
        (good(scope=["workspace"]), "scope"),
        (good(content="too short"), "content_length"),
        (good(content="x" * 1201), "content_length"),
        (good(content=42), "wrong_type"),
        (good(reason="because"), "reason_length"),
        (good(reason="r" * 321), "reason_length"),
        (good(tags=[f"t{n}" for n in range(9)]), "too_many_tags"),
        (good(tags="release"), "wrong_type"),
        (good(importance=0.69), "importance_too_low"),
        (good(importance=1.2), "importance_out_of_range"),
        (good(importance="high"), "wrong_type"),
        (good(importance=10**400), "importance_out_of_range"),  # no float holds it: OverflowError ended the run
        (good(confidence=0.74), "confidence_too_low"),
        (good(confidence=True), "wrong_type"),
        (good(content="Use the deploy key sk-abcdefghijklmnopqrstuvwxyz123 for releases"), "secret"),
        (good(reason="password = hunter2hunter2 is what broke it"), "secret"),
        (good(supersedes=["mem-9"]), "unknown_relation"),
        (good(conflicts_with=["mem-1", "invented"]), "unknown_relation"),
    ],
)
def test_each_rule_rejects_with_its_reason(entry: object, reason: str) -> None:
    accepted, rejected = check({"items": [good(), entry]})
    assert len(accepted) == 1
    assert rejected == [(1, reason)]


def test_the_boundaries_are_accepted() -> None:
    entry = good(content="c" * 20, reason="r" * 12, importance=0.70, confidence=0.75, tags=[f"t{n}" for n in range(8)])
    assert (
        len(check({"items": [entry, good(content="d" * 1200, reason="s" * 320, importance=1, confidence=1)]})[0]) == 2
    )


def test_more_than_max_items_are_rejected() -> None:
    entries = [good(content=f"Lesson number {n} about the release flow") for n in range(7)]
    accepted, rejected = check({"items": entries})
    assert len(accepted) == 5
    assert rejected == [(5, "too_many_items"), (6, "too_many_items")]


def test_the_prompt_shows_related_ids_and_keeps_tools_as_context() -> None:
    request = ExtractionRequest(
        prompt="ship the release",
        response="done " * 5000,
        workspace="/repo",
        session_id="s",
        tool_context=("bash: ./release.sh -> ok",),
        related=(RelatedMemory("mem-1", "releases need provider verification"),),
    )
    text = render_turn(request)
    assert "id=mem-1" in text and "context only" in text
    assert len(text) < 9000
    with pytest.raises(ValueError):
        ExtractionRequest("p", "r", "/w", "s", related=tuple(RelatedMemory(f"m{n}", "x") for n in range(6)))
    assert not ExtractionRequest(" ", "r", "/w", "s").worth_extracting


def test_the_lesson_extractor_reads_only_marked_response_lines() -> None:
    request = ExtractionRequest(
        "how do we release?",
        "Run the script.\nLesson: releases need PROVIDER_BASE_URL set first\nWorkflow: run ./release.sh then tag",
        "/repo",
        "s",
        tool_context=("Lesson: this tool output must never be copied",),
    )
    accepted, rejected = check(LessonExtractor().extract(request))
    assert rejected == []
    assert [(i.content, i.memory_type) for i in accepted] == [
        ("releases need PROVIDER_BASE_URL set first", "semantic"),
        ("run ./release.sh then tag", "procedural"),
    ]


def test_a_redacted_turn_hides_credentials_and_its_digest_pins_the_turn() -> None:
    from gitmem.session.extraction import validate_for

    raw = ExtractionRequest(
        prompt="keep this. api_key=abcdef123456",
        response="done",
        workspace="/w",
        session_id="s 1",
        tool_context=("curl -H 'Authorization' sk-team-prod-1234567890",),
    )
    turn = raw.redacted()
    assert "abcdef123456" not in turn.prompt and "1234567890" not in turn.tool_context[0]
    assert "[redacted sensitive value]" in render_turn(turn)
    assert turn.evidence_digest() != raw.evidence_digest()
    assert turn.evidence_digest() == turn.redacted().evidence_digest()  # redacting twice changes nothing
    other = ExtractionRequest(prompt=turn.prompt, response="done!", workspace="/w", session_id="s 1")
    assert other.evidence_digest() != turn.evidence_digest()
    (item,) = validate_for(turn, {"items": [good()]}).accepted
    assert item.metadata["turn_digest"] == turn.evidence_digest()

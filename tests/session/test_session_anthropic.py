"""The Claude extractor over a mocked HTTP transport: the request it sends, the answers it returns."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2 as httpx
import pytest

from gitmem.adapters.anthropic_extractor import TOOL_NAME, AnthropicExtractor
from gitmem.session.extraction import ExtractionRequest, RelatedMemory, validate_for

REQUEST = ExtractionRequest(
    prompt="run the release",
    response="It failed until PROVIDER_BASE_URL was set.",
    workspace="/repo",
    session_id="s-1",
    tool_context=("bash: ./release.sh -> error: missing PROVIDER_BASE_URL",),
    related=(RelatedMemory("mem-1", "releases run from main"),),
)


def message(content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def client(reply: Callable[[dict[str, Any]], httpx.Response], seen: list[dict[str, Any]]) -> anthropic.Anthropic:
    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append({"url": str(request.url), "body": body})
        return reply(body)

    http = httpx.Client(transport=httpx.MockTransport(handler))
    return anthropic.Anthropic(api_key="test-key", base_url="http://anthropic.test", http_client=http, max_retries=0)


ITEM = {
    "content": "Releases need PROVIDER_BASE_URL set before verification",
    "memory_type": "procedural",
    "source": "failure",
    "scope": "workspace",
    "reason": "the next release fails the same way without it",
    "tags": ["release"],
    "importance": 0.9,
    "confidence": 0.9,
    "supersedes": ["mem-1"],
}


def test_a_forced_tool_call_carries_the_answer() -> None:
    seen: list[dict[str, Any]] = []
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": TOOL_NAME, "input": {"items": [ITEM]}}
    extractor = AnthropicExtractor(client(lambda body: httpx.Response(200, json=message([tool_use])), seen), model="m")
    answer = extractor.extract(REQUEST)
    assert answer == {"items": [ITEM]}
    result = validate_for(REQUEST, answer)
    assert len(result.accepted) == 1 and result.accepted[0].supersedes == ("mem-1",)
    (call,) = seen
    assert call["url"].endswith("/v1/messages")
    body = call["body"]
    assert body["model"] == "m"
    assert body["tool_choice"] == {"type": "tool", "name": TOOL_NAME}
    assert body["tools"][0]["input_schema"]["required"] == ["items"]
    user = body["messages"][0]["content"]
    assert "id=mem-1" in user and "context only" in user and "run the release" in user
    assert "empty items list" in body["system"]


def test_a_reply_without_the_tool_call_is_rejected_as_malformed() -> None:
    seen: list[dict[str, Any]] = []
    text = {"type": "text", "text": "Nothing worth remembering here."}
    extractor = AnthropicExtractor(client(lambda body: httpx.Response(200, json=message([text])), seen))
    answer = extractor.extract(REQUEST)
    assert answer == "Nothing worth remembering here."
    assert [r.reason for r in validate_for(REQUEST, answer).rejected] == ["malformed_output"]


def test_an_invented_relation_from_the_model_is_refused() -> None:
    seen: list[dict[str, Any]] = []
    bad = {**ITEM, "supersedes": ["mem-invented"]}
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": TOOL_NAME, "input": {"items": [bad]}}
    extractor = AnthropicExtractor(client(lambda body: httpx.Response(200, json=message([tool_use])), seen))
    assert [r.reason for r in validate_for(REQUEST, extractor.extract(REQUEST)).rejected] == ["unknown_relation"]


def test_an_api_error_surfaces_as_the_sdk_error() -> None:
    seen: list[dict[str, Any]] = []
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    extractor = AnthropicExtractor(client(lambda body: httpx.Response(529, json=error), seen))
    with pytest.raises(anthropic.APIStatusError):
        extractor.extract(REQUEST)

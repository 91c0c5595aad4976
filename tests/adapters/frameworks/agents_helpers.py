"""The helpers of the Agents SDK's tests/test_responses.py the copied session tests use."""

from __future__ import annotations

from typing import Any

from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText


def get_text_message(content: str) -> ResponseOutputMessage:
    """A completed assistant message holding ``content``: what a scripted model answers."""
    return ResponseOutputMessage(
        id="1",
        type="message",
        role="assistant",
        content=[ResponseOutputText(text=content, type="output_text", annotations=[], logprobs=[])],
        status="completed",
    )


def get_function_tool_call(
    name: str, arguments: str | None = None, call_id: str | None = None, *, namespace: str | None = None
) -> ResponseFunctionToolCall:
    """A model's call of tool ``name`` (the SDK tests' helper of the same name)."""
    kwargs: dict[str, Any] = {
        "id": "1",
        "call_id": call_id or "2",
        "type": "function_call",
        "name": name,
        "arguments": arguments or "",
    }
    if namespace is not None:
        kwargs["namespace"] = namespace
    return ResponseFunctionToolCall(**kwargs)

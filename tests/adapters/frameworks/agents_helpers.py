"""The one helper of the Agents SDK's tests/test_responses.py the copied session tests use."""

from __future__ import annotations

from openai.types.responses import ResponseOutputMessage, ResponseOutputText


def get_text_message(content: str) -> ResponseOutputMessage:
    """A completed assistant message holding ``content``: what a scripted model answers."""
    return ResponseOutputMessage(
        id="1",
        type="message",
        role="assistant",
        content=[ResponseOutputText(text=content, type="output_text", annotations=[], logprobs=[])],
        status="completed",
    )

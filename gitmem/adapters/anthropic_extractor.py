"""Session-memory extraction on Claude through the ``anthropic`` SDK.

:class:`AnthropicExtractor` is a :class:`gitmem.session.extraction.Extractor`: it
sends one finished turn (related memories, prompt, response, tool calls marked as
context only) and forces a single ``record_memories`` tool call whose input schema
is the extraction answer, so the reply is structured data, not prose to parse.
The answer is returned as-is: session memory validates it (every rule, each
refusal reported), so nothing the model says is trusted on its word. A reply
without that tool call comes back as its text, which validation then rejects as
malformed output.
"""

from __future__ import annotations

from typing import Any, Final

import anthropic

from gitmem.session.extraction import ANSWER_SCHEMA, INSTRUCTIONS, ExtractionRequest, render_turn

TOOL_NAME: Final = "record_memories"
DEFAULT_MODEL: Final = "claude-haiku-5-5"  # a small model suffices for a yes/no-plus-fields judgment


class AnthropicExtractor:
    """Extraction by one Claude model, through a forced tool call."""

    def __init__(
        self,
        client: anthropic.Anthropic | None = None,
        *,
        model: str = DEFAULT_MODEL,
        max_tokens: int = 2048,
        timeout: float = 60.0,
    ) -> None:
        self.client = client if client is not None else anthropic.Anthropic()
        self.model = model
        self.max_tokens = max_tokens
        self.timeout = timeout

    def extract(self, request: ExtractionRequest) -> object:
        message = self.client.messages.create(
            model=self.model,
            max_tokens=self.max_tokens,
            system=INSTRUCTIONS,
            messages=[{"role": "user", "content": render_turn(request)}],
            tools=[
                {
                    "name": TOOL_NAME,
                    "description": "Record the memories worth keeping from this turn (an empty list when none).",
                    "input_schema": ANSWER_SCHEMA,
                }
            ],
            tool_choice={"type": "tool", "name": TOOL_NAME},
            timeout=self.timeout,
        )
        texts: list[str] = []
        for block in message.content:
            if block.type == "tool_use" and block.name == TOOL_NAME:
                answer: Any = block.input
                return answer
            if block.type == "text":
                texts.append(block.text)
        return "".join(texts)

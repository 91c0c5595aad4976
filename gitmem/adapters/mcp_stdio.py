"""Every request line the MCP stdio transport refuses gets an answer, never silence.

The SDK's stdio transport parses each line strictly (pydantic: no lone surrogate,
nesting bounded) and hands what it refuses to the server as an exception, which
the server drops. A client then waits its whole timeout for a request whose
arguments held half an emoji (JavaScript's ``JSON.stringify`` writes
``"\\ud83d"`` for a truncated pair) or nested deeply. :class:`AnsweringReadStream`
sits between the transport and the server and answers such a line as JSON-RPC
asks: a request whose id can still be read gets ``Invalid Request`` under that id,
a line that is no JSON at all ``Parse error`` with a null id. Notifications,
replies and blank lines get nothing (nothing waits for an answer to them).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Self

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from gitmem.errors import MemoryStoreError
from gitmem.localfile import parse_json
from gitmem.tools.registry import shorten

__all__ = ["AnsweringReadStream", "refusal"]

#: How deep a refused line is read to find its id (past it: answered as no JSON; Python's parser stops near 1,000).
LINE_DEPTH = 900


def _details(error: Exception) -> list[dict[str, Any]]:
    """What pydantic's ``ValidationError`` (the transport's refusal, duck-typed) says; ``[]`` for anything else."""
    errors = getattr(error, "errors", None)
    if type(error).__name__ != "ValidationError" or not callable(errors):
        return []
    found = errors()
    return [d for d in found if isinstance(d, dict)] if isinstance(found, list) else []


def refusal(error: Exception) -> types.JSONRPCError | None:
    """The answer to a line the transport refused with ``error``; ``None`` when nothing waits for one."""
    details = _details(error)
    # What the transport was given: the line it could not read as JSON, or the object it could not take.
    line = next((d.get("input") for d in details if d.get("type") == "json_invalid"), None)
    given = (
        line if isinstance(line, str) else next((d["input"] for d in details if isinstance(d.get("input"), dict)), None)
    )
    if isinstance(given, str):
        if not given.strip():  # a blank line between messages (CRLF plus newline, or ends doubled): none sent
            return None
        try:
            given = parse_json(given, depth=LINE_DEPTH, what="the request")
        except MemoryStoreError:  # not JSON even to a lenient reader: nobody's id to answer
            return types.JSONRPCError(
                jsonrpc="2.0", id=None, error=types.ErrorData(code=types.PARSE_ERROR, message="Parse error")
            )
    if not isinstance(given, dict) or "method" not in given or "id" not in given:
        return None  # a notification or a reply: nothing waits for an answer
    request_id = given["id"]
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    why = "; ".join(list(dict.fromkeys(str(d.get("msg", "")) for d in details))[:3])
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=types.ErrorData(code=types.INVALID_REQUEST, message=shorten(f"Invalid Request: {why}")),
    )


class AnsweringReadStream:
    """The transport's read stream, answering each line it refused (see the module docstring) instead of passing it on."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item: SessionMessage | Exception = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            answer = refusal(item)
            if answer is None:
                return item
            await self._write.send(SessionMessage(answer))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None

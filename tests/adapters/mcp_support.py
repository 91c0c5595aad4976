"""A real MCP client session to a ``gitmem mcp`` subprocess, usable from plain (sync) tests.

The session lives on its own event loop in a background thread, so one server
process can serve every test of a module: a test hands a coroutine to
:meth:`McpClient.run` and gets its result, each wait bounded by ``TIMEOUT``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

T = TypeVar("T")
TIMEOUT = 60.0


def server_args(root: Path, *args: str) -> list[str]:
    return ["-m", "gitmem.adapters.cli", "mcp", "--root", str(root), *args]


class McpClient:
    """``gitmem mcp`` started with ``args``; ``errlog`` collects its stderr."""

    def __init__(self, root: Path, *args: str, errlog: Path) -> None:
        self.params = StdioServerParameters(command=sys.executable, args=server_args(root, *args))
        self.errlog = errlog
        self.session: ClientSession | None = None
        self.init: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready: Future[None] = Future()
        self._thread = threading.Thread(target=self._main, name="mcp-client", daemon=True)

    def __enter__(self) -> McpClient:
        self._thread.start()
        self._ready.result(timeout=TIMEOUT)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=TIMEOUT)
        assert not self._thread.is_alive(), "the MCP client did not shut down"

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        with self.errlog.open("w", encoding="utf-8") as errors:
            async with stdio_client(self.params, errlog=errors) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=TIMEOUT) as session:
                    self.init = await session.initialize()
                    self.session = session
                    self._ready.set_result(None)
                    await self._stop.wait()

    def run(self, work: Callable[[ClientSession], Coroutine[Any, Any, T]]) -> T:
        """Run ``work(session)`` on the client's loop and wait for its result."""
        assert self._loop is not None and self.session is not None
        session = self.session
        return asyncio.run_coroutine_threadsafe(work(session), self._loop).result(timeout=TIMEOUT)

    def submit(self, work: Callable[[ClientSession], Awaitable[T]]) -> Future[T]:
        """Start ``work(session)`` without waiting (for concurrent calls from two clients)."""
        assert self._loop is not None and self.session is not None
        session = self.session

        async def wrapped() -> T:
            return await work(session)

        return asyncio.run_coroutine_threadsafe(wrapped(), self._loop)

    def call(self, tool: str, **arguments: Any) -> tuple[bool, dict[str, Any]]:
        """One tool call: whether it failed, and its JSON payload (checked against the text content)."""
        result = self.run(lambda s: s.call_tool(f"memory_file_{tool}", arguments))
        return result.is_error, payload(result)


def payload(result: CallToolResult) -> dict[str, Any]:
    """The JSON a tool answered; the text content and the structured content must agree."""
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    data = json.loads(result.content[0].text)
    assert data == result.structured_content
    assert isinstance(data, dict)
    return data

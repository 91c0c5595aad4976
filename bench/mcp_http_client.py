"""A real ``mcp`` SDK client over streamable HTTP, for the load bench (bench_serve.py) and tests/serve.

Each client keeps one session open on its own event loop in a background
thread; :meth:`HttpMcpClient.call` runs one tool call and waits for its result
(bounded by ``TIMEOUT``). Opening a client returns once the server has taken its
whole handshake.
"""

from __future__ import annotations

import asyncio
import json
import queue
import threading
import time
import warnings
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import CallToolResult, TextContent
from mcp_types import ResourceUpdatedNotification

T = TypeVar("T")
TIMEOUT = 60.0


class HttpMcpClient:
    """One MCP session to ``url`` with ``Authorization: Bearer <token>``.

    ``updates`` receives ``(uri, time.perf_counter())`` for each resource-updated
    notification the server sends (on the GET event stream the client opens).
    """

    def __init__(self, url: str, token: str, headers: dict[str, str] | None = None) -> None:
        self.url = url
        self.token = token
        self.headers = headers or {}
        self.updates: queue.Queue[tuple[str, float]] = queue.Queue()
        self.session: ClientSession | None = None
        self.init: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready: Future[None] = Future()
        self._thread = threading.Thread(target=self._main, name="mcp-http-client", daemon=True)

    def __enter__(self) -> HttpMcpClient:
        self._thread.start()
        self._ready.result(timeout=TIMEOUT)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            try:
                self._loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:  # the loop has ended already: the session failed on its own (its error is raised)
                pass
        self._thread.join(timeout=TIMEOUT)
        assert not self._thread.is_alive(), "the MCP client did not shut down"

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:
            if not self._ready.done():
                while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
                    exc = exc.exceptions[0]  # the task groups' wrapping: the cause is what the opener is told
                self._ready.set_exception(exc)
            else:
                raise

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {self.token}", **self.headers})

        async def on_message(message: Any) -> None:
            if isinstance(message, ResourceUpdatedNotification):
                self.updates.put((str(message.params.uri), time.perf_counter()))

        async with http, streamable_http_client(self.url, http_client=http) as streams:
            async with ClientSession(
                streams[0], streams[1], read_timeout_seconds=TIMEOUT, message_handler=on_message
            ) as session:
                self.init = await session.initialize()
                # The SDK's initialize() returns once the handshake's ``initialized`` notification
                # is handed to its transport, which POSTs it afterwards; a POST that fails on the
                # wire (its server process died with it in flight) ends the whole transport, found
                # only at the client's first call. The transport takes one message at a time, so a
                # ping answered means the server took the whole handshake: a client that opens has
                # an open session, and one that cannot says so here.
                await session.send_ping()
                self.session = session
                self._ready.set_result(None)
                await self._stop.wait()

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(timeout=TIMEOUT)

    def submit(self, work: Coroutine[Any, Any, T]) -> Future[T]:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(work, self._loop)

    def call(self, tool: str, **arguments: Any) -> CallToolResult:
        assert self.session is not None
        return self.run(self.session.call_tool(tool, arguments))

    def subscribe(self, uri: str) -> None:
        assert self.session is not None
        with warnings.catch_warnings():  # the handshake era's subscribe, which gitmem serve answers
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            self.run(self.session.subscribe_resource(uri))

    def tool_names(self) -> list[str]:
        assert self.session is not None
        return [t.name for t in self.run(self.session.list_tools()).tools]

    def memories(self) -> list[str]:
        """The memories the view tool offers (its ``memory`` enum)."""
        assert self.session is not None
        for tool in self.run(self.session.list_tools()).tools:
            if tool.name == "memory_file_view":
                return list(tool.input_schema["properties"]["memory"]["enum"])
        return []


def payload(result: CallToolResult) -> dict[str, Any]:
    block = result.content[0]
    assert isinstance(block, TextContent)
    data: dict[str, Any] = json.loads(block.text)
    return data

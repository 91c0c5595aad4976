"""What ``gitmem mcp`` and ``/mcp`` declare is what they do, in every protocol era and on both transports.

gitmem never sends a list-changed notification (its tools, prompts and resources
are fixed for a server's life), so ``listChanged`` is false everywhere: in a
handshake-era ``initialize`` and in a 2026-era ``server/discover``, over stdio,
over HTTP and in process. ``resources.subscribe`` is true exactly where resource
updates are sent: a watching stdio server, never HTTP (no event streams).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import ServerCapabilities

from adapters.mcp_support import server_args
from gitmem import Root
from gitmem.adapters.mcp_server import MemoryMcpServer
from gitmem.tools import FileMemoryCapability, FileMount

MODES = ("legacy", "auto")  # the initialize handshake; 2026-era discovery (auto picks it when offered)


def assert_truthful(caps: ServerCapabilities, *, subscribe: bool) -> None:
    assert caps.tools is not None and caps.tools.list_changed is False
    assert caps.prompts is not None and caps.prompts.list_changed is False
    assert caps.resources is not None and caps.resources.list_changed is False
    assert bool(caps.resources.subscribe) is subscribe


async def capabilities(transport: Any, mode: str) -> tuple[str, ServerCapabilities]:
    async with Client(transport, mode=mode) as client:  # type: ignore[arg-type]
        await client.list_tools()
        return client.protocol_version, client.server_capabilities


@pytest.fixture
def root(tmp_path: Path) -> Root:
    root = Root(tmp_path / "root")
    root.mount("user", create=True).sync.write("a.md", "a\n", expected=None)
    return root


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("watching", [True, False])
def test_in_process_every_era_declares_no_list_changes(root: Root, mode: str, watching: bool) -> None:
    server = MemoryMcpServer(
        FileMemoryCapability([FileMount("user", root.mount("user").sync, "write")]),
        watch_root=root if watching else None,
    )
    version, caps = asyncio.run(capabilities(server.server, mode))
    assert (version == "2026-07-28") is (mode == "auto")
    assert_truthful(caps, subscribe=watching)


@pytest.mark.parametrize("mode", MODES)
def test_over_stdio_every_era_declares_no_list_changes(root: Root, mode: str) -> None:
    params = StdioServerParameters(command=sys.executable, args=server_args(root.path, "--mount", "user"))
    version, caps = asyncio.run(capabilities(stdio_client(params), mode))
    assert (version == "2026-07-28") is (mode == "auto")
    assert_truthful(caps, subscribe=True)  # gitmem mcp watches its memories and tells subscribers

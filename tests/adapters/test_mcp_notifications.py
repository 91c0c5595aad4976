"""``gitmem mcp`` tells a subscribed client when a memory changes, whoever changed it.

A real ``ClientSession`` talks to a ``gitmem mcp`` subprocess over stdio and
collects ``notifications/resources/updated`` in its message handler. The memory is
then changed from outside the server: a store write from this test process, and a
commit made with plain ``git commit-tree`` + ``git update-ref``. Each wait is
bounded only as a guard against a hang.

Mount names matter: the watcher reports one round's mounts in name order, so a
change of ``work`` (subscribed, the probe) is delivered after any change of ``user``
made before it. Seeing the probe's notification without one for ``user`` shows that
``user`` was not reported.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.session import IncomingMessage
from mcp.client.subscriptions import ResourceUpdated, listen
from mcp.shared.exceptions import MCPError
from mcp.types import ResourceUpdatedNotification

from adapters.mcp_support import TIMEOUT, server_args
from gitmem import Root
from gitmem.adapters.mcp_server import context_uri

USER = context_uri("user")
WORK = context_uri("work")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    r = Root(path)
    r.mount("user", create=True).sync.write("README.md", "Alice.\n", expected=None)
    r.mount("work", create=True).sync.write("plan.md", "Ship it.\n", expected=None)
    return path


class Client:
    """A session plus the URIs of the ``resources/updated`` notifications it received, in order."""

    def __init__(self, session: ClientSession, updates: MemoryObjectReceiveStream[str], faults: list[Exception]):
        self.session = session
        self.updates = updates
        self.faults = faults

    async def next_update(self) -> str:
        with anyio.fail_after(TIMEOUT):
            return await self.updates.receive()


@asynccontextmanager
async def connect(root: Path, *args: str, handshake: bool = True) -> AsyncIterator[Client]:
    """``gitmem mcp --mount user --mount work ARGS``; its stderr must stay free of tracebacks."""
    send, receive = anyio.create_memory_object_stream[str](100)
    faults: list[Exception] = []

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, Exception):
            faults.append(message)
        elif isinstance(message, ResourceUpdatedNotification):
            send.send_nowait(str(message.params.uri))

    params = StdioServerParameters(
        command=sys.executable, args=server_args(root, "--mount", "user", "--mount", "work", *args)
    )
    errlog = root.parent / "server.stderr"
    with send, receive, errlog.open("w", encoding="utf-8") as errors:
        async with stdio_client(params, errlog=errors) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=TIMEOUT, message_handler=on_message) as session:
                if handshake:
                    init = await session.initialize()
                    assert init.capabilities.resources is not None
                    assert init.capabilities.resources.subscribe is ("--no-watch" not in args)
                else:
                    await session.discover()
                yield Client(session, receive, faults)
    stderr = errlog.read_text(encoding="utf-8")
    assert "Traceback" not in stderr, stderr
    assert not faults


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def commit_by_hand(repo: Path, message: str) -> None:
    """A commit on ``main`` made by plain git, as a script or another tool would, behind the store's back."""
    head = git(repo, "rev-parse", "refs/heads/main")
    new = git(repo, "commit-tree", f"{head}^{{tree}}", "-p", head, "-m", message)
    git(repo, "update-ref", "refs/heads/main", new, head)


def store_write(root: Path, memory: str, path: str) -> None:
    Root(root).mount(memory).sync.write(path, f"{path}\n", expected=None)


# resources/subscribe is how handshake-era clients (most of them today) subscribe; the SDK deprecates it.
legacy = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


@legacy
def test_a_subscribed_client_is_told_of_store_writes_and_plain_git_commits(root: Path) -> None:
    async def scenario() -> None:
        async with connect(root) as client:
            with pytest.raises(MCPError, match="unknown resource"):
                await client.session.subscribe_resource("memory://nobody/context")
            await client.session.subscribe_resource(USER)

            await anyio.to_thread.run_sync(store_write, root, "user", "notes/one.md")
            assert await client.next_update() == USER

            await anyio.to_thread.run_sync(commit_by_hand, root / "user.git", "by hand")
            assert await client.next_update() == USER

            # Only subscribed resources are reported: work's change comes after user's.
            await anyio.to_thread.run_sync(store_write, root, "work", "notes/ignored.md")
            await client.session.subscribe_resource(WORK)
            await anyio.to_thread.run_sync(store_write, root, "work", "notes/two.md")
            assert await client.next_update() == WORK

            # After unsubscribing, user's changes are no longer reported.
            await client.session.unsubscribe_resource(USER)
            await anyio.to_thread.run_sync(store_write, root, "user", "notes/unheard.md")
            await anyio.to_thread.run_sync(commit_by_hand, root / "work.git", "probe")
            assert await client.next_update() == WORK

    asyncio.run(scenario())
    for name in ("user", "work"):
        git(root / f"{name}.git", "fsck", "--strict")


def test_a_2026_era_client_listening_for_a_resource_gets_its_updates(root: Path) -> None:
    async def scenario() -> None:
        async with connect(root, handshake=False) as client:
            async with listen(client.session, resource_subscriptions=[USER]) as events:
                await anyio.to_thread.run_sync(store_write, root, "work", "unwatched.md")
                await anyio.to_thread.run_sync(commit_by_hand, root / "user.git", "by hand")
                with anyio.fail_after(TIMEOUT):
                    event = await anext(aiter(events))
                assert event == ResourceUpdated(uri=USER)

    asyncio.run(scenario())


@legacy
def test_no_watch_offers_no_subscriptions(root: Path) -> None:
    async def scenario() -> None:
        async with connect(root, "--no-watch") as client:
            with pytest.raises(MCPError):
                await client.session.subscribe_resource(USER)

    asyncio.run(scenario())

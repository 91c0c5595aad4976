"""A backend for Anthropic's memory tool (``memory_20250818``) that keeps ``/memories`` in a gitmem mount.

Claude's memory tool sends file commands (``view``, ``create``, ``str_replace``,
``insert``, ``delete``, ``rename``) on paths under ``/memories``; the ``anthropic``
SDK runs them through a subclass of its abstract memory tool. :class:`GitMemoryTool`
(and :class:`AsyncGitMemoryTool` for the async runner) is that subclass over one
mount, so each command is a commit that people can review, diff, blame and revert:

- every change is one compare-and-swap commit recording the tool-use id as its tool
  call (``Gitmem-Tool-Call``), plus the run and principal given to the tool. Edits
  read the file, check the command against it and write expecting what they read;
  when another writer got in first they start over from a fresh read
  (:func:`gitmem.tools.ops.cas_update`), so concurrent edits of different lines all
  land and an edit whose text is gone fails instead of overwriting. A ``create``
  reads nothing first: it writes expecting no file, which the store refuses under
  its writer lock when one is there; a ``rename`` reads the source once and the
  store checks that the destination is free. A ``delete``
  that loses such a race is not retried: it reports the conflict and the newer text
  stays. A command on a folder (``delete``, ``rename``, clearing all memory) is one
  commit for every file under it when the store is a
  :class:`~gitmem.store.BatchFileStore` (both gitmem stores are): it expects the
  versions it listed, and if any file changed meanwhile nothing is moved or
  deleted. Over other stores it is one commit per file, each checked the same way.
- both tools run the commands on the sync store seam; the async tool hands each
  command to a worker thread (:func:`gitmem.aio.call`).
- an origin with a run id works through ``store.for_run(run_id)``, so under the
  review gate (:mod:`gitmem.review`) the tool reads back the run's own proposal,
  where its writes land, rather than ``main``.
- a path is translated before anything is read or written, and refused unless it
  names ``/memories`` or something under it: ``..`` and ``.`` segments, percent
  escapes, backslashes, NUL and control characters, ``~`` segments, paths that only
  share the prefix (``/memories_backup/x``) and absolute paths elsewhere all get a
  :class:`~anthropic.lib.tools.ToolError` and no write. Git paths cannot point outside
  the repository anyway; refusing early gives the model a clear message.
- every input is checked against its command's schema before the command runs
  (:func:`gitmem.tools.schemas.check_memory_command`): the SDK builds its command
  objects unchecked, so a wrong type, a missing argument or an unknown command is
  a :class:`~anthropic.lib.tools.ToolError` here and reaches no store.
- results read like the SDK's own local-filesystem memory tool (the same listing,
  line-numbered views and messages), so prompts tuned for it keep working.

The SDK's runner calls a tool with the tool-use block's input only. To record the
tool-use id, either hand each assistant message to :meth:`GitMemoryTool.expect` before
the runner executes its tool calls (the example does this in its ``for message in
runner`` loop; with ``stream=True`` pass ``stream.get_final_message()``), run blocks
yourself with :meth:`~GitMemoryTool.run_tool_use`, or wrap calls in
``with tool.tool_use("toolu_…"):``. A call the tool cannot match (``run_tools_eagerly``
runs calls before the message is complete) is committed without a tool call id.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any

from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
from anthropic.types.beta import (
    BetaCacheControlEphemeralParam,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
    BetaToolResultBlockParam,
    BetaToolUseBlock,
)

from gitmem import aio
from gitmem.adapters.anthropic_commands import ROOT, MemoryCommands, store_path
from gitmem.aio import AsyncFace, seam_of
from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat
from gitmem.model import Origin
from gitmem.store import FileStore, RunScopedStore
from gitmem.tools.registry import bound_echoes
from gitmem.tools.schemas import check_memory_command

__all__ = ["ROOT", "AsyncGitMemoryTool", "GitMemoryTool", "store_path"]

_TOOL_USE: ContextVar[str | None] = ContextVar("gitmem_memory_tool_use", default=None)


# --- tool-use ids ----------------------------------------------------------------------


class ToolUseIds:
    """Which tool-use id the next call of tools ``names`` with a given input object belongs to.

    The runner passes ``block.input`` (the very object in the message) to the tool,
    so the message's blocks can be matched to the calls by identity.
    """

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)
        self._lock = threading.Lock()
        self._pending: dict[int, tuple[object, str]] = {}

    def expect(self, message: object) -> int:
        """Note the tool-use blocks of an assistant message (or a list of blocks) for these tools; how many."""
        blocks = getattr(message, "content", message)
        if not isinstance(blocks, Iterable):
            raise TypeError("expect() takes an assistant message or its content blocks")
        pending: dict[int, tuple[object, str]] = {}
        for block in blocks:
            # Duck-typed: parsed and streamed messages carry their own tool-use block classes.
            if getattr(block, "type", None) == "tool_use" and getattr(block, "name", None) in self.names:
                tool_input, tool_use_id = getattr(block, "input", None), getattr(block, "id", None)
                if isinstance(tool_use_id, str):
                    pending[id(tool_input)] = (tool_input, tool_use_id)
        with self._lock:
            self._pending = pending  # a new turn: calls of an older one will not run any more
        return len(pending)

    def claim(self, tool_input: object) -> str | None:
        with self._lock:
            found = self._pending.pop(id(tool_input), None)
        return found[1] if found is not None and found[0] is tool_input else None


class _Shared:
    """What the sync and async tools have in common: the mount, the origin, the id plumbing."""

    name: str

    def __init__(
        self,
        store: FileStore | AsyncFace[Any],
        *,
        origin: Origin | None = None,
        fmt: FileFormat | None = None,
        write_retries: int = 3,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)  # type: ignore[call-arg]  # the SDK's tool class, next in line
        self.origin = origin or Origin()
        seam = seam_of(store)
        if self.origin.run_id is not None and isinstance(seam, RunScopedStore):
            # Under the review gate a run's writes land on its proposal; it must read them there too.
            seam = seam.for_run(self.origin.run_id)
        self.store: FileStore = seam
        self.format = fmt if isinstance(fmt, FileFormat) else seam.format
        self.write_retries = write_retries
        self._ids = ToolUseIds((self.name,))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.store!r})"

    def expect(self, message: object) -> int:
        """Note the memory tool-use blocks of an assistant message (or a list of blocks) about to run.

        Returns how many there are. Their ids become the commits' tool call ids.
        """
        return self._ids.expect(message)

    @contextmanager
    def tool_use(self, tool_use_id: str | None) -> Iterator[None]:
        """Commands run in this block record ``tool_use_id`` as their tool call."""
        token = _TOOL_USE.set(tool_use_id)
        try:
            yield
        finally:
            _TOOL_USE.reset(token)

    def _origin(self) -> Origin:
        return self.origin.with_tool_call(_TOOL_USE.get())

    @staticmethod
    @contextmanager
    def _bounded(tool_input: object) -> Iterator[None]:
        """A refusal repeats at most a bounded part of the command's arguments, as every tool's does
        (:func:`~gitmem.tools.registry.bound_echoes`): a 1 MB ``old_str`` not found is not sent back whole."""
        try:
            yield
        except ToolError as exc:
            content = exc.content
            if isinstance(content, str):
                bounded = bound_echoes(content, tool_input)
                if bounded != content:
                    raise ToolError(bounded) from None
            raise

    @staticmethod
    def _checked(tool_input: object) -> dict[str, Any]:
        """The input checked against its command's schema before any command runs (the SDK does not check it)."""
        try:
            return check_memory_command(tool_input)
        except MemoryStoreError as exc:
            raise ToolError(f"Invalid command: {exc.message}") from None

    def _commands(self) -> MemoryCommands:
        return MemoryCommands(self.store, fmt=self.format, retries=self.write_retries, origin=self._origin())

    @staticmethod
    def _result(block: BetaToolUseBlock, outcome: str | ToolError) -> BetaToolResultBlockParam:
        if isinstance(outcome, ToolError):
            text = outcome.content if isinstance(outcome.content, str) else str(outcome)
            return {"type": "tool_result", "tool_use_id": block.id, "content": f"Error: {text}", "is_error": True}
        return {"type": "tool_result", "tool_use_id": block.id, "content": outcome}


# --- the tools -------------------------------------------------------------------------


class GitMemoryTool(_Shared, BetaAbstractMemoryTool):
    """The memory tool over one gitmem mount, for the SDK's (sync) tool runner.

    ``store`` is the mount (``Root(dir).mount("claude", create=True)``); ``origin``
    gives the run and principal recorded on every commit (its tool call is replaced
    by each command's tool-use id). ``write_retries`` bounds the re-reads after a
    concurrent change. Any :class:`~gitmem.store.FileStore` works; over a
    :class:`~gitmem.gitstore.GitFileStore` the commands run on its sync core directly.
    """

    def call(self, input: object) -> Any:
        tool_use_id = self._ids.claim(input)
        named = self.tool_use(tool_use_id) if tool_use_id is not None else nullcontext()
        with named, self._bounded(input):
            return super().call(self._checked(input))

    def run_tool_use(self, block: BetaToolUseBlock) -> BetaToolResultBlockParam:
        """Run one ``tool_use`` block and answer the ``tool_result`` block for it."""
        with self.tool_use(block.id):
            try:
                return self._result(block, str(self.call(block.input)))
            except ToolError as exc:
                return self._result(block, exc)

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return self._commands().view(command.path, command.view_range)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return self._commands().create(command.path, command.file_text)

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return self._commands().str_replace(command.path, command.old_str, command.new_str)

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return self._commands().insert(command.path, command.insert_line, command.insert_text)

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return self._commands().delete(command.path)

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return self._commands().rename(command.old_path, command.new_path)

    def clear_all_memory(self) -> str:
        """Delete every file, in one commit over the git store (history is kept; ``purge`` erases it)."""
        return self._commands().clear()


class AsyncGitMemoryTool(_Shared, BetaAsyncAbstractMemoryTool):
    """:class:`GitMemoryTool` for the SDK's async tool runner (the same commands, awaited)."""

    async def call(self, input: object) -> Any:
        tool_use_id = self._ids.claim(input)
        named = self.tool_use(tool_use_id) if tool_use_id is not None else nullcontext()
        with named, self._bounded(input):
            return await super().call(self._checked(input))

    async def run_tool_use(self, block: BetaToolUseBlock) -> BetaToolResultBlockParam:
        """Run one ``tool_use`` block and answer the ``tool_result`` block for it."""
        with self.tool_use(block.id):
            try:
                return self._result(block, str(await self.call(block.input)))
            except ToolError as exc:
                return self._result(block, exc)

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await aio.call(self._commands().view, command.path, command.view_range)

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await aio.call(self._commands().create, command.path, command.file_text)

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return await aio.call(self._commands().str_replace, command.path, command.old_str, command.new_str)

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return await aio.call(self._commands().insert, command.path, command.insert_line, command.insert_text)

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await aio.call(self._commands().delete, command.path)

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await aio.call(self._commands().rename, command.old_path, command.new_path)

    async def clear_all_memory(self) -> str:
        """Delete every file, in one commit over the git store (history is kept; ``purge`` erases it)."""
        return await aio.call(self._commands().clear)

"""gitmem's tool registry for the ``anthropic`` SDK's tool runner: history, restore and search beside the memory tool.

Claude's memory tool (:mod:`gitmem.adapters.anthropic_memory`) has six fixed
commands; what only a versioned memory offers (who changed a file and why, an
earlier version, a restore, ranked search), and the record, session and durable
tools, reach a model through ordinary tools. :func:`registry_tools` turns every
tool of a :class:`~gitmem.tools.registry.ToolRegistry` into a tool the SDK's
runner can call, with the registry's own name, description and schema, so the
runner, the MCP server and ``gitmem tools`` show the same list::

    registry = FileMemoryCapability([FileMount("claude", store)], tools=("history", "show", "search")).registry
    tools = registry_tools(registry, origin=Origin(run_id="run-7"))
    runner = client.beta.messages.tool_runner(
        model=..., max_tokens=..., system=registry.instructions, tools=[GitMemoryTool(store), *tools], messages=...
    )
    for message in runner:
        tools.expect(message)   # the tool-use ids become the commits' tool calls

Each call goes through :meth:`ToolRegistry.call`, which checks the input against
the tool's schema before any memory sees it. A result is the registry's JSON as
text; a failure is the same JSON raised as a :class:`~anthropic.lib.tools.ToolError`,
so the runner marks the result ``is_error`` and the model reads ``current``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from anthropic.lib.tools import BetaAsyncBuiltinFunctionTool, BetaBuiltinFunctionTool, ToolError
from anthropic.types.beta import BetaToolParam

from gitmem import aio
from gitmem.adapters.anthropic_memory import ToolUseIds
from gitmem.model import Origin
from gitmem.tools.registry import Tool, ToolRegistry

__all__ = ["AsyncRegistryTool", "RegistryTool", "RegistryTools", "registry_tools"]


def _answer(payload: dict[str, Any]) -> str:
    text = json.dumps(payload, ensure_ascii=False)
    if "error" in payload:
        raise ToolError(text)
    return text


class _Shared:
    def __init__(self, registry: ToolRegistry, tool: Tool, origin: Origin, ids: ToolUseIds) -> None:
        self.registry, self.tool, self.origin, self._ids = registry, tool, origin, ids

    def to_dict(self) -> BetaToolParam:
        return {"name": self.tool.name, "description": self.tool.description, "input_schema": self.tool.input_schema}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.tool.name!r})"


class RegistryTool(_Shared, BetaBuiltinFunctionTool):
    """One registry tool for the SDK's (sync) tool runner."""

    def call(self, input: object) -> str:
        tool_use_id = self._ids.claim(input)
        return _answer(self.registry.call(self.tool.name, input, tool_call_id=tool_use_id, origin=self.origin))


class AsyncRegistryTool(_Shared, BetaAsyncBuiltinFunctionTool):
    """One registry tool for the SDK's async tool runner (the call runs in a worker thread)."""

    async def call(self, input: object) -> str:
        tool_use_id = self._ids.claim(input)
        payload = await aio.call(
            self.registry.call, self.tool.name, input, tool_call_id=tool_use_id, origin=self.origin
        )
        return _answer(payload)


class RegistryTools(list[Any]):
    """The tools of one registry for the runner (a list), with :meth:`expect` for their tool-use ids."""

    def __init__(self, tools: Iterable[Any], ids: ToolUseIds) -> None:
        super().__init__(tools)
        self._ids = ids

    def expect(self, message: object) -> int:
        """Note the tool-use blocks of an assistant message for these tools; returns how many."""
        return self._ids.expect(message)


def registry_tools(
    registry: ToolRegistry, *, origin: Origin | None = None, asynchronous: bool = False
) -> RegistryTools:
    """Every tool of ``registry`` as an SDK runner tool; ``origin`` names the run and principal of every change."""
    ids = ToolUseIds(t.name for t in registry)
    kind = AsyncRegistryTool if asynchronous else RegistryTool
    return RegistryTools((kind(registry, t, origin or Origin(), ids) for t in registry), ids)

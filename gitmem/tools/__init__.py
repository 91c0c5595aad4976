"""The framework-neutral file-memory capability: mounts, tools, cursors and context.

>>> memory = FileMemoryCapability([FileMount("user", store, "write", always_load=("README.md",))],
...                               cursors=MemoryCursors())               # doctest: +SKIP
>>> memory.call("memory_file_view", {"memory": "user"}, tool_call_id="call-1")  # doctest: +SKIP
"""

from gitmem.tools.capability import FileMemoryCapability, tool_from_name
from gitmem.tools.context import ContextBlock, MemoryContext, build_context
from gitmem.tools.cursors import MemoryCursors
from gitmem.tools.guide import DEFAULT_FILE_GUIDE
from gitmem.tools.mounts import TOOLS, FileMemoryLimits, FileMount
from gitmem.tools.ops import cas_update, failure_payload, file_payload
from gitmem.tools.registry import Tool, ToolRegistry

__all__ = [
    "DEFAULT_FILE_GUIDE",
    "TOOLS",
    "ContextBlock",
    "FileMemoryCapability",
    "FileMemoryLimits",
    "FileMount",
    "MemoryContext",
    "MemoryCursors",
    "Tool",
    "ToolRegistry",
    "build_context",
    "cas_update",
    "failure_payload",
    "file_payload",
    "tool_from_name",
]

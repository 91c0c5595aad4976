"""How a memory is offered to an agent: a named mount, its access, and the limits.

A :class:`FileMount` binds one store to the name the model uses for it. The model
never learns where the store lives; it only sees the name, the access and the
guide. ``always_load`` is chosen by the code that builds the mount, never by the
model, so a conversation cannot pin its own writes into every later context.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, get_args

from gitmem.aio import seam_of
from gitmem.fileformat import DEFAULT_FORMAT, FileFormat, validate_path
from gitmem.store import FileStore

Access = Literal["read", "write"]
ToolName = Literal["view", "grep", "search", "history", "show", "create", "edit", "append", "move", "delete", "restore"]

#: Every tool in the order the model sees them.
TOOLS: Final[tuple[ToolName, ...]] = get_args(ToolName)
#: The tools a ``read`` mount offers.
READ_TOOLS: Final[frozenset[str]] = frozenset({"view", "grep", "search", "history", "show"})
#: The tools only a store that keeps history offers (:class:`~gitmem.store.HistoryStore`).
HISTORY_TOOLS: Final[frozenset[str]] = frozenset({"history", "show", "restore"})
WRITE_TOOLS: Final[frozenset[str]] = frozenset(TOOLS) - READ_TOOLS

# The same rule as a root's mount names (gitmem.root). It also keeps the name safe to
# print inside the ``memory="…"`` attribute of a context block.
_MOUNT_NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")


@dataclass(frozen=True, slots=True)
class FileMemoryLimits:
    """Limits of the tools and of each run's memory context.

    ``format`` applies to what the tools write and view (a file over its size is
    shown cut and marked truncated). ``context_bytes`` bounds all memory context of
    a run in UTF-8 bytes, wrappers included; ``always_load_bytes`` bounds each
    memory's always-load files within it. ``write_retries`` is how many times a
    write re-reads and re-checks after another writer changed the file first.
    """

    format: FileFormat = DEFAULT_FORMAT
    context_bytes: int = 32_768
    always_load_bytes: int = 8_192
    write_retries: int = 3

    def __post_init__(self) -> None:
        if not isinstance(self.format, FileFormat):
            raise TypeError("format must be a FileFormat")
        for name in ("context_bytes", "always_load_bytes", "write_retries"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer")


@dataclass(frozen=True, slots=True)
class FileMount:
    """One memory as the model sees it: ``name``, ``access`` and an optional ``guide``.

    ``guide=None`` uses the default guide, ``""`` shows none. ``cursor_key`` names
    this mount's entry in :class:`~gitmem.tools.cursors.MemoryCursors` (the mount
    name by default).
    """

    name: str
    store: FileStore
    """The memory (any sync :class:`~gitmem.store.FileStore`; an async face such as
    :class:`~gitmem.gitstore.GitFileStore` is replaced by the store behind it)."""
    access: Access = "write"
    guide: str | None = None
    always_load: tuple[str, ...] = field(default=())
    cursor_key: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "store", seam_of(self.store))
        check_mount(self.name, self.access, self.guide)
        if isinstance(self.always_load, str):
            raise TypeError("always_load is a tuple of paths, not one string")
        paths = tuple(validate_path(p) for p in self.always_load)
        if len(set(paths)) != len(paths):
            raise ValueError("always_load names a path twice")
        object.__setattr__(self, "always_load", paths)
        if self.cursor_key is not None and (not isinstance(self.cursor_key, str) or not self.cursor_key):
            raise ValueError("cursor_key must be a non-empty string or None")

    @property
    def key(self) -> str:
        """The key of this mount's cursor."""
        return self.cursor_key or self.name

    def allows(self, tool: str) -> bool:
        return tool in READ_TOOLS or (self.access == "write" and tool in WRITE_TOOLS)


def check_mount(name: object, access: object, guide: object) -> None:
    """The rules every kind's mount keeps: its name, its access and its guide."""
    if not isinstance(name, str) or not _MOUNT_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a mount name: a lowercase letter, then up to 62 of a-z, 0-9 and '-'")
    if access not in ("read", "write"):
        raise ValueError(f"access must be 'read' or 'write', not {access!r}")
    if guide is not None and not isinstance(guide, str):
        raise TypeError("guide must be text or None")


def check_tool_names(tools: Iterable[str] | None, known: Sequence[str] = TOOLS, kind: str = "") -> frozenset[str]:
    """The set of tools a capability offers out of ``known``; ``None`` means all of them."""
    if tools is None:
        return frozenset(known)
    if isinstance(tools, str):
        raise TypeError("tools is a collection of tool names, not one string")
    chosen = frozenset(tools)
    unknown = sorted(chosen - set(known))
    if unknown:
        raise ValueError(f"unknown {kind}tools {unknown}; choose from {list(known)}")
    return chosen

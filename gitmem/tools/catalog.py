"""Every tool name of every memory kind, for checking a ``--tools`` list before anything is opened.

Light on purpose (no pydantic, no store): the CLI checks the names a person typed
against this table, then each kind narrows its own tools with the same names
(:func:`gitmem.tools.registry.chosen`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from gitmem.tools.registry import short_name

#: kind -> (tool name prefix, permission id prefix, short names), in the order a model sees them.
KINDS: Final[dict[str, tuple[str, str, tuple[str, ...]]]] = {
    "file": (
        "memory_file_",
        "memory.file.",
        ("view", "grep", "search", "history", "show", "create", "edit", "append", "move", "delete", "restore"),
    ),
    "record": ("memory_record_", "memory.record.", ("search", "list", "history", "add", "update", "delete")),
    "session": ("memory_session_", "memory.session.", ("remember", "recall", "recent", "tags", "prune")),
    "durable": ("durable_", "memory.durable.", ("recall", "propose", "log", "activate", "approve")),
}

#: The durable reviewer's tools: offered only by ``gitmem serve``, to ``admin`` tokens with a principal.
REVIEW: Final = frozenset({"activate", "approve"})


def kind_names(names: Iterable[str], kind: str) -> list[str]:
    """The short names of ``kind``'s tools that ``names`` picks (in any form)."""
    prefix, permission, known = KINDS[kind]
    return [s for n in names if (s := short_name(n, (prefix, permission), known)) is not None]


def unknown_tool_names(names: Sequence[str]) -> list[str]:
    """The names that are no kind's tool."""
    return [n for n in names if not any(kind_names([n], kind) for kind in KINDS)]


def reviewer_tool_names(names: Sequence[str]) -> list[str]:
    """The names that are the durable reviewer's tools, which a local server never offers."""
    return [n for n in names if set(kind_names([n], "durable")) & REVIEW]

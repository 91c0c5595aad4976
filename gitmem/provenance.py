"""Commit messages: a human summary line plus ``Gitmem-*`` trailers.

The message is the durable record of who changed what. It is written so plain git
can query it (``git log --format='%(trailers:key=Gitmem-Run,valueonly)'``) and
parsed back here for ``log`` filters and ``blame`` origins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

from gitmem.model import Origin

Op = Literal[
    "init", "create", "edit", "move", "delete", "restore", "revert", "purge", "forget", "merge", "apply", "unknown"
]
OPS: Final[frozenset[str]] = frozenset(
    {"init", "create", "edit", "move", "delete", "restore", "revert", "purge", "forget", "merge", "apply"}
)
#: An op a batch (``apply``) may name itself: a lowercase word such as ``record-put``.
OP_WORD: Final = re.compile(r"^[a-z][a-z0-9-]{0,39}$")

T_OP = "Gitmem-Op"
T_PATH = "Gitmem-Path"
T_FROM = "Gitmem-From"
T_RUN = "Gitmem-Run"
T_PRINCIPAL = "Gitmem-Principal"
T_TOOL_CALL = "Gitmem-Tool-Call"
T_REV = "Gitmem-Rev"
#: The trailers gitmem writes itself; a batch's extra trailers may not reuse them.
RESERVED_TRAILERS: Final[frozenset[str]] = frozenset(
    k.lower() for k in (T_OP, T_PATH, T_FROM, T_RUN, T_PRINCIPAL, T_TOOL_CALL, T_REV)
)

COMMITTER_NAME: Final = "gitmem"
COMMITTER_EMAIL: Final = "gitmem@localhost"


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """What a commit message says about a change."""

    op: str
    paths: tuple[str, ...]
    origin: Origin
    summary: str
    trailers: tuple[tuple[str, str], ...] = ()

    def trailer(self, key: str) -> str | None:
        for k, v in self.trailers:
            if k.lower() == key.lower():
                return v
        return None

    def moves(self) -> tuple[tuple[str, str], ...]:
        """``(source, destination)`` of each file a ``move`` commit moved; ``()`` for other ops."""
        if self.op != "move" or len(self.paths) % 2:
            return ()
        return tuple(zip(self.paths[0::2], self.paths[1::2], strict=True))


def summary_line(op: str, paths: tuple[str, ...], detail: str | None = None) -> str:
    if op == "move" and len(paths) == 2:
        return f"move {paths[0]} → {paths[1]}"
    if op == "move" and paths and len(paths) % 2 == 0:
        pairs = ", ".join(f"{a} → {b}" for a, b in zip(paths[0::2], paths[1::2], strict=True))
        line = f"move {len(paths) // 2} files: {pairs}"
        return line if len(line) <= 200 else line[:199] + "…"
    if op == "restore" and detail:
        return f"restore {paths[0]} to {detail}"
    target = ", ".join(paths) if paths else "memory"
    line = f"{op} {target}"
    if detail and op != "restore":
        line = f"{line} ({detail})"
    return line if len(line) <= 200 else line[:199] + "…"


def commit_message(
    op: str,
    paths: tuple[str, ...],
    origin: Origin,
    *,
    detail: str | None = None,
    extra: tuple[tuple[str, str], ...] = (),
    summary: str | None = None,
) -> str:
    """Build the message for one change: summary, blank line, trailers.

    For a move ``paths`` is ``(source, destination)``, or for several files moved in
    one commit ``(source1, destination1, source2, destination2, ...)``: each pair
    becomes a ``Gitmem-Path`` naming the destination followed by a ``Gitmem-From``
    naming its source, so ``git log -- <path>`` and the trailers agree on where
    each file is now, and the n-th ``From`` belongs to the n-th ``Path``.
    ``summary`` replaces the derived summary line (a batch may name its change).
    """
    lines = [f"{T_OP}: {op}"]
    if op == "move" and paths and len(paths) % 2 == 0:
        for source, destination in zip(paths[0::2], paths[1::2], strict=True):
            lines.append(f"{T_PATH}: {destination}")
            lines.append(f"{T_FROM}: {source}")
    else:
        lines.extend(f"{T_PATH}: {p}" for p in paths)
    if origin.run_id:
        lines.append(f"{T_RUN}: {origin.run_id}")
    if origin.principal_id:
        lines.append(f"{T_PRINCIPAL}: {origin.principal_id}")
    if origin.tool_call_id:
        lines.append(f"{T_TOOL_CALL}: {origin.tool_call_id}")
    lines.extend(f"{k}: {v}" for k, v in extra)
    return (summary or summary_line(op, paths, detail)) + "\n\n" + "\n".join(lines) + "\n"


def parse_message(message: str) -> CommitInfo:
    """Read a commit message back; commits made by plain git parse as op ``unknown``."""
    summary = message.split("\n", 1)[0].strip()
    blocks = message.rstrip("\n").split("\n\n")
    trailers: list[tuple[str, str]] = []
    if len(blocks) > 1:
        for line in blocks[-1].split("\n"):
            key, sep, value = line.partition(": ")
            if not sep or not key or " " in key:
                trailers = []
                break
            trailers.append((key, value.strip()))
    found = dict((k.lower(), v) for k, v in trailers)
    op = found.get(T_OP.lower(), "unknown")
    if op not in OPS and not OP_WORD.fullmatch(op):
        op = "unknown"
    paths = [v for k, v in trailers if k.lower() == T_PATH.lower()]
    sources = [v for k, v in trailers if k.lower() == T_FROM.lower()]
    if op == "move" and sources and len(sources) == len(paths):
        # Paired in order: the n-th From is where the n-th Path came from.
        paths = [p for pair in zip(sources, paths, strict=True) for p in pair]
    elif op == "move" and sources and paths:
        paths = [sources[0], paths[0]]
    origin = Origin(found.get(T_RUN.lower()), found.get(T_PRINCIPAL.lower()), found.get(T_TOOL_CALL.lower()))
    return CommitInfo(op=op, paths=tuple(paths), origin=origin, summary=summary, trailers=tuple(trailers))

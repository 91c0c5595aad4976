"""The byte budget of a run's memory context, as pure functions.

All sizes are UTF-8 bytes of the JSON pieces exactly as they will be printed
(escaping included), so the sum of what is planned bounds what is sent. Every
array element is counted as its bytes plus one for a comma; the last element has
no comma, so the real text is never larger than planned.

The order of the budget: each block's fixed wrapper; then the always-load files,
whole, mount by mount, each memory within its own allowance (a file that does not
fit is replaced by a pointer to ``memory_file_view``); then indexes and change
lists split what is left evenly, a share one of them does not use being handed on
to the others (:func:`water_fill`). A change list over its share is sent as full
context instead; an index over its share collapses its deepest folders first and
is then cut with a pointer (:func:`fit_index`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from json.encoder import encode_basestring
from typing import Any


def _tags_off(text: str) -> str:
    if "<" in text or ">" in text or "&" in text:
        return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return text


def escape_json(value: Any) -> str:
    """Compact JSON in which ``<``, ``>`` and ``&`` cannot close or open a tag.

    The characters only ever occur inside JSON strings, so replacing them by their
    ``\\u`` escapes keeps the JSON equal while no tag can appear in the text.
    """
    if isinstance(value, str):  # the common case, ten thousand times per index
        return _tags_off(encode_basestring(value))
    return _tags_off(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def nbytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def water_fill(needs: Sequence[int], total: int) -> list[int]:
    """Split ``total`` evenly over ``needs``; what one does not need goes to the rest.

    The smallest needs are served first, each with an equal share of what remains,
    so no part gets less than an even split unless it asked for less.
    """
    shares = [0] * len(needs)
    left = max(total, 0)
    order = sorted(range(len(needs)), key=lambda i: needs[i])
    for served, i in enumerate(order):
        share = left // (len(order) - served)
        shares[i] = min(needs[i], share)
        left -= shares[i]
    return shares


# --- planning the blocks ---------------------------------------------------------------


@dataclass(slots=True)
class Part:
    """One memory's block as the budget sees it.

    ``loads`` are its always-load files as (content piece, pointer piece) pairs;
    ``need`` is the cost of its whole index or change list.
    """

    overhead: int
    loads: list[tuple[str, str]] = field(default_factory=list)
    need: int = 0
    is_change_list: bool = False


@dataclass(slots=True)
class Plan:
    """Per part: whether it is sent, its chosen load pieces and the share for its lines."""

    included: list[bool]
    loads: list[list[str]]
    shares: list[int]
    too_big_change_lists: list[int]


def plan(parts: Sequence[Part], context_bytes: int, always_load_bytes: int) -> Plan:
    """Decide what of each part is sent; change lists over their share are reported back."""
    included = [True] * len(parts)
    left = context_bytes - sum(p.overhead for p in parts)
    # A block that cannot even hold its wrapper is left out, the last ones first.
    for i in range(len(parts) - 1, -1, -1):
        if left >= 0:
            break
        included[i] = False
        left += parts[i].overhead
    chosen: list[list[str]] = [[] for _ in parts]
    for i, part in enumerate(parts):
        if not included[i]:
            continue
        allowance = always_load_bytes
        for content, pointer in part.loads:
            size = nbytes(content) + 1
            if size <= allowance and size <= left:
                chosen[i].append(content)
                allowance -= size
                left -= size
            elif nbytes(pointer) + 1 <= left:
                chosen[i].append(pointer)
                left -= nbytes(pointer) + 1
    live = [i for i, p in enumerate(parts) if included[i] and p.need > 0]
    fill = water_fill([parts[i].need for i in live], left)
    shares = [0] * len(parts)
    for i, share in zip(live, fill, strict=True):
        shares[i] = share
    too_big = [i for i in live if parts[i].is_change_list and parts[i].need > shares[i]]
    return Plan(included, chosen, shares, too_big)


# --- fitting an index ------------------------------------------------------------------


def index_line(path: str, description: str | None) -> str:
    return f"{path}: {description}" if description else path


def folder_line(folder: str, files: int) -> str:
    return f"{folder}/ ({files} file{'' if files == 1 else 's'})"


def pointer_line(hidden: int) -> str:
    return f"… {hidden} more; list them with memory_file_view"


@dataclass(slots=True)
class IndexLines:
    """An index's lines as printed JSON pieces, with their costs, computed once."""

    paths: list[str]
    pieces: list[str]
    costs: list[int]
    total: int

    @classmethod
    def of(cls, entries: Sequence[tuple[str, str | None]]) -> IndexLines:
        pieces = [escape_json(f"{p}: {d}" if d else p) for p, d in entries]
        costs = [nbytes(p) + 1 for p in pieces]
        return cls([p for p, _ in entries], pieces, costs, sum(costs))


def fit_index(entries: Sequence[tuple[str, str | None]] | IndexLines, allowance: int) -> list[str]:
    """The index lines (as JSON pieces) of ``entries`` (sorted by path) within ``allowance``.

    Folders collapse into ``folder/ (N files)`` lines, the deepest first and, within
    one depth, the ones that save most first, until the index fits. If even the top
    folders collapsed do not fit, the lines are cut and a pointer line ends them.
    """
    index = entries if isinstance(entries, IndexLines) else IndexLines.of(entries)
    pieces, costs, total = index.pieces, index.costs, index.total
    if total <= allowance:
        return list(pieces)
    # Sizes and counts per folder: first of the files directly inside, then added up the tree.
    parents = [path[: max(path.rfind("/"), 0)] for path in index.paths]
    expanded: dict[str, int] = {}
    counts: dict[str, int] = {}
    for parent, size in zip(parents, costs, strict=True):
        if parent:
            expanded[parent] = expanded.get(parent, 0) + size
            counts[parent] = counts.get(parent, 0) + 1
    for folder in sorted(expanded, key=lambda f: -f.count("/")):
        outer = folder[: max(folder.rfind("/"), 0)]
        while outer and outer not in expanded:  # a folder holding only folders
            expanded[outer], counts[outer] = 0, 0
            outer = outer[: max(outer.rfind("/"), 0)]
    for folder in sorted(expanded, key=lambda f: -f.count("/")):
        outer = folder[: max(folder.rfind("/"), 0)]
        if outer:
            expanded[outer] += expanded[folder]
            counts[outer] += counts[folder]
    folder_costs = {f: nbytes(escape_json(folder_line(f, n))) + 1 for f, n in counts.items()}
    current = dict(expanded)
    by_depth: dict[int, list[str]] = {}
    for folder in expanded:
        by_depth.setdefault(folder.count("/"), []).append(folder)
    collapsed: set[str] = set()
    for depth in sorted(by_depth, reverse=True):
        if total <= allowance:
            break
        # Folders of one depth do not contain each other, so their savings are independent.
        ranked = sorted(by_depth[depth], key=lambda f: (folder_costs[f] - current[f], f))
        for folder in ranked:
            if total <= allowance:
                break
            delta = folder_costs[folder] - current[folder]
            if delta >= 0:
                continue
            total += delta
            current[folder] = folder_costs[folder]
            cut = folder.rfind("/")
            while cut != -1:
                current[folder[:cut]] += delta
                cut = folder.rfind("/", 0, cut)
            collapsed.add(folder)
    lines: list[str] = []
    outermost: dict[str, str | None] = {}  # parent folder -> its outermost collapsed folder
    last_folder: str | None = None
    for parent, piece in zip(parents, pieces, strict=True):
        if parent in outermost:
            top = outermost[parent]
        else:
            top = outermost[parent] = _outermost(parent, collapsed) if collapsed and parent else None
        if top is None:
            lines.append(piece)
            last_folder = None
        elif top != last_folder:
            lines.append(escape_json(folder_line(top, counts[top])))
            last_folder = top
    if total <= allowance:
        return lines
    return _cut(lines, allowance)


def _outermost(folder: str, collapsed: set[str]) -> str | None:
    """The shallowest collapsed folder that is ``folder`` or holds it."""
    cut = folder.find("/")
    while cut != -1:
        if folder[:cut] in collapsed:
            return folder[:cut]
        cut = folder.find("/", cut + 1)
    return folder if folder in collapsed else None


def _cut(lines: list[str], allowance: int) -> list[str]:
    """Keep the first lines that fit together with a pointer to the rest."""
    reserve = nbytes(escape_json(pointer_line(len(lines)))) + 1
    if reserve > allowance:
        return []
    kept: list[str] = []
    used = reserve
    for line in lines:
        size = nbytes(line) + 1
        if used + size > allowance:
            break
        kept.append(line)
        used += size
    kept.append(escape_json(pointer_line(len(lines) - len(kept))))
    return kept

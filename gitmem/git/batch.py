"""Several files moved or deleted as one commit: a folder rename or a folder delete.

The store contract changes one file per call, so renaming a folder of ten files
used to be ten commits, and a conflict on the seventh left the folder half
moved. :func:`move_many` and :func:`delete_many` build one
:meth:`~gitmem.git.repo.GitRepo.transact` plan for the whole set instead: every
file is checked against the head under the writer lock, and either all of them
change in one commit or nothing does.

The commit names every changed path in its trailers (a delete: one
``Gitmem-Path`` each; a move: ``Gitmem-Path`` for each destination followed by
``Gitmem-From`` for its source), which is what ``log`` relies on to skip
gitmem's commits that do not mention a path, and to follow a file across the move.
"""

from __future__ import annotations

from collections.abc import Sequence

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat, validate_path
from gitmem.git.history import current_file
from gitmem.git.repo import GitRepo, Plan, Snapshot
from gitmem.model import Origin
from gitmem.store import check_destination, check_existing


def _items(items: object, width: int, shape: str) -> list[tuple[object, ...]]:
    """The batch as a list of ``width``-tuples; ``invalid_path`` for anything else (it names no paths)."""
    if isinstance(items, str | bytes) or not isinstance(items, Sequence):
        raise MemoryStoreError("invalid_path", f"expected a list of {shape}")
    out: list[tuple[object, ...]] = []
    for item in items:
        if isinstance(item, str | bytes) or not isinstance(item, Sequence) or len(item) != width:
            raise MemoryStoreError("invalid_path", f"expected a list of {shape}, got {item!r}")
        out.append(tuple(item))
    return out


def _once(paths: list[str], what: str) -> None:
    seen: set[str] = set()
    for path in paths:
        if path in seen:
            raise MemoryStoreError("invalid_path", f"{path} is named twice as a {what} in one change")
        seen.add(path)


def move_many(
    repo: GitRepo,
    fmt: FileFormat,
    pairs: object,
    *,
    origin: Origin,
    ref: str,
) -> list[str]:
    """Move each ``(source, destination, expected)`` in one commit; the files' versions, in order.

    Every source must hold a file at exactly its expected version
    (``version_mismatch`` carrying that file), and every destination must be free
    at the head (``already_exists`` carrying what is there), so one batch cannot
    swap or chain names. A destination that collides with a folder, or runs
    through a file, is ``invalid_path``. Sources are removed before destinations
    are written, and folders left empty disappear. An empty batch changes nothing.
    """
    checked: list[tuple[str, str, object]] = []
    for source, destination, expected in _items(pairs, 3, "(source, destination, expected version)"):
        checked.append((validate_path(source, fmt), validate_path(destination, fmt), expected))
    _once([s for s, _, _ in checked], "source")
    _once([d for _, d, _ in checked], "destination")
    if not checked:
        return []

    def plan(snap: Snapshot) -> Plan:
        versions = [check_existing(s, current_file(snap, s), e).version for s, _, e in checked]
        for _, destination, _ in checked:
            check_destination(destination, current_file(snap, destination))
        edits = tuple((s, None) for s, _, _ in checked) + tuple(
            (d, v) for (_, d, _), v in zip(checked, versions, strict=True)
        )
        paths = tuple(p for s, d, _ in checked for p in (s, d))
        return Plan(edits, "move", paths, origin, result=" ".join(versions))

    _, used = repo.transact(plan, ref=ref)
    assert used is not None and used.result is not None
    return used.result.split(" ")


def delete_many(
    repo: GitRepo,
    fmt: FileFormat,
    items: object,
    *,
    origin: Origin,
    ref: str,
) -> None:
    """Delete each ``(path, expected)`` in one commit, or nothing when any one is not at its version.

    ``version_mismatch`` carries the file that changed (``current=None`` when it is
    already gone). Folders left empty disappear. An empty batch changes nothing.
    """
    checked = [(validate_path(p, fmt), e) for p, e in _items(items, 2, "(path, expected version)")]
    _once([p for p, _ in checked], "path")
    if not checked:
        return

    def plan(snap: Snapshot) -> Plan:
        for path, expected in checked:
            check_existing(path, current_file(snap, path), expected)
        return Plan(tuple((p, None) for p, _ in checked), "delete", tuple(p for p, _ in checked), origin)

    repo.transact(plan, ref=ref)

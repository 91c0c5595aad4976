"""``gitmem session``: a session memory from the shell (see :mod:`gitmem.session`).

The memory is the ``session`` mount of a folder: ``--memory-dir`` (or
``$GITMEM_MEMORY_DIR``) when given, else the ``--root`` folder when one is given,
else ``<workspace>/.gitmem/memory`` with the workspace defaulting to the current
directory.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from gitmem.adapters.cli.app import FOLDER, State, cli, common_options, emit, origin_options, pass_state, say

if TYPE_CHECKING:  # the store (pygit2) is imported when a command opens the memory, not for --help
    from gitmem.session.items import MemoryItem
    from gitmem.session.memory import SessionMemory

#: gitmem.session.location.DEFAULT_MOUNT, repeated so building the options opens no store
#: (tests/cli/test_cli_startup.py checks the two agree).
DEFAULT_MOUNT = "session"
#: gitmem.session.items.MEMORY_TYPES, repeated for the same reason: that module compiles the
#: secret rules, which no other command's start-up needs (the test checks they agree).
MEMORY_TYPES = ("episodic", "semantic", "procedural", "working")

F = TypeVar("F", bound=Callable[..., Any])


def location_options(f: F) -> F:
    f = click.option(
        "--mount",
        "mount",
        default=DEFAULT_MOUNT,
        show_default=True,
        help="Name of the session mount inside the memory folder.",
    )(f)
    f = click.option(
        "--memory-dir",
        type=FOLDER,
        envvar="GITMEM_MEMORY_DIR",
        help="Folder holding the session memory (default: $GITMEM_MEMORY_DIR, else WORKSPACE/.gitmem/memory).",
    )(f)
    return click.option(
        "--workspace",
        type=FOLDER,
        default=".",
        help="The workspace whose .gitmem/memory is used when no --memory-dir is given (default: here).",
    )(f)


def _open(state: State, workspace: Path, memory_dir: Path | None, mount: str) -> SessionMemory:
    if memory_dir is None and state.root_dir is not None:  # an explicit --root holds the session mount
        memory_dir = state.root_dir
    from gitmem.session.location import default_memory_dir, open_session_memory

    folder = default_memory_dir(workspace.absolute(), memory_dir)
    return open_session_memory(folder, mount=mount, origin=state.origin)


def item_json(item: MemoryItem) -> dict[str, Any]:
    last = item.last_accessed
    when = None if last is None else datetime.fromtimestamp(last, UTC).isoformat()
    return {**item.as_dict(), "metadata": item.metadata, "last_accessed": when}


def _line(item: MemoryItem, score: float | None = None) -> tuple[str, str]:
    """An item as two lines (its header, then its text on one indented line), each said on its own.

    ``say`` escapes a newline inside one line (so an item's text cannot fake more rows),
    which is why the two are not joined with one.
    """
    head = f"{item.id}  {item.memory_type}  {item.importance:.2f}"
    if score is not None:
        head += f"  score {score:.2f}"
    tags = f"  [{', '.join(item.tags)}]" if item.tags else ""
    conflict = f"  conflicts with {', '.join(item.conflicts_with)}" if item.conflicts_with else ""
    return f"{head}{tags}{conflict}", f"    {' '.join(item.content.split())}"


def _print_items(items: list[MemoryItem], scores: list[float] | None = None) -> Callable[[], None]:
    def text() -> None:
        if not items:
            say("no memories")
        for n, item in enumerate(items):
            for row in _line(item, scores[n] if scores else None):
                say(row)

    return text


@cli.group()
def session() -> None:
    """Session memory: remember, recall and prune what agent sessions learned."""


@session.command("remember")
@click.argument("text")
@click.option("--importance", type=click.FloatRange(0, 1), default=0.5, show_default=True, help="From 0 to 1.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeat for more).")
@click.option(
    "--type", "memory_type", type=click.Choice(MEMORY_TYPES), default="episodic", show_default=True, help="Memory type."
)
@location_options
@origin_options
@common_options
@pass_state
def session_remember(
    state: State,
    text: str,
    importance: float,
    tags: tuple[str, ...],
    memory_type: str,
    workspace: Path,
    memory_dir: Path | None,
    mount: str,
) -> None:
    """Remember TEXT (an exact duplicate merges into the item already there)."""
    memory = _open(state, workspace, memory_dir, mount)
    item = memory.remember(text, importance=importance, tags=tags, memory_type=memory_type)
    merged = item.metadata.get("duplicate_count")
    note = f" (merged with an existing item, {merged} duplicates so far)" if merged else ""
    emit({"item": item_json(item)}, f"{item.id}{note}")


@session.command("recall")
@click.argument("query")
@click.option("-k", "--limit", "k", type=click.IntRange(1, 100), default=5, show_default=True, help="Most items.")
@location_options
@common_options
@pass_state
def session_recall(state: State, query: str, k: int, workspace: Path, memory_dir: Path | None, mount: str) -> None:
    """Recall the items most similar to QUERY (superseded items are left out)."""
    results = _open(state, workspace, memory_dir, mount).recall_similar(query, k)
    text = _print_items([r.item for r in results], [r.score for r in results])
    payload = [{**item_json(r.item), "score": r.score, "conflicts": [c.id for c in r.conflicts]} for r in results]
    emit({"query": query, "results": payload}, text)


@session.command("recent")
@click.option("-n", "--limit", "n", type=click.IntRange(1, 1000), default=10, show_default=True, help="Most items.")
@click.option("--all", "include_hidden", is_flag=True, help="Include superseded and tombstoned items.")
@location_options
@common_options
@pass_state
def session_recent(
    state: State, n: int, include_hidden: bool, workspace: Path, memory_dir: Path | None, mount: str
) -> None:
    """The newest items, newest first."""
    items = _open(state, workspace, memory_dir, mount).recent(n, include_hidden=include_hidden)
    emit({"items": [item_json(i) for i in items]}, _print_items(items))


@session.command("tags")
@click.argument("tags", nargs=-1)
@click.option("-n", "--limit", "n", type=click.IntRange(1, 1000), default=10, show_default=True, help="Most items.")
@location_options
@common_options
@pass_state
def session_tags(
    state: State, tags: tuple[str, ...], n: int, workspace: Path, memory_dir: Path | None, mount: str
) -> None:
    """Items carrying any of TAGS, newest first; without TAGS, every tag with its count."""
    memory = _open(state, workspace, memory_dir, mount)
    if not tags:
        counts = memory.tag_counts()

        def text() -> None:
            for tag, count in counts.items():
                say(f"{count}\t{tag}")

        emit({"tags": counts}, text)
        return
    items = memory.recall_by_tags(list(tags), n)
    emit({"tags": list(tags), "items": [item_json(i) for i in items]}, _print_items(items))


@session.command("prune")
@click.option("--max-age-days", type=click.FloatRange(0), default=90.0, show_default=True, help="Stale after this.")
@click.option("--min-importance", type=click.FloatRange(0, 1), default=0.5, show_default=True, help="Stale below this.")
@click.option("--max-items", type=click.IntRange(0), default=None, help="Keep at most this many (by relevance).")
@click.option("--dry-run", is_flag=True, help="Show what would go; change nothing.")
@location_options
@origin_options
@common_options
@pass_state
def session_prune(
    state: State,
    max_age_days: float,
    min_importance: float,
    max_items: int | None,
    dry_run: bool,
    workspace: Path,
    memory_dir: Path | None,
    mount: str,
) -> None:
    """Remove stale, unimportant, unprotected items in one commit (undo with `gitmem revert`)."""
    report = _open(state, workspace, memory_dir, mount).prune(
        max_age_days=max_age_days, min_importance=min_importance, max_items=max_items, dry_run=dry_run
    )

    def text() -> None:
        verb = "would remove" if dry_run else "removed"
        say(f"{verb} {len(report.removed)}, kept {report.remaining} ({report.kept_protected} protected)")
        for item_id in report.removed:
            say(f"  {item_id}: {report.reasons[item_id]}")

    emit(report.as_dict(), text)


@session.command("delete")
@click.argument("item_id", metavar="ID")
@location_options
@origin_options
@common_options
@pass_state
def session_delete(state: State, item_id: str, workspace: Path, memory_dir: Path | None, mount: str) -> None:
    """Delete item ID (one commit; history keeps it)."""
    _open(state, workspace, memory_dir, mount).delete(item_id)
    emit({"deleted": item_id}, f"deleted {item_id}")

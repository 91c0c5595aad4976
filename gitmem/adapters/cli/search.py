"""Search commands: grep (exact lines), find (ranked files) and the index's upkeep.

grep's answers never depend on the index (it only narrows which files are read);
find ranks with it. ``index status|rebuild`` expose the projection for admins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from gitmem.adapters.cli import reads
from gitmem.adapters.cli.app import (
    State,
    cli,
    common_options,
    emit,
    pass_state,
    progress,
    read_run_option,
    short,
    to_json,
)
from gitmem.adapters.cli.reads import directory_arg

if TYPE_CHECKING:
    from gitmem.index import IndexStatus


@cli.command()
@click.argument("name")
@click.argument("pattern")
@click.option("-E", "--regex", is_flag=True, help="PATTERN is a Python regular expression.")
@click.option("-s", "--case-sensitive", is_flag=True, help="Match case exactly (default: ignore case).")
@click.option("--path", "directory", default="", metavar="DIR", help="Only search files under DIR.")
@click.option("--limit", default=100, show_default=True, type=click.IntRange(1, 10_000), help="Most lines to print.")
@read_run_option
@common_options
@pass_state
def grep(state: State, name: str, pattern: str, regex: bool, case_sensitive: bool, directory: str, limit: int) -> None:
    """Print the lines that contain PATTERN, as path:line:text.

    PATTERN is literal text matched case-insensitively unless -E (regular
    expression) or -s (case-sensitive) is given. Finding nothing is not an
    error: the exit code is 0.
    """
    if not state.run:  # main: what the quick path runs too (``git grep`` answers without the store unless a large index does it faster)
        reads.grep(state.root, name, pattern, regex, case_sensitive, directory, limit, as_json=state.json)
        return
    where = directory_arg(directory)
    from gitmem.index import background

    with background.detached():  # a missing index is built by a process that outlives this one
        result = state.files(name).search(pattern, regex=regex, case_sensitive=case_sensitive, path=where, limit=limit)
    reads.print_matches(name, result, limit, as_json=state.json)


@cli.command()
@click.argument("name")
@click.argument("query")
@click.option("--path", "directory", default="", metavar="DIR", help="Only rank files under DIR.")
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 1000), help="Most files to list.")
@read_run_option
@common_options
@pass_state
def find(state: State, name: str, query: str, directory: str, limit: int) -> None:
    """Rank the files that best match the words of QUERY.

    Ranking is BM25 over words (the search index; it catches up on its own), so
    word order and case do not matter. Each hit shows its score, path and the
    line that made it match. Use grep for exact lines.
    """
    if not state.run:  # main: what the quick path runs too (a current index is read without the store)
        reads.find(state.root, name, query, directory, limit, as_json=state.json)
        return
    from gitmem.index import background

    files = state.files(name)
    with background.detached():
        hits = files.find(query, path=directory_arg(directory), limit=limit)
    reads.print_hits(name, query, hits, as_json=state.json)


@cli.group()
def index() -> None:
    """Inspect or rebuild a memory's search index.

    The index is derived from git and can always be rebuilt; losing it loses no
    data. Searches bring it up to date on their own.
    """


def _status_text(s: IndexStatus) -> str:
    reflects = f"{short(s.commit)} (head {short(s.head)})" if s.commit else f"nothing (head {short(s.head)})"
    lines = [
        f"state:     {s.state}",
        f"reflects:  {reflects}",
        f"documents: {s.documents} ({s.deleted} deleted, {s.segments} segment(s))",
        f"directory: {s.directory}",
    ]
    return "\n".join(lines)


@index.command("status")
@click.argument("name")
@common_options
@pass_state
def index_status(state: State, name: str) -> None:
    """Show whether the index of NAME reflects the head.

    States: current, behind (the next search catches up), missing, broken or
    outdated (the next search rebuilds it).
    """
    status = state.store(name).index_status()
    emit({"memory": name, **to_json(status)}, _status_text(status))


@index.command("rebuild")
@click.argument("name")
@common_options
@pass_state
def index_rebuild(state: State, name: str) -> None:
    """Recreate the index of NAME from scratch at the head."""
    with progress(f"indexing {name}"):
        status = state.store(name).rebuild_index()
    emit({"memory": name, **to_json(status)}, _status_text(status))

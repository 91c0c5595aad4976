"""Search commands: grep (exact line matches) and, with the index, find and index upkeep."""

from __future__ import annotations

import click

from gitmem.adapters.cli.app import State, cli, common_options, emit, pass_state
from gitmem.adapters.cli.files import directory_arg


@cli.command()
@click.argument("name")
@click.argument("pattern")
@click.option("-E", "--regex", is_flag=True, help="PATTERN is a Python regular expression.")
@click.option("-s", "--case-sensitive", is_flag=True, help="Match case exactly (default: ignore case).")
@click.option("--path", "directory", default="", metavar="DIR", help="Only search files under DIR.")
@click.option("--limit", default=100, show_default=True, type=click.IntRange(1, 10_000), help="Most lines to print.")
@common_options
@pass_state
def grep(state: State, name: str, pattern: str, regex: bool, case_sensitive: bool, directory: str, limit: int) -> None:
    """Print the lines that contain PATTERN, as path:line:text.

    PATTERN is literal text matched case-insensitively unless -E (regular
    expression) or -s (case-sensitive) is given. Finding nothing is not an
    error: the exit code is 0.
    """
    result = state.store(name).search(
        pattern, regex=regex, case_sensitive=case_sensitive, path=directory_arg(directory), limit=limit
    )

    def text() -> None:
        for m in result.matches:
            click.echo(f"{m.path}:{m.line}:{m.text}")
        if result.truncated:
            click.echo(f"(more lines matched; raise --limit above {limit} to see them)", err=True)

    emit({"memory": name, "matches": result.matches, "truncated": result.truncated}, text)

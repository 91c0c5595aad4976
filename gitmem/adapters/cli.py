"""The ``gitmem`` command line: a thin layer that parses, calls the core once, renders."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gitmem.config import default_root
from gitmem.errors import MemoryStoreError
from gitmem.root import Root


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--root",
    "root_dir",
    type=click.Path(path_type=Path),
    envvar="GITMEM_ROOT",
    help="Folder of mounts (default: $GITMEM_ROOT or ~/.local/share/gitmem).",
)
@click.pass_context
def cli(ctx: click.Context, root_dir: Path | None) -> None:
    """gitmem: versioned memory for AI agents, stored as bare git repositories."""
    ctx.obj = Root(root_dir or default_root())


@cli.command()
@click.argument("name", default="demo")
@click.pass_obj
def demo(root: Root, name: str) -> None:
    """Run two agents sharing memory NAME (default: demo) and show the result."""
    from gitmem.demo import run_demo

    run_demo(root, name, emit=click.echo)


def main() -> None:
    try:
        cli(standalone_mode=True)
    except MemoryStoreError as exc:  # pragma: no cover - commands handle their own errors
        click.echo(f"error [{exc.code}]: {exc.message}", err=True)
        sys.exit(1)

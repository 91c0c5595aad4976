"""``gitmem hooks``: git's own hooks, so pushes over ssh or a file path meet the store's rules."""

from __future__ import annotations

import click

from gitmem.adapters.cli.app import State, cli, common_options, emit, pass_state


@cli.group()
def hooks() -> None:
    """Server-side git hooks that check pushes made without gitmem serve."""


@hooks.command("install")
@click.argument("name")
@click.option("--force", is_flag=True, help="Replace pre-receive/post-receive hooks that gitmem did not write.")
@common_options
@pass_state
def install(state: State, name: str, force: bool) -> None:
    """Install the pre-receive and post-receive hooks into memory NAME."""
    from gitmem.hooks import install_hooks

    path = state.store(name).path  # unknown_memory when there is no such memory
    written = install_hooks(path, force=force)
    emit(
        {"memory": name, "hooks": [str(p) for p in written]},
        f"installed {', '.join(p.name for p in written)} into {path}; pushes to it are now checked",
    )

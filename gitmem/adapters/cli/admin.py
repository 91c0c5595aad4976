"""Admin commands: purge, forget, fsck, gc, and the ``demo`` walk-through.

The destructive ones (purge, forget) erase history for good and refuse to run
without ``--yes``: that is a usage error (exit code 2), not a refusal by the store.
"""

from __future__ import annotations

import click

from gitmem.adapters.cli.app import State, cli, common_options, emit, origin_options, pass_state, usage_error


def _confirm(yes: bool, what: str) -> None:
    if not yes:
        raise usage_error(f"{what} cannot be undone; pass --yes to go ahead")


@cli.command()
@click.argument("name")
@click.option("--yes", is_flag=True, help="Confirm: every file and all history of NAME is destroyed.")
@origin_options
@common_options
@pass_state
def purge(state: State, name: str, yes: bool) -> None:
    """Empty memory NAME and destroy its history.

    Every file and every past version is removed and the objects pruned, so git
    cannot read them back. Older cursors then answer "full resync".
    """
    _confirm(yes, f"purging {name!r}")
    store = state.store(name)
    store.purge(state.origin)
    emit({"memory": name, "head": store.head(), "purged": True}, f"purged {name!r}: no files, no history")


@cli.command()
@click.argument("name", default="demo")
@common_options
@pass_state
def demo(state: State, name: str) -> None:
    """Run two agents sharing memory NAME (default: demo).

    Shows each change, the conflict that stops a stale write, the change list a
    later run receives, and git's own log with the provenance trailers.
    """
    from gitmem.demo import run_demo

    lines: list[str] = []
    head = run_demo(state.root, name, emit=lines.append if state.json else click.echo)
    emit({"memory": name, "head": head, "lines": lines})

"""``gitmem remote``, ``gitmem push``, ``gitmem pull``: share a memory through a hosting service."""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

import click

from gitmem.adapters.cli.app import State, cli, common_options, emit, origin_options, pass_state, say, short
from gitmem.adapters.cli.output import EXIT_OK

if TYPE_CHECKING:
    from gitmem.remotes import MergeRefused


def report_refused(state: State, exc: MergeRefused, hint: str) -> NoReturn:
    """A refused merge (pull, approve): the code, every conflicting file or broken rule, what to do."""
    from gitmem.adapters.cli import pushpull

    raise click.exceptions.Exit(pushpull.refused(exc, hint, as_json=state.json))


@cli.group()
def remote() -> None:
    """Where a memory is pushed to and pulled from (git remotes of its repository)."""


@remote.command("add")
@click.argument("name")
@click.argument("remote_name", metavar="REMOTE")
@click.argument("url")
@common_options
@pass_state
def remote_add(state: State, name: str, remote_name: str, url: str) -> None:
    """Record remote REMOTE of memory NAME at URL (a hosting URL or a local path)."""
    from gitmem import remotepush as remotes

    added = remotes.add(state.store(name), remote_name, url)
    emit(
        {"memory": name, "remote": added.name, "url": added.shown_url},
        f"{name}: remote {added.name} is {added.shown_url}; `gitmem push {name} {added.name}` sends main there",
    )


@remote.command("list")
@click.argument("name")
@common_options
@pass_state
def remote_list(state: State, name: str) -> None:
    """List the remotes of memory NAME (passwords in URLs are hidden)."""
    from gitmem import remotepush as remotes

    found = remotes.list_remotes(state.store(name))

    def text() -> None:
        if not found:
            say(f"{name} has no remotes; add one with `gitmem remote add {name} origin URL`")
        for item in found:
            say(f"{item.name}\t{item.shown_url}")

    emit({"memory": name, "remotes": [{"name": r.name, "url": r.shown_url} for r in found]}, text)


@remote.command("remove")
@click.argument("name")
@click.argument("remote_name", metavar="REMOTE")
@common_options
@pass_state
def remote_remove(state: State, name: str, remote_name: str) -> None:
    """Forget remote REMOTE of memory NAME (nothing on the remote is touched)."""
    from gitmem import remotepush as remotes

    remotes.remove(state.store(name), remote_name)
    emit({"memory": name, "removed": remote_name}, f"{name}: remote {remote_name} removed")


@cli.command()
@click.argument("name")
@click.argument("remote_name", metavar="[REMOTE]", default="origin")
@click.option("--proposals", is_flag=True, help="Also push every review proposal (refs/heads/proposals/*).")
@common_options
@pass_state
def push(state: State, name: str, remote_name: str, proposals: bool) -> None:
    """Push main of memory NAME to REMOTE (default: origin); never forced."""
    from gitmem.adapters.cli import pushpull

    pushpull.push(state.root, name, remote_name, proposals=proposals, as_json=state.json)


@cli.command()
@click.argument("url")
@click.argument("name", required=False)
@origin_options
@common_options
@pass_state
def clone(state: State, url: str, name: str | None) -> None:
    """Make memory NAME from the main branch of the git repository at URL, with URL as its remote origin.

    Every commit comes in as it is (same ids), each checked by the memory's
    rules; when one is refused nothing is created and each refused file is
    listed with its rule. NAME defaults to the last part of URL without .git.
    Afterwards `gitmem pull NAME` and `gitmem push NAME` work with no more
    set-up. A password in URL goes to git's credential helper when one is
    configured, and is never printed.
    """
    from gitmem import remotes

    try:
        store, result = remotes.clone(state.root, url, name, origin=state.origin)
    except remotes.MergeRefused as exc:
        report_refused(
            state,
            exc,
            "nothing was created; the forge's main holds commits the memory refuses: fix them there "
            "(see `gitmem check`), or bring the history in without them (`gitmem import --history`)",
        )
    chosen = name or remotes.clone_name(url)
    shown = remotes.list_remotes(store)[0].shown_url
    files = len(result.paths)
    emit(
        {"memory": chosen, "remote": "origin", "url": shown, "head": result.after, "files": files},
        f"cloned {shown} into memory {chosen!r}: main at {short(result.after)}, {files} file"
        f"{'' if files == 1 else 's'}; `gitmem pull {chosen}` and `gitmem push {chosen}` sync with origin",
    )


@cli.command()
@click.argument("name")
@click.argument("remote_name", metavar="[REMOTE]", default="origin")
@click.option(
    "--propose",
    is_flag=True,
    help="When both sides changed a file, open conflict proposal merge-REMOTE to resolve and approve.",
)
@origin_options
@common_options
@pass_state
def pull(state: State, name: str, remote_name: str, propose: bool) -> None:
    """Bring main of REMOTE (default: origin) into memory NAME: fast-forward, or merge.

    What the remote brings must pass the memory's rules. When agents changed
    other files meanwhile a merge commit keeps both sides; when both sides
    changed the same file nothing changes and the files are listed: pull again
    with --propose to finish it as a conflict proposal (`gitmem review resolve`,
    then `gitmem review approve`, then `gitmem push`). A new, empty memory takes
    the remote's history whole. Proposals merged on the remote (merge commit,
    squash or rebase) are closed; pushed ones closed there unmerged are named.
    """
    from gitmem.adapters.cli import pushpull

    code = pushpull.pull(state.root, name, remote_name, origin=state.origin, propose=propose, as_json=state.json)
    if code != EXIT_OK:
        raise click.exceptions.Exit(code)
